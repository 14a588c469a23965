package grade

import (
	"fmt"
	"math"

	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// vol is a 3D single-channel image read for grading, with its voxel values cast the way
// the graders cast them.
type vol struct {
	v    *volume.Volume
	dims [3]int
}

// readVol reads a 3D image with imageio (NIfTI, MetaImage, NRRD, ...).
func readVol(path string) (*vol, error) {
	v, err := imageio.Read(path)
	if err != nil {
		return nil, err
	}
	if v.Dims[3] != 1 {
		return nil, fmt.Errorf("%s: %d channels, a mask has one", path, v.Dims[3])
	}
	return &vol{v: v, dims: [3]int{v.Dims[0], v.Dims[1], v.Dims[2]}}, nil
}

func (a *vol) n() int { return a.dims[0] * a.dims[1] * a.dims[2] }

// volToInt64 truncates toward zero as a C cast does; NaN and infinities become 0.
func volToInt64(f float64) int64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return int64(f)
}

// uint8s is SimpleITK's Cast to sitkUInt8 (static_cast: integers wrap, floats truncate).
func (a *vol) uint8s() []uint8 {
	out := make([]uint8, a.n())
	if d, ok := a.v.Data.([]uint8); ok {
		copy(out, d)
		return out
	}
	for i := range out {
		out[i] = uint8(volToInt64(a.v.AtIndex(i)))
	}
	return out
}

// where returns 1 where keep(value) holds.
func (a *vol) where(keep func(float64) bool) []uint8 {
	out := make([]uint8, a.n())
	for i := range out {
		if keep(a.v.AtIndex(i)) {
			out[i] = 1
		}
	}
	return out
}

func volNonzero(f float64) bool  { return f != 0 }
func volPositive(f float64) bool { return f > 0 }

// zoomNearest resamples a (X, Y, Z) grid to dst as scipy.ndimage.zoom(order=0) does when
// the graders fit a prediction to the ground-truth shape: output index o of an axis reads
// input index round(o·(n_in−1)/(n_out−1)), half rounding away from zero.
func zoomNearest(src []uint8, from, to [3]int) []uint8 {
	var idx [3][]int
	for a := 0; a < 3; a++ {
		idx[a] = make([]int, to[a])
		for o := range idx[a] {
			if to[a] > 1 {
				x := float64(o) * float64(from[a]-1) / float64(to[a]-1)
				idx[a][o] = min(int(math.Floor(x+0.5)), from[a]-1)
			}
		}
	}
	out := make([]uint8, to[0]*to[1]*to[2])
	for z := 0; z < to[2]; z++ {
		for y := 0; y < to[1]; y++ {
			s := (idx[2][z]*from[1] + idx[1][y]) * from[0]
			d := (z*to[1] + y) * to[0]
			for x := 0; x < to[0]; x++ {
				out[d+x] = src[s+idx[0][x]]
			}
		}
	}
	return out
}

// resampleLike maps pred onto the grid of ref as SimpleITK's ResampleImageFilter with the
// reference image, nearest-neighbour interpolation and default value 0 does: each
// reference voxel takes the prediction voxel nearest to the same physical point.
func resampleLike(pred, ref *vol, values []uint8) []uint8 {
	out := make([]uint8, ref.n())
	i := 0
	for z := 0; z < ref.dims[2]; z++ {
		for y := 0; y < ref.dims[1]; y++ {
			for x := 0; x < ref.dims[0]; x++ {
				w := ref.v.VoxelToWorld([3]float64{float64(x), float64(y), float64(z)})
				c := pred.v.WorldToVoxel(w)
				px, py, pz := int(math.Floor(c[0]+0.5)), int(math.Floor(c[1]+0.5)), int(math.Floor(c[2]+0.5))
				if px >= 0 && py >= 0 && pz >= 0 && px < pred.dims[0] && py < pred.dims[1] && pz < pred.dims[2] {
					out[i] = values[(pz*pred.dims[1]+py)*pred.dims[0]+px]
				}
				i++
			}
		}
	}
	return out
}
