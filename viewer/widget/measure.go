package widget

import (
	"fmt"
	"image"
	"image/color"
	"math"
	"sync"

	"fyne.io/fyne/v2"

	"amid/viewer/measure"
)

// Drawing draws over a view's frames (SetDrawing): measurements, a tool's handles.
type Drawing interface {
	// Draw draws over img, the frame of slice s of layout l composed under geometry g (in
	// img's pixels, k of them per widget unit), and returns the texts to show, placed as
	// Compose places a mark's. It runs on the view's render goroutine.
	Draw(img *image.RGBA, l *Layout, s int, g Geometry, k float64) []Placed
	// On reports whether there is anything to draw on slice s of layout l; a slice without
	// is shown as a view without a drawing is. It runs on the view's render goroutine.
	On(l *Layout, s int) bool
}

// SetDrawing draws d over every frame (nil: nothing). A view composes the frames of the
// slices d draws on at the screen's resolution, as it does those with marks.
func (v *SliceView) SetDrawing(d Drawing) { v.update(func() { v.drawing = d }) }

// Redraw draws the view again: after what its Drawing draws has changed.
func (v *SliceView) Redraw() { v.request() }

// drawOver runs d over img and appends its texts to placed, up to MaxPlaced in all.
func drawOver(d Drawing, img *image.RGBA, l *Layout, s int, g Geometry, k float64, placed []Placed) []Placed {
	more := d.Draw(img, l, s, g, k)
	n := min(len(more), MaxPlaced-len(placed))
	return append(placed[:len(placed):len(placed)], more[:max(n, 0)]...)
}

// PointPainter is a Painter that takes the pointer's position itself rather than the voxel
// under it: a measuring tool, which measures between points, not voxels.
type PointPainter interface {
	Painter
	// PaintAt is called with the pointer's position in continuous voxel coordinates (voxel
	// i covers [i, i+1); the coordinate across the slice is its middle), which may lie off
	// the image, begin true on a stroke's first.
	PaintAt(at [3]float64, begin bool)
}

// Hoverer is a Painter that follows the pointer between strokes: a measuring tool shows the
// measurement whose handle a stroke would take.
type Hoverer interface {
	// HoverAt is called with the pointer's position, as PaintAt is, when it moves over
	// the view with no button held.
	HoverAt(at [3]float64)
}

// paintAt hands p the positions of a stroke (see paint).
func (v *SliceView) paintAt(p PointPainter, pos fyne.Position, moved fyne.Delta, begin bool) {
	if begin && (moved.DX != 0 || moved.DY != 0) {
		if at, ok := v.PointAt(pos.Subtract(moved)); ok {
			p.PaintAt(at, true)
			begin = false
		}
	}
	if at, ok := v.PointAt(pos); ok {
		p.PaintAt(at, begin)
	}
}

// PointAt maps a widget position to continuous voxel coordinates on the slice shown (off
// the image too); false without an image or a size.
func (v *SliceView) PointAt(pos fyne.Position) ([3]float64, bool) {
	v.mu.Lock()
	l, has, s, a := v.layout, v.vol != nil, v.p.Slice, v.area
	v.mu.Unlock()
	if !has || a.Width <= 0 || a.Height <= 0 {
		return [3]float64{}, false
	}
	fx, fy := v.geometry(&l).ToSlice(float64(pos.X), float64(pos.Y))
	if l.FlipU {
		fx = float64(l.W) - fx
	}
	if l.FlipV {
		fy = float64(l.H) - fy
	}
	var p [3]float64
	p[l.Across], p[l.Down], p[l.Through] = fx, fy, float64(s)+0.5
	return p, true
}

// PositionOf maps continuous voxel coordinates to the widget position that shows them (on
// the frame shown).
func (v *SliceView) PositionOf(p [3]float64) fyne.Position {
	l := v.Layout()
	x, y := v.geometry(&l).ToView(screenUV(&l, p))
	return fyne.NewPos(float32(x), float32(y))
}

