package widget

import (
	"image"
	"image/color"
	"math"
)

// MaxZoom is the largest magnification of a view over the fitted slice.
const MaxZoom = 64.0

// View is the zoom and pan of a slice: the slice, fitted to the view's area at Zoom 1, is
// magnified Zoom times and the slice point Center (slice pixel coordinates: screen pixel u
// covers [u, u+1)) is shown at the middle of the area. The zero View is the fitted slice,
// centred.
type View struct {
	Zoom   float64
	Center [2]float64
}

// Fitted reports whether v shows the whole slice fitted and centred in layout l.
func (v View) Fitted(l *Layout) bool {
	return v.Zoom <= 1 && v.Center == [2]float64{float64(l.W) / 2, float64(l.H) / 2} || v == View{}
}

// Geometry maps slice pixel coordinates to the view's area: view point (x, y) shows slice
// point ((x−OX)/SX, (y−OY)/SY).
type Geometry struct {
	W, H   float64 // the area's size
	SX, SY float64 // area units per slice pixel
	OX, OY float64 // where slice point (0, 0) lies
}

// NewGeometry places layout l's slice, under view v, in an area of w×h.
func NewGeometry(l *Layout, v View, w, h float64) Geometry {
	g := Geometry{W: w, H: h}
	if l.W == 0 || l.H == 0 || !(w > 0) || !(h > 0) {
		g.SX, g.SY = 1, 1
		return g
	}
	v = clampView(l, v)
	fit := math.Min(w/(float64(l.W)*l.PixelW), h/(float64(l.H)*l.PixelH))
	g.SX, g.SY = fit*l.PixelW*v.Zoom, fit*l.PixelH*v.Zoom
	g.OX, g.OY = w/2-v.Center[0]*g.SX, h/2-v.Center[1]*g.SY
	return g
}

// clampView limits the zoom to 1..MaxZoom and keeps the centre on the slice.
func clampView(l *Layout, v View) View {
	if v == (View{}) {
		return View{1, [2]float64{float64(l.W) / 2, float64(l.H) / 2}}
	}
	if !(v.Zoom >= 1) {
		v.Zoom = 1
	}
	v.Zoom = math.Min(v.Zoom, MaxZoom)
	for i, n := range [2]int{l.W, l.H} {
		c := v.Center[i]
		if math.IsNaN(c) {
			c = float64(n) / 2
		}
		v.Center[i] = math.Max(0, math.Min(float64(n), c))
	}
	return v
}

// ToSlice maps a view point to slice pixel coordinates.
func (g Geometry) ToSlice(x, y float64) (u, v float64) { return (x - g.OX) / g.SX, (y - g.OY) / g.SY }

// ToView maps slice pixel coordinates to a view point.
func (g Geometry) ToView(u, v float64) (x, y float64) { return g.OX + u*g.SX, g.OY + v*g.SY }

// Scaled is g in units k times smaller (k pixels per area unit).
func (g Geometry) Scaled(k float64) Geometry {
	return Geometry{g.W * k, g.H * k, g.SX * k, g.SY * k, g.OX * k, g.OY * k}
}

// ZoomAbout returns v zoomed by factor about view point (x, y), which keeps showing the same
// slice point (unless the zoom or the centre hit their limits).
func ZoomAbout(l *Layout, v View, w, h, x, y, factor float64) View {
	g := NewGeometry(l, v, w, h)
	u, s := g.ToSlice(x, y)
	v = clampView(l, v)
	z := math.Max(1, math.Min(MaxZoom, v.Zoom*factor))
	k := z / v.Zoom
	sx, sy := g.SX*k, g.SY*k
	// Keep (u, s) at (x, y): x = w/2 − cx·sx + u·sx.
	v.Zoom = z
	v.Center = [2]float64{u - (x-w/2)/sx, s - (y-h/2)/sy}
	return clampView(l, v)
}

