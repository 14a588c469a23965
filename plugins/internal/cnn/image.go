package cnn

import (
	"errors"
	"fmt"
	"math"

	"amid/plugins/engine/data"
)

// ErrImage marks an image that does not fit the task (dimension, channels, values).
var ErrImage = errors.New("unusable image")

// ROI is a region of an image in fractions of its extent along X, Y and Z: [lo, hi) per
// axis with 0 ≤ lo < hi ≤ 1. The zero ROI is the whole image.
type ROI [3][2]float64

// Check reports a region that is not inside the unit cube or is empty.
func (r ROI) Check() error {
	if r == (ROI{}) {
		return nil
	}
	for a, p := range r {
		if !(p[0] >= 0 && p[0] < p[1] && p[1] <= 1) {
			return fmt.Errorf("roi axis %d [%g, %g) is not inside [0, 1] or is empty", a, p[0], p[1])
		}
	}
	return nil
}

// Image is a case's image on the model's grid: C planes of X·Y·Z float32 values, X fastest.
type Image struct {
	Grid [3]int // X, Y, Z
	C    int
	Data []float32
}

// Load reads a case's image (one file, which may hold several channels, or one
// single-channel file per channel on a common grid), checks it is a 2D image (one slice)
// when dims is 2 or a volume (more than one slice) when dims is 3, crops it to roi and
// resizes it to grid (X, Y, Z): averaging over each output voxel's footprint when
// shrinking, linear interpolation when growing. NaN or infinite values are an error.
func Load(paths []string, dims int, roi ROI, grid [3]int) (*Image, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: no image file", ErrImage)
	}
	v, err := data.ReadChannels(paths)
	if err != nil {
		return nil, err
	}
	switch {
	case dims == 3 && v.Dims[2] < 2:
		return nil, fmt.Errorf("%w: %s has %d slice, a 3D task needs a volume", ErrImage, paths[0], v.Dims[2])
	case dims == 2 && v.Dims[2] != 1:
		return nil, fmt.Errorf("%w: %s has %d slices, a 2D task takes single-slice images", ErrImage, paths[0], v.Dims[2])
	}
	if err := roi.Check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrImage, err)
	}
	for a := range 3 {
		if grid[a] < 1 {
			return nil, fmt.Errorf("%w: grid %v has an empty axis", ErrImage, grid)
		}
	}
	C := v.Dims[3]
	src := v.Float32()
	for i, x := range src {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("%w: %s has value %v at voxel %d", ErrImage, paths[0], x, i/C)
		}
	}
	// Channel planes of the region.
	var lo, size [3]int
	for a := range 3 {
		lo[a], size[a] = 0, v.Dims[a]
		if roi != (ROI{}) {
			lo[a] = int(math.Floor(roi[a][0] * float64(v.Dims[a])))
			hi := int(math.Ceil(roi[a][1] * float64(v.Dims[a])))
			size[a] = max(1, min(hi, v.Dims[a])-lo[a])
		}
	}
	n := size[0] * size[1] * size[2]
	planes := make([]float32, C*n)
	o := 0
	for z := range size[2] {
		for y := range size[1] {
			row := ((lo[2]+z)*v.Dims[1]+lo[1]+y)*v.Dims[0] + lo[0]
			for x := range size[0] {
				for c := range C {
					planes[c*n+o] = src[(row+x)*C+c]
				}
				o++
			}
		}
	}
	out := &Image{Grid: grid, C: C, Data: make([]float32, 0, C*grid[0]*grid[1]*grid[2])}
	for c := range C {
		out.Data = append(out.Data, Resize(planes[c*n:(c+1)*n], size, grid)...)
	}
	return out, nil
}

// Resize resamples one plane of X·Y·Z values (X fastest) from size to grid, one axis at a
// time: each output voxel averages the input voxels its footprint covers (weighted by the
// overlap) when an axis shrinks, and interpolates linearly between voxel centres when it
// grows.
func Resize(p []float32, size, grid [3]int) []float32 {
	cur := size
	for a := range 3 {
		if cur[a] == grid[a] {
			continue
		}
		taps := axisTaps(cur[a], grid[a])
		next := cur
		next[a] = grid[a]
		out := make([]float32, next[0]*next[1]*next[2])
		stride := [3]int{1, cur[0], cur[0] * cur[1]}
		ostride := [3]int{1, next[0], next[0] * next[1]}
		// Iterate over the two other axes.
		b, c := (a+1)%3, (a+2)%3
		for j := range cur[b] {
			for k := range cur[c] {
				base := j*stride[b] + k*stride[c]
				obase := j*ostride[b] + k*ostride[c]
				for i, t := range taps {
					var s float32
					for _, w := range t {
						s += w.w * p[base+w.i*stride[a]]
					}
					out[obase+i*ostride[a]] = s
				}
			}
		}
		p, cur = out, next
	}
	return p
}

type tap struct {
	i int
	w float32
}

// axisTaps are the input voxels and weights of each of m outputs from n inputs.
func axisTaps(n, m int) [][]tap {
	taps := make([][]tap, m)
	f := float64(n) / float64(m)
	for i := range taps {
		if m < n { // footprint [i·f, (i+1)·f)
			a, b := float64(i)*f, float64(i+1)*f
			for j := int(math.Floor(a)); j < n && float64(j) < b; j++ {
				w := math.Min(b, float64(j+1)) - math.Max(a, float64(j))
				if w > 0 {
					taps[i] = append(taps[i], tap{j, float32(w / f)})
				}
			}
			continue
		}
		x := (float64(i)+0.5)*f - 0.5
		x = math.Min(math.Max(x, 0), float64(n-1))
		j := int(math.Floor(x))
		w := x - float64(j)
		if j+1 < n && w > 0 {
			taps[i] = []tap{{j, float32(1 - w)}, {j + 1, float32(w)}}
		} else {
			taps[i] = []tap{{j, 1}}
		}
	}
	return taps
}
