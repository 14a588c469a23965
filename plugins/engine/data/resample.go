package data

import (
	"fmt"
	"math"

	"amid/viewer/volume"
)

// maxResampleFactor bounds the zoom along one axis: a larger factor is almost always a
// wrong spacing in a header (e.g. 0.001 mm) and would allocate a huge grid.
const maxResampleFactor = 64

// Resample returns v on a grid of the given spacing with the same origin and direction and
// dims round(extent/spacing) (at least 1), where extent = dims·spacing. Output voxel i lies
// at input index i·spacing/v.Spacing. Images (label false) are interpolated trilinearly
// into float32, clamping to the edge voxels; label maps use the nearest voxel and keep their
// element type. An axis of one voxel is copied along that axis.
func Resample(v *volume.Volume, spacing [3]float64, label bool) (*volume.Volume, error) {
	if err := v.Validate(); err != nil {
		return nil, err
	}
	var dims [3]int
	for a := range 3 {
		s := spacing[a]
		if !(s > 0) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("%w: target spacing %v along axis %d", volume.ErrGeometry, s, a)
		}
		dims[a] = max(1, int(math.Round(float64(v.Dims[a])*v.Spacing[a]/s)))
	}
	return ResampleTo(v, dims, spacing, label)
}

// ResampleTo is [Resample] onto a grid of the given dims and spacing (same origin and
// direction), e.g. back to an image's own grid after working on a resampled one.
func ResampleTo(v *volume.Volume, dims3 [3]int, spacing [3]float64, label bool) (*volume.Volume, error) {
	if err := v.Validate(); err != nil {
		return nil, err
	}
	var dims [4]int
	var scale [3]float64
	for a := range 3 {
		s := spacing[a]
		if !(s > 0) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("%w: target spacing %v along axis %d", volume.ErrGeometry, s, a)
		}
		f := v.Spacing[a] / s
		if f > maxResampleFactor || f < 1.0/maxResampleFactor {
			return nil, fmt.Errorf("%w: resampling axis %d from %v to %v mm is a factor %.3g, beyond 1/%d..%d", volume.ErrGeometry, a, v.Spacing[a], s, f, maxResampleFactor, maxResampleFactor)
		}
		dims[a] = dims3[a]
		scale[a] = s / v.Spacing[a]
	}
	dims[3] = v.Dims[3]
	t := volume.Float32
	if label {
		t = v.DType()
	}
	out, err := volume.New(t, dims)
	if err != nil {
		return nil, err
	}
	out.Spacing, out.Origin, out.Direction = spacing, v.Origin, v.Direction
	C := dims[3]
	if label {
		var ix [3][]int
		for a := range 3 {
			ix[a] = make([]int, dims[a])
			for i := range ix[a] {
				ix[a][i] = min(v.Dims[a]-1, int(math.Round(float64(i)*scale[a])))
			}
		}
		o := 0
		for z := range dims[2] {
			for y := range dims[1] {
				for x := range dims[0] {
					for c := range C {
						out.SetIndex(o, v.AtIndex(v.Index(ix[0][x], ix[1][y], ix[2][z], c)))
						o++
					}
				}
			}
		}
		return out, nil
	}
	type tap struct {
		i0, i1 int
		w      float32
	}
	var taps [3][]tap
	for a := range 3 {
		taps[a] = make([]tap, dims[a])
		n := v.Dims[a]
		for i := range taps[a] {
			p := float64(i) * scale[a]
			i0 := int(math.Floor(p))
			w := p - float64(i0)
			if i0 >= n-1 {
				i0, w = n-1, 0
			}
			taps[a][i] = tap{i0, min(i0+1, n-1), float32(w)}
		}
	}
	src := v.Float32()
	dst := out.Data.([]float32)
	at := func(x, y, z, c int) float32 { return src[v.Index(x, y, z, c)] }
	o := 0
	for z := range dims[2] {
		tz := taps[2][z]
		for y := range dims[1] {
			ty := taps[1][y]
			for x := range dims[0] {
				tx := taps[0][x]
				for c := range C {
					c00 := at(tx.i0, ty.i0, tz.i0, c)*(1-tx.w) + at(tx.i1, ty.i0, tz.i0, c)*tx.w
					c10 := at(tx.i0, ty.i1, tz.i0, c)*(1-tx.w) + at(tx.i1, ty.i1, tz.i0, c)*tx.w
					c01 := at(tx.i0, ty.i0, tz.i1, c)*(1-tx.w) + at(tx.i1, ty.i0, tz.i1, c)*tx.w
					c11 := at(tx.i0, ty.i1, tz.i1, c)*(1-tx.w) + at(tx.i1, ty.i1, tz.i1, c)*tx.w
					c0 := c00*(1-ty.w) + c10*ty.w
					c1 := c01*(1-ty.w) + c11*ty.w
					dst[o] = c0*(1-tz.w) + c1*tz.w
					o++
				}
			}
		}
	}
	return out, nil
}