// screenUV returns the slice pixel coordinates that show continuous voxel point p.
func screenUV(l *Layout, p [3]float64) (float64, float64) {
	u, w := p[l.Across], p[l.Down]
	if l.FlipU {
		u = float64(l.W) - u
	}
	if l.FlipV {
		w = float64(l.H) - w
	}
	return u, w
}

// Colours of measurements: drawn, and highlighted (selected, or hovered in a list).
var (
	MeasureColor    = color.RGBA{255, 215, 0, 255}
	MeasureHotColor = color.RGBA{0, 230, 118, 255}
)

// grab is how near, in widget units, the pointer must come to a handle to move it.
const grab = 8

// Measurer is the measuring tool of one or more views of one image (the three planes of
// an OrthoView): it draws a measure.Set's measurements on the planes they were made on,
// with their values, and with a kind chosen (SetKind) the primary button draws new ones:
// a drag for a length, the long axis of a bidirectional measurement, the box of an
// ellipse, the outline of a freehand region; a tap for a probe; for an angle, a drag for
// its first arm, then a tap (or a drag) for the end of the second. A stroke that starts
// on a handle of a measurement on the plane moves that handle instead (the stroke is one
// step of the set's history). Call its methods on the UI goroutine.
type Measurer struct {
	Set *measure.Set
	// OnChange is called after the measurements, the selection or the highlight change.
	OnChange func()
	// OnError is called with the reason a measurement was refused (drawn off the image or
	// degenerate).
	OnError func(error)

	kind  measure.Kind
	views []*SliceView
	tools map[*SliceView]*measureTool

	mu    sync.Mutex // guards what Draw reads
	list  []measure.Measurement
	draft *measure.Measurement // being drawn
	hot   int                  // highlighted ID, 0 for none
	sel   int                  // selected ID, 0 for none
}

// NewMeasurer returns a tool drawing set's measurements.
func NewMeasurer(set *measure.Set) *Measurer {
	m := &Measurer{Set: set, tools: map[*SliceView]*measureTool{}}
	m.list = set.List()
	return m
}

// Attach draws the measurements on v, which shows the set's image, and, with a kind
// chosen, gives v's primary button to the tool.
func (m *Measurer) Attach(v *SliceView) {
	t := &measureTool{m: m, v: v}
	m.tools[v] = t
	m.views = append(m.views, v)
	v.SetDrawing(t)
	if m.kind != "" {
		v.SetPainter(t)
	}
}

// Kind is the kind of measurement the primary button draws, "" for none.
func (m *Measurer) Kind() measure.Kind { return m.kind }

// SetKind chooses the kind of measurement the primary button draws; "" gives the button
// back to the views (crosshair and window), the measurements still drawn. A view whose
// button another painter holds by then (a brush) keeps it.
func (m *Measurer) SetKind(k measure.Kind) {
	m.kind = k
	m.mu.Lock()
	m.draft = nil
	m.mu.Unlock()
	for _, v := range m.views {
		switch t := m.tools[v]; {
		case k != "":
			v.SetPainter(t)
		case v.painterNow() == Painter(t):
			v.SetPainter(nil)
		}
		v.Redraw()
	}
}

// Highlight draws measurement id highlighted (0: none), as when its row is hovered.
func (m *Measurer) Highlight(id int) {
	m.mu.Lock()
	same := m.hot == id
	m.hot = id
	m.mu.Unlock()
	if !same {
		m.redraw()
	}
}

// Highlighted is the highlighted measurement's ID, 0 for none.
func (m *Measurer) Highlighted() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hot
}

// Select selects measurement id (0: none); Delete with no ID deletes it.
func (m *Measurer) Select(id int) {
	m.mu.Lock()
	same := m.sel == id
	m.sel = id
	m.mu.Unlock()
	if !same {
		m.changed()
	}
}

// Selected is the selected measurement's ID, 0 for none.
func (m *Measurer) Selected() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sel
}

// Delete deletes measurement id.
func (m *Measurer) Delete(id int) error {
	if err := m.Set.Delete(id); err != nil {
		return err
	}
	m.changed()
	return nil
}

