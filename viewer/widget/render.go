package widget

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"math"

	"amid/viewer/volume"
)

// Window is a display window: values Level−Width/2 and below are black, Level+Width/2 and
// above white, linear between (gray = round((x − (Level − Width/2))·255/Width), clamped).
type Window struct{ Width, Level float64 }

// Overlay is how a label volume is drawn over the image.
type Overlay struct {
	Labels  *volume.Volume // integer labels on the image's grid; nil draws no overlay
	Truth   *volume.Volume // when set, Labels is a prediction drawn as a difference to Truth
	Colors  []color.RGBA   // colour of each label value; values past the end reuse 1..len−1
	Opacity float64        // 0..1, multiplied with each colour's alpha
	Hidden  []bool         // Hidden[k] hides label k; nil or short shows all
	Outline bool           // draw only label borders (4-neighbourhood) instead of filling
}

// Difference-view colours: a false positive is labelled in the prediction but background in
// the truth, a false negative the reverse, and a wrong class labelled differently in both.
var (
	FPColor    = color.RGBA{255, 40, 40, 255}
	FNColor    = color.RGBA{40, 120, 255, 255}
	WrongColor = color.RGBA{255, 220, 0, 255}
)

// Params say what to render.
type Params struct {
	Plane   Plane
	Slice   int
	Channel int // the channel shown in gray; ignored with RGB
	// RGB draws channels 0, 1, 2 as red, green and blue, each through Window (a pathology
	// tile or a photograph: uint8 with Window{255, 127.5} shows the stored colours). The
	// volume needs at least three channels.
	RGB    bool
	Window Window
	// Invert draws the window's low end white and its high end black (bone and X-ray
	// reading).
	Invert  bool
	Overlay Overlay
}

// grayKey is what a gray table depends on.
type grayKey struct {
	w      Window
	invert bool
}

// Renderer renders slices into a buffer it reuses: after the first render of a given size,
// Render allocates nothing. The returned image is valid until the next Render call.
type Renderer struct {
	img    image.RGBA
	pix    []uint8
	lab    []int32
	truth  []int32
	mix    [256]mix // blend terms of labels 0..255 for the current overlay
	lut    []uint8  // gray of every 16-bit value under lutWin, indexed by the value's bits
	lutWin grayKey
	lutT   volume.DType
	// lut8 is the window of every uint8 value, for RGB tiles.
	lut8    [256]uint8
	lut8Win grayKey
	lut8Set bool
}

// mix holds a label's premultiplied colour and its remaining image weight: a blended channel
// is (image·keep + c + 127) / 255. keep = 255 means the label is not drawn.
type mix struct{ r, g, b, keep uint32 }

// ErrParams reports render parameters that do not fit the volume.
var ErrParams = errors.New("invalid render parameters")

// Render draws p's slice of v. It fails, without panicking, when the volume does not
// validate, the slice or channel is out of range, or the overlay is not an integer volume
// on v's grid.
func (r *Renderer) Render(v *volume.Volume, p *Params) (*image.RGBA, error) {
	if v == nil || volume.DataLen(v.Data) != v.Len() || v.Len() == 0 {
		return nil, fmt.Errorf("%w: image data does not match its dimensions", ErrParams)
	}
	l := axes(v, p.Plane)
	if p.Slice < 0 || p.Slice >= l.N {
		return nil, fmt.Errorf("%w: %v slice %d outside 0..%d", ErrParams, p.Plane, p.Slice, l.N-1)
	}
	if p.Channel < 0 || p.Channel >= v.Dims[3] {
		return nil, fmt.Errorf("%w: channel %d outside 0..%d", ErrParams, p.Channel, v.Dims[3]-1)
	}
	if p.RGB && v.Dims[3] < 3 {
		return nil, fmt.Errorf("%w: RGB needs 3 channels, the image has %d", ErrParams, v.Dims[3])
	}
	n := l.W * l.H
	if cap(r.pix) < 4*n {
		r.pix = make([]uint8, 4*n)
	}
	r.img.Pix = r.pix[:4*n]
	r.img.Stride = 4 * l.W
	r.img.Rect = image.Rect(0, 0, l.W, l.H)

	c := v.Dims[3]
	st := [3]int{c, v.Dims[0] * c, v.Dims[0] * v.Dims[1] * c}
	base, du, dv := l.steps(st, p.Slice)
	lo, scale := windowCoef(p.Window)
	if p.Invert {
		// The window's high end maps to 0 and its low end to 255: grayOf's clamps hold.
		lo, scale = lo+255/scale, -scale
	}
	key := grayKey{p.Window, p.Invert}
	if p.RGB {
		if err := r.color(v, key, l.W, l.H, base, du, dv, lo, scale); err != nil {
			return nil, err
		}
	} else if err := r.gray(v, key, l.W, l.H, base+p.Channel, du, dv, lo, scale); err != nil {
		return nil, err
	}
	o := &p.Overlay
	if o.Labels == nil {
		return &r.img, nil
	}
	if cap(r.lab) < n {
		r.lab = make([]int32, n)
	}
	r.lab = r.lab[:n]
	if err := labelSlice(r.lab, o.Labels, v, &l, p.Slice); err != nil {
		return nil, fmt.Errorf("labels: %w", err)
	}
	if o.Truth != nil {
		if cap(r.truth) < n {
			r.truth = make([]int32, n)
		}
		r.truth = r.truth[:n]
		if err := labelSlice(r.truth, o.Truth, v, &l, p.Slice); err != nil {
			return nil, fmt.Errorf("truth labels: %w", err)
		}
		difference(r.img.Pix, r.lab, r.truth, l.W, l.H, o)
		return &r.img, nil
	}
	r.blendLabels(l.W, l.H, o)
	return &r.img, nil
}

