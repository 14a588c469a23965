package volume

// VoxelToWorld maps a continuous voxel index (x, y, z) to LPS millimetres.
func (v *Volume) VoxelToWorld(idx [3]float64) [3]float64 {
	var w [3]float64
	for r := 0; r < 3; r++ {
		w[r] = v.Origin[r]
		for c := 0; c < 3; c++ {
			w[r] += v.Direction[3*r+c] * v.Spacing[c] * idx[c]
		}
	}
	return w
}

// WorldToVoxel maps LPS millimetres to a continuous voxel index. It is the exact inverse of
// VoxelToWorld for a volume that passes Validate.
func (v *Volume) WorldToVoxel(w [3]float64) [3]float64 {
	inv := invert3(v.Direction)
	d := [3]float64{w[0] - v.Origin[0], w[1] - v.Origin[1], w[2] - v.Origin[2]}
	var idx [3]float64
	for r := 0; r < 3; r++ {
		s := 0.0
		for c := 0; c < 3; c++ {
			s += inv[3*r+c] * d[c]
		}
		idx[r] = s / v.Spacing[r]
	}
	return idx
}

// Affine returns the 4×4 row-major voxel→LPS matrix Direction·diag(Spacing) | Origin.
func (v *Volume) Affine() [16]float64 {
	var a [16]float64
	for r := 0; r < 3; r++ {
		for c := 0; c < 3; c++ {
			a[4*r+c] = v.Direction[3*r+c] * v.Spacing[c]
		}
		a[4*r+3] = v.Origin[r]
	}
	a[15] = 1
	return a
}

// SetAffine sets Spacing, Direction and Origin from a 4×4 row-major voxel→LPS matrix. The
// spacing of axis j is the norm of column j; a zero column leaves spacing 0 (Validate
// rejects it).
func (v *Volume) SetAffine(a [16]float64) {
	for c := 0; c < 3; c++ {
		n := 0.0
		for r := 0; r < 3; r++ {
			n += a[4*r+c] * a[4*r+c]
		}
		n = sqrt(n)
		v.Spacing[c] = n
		for r := 0; r < 3; r++ {
			if n > 0 {
				v.Direction[3*r+c] = a[4*r+c] / n
			} else {
				v.Direction[3*r+c] = 0
			}
		}
	}
	for r := 0; r < 3; r++ {
		v.Origin[r] = a[4*r+3]
	}
}

func det3(m [9]float64) float64 {
	return m[0]*(m[4]*m[8]-m[5]*m[7]) - m[1]*(m[3]*m[8]-m[5]*m[6]) + m[2]*(m[3]*m[7]-m[4]*m[6])
}

func invert3(m [9]float64) [9]float64 {
	d := det3(m)
	return [9]float64{
		(m[4]*m[8] - m[5]*m[7]) / d, (m[2]*m[7] - m[1]*m[8]) / d, (m[1]*m[5] - m[2]*m[4]) / d,
		(m[5]*m[6] - m[3]*m[8]) / d, (m[0]*m[8] - m[2]*m[6]) / d, (m[2]*m[3] - m[0]*m[5]) / d,
		(m[3]*m[7] - m[4]*m[6]) / d, (m[1]*m[6] - m[0]*m[7]) / d, (m[0]*m[4] - m[1]*m[3]) / d,
	}
}

// Orientation returns the three-letter ITK/DICOM orientation code of the axes, the letter
// each index axis points towards (e.g. "LPS" for identity, "RAS" for a NIfTI-style flip).
func (v *Volume) Orientation() string {
	pos := [3]byte{'L', 'P', 'S'}
	neg := [3]byte{'R', 'A', 'I'}
	var out [3]byte
	for c := 0; c < 3; c++ {
		best, bi := 0.0, 0
		for r := 0; r < 3; r++ {
			if a := abs(v.Direction[3*r+c]); a > best {
				best, bi = a, r
			}
		}
		if v.Direction[3*bi+c] >= 0 {
			out[c] = pos[bi]
		} else {
			out[c] = neg[bi]
		}
	}
	return string(out[:])
}

// InPlane is the two axes of a slice normal to axis (0, 1 or 2), the lower first: a
// slice across z runs along x and y.
func InPlane(axis int) (u, v int) {
	switch axis {
	case 0:
		return 1, 2
	case 1:
		return 0, 2
	}
	return 0, 1
}