// Undo takes back the set's last step; false when there was none.
func (m *Measurer) Undo() bool {
	ok := m.Set.Undo()
	m.changed()
	return ok
}

// Redo makes again the step last taken back; false when there was none.
func (m *Measurer) Redo() bool {
	ok := m.Set.Redo()
	m.changed()
	return ok
}

// Changed draws the views again after the set changed from outside (Load).
func (m *Measurer) Changed() { m.changed() }

// changed takes the set's list for drawing, draws the views again and tells OnChange.
func (m *Measurer) changed() {
	l := m.Set.List()
	m.mu.Lock()
	m.list = l
	if m.sel != 0 {
		if _, ok := m.Set.Get(m.sel); !ok {
			m.sel = 0
		}
	}
	m.mu.Unlock()
	m.redraw()
	if m.OnChange != nil {
		m.OnChange()
	}
}

func (m *Measurer) redraw() {
	for _, v := range m.views {
		v.Redraw()
	}
}

func (m *Measurer) fail(err error) {
	if err != nil && m.OnError != nil {
		m.OnError(err)
	}
}

// measureTool is a Measurer's painter and drawing on one view.
type measureTool struct {
	m *Measurer
	v *SliceView

	moving     bool // the stroke moves a handle …
	id, handle int  // … this one
	drawing    bool // the stroke draws the draft
}

// Paint implements Painter; a measuring tool takes positions (PaintAt).
func (t *measureTool) Paint([3]int, bool) {}

// clamp keeps p on the image, so that a drag past the edge measures to the edge.
func (t *measureTool) clamp(p [3]float64) [3]float64 {
	vol := t.m.Set.Volume()
	for a := range 3 {
		p[a] = math.Max(0, math.Min(float64(vol.Dims[a]), p[a]))
	}
	return p
}

// on says whether p lies on the image.
func (t *measureTool) on(p [3]float64) bool { return t.clamp(p) == p }

// PaintAt implements PointPainter.
func (t *measureTool) PaintAt(at [3]float64, begin bool) {
	m := t.m
	l := t.v.Layout()
	if begin {
		t.moving, t.drawing = false, false
		if id, h, ok := t.hit(at); ok {
			t.moving, t.id, t.handle = true, id, h
			m.Set.Begin()
			m.Select(id)
			return
		}
		if !t.on(at) || m.kind == "" {
			return
		}
		m.mu.Lock()
		d := m.draft
		pending := d != nil && d.Kind == measure.Angle && len(d.Points) == 2 && d.Axis == l.Through && d.Slice == t.v.Slice()
		if pending {
			d.Points = append(d.Points, at)
		} else {
			d = &measure.Measurement{Kind: m.kind, Axis: l.Through, Slice: t.v.Slice(), Points: [][3]float64{at, at}}
			if m.kind == measure.Probe || m.kind == measure.Freehand {
				d.Points = d.Points[:1]
			}
			m.draft = d
		}
		m.mu.Unlock()
		t.drawing = true
		t.v.Redraw()
		return
	}
	at = t.clamp(at)
	switch {
	case t.moving:
		if err := m.Set.Move(t.id, t.handle, at); err == nil {
			m.changed()
		}
	case t.drawing:
		m.mu.Lock()
		d := m.draft
		if d != nil {
			n := len(d.Points)
			switch d.Kind {
			case measure.Freehand:
				// A new vertex each half voxel the pointer travels.
				last := d.Points[n-1]
				if math.Hypot(at[l.Across]-last[l.Across], at[l.Down]-last[l.Down]) >= 0.5 {
					d.Points = append(d.Points, at)
				}
			case measure.Probe:
				d.Points[0] = at
			default:
				d.Points[n-1] = at
			}
		}
		m.mu.Unlock()
		t.v.Redraw()
	}
}

// HoverAt implements Hoverer: the measurement whose handle is under the pointer is
// highlighted, as a stroke starting there would move it.
func (t *measureTool) HoverAt(at [3]float64) {
	id, _, _ := t.hit(at)
	t.m.Highlight(id)
}

