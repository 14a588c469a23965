package main

import (
	"fmt"
	"math"
	"math/rand/v2"

	"amid/plugins/engine/data"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
)

// item is a 2D training case on its working grid, loaded on first use.
type item struct {
	c    protocol.Case
	img  *planes
	ann  *taskspec.Annotation
	boxs []wbox   // boxes in working pixels
	pts  []wpoint // points in working pixels
}

// wbox is a box in working pixels.
type wbox struct {
	x, y, w, h float64
	attrs      []int
}

// wpoint is a point in working pixels with its class index.
type wpoint struct {
	x, y  float64
	class int
}

// loader2D prepares the 2D cases of a mode and cuts training samples from them.
type loader2D struct {
	mode     string
	spec     *taskspec.Spec
	cfg      config
	channels int
	items    []*item
	refSize  [2]float64 // boxes: mean training box size in working pixels
}

// newLoader2D checks every case's label (so that bad input fails at once, naming the
// case) and returns a loader that reads images on first use.
func newLoader2D(cases []protocol.Case, s *taskspec.Spec, mode string, c config, channels int) (*loader2D, error) {
	if len(cases) == 0 {
		return nil, fmt.Errorf("%w: no training cases", ErrInput)
	}
	l := &loader2D{mode: mode, spec: s, cfg: c, channels: channels}
	for _, k := range cases {
		if len(k.Images) == 0 {
			return nil, fmt.Errorf("%w: case %s has no image file", ErrInput, k.ID)
		}
		a, err := readLabel(k.ID, k.Label, s, mode)
		if err != nil {
			return nil, err
		}
		l.items = append(l.items, &item{c: k, ann: a})
	}
	return l, nil
}

// workDims is the working grid (X, Y, Z) of an image of dims voxels.
func workDims(mode string, c config, dims [3]int) [3]int {
	if mode == modePoints {
		return [3]int{max(1, int(math.Round(float64(dims[0])*c.Scale))), max(1, int(math.Round(float64(dims[1])*c.Scale))), 1}
	}
	return c.sizeXYZ()
}

// load reads a case's image onto its working grid and maps its objects there.
func (l *loader2D) load(it *item) error {
	if it.img != nil {
		return nil
	}
	v, err := data.ReadChannels(it.c.Images)
	if err != nil {
		return fmt.Errorf("case %s: %w", it.c.ID, err)
	}
	dims := [3]int{v.Dims[0], v.Dims[1], v.Dims[2]}
	if dims[2] != 1 {
		return fmt.Errorf("%w: case %s: image %s has %d slices, a 2-D detection task takes 2-D images", ErrInput, it.c.ID, it.c.Images[0], dims[2])
	}
	if err := checkInside(it.c.ID, it.c.Label, it.ann, dims); err != nil {
		return err
	}
	p, err := prepare(v, l.channels, workDims(l.mode, l.cfg, dims))
	if err != nil {
		return fmt.Errorf("case %s: image %s: %w", it.c.ID, it.c.Images[0], err)
	}
	sx, sy := p.scale[0], p.scale[1]
	for _, b := range it.ann.Boxes {
		// Clip to the image (a box may reach edgeTol past it).
		x0, y0 := max(b.X, 0), max(b.Y, 0)
		x1, y1 := min(b.X+b.W, float64(dims[0])), min(b.Y+b.H, float64(dims[1]))
		wb := wbox{x: x0 * sx, y: y0 * sy, w: (x1 - x0) * sx, h: (y1 - y0) * sy}
		for _, at := range l.spec.Attributes {
			wb.attrs = append(wb.attrs, b.Attrs[at.Name])
		}
		if wb.w > 0 && wb.h > 0 {
			it.boxs = append(it.boxs, wb)
		}
	}
	for _, q := range it.ann.Points {
		it.pts = append(it.pts, wpoint{x: q.X * sx, y: q.Y * sy, class: classIndex(l.spec.Points, q.Class)})
	}
	it.img = p
	return nil
}

func classIndex(classes []string, c string) int {
	for i, v := range classes {
		if v == c {
			return i
		}
	}
	return -1
}

// prime loads every case (for the boxes mode's reference size) and measures it.
func (l *loader2D) prime() error {
	var sw, sh float64
	var n int
	for _, it := range l.items {
		if err := l.load(it); err != nil {
			return err
		}
		for _, b := range it.boxs {
			sw += math.Log(b.w)
			sh += math.Log(b.h)
			n++
		}
	}
	if n > 0 {
		l.refSize = [2]float64{math.Exp(sw / float64(n)), math.Exp(sh / float64(n))}
	}
	return nil
}

