package main

import (
	"errors"
	"fmt"
	"math"
	"os"

	"amid/plugins/engine/data"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// gray is a 2D image as the network sees it: one channel of W×H values divided by Scale
// (about [0, 1]), with the file's volume kept for its element type and geometry.
type gray struct {
	W, H  int
	Pix   []float32
	Scale float64
	Vol   *volume.Volume
}

// readGray reads a 2D image and converts it to one grey channel: RGB and RGBA by the luma
// PIL's convert('L') uses (the grader reads predictions that way), grey with alpha by its
// grey channel. 8-bit images are divided by 255; other types by the image's largest
// absolute value, so that every image of a pair can share its input's scale.
func readGray(path string) (*gray, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	v, err := imageio.Read(path)
	if err != nil {
		return nil, err
	}
	if v.Dims[2] != 1 {
		return nil, fmt.Errorf("%s has %d slices; the enhancement plugin takes 2D images", path, v.Dims[2])
	}
	W, H, C := v.Dims[0], v.Dims[1], v.Dims[3]
	if C < 1 || C > 4 {
		return nil, fmt.Errorf("%s has %d channels; want 1 (grey) to 4 (RGBA)", path, C)
	}
	raw := v.Float32()
	g := &gray{W: W, H: H, Pix: make([]float32, W*H), Vol: v}
	for i := range g.Pix {
		px := raw[i*C:]
		switch {
		case C >= 3 && v.DType() == volume.Uint8:
			r, gg, b := uint32(px[0]), uint32(px[1]), uint32(px[2])
			g.Pix[i] = float32((r*19595 + gg*38470 + b*7471 + 0x8000) >> 16)
		case C >= 3:
			g.Pix[i] = float32(0.299*float64(px[0]) + 0.587*float64(px[1]) + 0.114*float64(px[2]))
		default:
			g.Pix[i] = px[0]
		}
		if f := float64(g.Pix[i]); math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%s: %w: value %v at pixel (%d, %d)", path, data.ErrNonFinite, f, i%W, i/W)
		}
	}
	g.Scale = 255
	if v.DType() != volume.Uint8 {
		g.Scale = 0
		for _, p := range g.Pix {
			g.Scale = max(g.Scale, math.Abs(float64(p)))
		}
		if g.Scale == 0 {
			g.Scale = 1
		}
	}
	return g, nil
}

// scaled is the image divided by s.
func (g *gray) scaled(s float64) []float32 {
	out := make([]float32, len(g.Pix))
	k := float32(1 / s)
	for i, v := range g.Pix {
		out[i] = v * k
	}
	return out
}

// errPair marks a case whose low- and high-quality images cannot be paired.
var errPair = errors.New("images do not pair")

// readPair reads a case's low-quality image and its high-quality target, which must have
// the same size; both are scaled by the low-quality image's scale.
func readPair(id, low, high string) (*gray, *gray, error) {
	if low == "" {
		return nil, nil, fmt.Errorf("case %s has no low-quality image", id)
	}
	if high == "" {
		return nil, nil, fmt.Errorf("case %s has no high-quality target image (Case.Label)", id)
	}
	a, err := readGray(low)
	if err != nil {
		return nil, nil, fmt.Errorf("case %s: low-quality image: %w", id, err)
	}
	b, err := readGray(high)
	if err != nil {
		return nil, nil, fmt.Errorf("case %s: high-quality target: %w", id, err)
	}
	if a.W != b.W || a.H != b.H {
		return nil, nil, fmt.Errorf("case %s: %w: low-quality image %s is %d×%d, target %s is %d×%d", id, errPair, low, a.W, a.H, high, b.W, b.H)
	}
	return a, b, nil
}

// pairSource loads a case for the data loader as one two-channel image: the scaled
// low-quality image and the scaled target, so that patches and flips cut both alike.
// Both are padded with 0 (black) where a patch leaves the image, as inference pads.
type pairSource struct{ id, low, high string }

func (s *pairSource) Name() string { return s.id }

func (s *pairSource) Load() (*data.Case, error) {
	a, b, err := readPair(s.id, s.low, s.high)
	if err != nil {
		return nil, err
	}
	img := append(a.scaled(a.Scale), b.scaled(a.Scale)...)
	return &data.Case{Name: s.id, Dims: [3]int{a.W, a.H, 1}, C: 2, Image: img, Min: []float32{0, 0}}, nil
}
