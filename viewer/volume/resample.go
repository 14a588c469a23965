package volume

import (
	"fmt"
	"math"
)

// ResampleTo returns src's first channel on ref's grid (dims, spacing, origin, direction)
// as float32: each ref voxel takes the value of src at the same world position, by
// trilinear interpolation (linear) or the nearest voxel, and 0 outside src. It is how
// channels acquired on different grids (ISLES'22 FLAIR against DWI) are brought onto one.
func ResampleTo(src, ref *Volume, linear bool) (*Volume, error) {
	out, err := New(Float32, [4]int{ref.Dims[0], ref.Dims[1], ref.Dims[2], 1})
	if err != nil {
		return nil, fmt.Errorf("resample: %w", err)
	}
	out.Spacing, out.Origin, out.Direction = ref.Spacing, ref.Origin, ref.Direction
	dst := out.Data.([]float32)
	nx, ny, nz, nc := src.Dims[0], src.Dims[1], src.Dims[2], src.Dims[3]
	at := func(x, y, z int) float64 {
		if x < 0 || y < 0 || z < 0 || x >= nx || y >= ny || z >= nz {
			return 0
		}
		return src.AtIndex(((z*ny+y)*nx + x) * nc)
	}
	i := 0
	for z := range ref.Dims[2] {
		for y := range ref.Dims[1] {
			for x := range ref.Dims[0] {
				p := src.WorldToVoxel(ref.VoxelToWorld([3]float64{float64(x), float64(y), float64(z)}))
				var v float64
				if !linear {
					v = at(int(math.Round(p[0])), int(math.Round(p[1])), int(math.Round(p[2])))
				} else {
					x0, y0, z0 := math.Floor(p[0]), math.Floor(p[1]), math.Floor(p[2])
					fx, fy, fz := p[0]-x0, p[1]-y0, p[2]-z0
					ix, iy, iz := int(x0), int(y0), int(z0)
					for c := range 8 {
						dx, dy, dz := c&1, c>>1&1, c>>2&1
						w := lerpW(fx, dx) * lerpW(fy, dy) * lerpW(fz, dz)
						if w != 0 {
							v += w * at(ix+dx, iy+dy, iz+dz)
						}
					}
				}
				dst[i] = float32(v)
				i++
			}
		}
	}
	return out, nil
}

func lerpW(f float64, d int) float64 {
	if d == 1 {
		return f
	}
	return 1 - f
}
