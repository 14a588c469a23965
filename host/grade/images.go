package grade

import (
	"fmt"
	"math"

	"amid/plugins/metrics"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// plane is one 2D image channel read from a file, as the Python graders see it after
// np.array(...)[..., 0] or a cast.
type plane struct {
	W, H, C int
	v       *volume.Volume
}

// readPlane reads a 2D image (Z = 1) with imageio.
func readPlane(path string) (*plane, error) {
	v, err := imageio.Read(path)
	if err != nil {
		return nil, err
	}
	if v.Dims[2] != 1 {
		return nil, fmt.Errorf("%s: %d slices, a 2D image has one", path, v.Dims[2])
	}
	return &plane{W: v.Dims[0], H: v.Dims[1], C: v.Dims[3], v: v}, nil
}

// int32s returns channel 0 cast as numpy's astype(np.int32) does: integers wrap, floats
// truncate toward zero.
func (p *plane) int32s() []int32 {
	n := p.W * p.H
	out := make([]int32, n)
	for i := 0; i < n; i++ {
		out[i] = int32(gradeToInt64(p.v.AtIndex(i * p.C)))
	}
	return out
}

// uint8s returns channel 0 cast as numpy's astype(np.uint8) does (wrapping).
func (p *plane) uint8s() []uint8 {
	n := p.W * p.H
	out := make([]uint8, n)
	for i := 0; i < n; i++ {
		out[i] = uint8(gradeToInt64(p.v.AtIndex(i * p.C)))
	}
	return out
}

func gradeToInt64(f float64) int64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return int64(f)
}

// grayPIL returns the image as PIL's Image.convert('L') gives it, as float64: 8-bit grey
// as is, RGB/RGBA by PIL's luma, grey+alpha by its grey, 16-bit grey clipped at 255
// (PIL's I;16 → L).
func (p *plane) grayPIL() (metrics.Image, error) {
	switch d := p.v.Data.(type) {
	case []uint8:
		return metrics.GrayPIL(d, p.W, p.H, p.C)
	case []uint16:
		if p.C == 1 {
			im := metrics.Image{W: p.W, H: p.H, Pix: make([]float64, len(d))}
			for i, x := range d {
				im.Pix[i] = float64(min(x, 255))
			}
			return im, nil
		}
	}
	return metrics.Image{}, fmt.Errorf("%s image with %d channels cannot be converted to 8-bit grey as the grader does", p.v.DType(), p.C)
}

// resizeNearestPIL resizes a w×h map to W×H as PIL's Image.resize(NEAREST) does: output
// pixel x takes source floor((x + 0.5)·w/W).
func resizeNearestPIL[T any](src []T, w, h, W, H int) []T {
	out := make([]T, W*H)
	xs := make([]int, W)
	for x := range xs {
		xs[x] = min(int((float64(x)+0.5)*float64(w)/float64(W)), w-1)
	}
	for y := 0; y < H; y++ {
		sy := min(int((float64(y)+0.5)*float64(h)/float64(H)), h-1)
		for x := 0; x < W; x++ {
			out[y*W+x] = src[sy*w+xs[x]]
		}
	}
	return out
}