// Pan returns v moved so that the slice follows a drag of (dx, dy) area units.
func Pan(l *Layout, v View, w, h, dx, dy float64) View {
	g := NewGeometry(l, v, w, h)
	v = clampView(l, v)
	v.Center[0] -= dx / g.SX
	v.Center[1] -= dy / g.SY
	return clampView(l, v)
}

// Mark is a box or a point drawn over the slices it crosses, in continuous voxel
// coordinates (voxel i covers [i, i+1) along each axis). A box spans Min..Max; a point has
// Min = Max along the axes it is placed on and is drawn as a dot.
type Mark struct {
	Min, Max [3]float64
	Point    bool
	Color    color.RGBA
	Score    float64 // marks scoring below the view's threshold are not drawn
	Text     string  // drawn beside a box (label and score); "" for none
}

// Placed is a mark's text placed by Compose, in the composed image's pixels.
type Placed struct {
	X, Y  float64
	Text  string
	Color color.RGBA
}

// MaxPlaced bounds the texts Compose places.
const MaxPlaced = 48

// Composer draws a rendered slice into a view's area under a zoom and pan, with marks on
// top, at the area's own resolution. It reuses its buffers: after the first compose of a
// given size, Compose allocates nothing.
type Composer struct {
	img    image.RGBA
	pix    []uint8
	xs, ys []int32
	// Placed are the texts of the last Compose; valid until the next.
	Placed []Placed
	placed [MaxPlaced]Placed
}

// Compose draws src (slice s of layout l, as Render returned it) into a w×h image under
// geometry g (in pixels of that image), then marks scoring at least threshold. Marks are
// drawn with a line width and dot radius of dot pixels (at least 1).
func (c *Composer) Compose(src *image.RGBA, l *Layout, s int, g Geometry, w, h int, marks []Mark, threshold float64, dot int) *image.RGBA {
	w, h = max(w, 1), max(h, 1)
	if cap(c.pix) < 4*w*h {
		c.pix = make([]uint8, 4*w*h)
	}
	if cap(c.xs) < w {
		c.xs = make([]int32, w)
	}
	if cap(c.ys) < h {
		c.ys = make([]int32, h)
	}
	c.img.Pix, c.img.Stride, c.img.Rect = c.pix[:4*w*h], 4*w, image.Rect(0, 0, w, h)
	xs, ys := c.xs[:w], c.ys[:h]
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	for x := range xs {
		u := math.Floor((float64(x) + 0.5 - g.OX) / g.SX)
		xs[x] = -1
		if u >= 0 && u < float64(sw) {
			xs[x] = int32(u)
		}
	}
	for y := range ys {
		v := math.Floor((float64(y) + 0.5 - g.OY) / g.SY)
		ys[y] = -1
		if v >= 0 && v < float64(sh) {
			ys[y] = int32(v)
		}
	}
	pix := c.img.Pix
	for y, sy := range ys {
		row := pix[4*y*w : 4*(y+1)*w : 4*(y+1)*w]
		if sy < 0 {
			for x := 0; x < len(row); x += 4 {
				row[x], row[x+1], row[x+2], row[x+3] = 0, 0, 0, 255
			}
			continue
		}
		srow := src.Pix[int(sy)*src.Stride : int(sy)*src.Stride+4*sw]
		for x, sx := range xs {
			o := 4 * x
			if sx < 0 {
				row[o], row[o+1], row[o+2], row[o+3] = 0, 0, 0, 255
				continue
			}
			i := 4 * int(sx)
			row[o], row[o+1], row[o+2], row[o+3] = srow[i], srow[i+1], srow[i+2], 255
		}
	}
	c.Placed = c.placed[:0]
	dot = max(dot, 1)
	// The slice's extent in the image: marks are clipped to it.
	x0, y0 := g.ToView(0, 0)
	x1, y1 := g.ToView(float64(sw), float64(sh))
	clip := image.Rect(int(math.Max(0, math.Floor(x0))), int(math.Max(0, math.Floor(y0))),
		int(math.Min(float64(w), math.Ceil(x1))), int(math.Min(float64(h), math.Ceil(y1))))
	for i := range marks {
		m := &marks[i]
		if m.Score < threshold {
			continue
		}
		u0, v0, u1, v1, ok := markRect(l, m, s)
		if !ok {
			continue
		}
		ax, ay := g.ToView(u0, v0)
		bx, by := g.ToView(u1, v1)
		if m.Point {
			c.dot(clip, int(math.Floor(ax)), int(math.Floor(ay)), dot+1, m.Color)
			continue
		}
		r := image.Rect(int(math.Round(ax)), int(math.Round(ay)), int(math.Round(bx)), int(math.Round(by)))
		c.box(clip, r, dot, m.Color)
		if m.Text != "" && len(c.Placed) < MaxPlaced && image.Pt(r.Min.X, r.Min.Y).In(clip) {
			c.Placed = append(c.Placed, Placed{float64(r.Min.X), float64(r.Min.Y), m.Text, m.Color})
		}
	}
	return &c.img
}