// End implements Painter: a moved handle ends its step; a draft becomes a measurement, or
// (an angle's first arm) waits for its last point.
func (t *measureTool) End() {
	m := t.m
	if t.moving {
		m.Set.End()
		t.moving = false
		m.changed()
		return
	}
	if !t.drawing {
		return
	}
	t.drawing = false
	m.mu.Lock()
	d := m.draft
	if d == nil {
		m.mu.Unlock()
		return
	}
	if d.Kind == measure.Angle && len(d.Points) == 2 && d.Points[0] != d.Points[1] {
		m.mu.Unlock() // the first arm: wait for the second's end
		return
	}
	m.draft = nil
	dm := *d
	m.mu.Unlock()
	if tap := len(dm.Points) == 2 && dm.Points[0] == dm.Points[1] || dm.Kind == measure.Freehand && len(dm.Points) < 3; tap {
		t.v.Redraw() // a tap with a tool that needs a drag draws nothing
		return
	}
	added, err := m.Set.Add(dm)
	if err != nil {
		m.fail(err)
		t.v.Redraw()
		return
	}
	m.mu.Lock()
	m.sel = added.ID
	m.mu.Unlock()
	m.changed()
}

// hit finds the handle of a measurement on the view's plane nearest the pointer at p,
// within grab widget units.
func (t *measureTool) hit(p [3]float64) (id, handle int, ok bool) {
	l := t.v.Layout()
	s := t.v.Slice()
	at := t.v.PositionOf(p)
	best := float32(grab * grab)
	t.m.mu.Lock()
	list := t.m.list
	t.m.mu.Unlock()
	for _, ms := range list {
		if ms.Axis != l.Through || ms.Slice != s {
			continue
		}
		for h, q := range ms.Points {
			d := t.v.PositionOf(q).Subtract(at)
			if d2 := d.X*d.X + d.Y*d.Y; d2 <= best {
				best, id, handle, ok = d2, ms.ID, h, true
			}
		}
	}
	return id, handle, ok
}

// On implements Drawing: whether a measurement, or the draft, lies on slice s.
func (t *measureTool) On(l *Layout, s int) bool {
	m := t.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if d := m.draft; d != nil && d.Axis == l.Through && d.Slice == s {
		return true
	}
	for i := range m.list {
		if m.list[i].Axis == l.Through && m.list[i].Slice == s {
			return true
		}
	}
	return false
}

// Draw implements Drawing: the measurements of slice s, their handles and values, the
// draft under way.
func (t *measureTool) Draw(img *image.RGBA, l *Layout, s int, g Geometry, k float64) []Placed {
	m := t.m
	m.mu.Lock()
	list, hot, sel := m.list, m.hot, m.sel
	var draft *measure.Measurement
	if d := m.draft; d != nil && d.Axis == l.Through && d.Slice == s {
		c := *d
		c.Points = append([][3]float64(nil), d.Points...)
		draft = &c
	}
	m.mu.Unlock()
	return drawMeasurements(img, l, s, g, k, list, draft, hot, sel)
}

// drawMeasurements draws the measurements of list (and draft) that lie on slice s.
func drawMeasurements(img *image.RGBA, l *Layout, s int, g Geometry, k float64, list []measure.Measurement, draft *measure.Measurement, hot, sel int) []Placed {
	var placed []Placed
	p := pen{img: img, lw: max(1, int(math.Round(k)))}
	p.clip = img.Rect
	for i := range list {
		ms := &list[i]
		if ms.Axis != l.Through || ms.Slice != s {
			continue
		}
		p.col = MeasureColor
		if ms.ID == hot || ms.ID == sel {
			p.col = MeasureHotColor
		}
		x, y := p.shape(l, g, ms, ms.ID == sel)
		text := fmt.Sprintf("%d  %s", ms.ID, ms.Text())
		placed = append(placed, Placed{X: x, Y: y, Text: text, Color: p.col})
	}
	if draft != nil {
		p.col = MeasureColor
		p.shape(l, g, draft, true)
	}
	return placed
}

// pen draws lines and handles into an image.
type pen struct {
	img  *image.RGBA
	clip image.Rectangle
	col  color.RGBA
	lw   int
}

