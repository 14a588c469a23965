package metrics

import (
	"math"
	"runtime"
	"sync"
)

// EDT returns, for every voxel of mask, the Euclidean distance in millimetres to the
// nearest voxel where mask is zero, as scipy.ndimage.distance_transform_edt(mask,
// sampling) does: zero voxels get 0. dims and spacing are in (X, Y, Z) order, X fastest.
// When mask has no zero voxel every distance is +Inf. out is reused when it has room.
func EDT(mask []uint8, dims [3]int, spacing [3]float64, out []float64) []float64 {
	out = EDTSquared(mask, dims, spacing, out)
	for i, v := range out {
		out[i] = math.Sqrt(v)
	}
	return out
}

// EDTSquared is EDT without the final square root: squared distances in mm², exact to
// the last bit of float64 arithmetic. Each term is formed as (Δ·spacing)² and the terms
// are summed in the order scipy sums them, so the square root matches scipy bit for bit
// except where two nearest features tie at a distance that rounds differently.
func EDTSquared(mask []uint8, dims [3]int, spacing [3]float64, out []float64) []float64 {
	n := dims[0] * dims[1] * dims[2]
	out = edtGrow(out, n)
	inf := math.Inf(1)
	for i, m := range mask[:n] {
		if m == 0 {
			out[i] = 0
		} else {
			out[i] = inf
		}
	}
	edtTransform(out, dims, spacing)
	return out
}

// EDTSquaredToFeatures returns, for every voxel, the squared distance in mm² to the
// nearest voxel where feature is non-zero (+Inf everywhere when there is none). It is
// EDTSquared of the complement, without building the complement.
func EDTSquaredToFeatures(feature []uint8, dims [3]int, spacing [3]float64, out []float64) []float64 {
	n := dims[0] * dims[1] * dims[2]
	out = edtGrow(out, n)
	inf := math.Inf(1)
	for i, m := range feature[:n] {
		if m != 0 {
			out[i] = 0
		} else {
			out[i] = inf
		}
	}
	edtTransform(out, dims, spacing)
	return out
}

func edtGrow(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}

// edtTransform turns a field of 0 (feature) and +Inf (other) into squared distances,
// in place. The passes run along Z, then Y, then X, so that the final value is
// x² + (y² + z²), the same float sum as scipy's add.reduce over axes (z, y, x).
func edtTransform(data []float64, dims [3]int, spacing [3]float64) {
	edtTransformRows(data, dims, spacing, nil)
}

// edtTransformRows is edtTransform where only the rows (y, z) with rows[z*Y+y] set need
// correct values (nil: all); the Y pass skips planes and the X pass rows that hold none.
func edtTransformRows(data []float64, dims [3]int, spacing [3]float64, rows []bool) {
	if dims[0] <= 0 || dims[1] <= 0 || dims[2] <= 0 {
		return
	}
	var planes []bool
	if rows != nil {
		planes = make([]bool, dims[2])
		for r, ok := range rows {
			if ok {
				planes[r/dims[1]] = true
			}
		}
	}
	edtPass(data, dims, 2, spacing[2], true, nil)
	edtPass(data, dims, 1, spacing[1], false, planes)
	edtPass(data, dims, 0, spacing[0], false, rows)
}

// edtBlock is how many neighbouring lines along X are gathered together, so that each
// cache line read while gathering a strided line is used eight times.
const edtBlock = 8

// edtPass runs the one-dimensional transform along axis over every line of data.
// first selects the cheap two-sweep transform valid when the field is still 0/+Inf.
func edtPass(data []float64, dims [3]int, axis int, s float64, first bool, need []bool) {
	nx, ny, nz := dims[0], dims[1], dims[2]
	var n, stride int
	// units enumerate blocks of lines: (outer index, x block start).
	var outer int
	switch axis {
	case 0:
		n, stride, outer = nx, 1, ny*nz
	case 1:
		n, stride, outer = ny, nx, nz
	default:
		n, stride, outer = nz, nx*ny, ny
	}
	if n == 1 && first {
		// A single plane: the pass only squares zero distances; nothing to do.
		return
	}
	if axis == 2 && first {
		edtZSweep(data, dims, s)
		return
	}
	xBlocks := (nx + edtBlock - 1) / edtBlock
	units := outer * xBlocks
	if axis == 0 {
		units = outer
	}
	workers := runtime.GOMAXPROCS(0)
	if workers > units {
		workers = units
	}
	if n*units < 1<<15 {
		workers = 1
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := units*w/workers, units*(w+1)/workers
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			buf := make([]float64, n*edtBlock)
			line := make([]float64, n)
			v := make([]int32, n)
			z := make([]float64, n+1)
			hb := make([]float64, n)
			for u := lo; u < hi; u++ {
				if axis == 0 {
					if need != nil && !need[u] {
						continue
					}
					row := data[u*nx : (u+1)*nx]
					if edtTrivial(row) {
						continue
					}
					if first {
						edtTwoSweep(row, s)
					} else {
						copy(line, row)
						edtEnvelope(line, row, v, z, hb, s)
					}
					continue
				}
				o, xb := u/xBlocks, u%xBlocks
				if need != nil && !need[o] {
					continue
				}
				x0 := xb * edtBlock
				bw := min(edtBlock, nx-x0)
				var base int
				if axis == 1 {
					base = o*nx*ny + x0
				} else {
					base = o*nx + x0
				}
				for i := 0; i < n; i++ {
					src := data[base+i*stride : base+i*stride+bw]
					for b, val := range src {
						buf[b*n+i] = val
					}
				}
				changed := false
				for b := 0; b < bw; b++ {
					f := buf[b*n : (b+1)*n]
					if edtTrivial(f) {
						continue
					}
					changed = true
					if first {
						edtTwoSweep(f, s)
					} else {
						copy(line, f)
						edtEnvelope(line, f, v, z, hb, s)
					}
				}
				if !changed {
					continue
				}
				for i := 0; i < n; i++ {
					dst := data[base+i*stride : base+i*stride+bw]
					for b := range dst {
						dst[b] = buf[b*n+i]
					}
				}
			}
		}(lo, hi)
	}
	wg.Wait()
}