// gray draws one channel in gray levels.
func (r *Renderer) gray(v *volume.Volume, win grayKey, w, h, base, du, dv int, lo, scale float32) error {
	switch d := v.Data.(type) {
	case []uint8:
		gray(r.img.Pix, d, w, h, base, du, dv, lo, scale)
	case []int8:
		gray(r.img.Pix, d, w, h, base, du, dv, lo, scale)
	case []uint16:
		lookup(r.img.Pix, d, r.table(volume.Uint16, win, lo, scale), w, h, base, du, dv)
	case []int16:
		lookup(r.img.Pix, d, r.table(volume.Int16, win, lo, scale), w, h, base, du, dv)
	case []uint32:
		gray(r.img.Pix, d, w, h, base, du, dv, lo, scale)
	case []int32:
		gray(r.img.Pix, d, w, h, base, du, dv, lo, scale)
	case []float32:
		gray(r.img.Pix, d, w, h, base, du, dv, lo, scale)
	case []float64:
		gray(r.img.Pix, d, w, h, base, du, dv, lo, scale)
	default:
		return fmt.Errorf("%w: image data of Go type %T", ErrParams, v.Data)
	}
	return nil
}

// color draws channels 0..2 as red, green and blue.
func (r *Renderer) color(v *volume.Volume, win grayKey, w, h, base, du, dv int, lo, scale float32) error {
	switch d := v.Data.(type) {
	case []uint8:
		if r.lut8Win != win || !r.lut8Set {
			for i := range r.lut8 {
				r.lut8[i] = grayOf(float32(i), lo, scale)
			}
			r.lut8Win, r.lut8Set = win, true
		}
		rgb8(r.img.Pix, d, &r.lut8, w, h, base, du, dv)
	case []int8:
		rgb(r.img.Pix, d, w, h, base, du, dv, lo, scale)
	case []uint16:
		rgb(r.img.Pix, d, w, h, base, du, dv, lo, scale)
	case []int16:
		rgb(r.img.Pix, d, w, h, base, du, dv, lo, scale)
	case []uint32:
		rgb(r.img.Pix, d, w, h, base, du, dv, lo, scale)
	case []int32:
		rgb(r.img.Pix, d, w, h, base, du, dv, lo, scale)
	case []float32:
		rgb(r.img.Pix, d, w, h, base, du, dv, lo, scale)
	case []float64:
		rgb(r.img.Pix, d, w, h, base, du, dv, lo, scale)
	default:
		return fmt.Errorf("%w: image data of Go type %T", ErrParams, v.Data)
	}
	return nil
}

func rgb8(pix []uint8, d []uint8, lut *[256]uint8, w, h, base, du, dv int) {
	o := 0
	for y := 0; y < h; y++ {
		i := base + y*dv
		row := pix[o : o+4*w : o+4*w]
		for x := 0; x < len(row); x += 4 {
			row[x], row[x+1], row[x+2], row[x+3] = lut[d[i]], lut[d[i+1]], lut[d[i+2]], 255
			i += du
		}
		o += 4 * w
	}
}