// shape draws measurement ms, with its handles when handles is true or it has few, and
// returns where its text goes: right of it, ending level with its middle.
func (p *pen) shape(l *Layout, g Geometry, ms *measure.Measurement, handles bool) (tx, ty float64) {
	n := len(ms.Points)
	xs, ys := make([]float64, n), make([]float64, n)
	x1, y0, y1 := math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i, q := range ms.Points {
		xs[i], ys[i] = g.ToView(screenUV(l, q))
		x1, y0, y1 = math.Max(x1, xs[i]), math.Min(y0, ys[i]), math.Max(y1, ys[i])
	}
	switch ms.Kind {
	case measure.Length, measure.Angle:
		for i := 1; i < n; i++ {
			p.line(xs[i-1], ys[i-1], xs[i], ys[i])
		}
	case measure.Bidirectional:
		p.line(xs[0], ys[0], xs[1], ys[1])
		if n == 4 {
			p.line(xs[2], ys[2], xs[3], ys[3])
		}
	case measure.Ellipse:
		cx, cy := (xs[0]+xs[1])/2, (ys[0]+ys[1])/2
		rx, ry := math.Abs(xs[1]-xs[0])/2, math.Abs(ys[1]-ys[0])/2
		const steps = 72
		for i := range steps {
			a0, a1 := 2*math.Pi*float64(i)/steps, 2*math.Pi*float64(i+1)/steps
			p.line(cx+rx*math.Cos(a0), cy+ry*math.Sin(a0), cx+rx*math.Cos(a1), cy+ry*math.Sin(a1))
		}
	case measure.Freehand:
		for i := 1; i <= n; i++ {
			if i == n && n < 3 {
				break
			}
			p.line(xs[i-1], ys[i-1], xs[i%n], ys[i%n])
		}
		handles = false // a vertex each half voxel: too many to show
	case measure.Probe:
		r := 3 * float64(p.lw)
		p.line(xs[0]-r, ys[0], xs[0]+r, ys[0])
		p.line(xs[0], ys[0]-r, xs[0], ys[0]+r)
		return xs[0] + r, ys[0] - r
	}
	if handles || n <= 4 {
		for i := range n {
			p.handle(xs[i], ys[i])
		}
	}
	return x1 + 4*float64(p.lw), (y0 + y1) / 2
}

// line draws from (x0, y0) to (x1, y1), lw pixels wide.
func (p *pen) line(x0, y0, x1, y1 float64) {
	dx, dy := x1-x0, y1-y0
	n := int(math.Ceil(math.Max(math.Abs(dx), math.Abs(dy))))
	if n > 1<<14 { // a line far off the image: nothing of it worth drawing pixel by pixel
		n = 1 << 14
	}
	off := float64(p.lw-1) / 2
	for i := 0; i <= n; i++ {
		f := 0.0
		if n > 0 {
			f = float64(i) / float64(n)
		}
		x, y := int(math.Floor(x0+f*dx-off)), int(math.Floor(y0+f*dy-off))
		p.square(x, y, p.lw)
	}
}

// handle draws a handle: a square with a dark rim.
func (p *pen) handle(x, y float64) {
	r := 2 * p.lw
	cx, cy := int(math.Floor(x)), int(math.Floor(y))
	col := p.col
	p.col = color.RGBA{0, 0, 0, 255}
	p.square(cx-r-1, cy-r-1, 2*r+3)
	p.col = col
	p.square(cx-r, cy-r, 2*r+1)
}

// square fills the w×w square whose top left pixel is (x, y).
func (p *pen) square(x, y, w int) {
	r := image.Rect(x, y, x+w, y+w).Intersect(p.clip)
	for yy := r.Min.Y; yy < r.Max.Y; yy++ {
		o := yy*p.img.Stride + 4*r.Min.X
		for xx := r.Min.X; xx < r.Max.X; xx++ {
			px := p.img.Pix[o : o+4 : o+4]
			px[0], px[1], px[2], px[3] = p.col.R, p.col.G, p.col.B, 255
			o += 4
		}
	}
}