// sample fills in (C planes of the patch) and t with a random training sample.
func (l *loader2D) sample(r *rand.Rand, in []float32, t *target) error {
	it := l.items[r.IntN(len(l.items))]
	if err := l.load(it); err != nil {
		return err
	}
	P := l.cfg.sizeXYZ()
	W, H := P[0], P[1]
	S := W * H
	img := it.img
	IW, IH := img.dims[0], img.dims[1]
	// The patch's top-left corner in the image: a random shift of up to 1/16 of the
	// working image (boxes), or a random crop (points; centred when the image is smaller).
	var ox, oy int
	if l.mode == modeBoxes {
		ox, oy = r.IntN(W/8+1)-W/16, r.IntN(H/8+1)-H/16
	} else {
		ox, oy = cropStart(r, IW, W), cropStart(r, IH, H)
	}
	gain, bias := float32(0.9+0.2*r.Float64()), float32(0.2*r.Float64()-0.1)
	if l.mode == modeBoxes {
		coords(in[l.channels*S:], W, H, ox, oy)
	}
	for c := range l.channels {
		src, dst := img.data[c*IW*IH:(c+1)*IW*IH], in[c*S:(c+1)*S]
		for y := range H {
			sy := y + oy
			for x := range W {
				sx := x + ox
				v := float32(0)
				if sx >= 0 && sx < IW && sy >= 0 && sy < IH {
					v = src[sy*IW+sx]*gain + bias
				}
				dst[y*W+x] = v
			}
		}
	}
	K := len(t.heat) / S
	clear(t.heat)
	t.objs, t.nbr = t.objs[:0], t.nbr[:0]
	// Flips and quarter turns of a points patch: applied to the pixels below and to the
	// point coordinates here.
	flipX, flipY, turn := false, false, false
	if l.mode == modePoints && l.cfg.Flip {
		flipX, flipY, turn = r.IntN(2) == 1, r.IntN(2) == 1, W == H && r.IntN(2) == 1
	}
	switch l.mode {
	case modeBoxes:
		for _, b := range it.boxs {
			cx, cy := b.x+b.w/2-float64(ox), b.y+b.h/2-float64(oy)
			ix, iy := int(math.Floor(cx)), int(math.Floor(cy))
			if ix < 0 || iy < 0 || ix >= W || iy >= H {
				continue
			}
			// TTFNet's elliptic Gaussian: σ = 0.54·size/6.
			render(t.heat, W, H, ix, iy, max(0.8, 0.09*b.w), max(0.8, 0.09*b.h))
			o := object{cell: iy*W + ix, off: [2]float32{float32(cx - float64(ix)), float32(cy - float64(iy))},
				size:  [2]float32{float32(math.Log(b.w / l.refSize[0])), float32(math.Log(b.h / l.refSize[1]))},
				attrs: b.attrs}
			t.objs = append(t.objs, o)
			t.nbr = append(t.nbr, neighbours(o.cell, W, H))
		}
	case modePoints:
		for _, q := range it.pts {
			ix, iy := int(math.Floor(q.x))-ox, int(math.Floor(q.y))-oy
			if ix < 0 || iy < 0 || ix >= W || iy >= H || q.class < 0 || q.class >= K {
				continue
			}
			ix, iy = orient(ix, iy, W, H, flipX, flipY, turn)
			render(t.heat[q.class*S:(q.class+1)*S], W, H, ix, iy, l.cfg.Sigma, l.cfg.Sigma)
		}
		if flipX || flipY || turn {
			tmp := make([]float32, S)
			for c := range l.channels {
				p := in[c*S : (c+1)*S]
				copy(tmp, p)
				for y := range H {
					for x := range W {
						nx, ny := orient(x, y, W, H, flipX, flipY, turn)
						p[ny*W+nx] = tmp[y*W+x]
					}
				}
			}
		}
	}
	return nil
}

// coordChannels is the number of coordinate channels the centernet network takes after
// the image: quadrant and tooth number depend on where a tooth lies in the image, which a
// convolution cannot see by itself (CoordConv, Liu et al. 2018).
const coordChannels = 2

// coords writes the coordinate channels of a w×h patch whose top-left pixel is (ox, oy)
// of a w×h working image: x and y of each pixel's centre, scaled to [−1, 1].
func coords(dst []float32, w, h, ox, oy int) {
	S := w * h
	for y := range h {
		for x := range w {
			dst[y*w+x] = float32(2*(float64(x+ox)+0.5)/float64(w) - 1)
			dst[S+y*w+x] = float32(2*(float64(y+oy)+0.5)/float64(h) - 1)
		}
	}
}

// orient maps pixel (x, y) of a w×h patch through the flips and, for a square patch, a
// transposition.
func orient(x, y, w, h int, flipX, flipY, turn bool) (int, int) {
	if flipX {
		x = w - 1 - x
	}
	if flipY {
		y = h - 1 - y
	}
	if turn {
		x, y = y, x
	}
	return x, y
}

// cropStart is a random start of a window of p along an axis of n (centred when n ≤ p).
func cropStart(r *rand.Rand, n, p int) int {
	if n <= p {
		return -(p - n) / 2
	}
	return r.IntN(n - p + 1)
}