// edtZSweep is the first pass along Z done plane by plane: each worker owns a range of
// (x, y) columns and sweeps the planes forward then backward, reading memory in order
// instead of gathering strided lines.
func edtZSweep(data []float64, dims [3]int, s float64) {
	plane := dims[0] * dims[1]
	nz := dims[2]
	workers := runtime.GOMAXPROCS(0)
	if plane*nz < 1<<15 || workers > plane {
		workers = 1
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := plane*w/workers, plane*(w+1)/workers
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			last := make([]int32, hi-lo)
			for i := range last {
				last[i] = -1
			}
			for z := 0; z < nz; z++ {
				row := data[z*plane+lo : z*plane+hi]
				for i, v := range row {
					if v == 0 {
						last[i] = int32(z)
					} else if l := last[i]; l >= 0 {
						d := float64(z-int(l)) * s
						row[i] = float64(d * d)
					}
				}
			}
			for i := range last {
				last[i] = -1
			}
			for z := nz - 1; z >= 0; z-- {
				row := data[z*plane+lo : z*plane+hi]
				for i, v := range row {
					if v == 0 {
						last[i] = int32(z)
					} else if l := last[i]; l >= 0 {
						d := float64(int(l)-z) * s
						if dd := float64(d * d); dd < v {
							row[i] = dd
						}
					}
				}
			}
		}(lo, hi)
	}
	wg.Wait()
}

// edtTrivial reports whether a line is all 0 or all +Inf, which every pass leaves as is.
func edtTrivial(f []float64) bool {
	v := f[0]
	if v != 0 && !math.IsInf(v, 1) {
		return false
	}
	for _, w := range f[1:] {
		if w != v {
			return false
		}
	}
	return true
}

// edtTwoSweep replaces a 0/+Inf line by the squared distance (Δ·s)² to the nearest zero.
func edtTwoSweep(f []float64, s float64) {
	n := len(f)
	last := -1
	// forward: distance index to previous zero stored temporarily as float index.
	for i := 0; i < n; i++ {
		if f[i] == 0 {
			last = i
			continue
		}
		if last >= 0 {
			d := float64(i-last) * s
			f[i] = float64(d * d)
		}
	}
	last = -1
	for i := n - 1; i >= 0; i-- {
		if f[i] == 0 {
			last = i
			continue
		}
		if last >= 0 {
			d := float64(last-i) * s
			if dd := float64(d * d); dd < f[i] {
				f[i] = dd
			}
		}
	}
}

// edtEnvelope computes d[q] = min_p (q−p)²s² + f[p] by the lower envelope of parabolas
// (Felzenszwalb & Huttenlocher 2012). f entries of +Inf are not features. v, z and h are
// scratch of length len(f), len(f)+1 and len(f); h[k] keeps f[p] + s²p² of the envelope's
// k-th parabola p = v[k], so each intersection reads it instead of forming it again (the
// same expression, the same float value).
func edtEnvelope(f, d []float64, v []int32, z, h []float64, s float64) {
	n := len(f)
	s2 := s * s
	k := -1
	for q := 0; q < n; q++ {
		fq := f[q]
		if math.IsInf(fq, 1) {
			continue
		}
		// Inside a run of zeros a parabola is never the minimum anywhere but at its own
		// point, where the distance is 0 anyway: only the run's ends enter the envelope.
		if fq == 0 && q > 0 && q < n-1 && f[q-1] == 0 && f[q+1] == 0 {
			continue
		}
		qf := float64(q)
		hq := fq + s2*qf*qf
		var sp float64
		for k >= 0 {
			pf := float64(v[k])
			sp = (hq - h[k]) / (2 * s2 * (qf - pf))
			if sp <= z[k] {
				k--
				continue
			}
			break
		}
		k++
		v[k] = int32(q)
		h[k] = hq
		if k == 0 {
			z[0] = math.Inf(-1)
		} else {
			z[k] = sp
		}
		z[k+1] = math.Inf(1)
	}
	if k < 0 {
		inf := math.Inf(1)
		for q := range d[:n] {
			d[q] = inf
		}
		return
	}
	k = 0
	for q := 0; q < n; q++ {
		if f[q] == 0 {
			d[q] = 0
			continue
		}
		qf := float64(q)
		for z[k+1] < qf {
			k++
		}
		p := int(v[k])
		t := float64(q-p) * s
		d[q] = float64(t*t) + f[p] // the conversion forbids a fused multiply-add
	}
}