func rgb[T number](pix []uint8, d []T, w, h, base, du, dv int, lo, scale float32) {
	o := 0
	for y := 0; y < h; y++ {
		i := base + y*dv
		row := pix[o : o+4*w : o+4*w]
		for x := 0; x < len(row); x += 4 {
			row[x] = grayOf(float32(d[i]), lo, scale)
			row[x+1] = grayOf(float32(d[i+1]), lo, scale)
			row[x+2] = grayOf(float32(d[i+2]), lo, scale)
			row[x+3] = 255
			i += du
		}
		o += 4 * w
	}
}

func windowCoef(w Window) (lo, scale float32) {
	width := w.Width
	if !(width > 0) || math.IsInf(width, 0) {
		width = 1
	}
	return float32(w.Level - width/2), float32(255 / width)
}

// table returns the gray of every value of a 16-bit type t under window w, indexed by the
// value's bit pattern; it is rebuilt only when w or t changes.
func (r *Renderer) table(t volume.DType, w grayKey, lo, scale float32) []uint8 {
	if r.lut != nil && r.lutWin == w && r.lutT == t {
		return r.lut
	}
	if r.lut == nil {
		r.lut = make([]uint8, 1<<16)
	}
	for i := range r.lut {
		x := float32(uint16(i))
		if t == volume.Int16 {
			x = float32(int16(uint16(i)))
		}
		r.lut[i] = grayOf(x, lo, scale)
	}
	r.lutWin, r.lutT = w, t
	return r.lut
}

func lookup[T ~uint16 | ~int16](pix []uint8, d []T, lut []uint8, w, h, base, du, dv int) {
	lut = lut[:1<<16]
	o := 0
	for y := 0; y < h; y++ {
		i := base + y*dv
		row := pix[o : o+4*w : o+4*w]
		for x := 0; x < len(row); x += 4 {
			b := lut[uint16(d[i])]
			row[x], row[x+1], row[x+2], row[x+3] = b, b, b, 255
			i += du
		}
		o += 4 * w
	}
}

func grayOf(x, lo, scale float32) uint8 {
	g := (x - lo) * scale
	switch {
	case g >= 255:
		return 255
	case g > 0:
		return uint8(g + 0.5)
	}
	return 0 // NaN and negatives are black
}

type number interface {
	~uint8 | ~int8 | ~uint16 | ~int16 | ~uint32 | ~int32 | ~float32 | ~float64
}

func gray[T number](pix []uint8, d []T, w, h, base, du, dv int, lo, scale float32) {
	o := 0
	for y := 0; y < h; y++ {
		i := base + y*dv
		row := pix[o : o+4*w : o+4*w]
		for x := 0; x < len(row); x += 4 {
			b := grayOf(float32(d[i]), lo, scale)
			row[x], row[x+1], row[x+2], row[x+3] = b, b, b, 255
			i += du
		}
		o += 4 * w
	}
}

// labelSlice copies the labels shown on screen into dst (W·H, row-major).
func labelSlice(dst []int32, lv, img *volume.Volume, l *Layout, s int) error {
	if lv.Dims[0] != img.Dims[0] || lv.Dims[1] != img.Dims[1] || lv.Dims[2] != img.Dims[2] || lv.Dims[3] != 1 {
		return fmt.Errorf("%w: label dims %v do not match image dims %v", ErrParams, lv.Dims, img.Dims)
	}
	if volume.DataLen(lv.Data) != lv.Len() {
		return fmt.Errorf("%w: label data does not match its dimensions", ErrParams)
	}
	st := [3]int{1, lv.Dims[0], lv.Dims[0] * lv.Dims[1]}
	base, du, dv := l.steps(st, s)
	switch d := lv.Data.(type) {
	case []uint8:
		gather(dst, d, l.W, l.H, base, du, dv)
	case []int8:
		gather(dst, d, l.W, l.H, base, du, dv)
	case []uint16:
		gather(dst, d, l.W, l.H, base, du, dv)
	case []int16:
		gather(dst, d, l.W, l.H, base, du, dv)
	case []uint32:
		gather(dst, d, l.W, l.H, base, du, dv)
	case []int32:
		gather(dst, d, l.W, l.H, base, du, dv)
	default:
		return fmt.Errorf("%w: labels must be integers, not %v", ErrParams, lv.DType())
	}
	return nil
}

func gather[T ~uint8 | ~int8 | ~uint16 | ~int16 | ~uint32 | ~int32](dst []int32, d []T, w, h, base, du, dv int) {
	o := 0
	for y := 0; y < h; y++ {
		i := base + y*dv
		row := dst[o : o+w : o+w]
		for x := range row {
			row[x] = int32(d[i])
			i += du
		}
		o += w
	}
}