// markRect returns the rectangle (screen-slice coordinates) where mark m crosses slice s,
// or ok false; a point's rectangle is the point itself.
func markRect(l *Layout, m *Mark, s int) (u0, v0, u1, v1 float64, ok bool) {
	t0, t1 := m.Min[l.Through], m.Max[l.Through]
	fs := float64(s)
	if t1 > t0 {
		if !(fs+1 > t0 && fs < t1) {
			return 0, 0, 0, 0, false
		}
	} else if math.Floor(t0) != fs {
		return 0, 0, 0, 0, false
	}
	u0, u1 = m.Min[l.Across], m.Max[l.Across]
	v0, v1 = m.Min[l.Down], m.Max[l.Down]
	if l.FlipU {
		u0, u1 = float64(l.W)-u1, float64(l.W)-u0
	}
	if l.FlipV {
		v0, v1 = float64(l.H)-v1, float64(l.H)-v0
	}
	return u0, v0, u1, v1, true
}

func (c *Composer) set(clip image.Rectangle, x, y int, col color.RGBA) {
	if !image.Pt(x, y).In(clip) {
		return
	}
	o := y*c.img.Stride + 4*x
	p := c.img.Pix[o : o+3 : o+3]
	if col.A == 255 {
		p[0], p[1], p[2] = col.R, col.G, col.B
		return
	}
	blend(p, col, uint32(col.A))
}

// box draws the outline of r, lw pixels wide, inside r.
func (c *Composer) box(clip, r image.Rectangle, lw int, col color.RGBA) {
	r = r.Canon()
	if r.Dx() == 0 {
		r.Max.X++
	}
	if r.Dy() == 0 {
		r.Max.Y++
	}
	in := r.Intersect(clip)
	if in.Empty() {
		return
	}
	for y := in.Min.Y; y < in.Max.Y; y++ {
		edgeY := y < r.Min.Y+lw || y >= r.Max.Y-lw
		for x := in.Min.X; x < in.Max.X; x++ {
			if edgeY || x < r.Min.X+lw || x >= r.Max.X-lw {
				c.set(clip, x, y, col)
			}
		}
	}
}

// dot draws a disc of radius rad at (x, y) with a one-pixel dark rim for contrast.
func (c *Composer) dot(clip image.Rectangle, x, y, rad int, col color.RGBA) {
	rim := color.RGBA{0, 0, 0, 255}
	r2, i2 := (rad+1)*(rad+1), rad*rad
	for dy := -rad - 1; dy <= rad+1; dy++ {
		for dx := -rad - 1; dx <= rad+1; dx++ {
			d := dx*dx + dy*dy
			switch {
			case d <= i2:
				c.set(clip, x+dx, y+dy, col)
			case d <= r2:
				c.set(clip, x+dx, y+dy, rim)
			}
		}
	}
}