// colorOf returns label k's colour; labels past the table wrap onto 1..len−1.
func colorOf(cols []color.RGBA, k int32) color.RGBA {
	n := int32(len(cols))
	switch {
	case k <= 0 || n < 2:
		if k >= 0 && k < n {
			return cols[k]
		}
		return color.RGBA{}
	case k < n:
		return cols[k]
	}
	return cols[1+(k-1)%(n-1)]
}

// blend mixes c over pixel p with alpha a (0..255).
func blend(p []uint8, c color.RGBA, a uint32) {
	na := 255 - a
	p[0] = uint8((uint32(p[0])*na + uint32(c.R)*a + 127) / 255)
	p[1] = uint8((uint32(p[1])*na + uint32(c.G)*a + 127) / 255)
	p[2] = uint8((uint32(p[2])*na + uint32(c.B)*a + 127) / 255)
}

func opacity8(o float64) uint32 {
	if !(o > 0) {
		return 0
	}
	if o >= 1 {
		return 255
	}
	return uint32(o*255 + 0.5)
}

func (r *Renderer) blendLabels(w, h int, o *Overlay) {
	op := opacity8(o.Opacity)
	if op == 0 || len(o.Colors) == 0 {
		return
	}
	for k := range r.mix {
		a := uint32(0)
		if k > 0 && !(k < len(o.Hidden) && o.Hidden[k]) {
			c := colorOf(o.Colors, int32(k))
			a = (uint32(c.A)*op + 127) / 255
			r.mix[k] = mix{uint32(c.R) * a, uint32(c.G) * a, uint32(c.B) * a, 255 - a}
			continue
		}
		r.mix[k] = mix{keep: 255 - a}
	}
	lab, pix := r.lab, r.img.Pix
	for y := 0; y < h; y++ {
		row := lab[y*w : y*w+w]
		prow := pix[4*y*w : 4*(y*w+w)]
		for x, k := range row {
			if k == 0 {
				continue
			}
			var m mix
			if uint32(k) < 256 {
				m = r.mix[k]
			} else {
				if k < 0 || (int(k) < len(o.Hidden) && o.Hidden[k]) {
					continue
				}
				c := colorOf(o.Colors, k)
				a := (uint32(c.A)*op + 127) / 255
				m = mix{uint32(c.R) * a, uint32(c.G) * a, uint32(c.B) * a, 255 - a}
			}
			if m.keep == 255 || (o.Outline && !border(lab, w, h, x, y, k)) {
				continue
			}
			p := prow[4*x : 4*x+3 : 4*x+3]
			p[0] = div255(uint32(p[0])*m.keep + m.r + 127)
			p[1] = div255(uint32(p[1])*m.keep + m.g + 127)
			p[2] = div255(uint32(p[2])*m.keep + m.b + 127)
		}
	}
}

// div255 is x/255 for x < 255·256, every x whose quotient fits a byte (TestDiv255 checks
// them all); blends never exceed 255·255 + 127.
func div255(x uint32) uint8 { return uint8((x + 1 + (x >> 8)) >> 8) }

// border reports whether pixel (x, y) with label k touches another label or the image edge
// in its 4-neighbourhood.
func border(lab []int32, w, h, x, y int, k int32) bool {
	i := y*w + x
	return x == 0 || y == 0 || x == w-1 || y == h-1 ||
		lab[i-1] != k || lab[i+1] != k || lab[i-w] != k || lab[i+w] != k
}

func difference(pix []uint8, pred, truth []int32, w, h int, o *Overlay) {
	op := opacity8(o.Opacity)
	if op == 0 {
		return
	}
	for i, p := range pred {
		t := truth[i]
		if p == t {
			continue
		}
		if o.Outline && !diffBorder(pred, truth, w, h, i) {
			continue
		}
		c := WrongColor
		switch {
		case t == 0:
			c = FPColor
		case p == 0:
			c = FNColor
		}
		blend(pix[4*i:], c, (uint32(c.A)*op+127)/255)
	}
}

// diffBorder reports whether pixel i of a difference region touches a pixel whose
// (prediction, truth) pair differs, or the image edge.
func diffBorder(pred, truth []int32, w, h, i int) bool {
	x, y := i%w, i/w
	if x == 0 || y == 0 || x == w-1 || y == h-1 {
		return true
	}
	for _, j := range [4]int{i - 1, i + 1, i - w, i + w} {
		if pred[j] != pred[i] || truth[j] != truth[i] {
			return true
		}
	}
	return false
}
