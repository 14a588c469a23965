package widget

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"sync"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	fwidget "fyne.io/fyne/v2/widget"

	"amid/viewer/bridge"
	"amid/viewer/volume"
)

// Probe describes the voxel under the cursor.
type Probe struct {
	Voxel [3]int     // voxel index
	Value float64    // image value (channel shown)
	Label int64      // label value, 0 without labels
	World [3]float64 // LPS position, mm
}

// SliceView shows one plane of a volume with an optional label overlay and marks (boxes,
// points). Mouse wheel, arrow keys and PageUp/PageDown change the slice; dragging changes
// the window (right: wider, down: higher level); keys 1–5 apply presets; L toggles the
// labels and O outline mode. Ctrl+wheel and the + and − keys zoom about the cursor, a drag
// with the middle button or with Space held pans, and 0 resets the zoom and pan. Slices are
// rendered off the UI goroutine and shown through a bridge (viewer/bridge) at most 60
// times a second, a burst of changes coalescing into the newest frame; a zoomed view, or
// one with marks, is composed at the screen's resolution.
//
// Setters may be called from any goroutine; the On callbacks run on the UI goroutine, with
// the newest value when several changes come between two flushes.
type SliceView struct {
	fwidget.BaseWidget

	// OnHover is called with the voxel under the cursor; ok is false when it leaves the image.
	OnHover func(p Probe, ok bool)
	// OnPick is called with the voxel tapped.
	OnPick func(idx [3]int)
	// OnSlice is called after the slice changes.
	OnSlice func(s int)
	// OnView is called after the zoom or pan changes.
	OnView func(View)
	// OnWindow is called after the user changes the window (drag, preset key, or key i,
	// which inverts it: Inverted).
	OnWindow func(Window)
	// OnRune is called with the typed runes the view does not use itself.
	OnRune func(r rune)

	// data guards the labels' values against an edit (EditLabels) while a frame reads them.
	data sync.RWMutex

	mu        sync.Mutex
	painter   Painter // set: the primary button paints (SetPainter)
	painting  bool    // a stroke is under way
	vol       *volume.Volume
	layout    Layout
	p         Params
	labelsOn  bool
	presets   []Preset
	cross     [3]int
	crossOn   bool
	gen, done uint64 // frames requested and applied
	err       error  // last render error
	view      View
	marks     []Mark  // replaced, never changed in place
	drawing   Drawing // set: drawn over each frame (SetDrawing)
	threshold float64
	area      fyne.Size // the widget's size at the last layout
	scale     float32   // canvas pixels per unit
	shown     View      // the view of the frame on screen
	composed  bool      // the frame on screen is composed over the whole area
	button    desktop.MouseButton
	space     bool // Space held: dragging pans
	ctrl      bool // Control held: the wheel zooms
	shift     bool // Shift held: the wheel sizes a painter's tool (Sizer)
	alt       bool // Alt held: as Shift
	hover     fyne.Position
	hoverIn   bool

	img    *canvas.Image
	edges  [4]*canvas.Text // left, right, top, bottom
	lines  [2]*canvas.Line // crosshair: vertical, horizontal
	rect   fyne.Position   // image area origin …
	rsize  fyne.Size       // … and size, in widget coordinates
	kick   chan struct{}
	stop   chan struct{}
	texts  []*canvas.Text // marks' texts
	bufs   [2]Renderer
	comps  [2]Composer
	frames int
	br     *bridge.Bridge // nil: bridge.Default()
	rend   *sliceRenderer // the view's renderer while it lives
}

// postKey names what a widget posts to its bridge, so that posts of one kind coalesce.
type postKey struct {
	w    fyne.Widget
	what string
}

// NewSliceView returns an empty view of plane p.
func NewSliceView(p Plane) *SliceView {
	v := &SliceView{labelsOn: true, kick: make(chan struct{}, 1)}
	v.p.Plane = p
	v.p.Overlay.Opacity = 0.5
	v.p.Overlay.Colors = DefaultColors()
	v.ExtendBaseWidget(v)
	return v
}

// UseBridge makes the view reach the UI goroutine through b instead of bridge.Default():
// the app's bridge, or in a test one that hands flushes to the test. Call it before the
// view is used.
func (v *SliceView) UseBridge(b *bridge.Bridge) { v.br = b }

func (v *SliceView) bridge() *bridge.Bridge {
	if v.br == nil {
		return bridge.Default()
	}
	return v.br
}

// post runs f on the UI goroutine with the bridge's next flush; a newer post of the same
// kind replaces it.
func (v *SliceView) post(what string, f func()) { v.bridge().Post(postKey{v, what}, f) }

// SetVolume shows v from its middle slice with the first of DefaultPresets(v) and no
// overlay (set one with SetLabels afterwards). It fails, leaving the view unchanged, when v
// does not validate.
func (v *SliceView) SetVolume(vol *volume.Volume) error {
	if err := vol.Validate(); err != nil {
		return fmt.Errorf("viewer: %w", err)
	}
	pre := DefaultPresets(vol)
	v.mu.Lock()
	v.vol = vol
	v.layout = NewLayout(vol, v.p.Plane)
	v.presets = pre
	v.p.Slice = v.layout.N / 2
	v.p.Channel = 0
	v.p.RGB = IsRGB(vol)
	v.p.Window = pre[0].Window
	v.p.Overlay.Labels, v.p.Overlay.Truth = nil, nil
	v.marks = nil
	v.view = View{}
	v.cross = [3]int{vol.Dims[0] / 2, vol.Dims[1] / 2, vol.Dims[2] / 2}
	v.mu.Unlock()
	v.request()
	v.post("refresh", v.Refresh)
	return nil
}

// errGrid reports an overlay that is not on the image's grid.
var errGrid = errors.New("label volume is not on the image grid")

// SetLabels overlays labels (nil removes them); truth, when not nil, turns the overlay into
// the difference view of prediction labels against truth.
func (v *SliceView) SetLabels(labels, truth *volume.Volume) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, l := range []*volume.Volume{labels, truth} {
		if l == nil {
			continue
		}
		if v.vol == nil || !volume.SameGrid(l, v.vol, 1e-3) || l.Dims[3] != 1 || !l.DType().IsInteger() {
			return fmt.Errorf("viewer: %w: dims %v, type %v", errGrid, l.Dims, l.DType())
		}
	}
	v.p.Overlay.Labels, v.p.Overlay.Truth = labels, truth
	v.requestLocked()
	return nil
}

// SetMarks draws marks (boxes, points; see Marks) over the slices they cross; nil
// removes them. The view keeps ms: do not change it afterwards.
func (v *SliceView) SetMarks(ms []Mark) { v.update(func() { v.marks = ms }) }

// SetScoreThreshold hides marks scoring below t.
func (v *SliceView) SetScoreThreshold(t float64) { v.update(func() { v.threshold = t }) }

// ScoreThreshold returns the score below which marks are hidden.
func (v *SliceView) ScoreThreshold() float64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.threshold
}

// SetView sets the zoom and pan (View{} fits the slice).
func (v *SliceView) SetView(view View) {
	if view, changed := v.setView(view); changed && v.OnView != nil {
		v.post("view", func() { v.OnView(view) })
	}
}

// setView is SetView without OnView: for a view that follows a linked one, whose change
// must not be reported back (an echo carrying an older state could undo a newer one).
func (v *SliceView) setView(view View) (View, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.vol != nil {
		view = clampView(&v.layout, view)
	}
	changed := view != v.view
	v.view = view
	v.requestLocked()
	return view, changed
}

// View returns the zoom and pan.
func (v *SliceView) View() View {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.vol == nil {
		return v.view
	}
	return clampView(&v.layout, v.view)
}

// ZoomAt zooms by factor about widget position pos.
func (v *SliceView) ZoomAt(pos fyne.Position, factor float64) {
	v.mu.Lock()
	l, view, a := v.layout, v.view, v.area
	has := v.vol != nil
	v.mu.Unlock()
	if has {
		v.SetView(ZoomAbout(&l, view, float64(a.Width), float64(a.Height), float64(pos.X), float64(pos.Y), factor))
	}
}

// PanBy moves the slice by (dx, dy) widget units.
func (v *SliceView) PanBy(dx, dy float32) {
	v.mu.Lock()
	l, view, a := v.layout, v.view, v.area
	has := v.vol != nil
	v.mu.Unlock()
	if has {
		v.SetView(Pan(&l, view, float64(a.Width), float64(a.Height), float64(dx), float64(dy)))
	}
}

// SetRGB shows channels 0..2 as colour (true) or the first channel in gray; images with
// fewer than three channels stay gray.
func (v *SliceView) SetRGB(on bool) {
	v.update(func() { v.p.RGB = on && v.vol != nil && v.vol.Dims[3] >= 3 })
}

// SetOpacity sets the overlay opacity (0..1).
func (v *SliceView) SetOpacity(o float64) {
	v.update(func() { v.p.Overlay.Opacity = math.Max(0, math.Min(1, o)) })
}

// SetOutline chooses outline (true) or filled (false) labels.
func (v *SliceView) SetOutline(on bool) { v.update(func() { v.p.Overlay.Outline = on }) }

// SetColors sets the label colour table.
func (v *SliceView) SetColors(c []color.RGBA) { v.update(func() { v.p.Overlay.Colors = c }) }

// SetClassVisible shows or hides label k (0..255).
func (v *SliceView) SetClassVisible(k int, on bool) {
	if k < 0 || k > 255 {
		return
	}
	v.update(func() {
		h := make([]bool, max(k+1, len(v.p.Overlay.Hidden)))
		copy(h, v.p.Overlay.Hidden) // a fresh slice: the renderer may still read the old one
		h[k] = !on
		v.p.Overlay.Hidden = h
	})
}

// SetLabelsVisible shows or hides the whole overlay.
func (v *SliceView) SetLabelsVisible(on bool) { v.update(func() { v.labelsOn = on }) }

// LabelsVisible reports whether the overlay is shown.
func (v *SliceView) LabelsVisible() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.labelsOn
}

// SetSlice shows slice s, clamped to the volume.
func (v *SliceView) SetSlice(s int) {
	if v.setSlice(s) && v.OnSlice != nil {
		s := v.Slice()
		v.post("slice", func() { v.OnSlice(s) })
	}
}

// setSlice is SetSlice without OnSlice, for a view that follows a linked one (see setView).
func (v *SliceView) setSlice(s int) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.setSliceLocked(s)
}

func (v *SliceView) setSliceLocked(s int) bool {
	if v.vol == nil {
		return false
	}
	s = max(0, min(v.layout.N-1, s))
	if s == v.p.Slice {
		return false
	}
	v.p.Slice = s
	v.cross[v.layout.Through] = s
	v.requestLocked()
	return true
}

// Slice returns the slice shown.
func (v *SliceView) Slice() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.p.Slice
}

// SetWindow sets the display window; widths below 1e-6 are raised to it.
func (v *SliceView) SetWindow(w Window) {
	v.update(func() { w.Width = math.Max(w.Width, 1e-6); v.p.Window = w })
}

// Window returns the display window.
func (v *SliceView) Window() Window {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.p.Window
}

// SetInverted draws the window inverted (its low end white) or not.
func (v *SliceView) SetInverted(on bool) { v.update(func() { v.p.Invert = on }) }

// Inverted reports whether the window is drawn inverted.
func (v *SliceView) Inverted() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.p.Invert
}

// follow gives v the window of from, inverted as from is: one volume, one window.
func (v *SliceView) follow(from *SliceView) {
	v.SetWindow(from.Window())
	v.SetInverted(from.Inverted())
}

// Presets returns the presets on keys 1..5.
func (v *SliceView) Presets() []Preset {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.presets
}

// SetPresets replaces the presets on keys 1..5.
func (v *SliceView) SetPresets(p []Preset) { v.update(func() { v.presets = p }) }

// ApplyPreset applies preset i (0-based); out-of-range indexes do nothing.
func (v *SliceView) ApplyPreset(i int) {
	v.update(func() {
		if i >= 0 && i < len(v.presets) {
			v.p.Window = v.presets[i].Window
		}
	})
}

// userWindow reports a window the user chose.
func (v *SliceView) userWindow() {
	if v.OnWindow != nil {
		v.OnWindow(v.Window())
	}
}

// Layout returns the screen mapping of the current volume.
func (v *SliceView) Layout() Layout {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.layout
}

// SetCrosshair marks voxel idx with a crosshair and shows the slice through it.
func (v *SliceView) SetCrosshair(idx [3]int) {
	if s, changed := v.setCrosshair(idx); changed && v.OnSlice != nil {
		v.post("slice", func() { v.OnSlice(s) })
	}
}

// setCrosshair is SetCrosshair without OnSlice, for a view that follows a linked one (see
// setView). It returns the slice shown and whether it changed.
func (v *SliceView) setCrosshair(idx [3]int) (int, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.cross, v.crossOn = idx, true
	changed := v.setSliceLocked(idx[v.layout.Through])
	v.requestLocked()
	return v.p.Slice, changed
}

// Err returns the last render error, nil when the last frame rendered.
func (v *SliceView) Err() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.err
}

func (v *SliceView) update(f func()) {
	v.mu.Lock()
	f()
	v.requestLocked()
	v.mu.Unlock()
}

func (v *SliceView) request() {
	v.mu.Lock()
	v.requestLocked()
	v.mu.Unlock()
}

// requestLocked asks for a new frame; requests made while one renders coalesce into one.
func (v *SliceView) requestLocked() {
	v.gen++
	select {
	case v.kick <- struct{}{}:
	default:
	}
}

// loop renders requested frames until stop closes. Each frame waits until the bridge has
// shown it, so frames come at most as often as the bridge flushes, and the requests made
// meanwhile coalesce into the next.
func (v *SliceView) loop(stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-v.kick:
		}
		v.frame(stop)
	}
}

// frame renders the current state into the buffer not on screen and swaps it in, waiting
// until it is shown (the other buffer is on screen until then) or stop closes.
func (v *SliceView) frame(stop chan struct{}) {
	v.mu.Lock()
	if v.done == v.gen { // a stale kick: this state is already on screen
		v.mu.Unlock()
		return
	}
	vol, p, gen, l := v.vol, v.p, v.gen, v.layout
	cross, crossOn := v.cross, v.crossOn
	view, marks, thr, area, scale, drawing := v.view, v.marks, v.threshold, v.area, v.scale, v.drawing
	if !v.labelsOn {
		p.Overlay.Labels, marks = nil, nil
	}
	v.mu.Unlock()
	if vol == nil {
		return
	}
	view = clampView(&l, view)
	drawn := drawing != nil && drawing.On(&l, p.Slice)
	composed := (len(marks) > 0 || drawn || !view.Fitted(&l)) && area.Width >= 1 && area.Height >= 1
	r := &v.bufs[v.frames%2]
	c := &v.comps[v.frames%2]
	v.frames++
	v.data.RLock()
	img, err := r.Render(vol, &p)
	v.data.RUnlock()
	var placed []Placed
	if err == nil && composed {
		k := float64(max(scale, 1))
		g := NewGeometry(&l, view, float64(area.Width), float64(area.Height)).Scaled(k)
		img = c.Compose(img, &l, p.Slice, g, int(math.Round(g.W)), int(math.Round(g.H)), marks, thr, int(math.Round(k)))
		placed = c.Placed
		if drawn {
			placed = drawOver(drawing, img, &l, p.Slice, g, k, placed)
		}
	}
	v.bridge().PostAndWait(postKey{v, "frame"}, func() {
		if err == nil && v.img != nil {
			v.mu.Lock()
			v.shown, v.composed = view, composed
			v.mu.Unlock()
			v.img.Image = img
			v.placeImage(l)
			v.img.Refresh()
			v.placeTexts(placed, float32(max(scale, 1)))
			v.placeCross(l, cross, crossOn)
		}
		v.mu.Lock() // last, so that whoever sees done also sees the frame
		v.err = err
		v.done = max(v.done, gen)
		v.mu.Unlock()
	}, stop)
}

// CreateRenderer implements fyne.Widget.
func (v *SliceView) CreateRenderer() fyne.WidgetRenderer {
	v.mu.Lock()
	if r := v.rend; r != nil {
		// One renderer while the view lives: a second call (a test's layout walks the
		// tree and asks again) gets the same objects and frame loop, not a second loop
		// drawing into the buffers the first one's image shows.
		v.mu.Unlock()
		return r
	}
	v.mu.Unlock()
	v.img = canvas.NewImageFromImage(nil)
	v.img.ScaleMode = canvas.ImageScalePixels
	v.img.FillMode = canvas.ImageFillStretch
	bg := canvas.NewRectangle(color.Black)
	objs := []fyne.CanvasObject{bg, v.img}
	for i := range v.lines {
		v.lines[i] = canvas.NewLine(color.RGBA{255, 200, 0, 200})
		v.lines[i].StrokeWidth = 1
		v.lines[i].Hide()
		objs = append(objs, v.lines[i])
	}
	v.texts = make([]*canvas.Text, MaxPlaced)
	for i := range v.texts {
		v.texts[i] = canvas.NewText("", color.White)
		v.texts[i].TextSize = theme.CaptionTextSize()
		v.texts[i].Hide()
		objs = append(objs, v.texts[i])
	}
	for i := range v.edges {
		v.edges[i] = canvas.NewText("", color.RGBA{255, 220, 0, 255})
		v.edges[i].TextStyle.Bold = true
		objs = append(objs, v.edges[i])
	}
	stop := make(chan struct{})
	r := &sliceRenderer{v: v, bg: bg, objs: objs}
	v.mu.Lock()
	v.stop, v.rend = stop, r
	v.mu.Unlock()
	go v.loop(stop)
	v.request()
	return r
}

type sliceRenderer struct {
	v    *SliceView
	bg   *canvas.Rectangle
	objs []fyne.CanvasObject
}

func (r *sliceRenderer) Layout(size fyne.Size) {
	v := r.v
	r.bg.Resize(size)
	v.mu.Lock()
	l, has, cross, crossOn := v.layout, v.vol != nil, v.cross, v.crossOn
	v.mu.Unlock()
	if !has {
		v.img.Hide()
		for _, t := range v.edges {
			t.Text = ""
		}
		return
	}
	v.img.Show()
	scale := float32(1)
	if c := fyne.CurrentApp().Driver().CanvasForObject(v); c != nil {
		scale = c.Scale()
	}
	v.mu.Lock()
	resized := v.area != size || v.scale != scale
	v.area, v.scale = size, scale
	if resized && (v.composed || len(v.marks) > 0 || v.drawing != nil || !clampView(&v.layout, v.view).Fitted(&v.layout)) {
		v.requestLocked() // a composed frame has the area's resolution
	}
	v.mu.Unlock()
	v.placeImage(l)
	pad := theme.Padding()
	for i, txt := range []string{l.Left, l.Right, l.Top, l.Bottom} {
		t := v.edges[i]
		t.Text = txt
		m := t.MinSize()
		t.Resize(m)
		switch i {
		case 0:
			t.Move(fyne.NewPos(pad, (size.Height-m.Height)/2))
		case 1:
			t.Move(fyne.NewPos(size.Width-m.Width-pad, (size.Height-m.Height)/2))
		case 2:
			t.Move(fyne.NewPos((size.Width-m.Width)/2, pad))
		case 3:
			t.Move(fyne.NewPos((size.Width-m.Width)/2, size.Height-m.Height-pad))
		}
		t.Refresh()
	}
	v.placeCross(l, cross, crossOn)
}

// geometry is the mapping of the frame on screen (UI goroutine).
func (v *SliceView) geometry(l *Layout) Geometry {
	v.mu.Lock()
	view, a := v.shown, v.area
	v.mu.Unlock()
	return NewGeometry(l, view, float64(a.Width), float64(a.Height))
}

// placeImage sets rect and rsize to the slice's extent on screen and places the image: over
// the slice's extent when the canvas stretches it, over the whole area when composed.
func (v *SliceView) placeImage(l Layout) {
	g := v.geometry(&l)
	v.rect = fyne.NewPos(float32(g.OX), float32(g.OY))
	v.rsize = fyne.NewSize(float32(g.SX*float64(l.W)), float32(g.SY*float64(l.H)))
	v.mu.Lock()
	composed, a := v.composed, v.area
	v.mu.Unlock()
	if composed {
		v.img.Move(fyne.NewPos(0, 0))
		v.img.Resize(a)
		return
	}
	v.img.Move(v.rect)
	v.img.Resize(v.rsize)
}

// placeTexts shows the marks' texts, given in pixels (k per unit), above their boxes.
func (v *SliceView) placeTexts(ps []Placed, k float32) {
	v.mu.Lock()
	a := v.area
	v.mu.Unlock()
	for i, t := range v.texts {
		if i >= len(ps) {
			if t.Visible() {
				t.Hide()
			}
			continue
		}
		p := ps[i]
		t.Text, t.Color = p.Text, p.Color
		m := t.MinSize()
		x := min(max(float32(p.X)/k, 0), a.Width-m.Width)
		y := float32(p.Y)/k - m.Height
		if y < 0 {
			y = float32(p.Y) / k
		}
		t.Move(fyne.NewPos(x, y))
		t.Resize(m)
		t.Show()
		t.Refresh()
	}
}

// placeCross draws the crosshair through the centre of voxel idx, clipped to the area.
func (v *SliceView) placeCross(l Layout, idx [3]int, on bool) {
	if !on || l.W == 0 || v.lines[0] == nil {
		for _, ln := range v.lines {
			if ln != nil {
				ln.Hide()
			}
		}
		return
	}
	g := v.geometry(&l)
	u, w, _ := l.Screen(idx)
	fx, fy := g.ToView(float64(u)+0.5, float64(w)+0.5)
	x, y := float32(fx), float32(fy)
	x0, y0 := max(v.rect.X, 0), max(v.rect.Y, 0)
	x1, y1 := min(v.rect.X+v.rsize.Width, float32(g.W)), min(v.rect.Y+v.rsize.Height, float32(g.H))
	v.lines[0].Position1 = fyne.NewPos(x, y0)
	v.lines[0].Position2 = fyne.NewPos(x, y1)
	v.lines[1].Position1 = fyne.NewPos(x0, y)
	v.lines[1].Position2 = fyne.NewPos(x1, y)
	for i, ln := range v.lines {
		in := (i == 0 && x >= x0 && x <= x1) || (i == 1 && y >= y0 && y <= y1)
		if !in {
			ln.Hide()
			continue
		}
		ln.Show()
		ln.Refresh()
	}
}

func (r *sliceRenderer) MinSize() fyne.Size           { return fyne.NewSize(64, 64) }
func (r *sliceRenderer) Objects() []fyne.CanvasObject { return r.objs }
func (r *sliceRenderer) Refresh() {
	r.Layout(r.v.Size())
	canvas.Refresh(r.v)
}

func (r *sliceRenderer) Destroy() {
	v := r.v
	v.mu.Lock()
	if v.stop != nil {
		close(v.stop)
		v.stop = nil
	}
	v.rend = nil
	v.mu.Unlock()
}

// voxelAt maps a widget position to the voxel shown there.
func (v *SliceView) voxelAt(pos fyne.Position) ([3]int, bool) {
	v.mu.Lock()
	l, has, s, a := v.layout, v.vol != nil, v.p.Slice, v.area
	v.mu.Unlock()
	if !has || a.Width <= 0 || a.Height <= 0 {
		return [3]int{}, false
	}
	fx, fy := v.geometry(&l).ToSlice(float64(pos.X), float64(pos.Y))
	if fx < 0 || fy < 0 || int(fx) >= l.W || int(fy) >= l.H {
		return [3]int{}, false
	}
	return l.Voxel(int(fx), int(fy), s), true
}

// ProbeAt returns what lies under widget position pos.
func (v *SliceView) ProbeAt(pos fyne.Position) (Probe, bool) {
	idx, ok := v.voxelAt(pos)
	if !ok {
		return Probe{}, false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	p := Probe{Voxel: idx, World: v.vol.VoxelToWorld([3]float64{float64(idx[0]), float64(idx[1]), float64(idx[2])})}
	p.Value = v.vol.At(idx[0], idx[1], idx[2], v.p.Channel)
	if lv := v.p.Overlay.Labels; lv != nil {
		p.Label = int64(lv.At(idx[0], idx[1], idx[2], 0))
	}
	return p, true
}

// ZoomStep is the zoom factor of one wheel notch or one + key.
const ZoomStep = 1.25

// Scrolled implements fyne.Scrollable: one slice per wheel notch, or with Control held a
// zoom step about the cursor, or with Shift or Alt held a step of the painter's size
// (Sizer).
func (v *SliceView) Scrolled(ev *fyne.ScrollEvent) {
	if v.ctrlHeld() {
		switch {
		case ev.Scrolled.DY > 0:
			v.ZoomAt(ev.Position, ZoomStep)
		case ev.Scrolled.DY < 0:
			v.ZoomAt(ev.Position, 1/ZoomStep)
		}
		return
	}
	if v.sized(ev) {
		return
	}
	switch {
	case ev.Scrolled.DY > 0:
		v.SetSlice(v.Slice() + 1)
	case ev.Scrolled.DY < 0:
		v.SetSlice(v.Slice() - 1)
	}
}

// ctrlHeld reports whether a Control (or, on macOS, Command) key is held.
func (v *SliceView) ctrlHeld() bool {
	v.mu.Lock()
	ctrl := v.ctrl
	v.mu.Unlock()
	if ctrl {
		return true
	}
	if a := fyne.CurrentApp(); a != nil {
		if d, ok := a.Driver().(desktop.Driver); ok {
			return d.CurrentKeyModifiers()&(fyne.KeyModifierControl|fyne.KeyModifierSuper) != 0
		}
	}
	return false
}

// Painter edits the labels a view shows (see SetPainter). Its methods run on the UI
// goroutine; they change the labels through the view's EditLabels.
type Painter interface {
	// Paint is called with the voxel under the pointer, begin true on a stroke's first.
	Paint(idx [3]int, begin bool)
	// End is called when the stroke ends (the button released, or after a tap's Paint).
	End()
}

// SetPainter gives the primary button to p: a tap or a drag paints instead of moving the
// crosshair or the window (the middle button and Space still pan, the wheel still
// scrolls and zooms); nil gives the button back.
func (v *SliceView) SetPainter(p Painter) {
	v.mu.Lock()
	v.painter, v.painting = p, false
	v.mu.Unlock()
}

// EditLabels runs f, which changes the values of the labels the view shows, while no frame
// reads them, then draws the view again.
func (v *SliceView) EditLabels(f func()) {
	v.data.Lock()
	f()
	v.data.Unlock()
	v.request()
}

// paint hands the voxel at pos to the painter, if one is set; it says whether it did. A
// stroke's first event also hands the voxel it moved from (pos less moved), where the
// button went down.
func (v *SliceView) paint(pos fyne.Position, moved fyne.Delta) bool {
	v.mu.Lock()
	p, begin := v.painter, !v.painting
	if p != nil {
		v.painting = true
	}
	v.mu.Unlock()
	if p == nil {
		return false
	}
	if pp, ok := p.(PointPainter); ok {
		v.paintAt(pp, pos, moved, begin)
		return true
	}
	if begin && (moved.DX != 0 || moved.DY != 0) {
		if idx, ok := v.voxelAt(pos.Subtract(moved)); ok {
			p.Paint(idx, true)
			begin = false
		}
	}
	if idx, ok := v.voxelAt(pos); ok {
		p.Paint(idx, begin)
	}
	return true
}

// Dragged implements fyne.Draggable: with the middle button, or with Space held, the drag
// pans; with a painter set (SetPainter) it paints; otherwise horizontal motion scales the
// width, vertical the level, by 1/200 of the current width per pixel.
func (v *SliceView) Dragged(ev *fyne.DragEvent) {
	v.mu.Lock()
	w := v.p.Window
	pan := v.space || v.button&desktop.MouseButtonTertiary != 0
	v.mu.Unlock()
	if pan {
		v.PanBy(ev.Dragged.DX, ev.Dragged.DY)
		return
	}
	if v.paint(ev.Position, ev.Dragged) {
		return
	}
	k := math.Max(w.Width, 1) / 200
	w.Width = math.Max(1e-6, w.Width+float64(ev.Dragged.DX)*k)
	w.Level += float64(ev.Dragged.DY) * k
	v.SetWindow(w)
	v.userWindow()
}

// MouseDown implements desktop.Mouseable: it notes the button, for panning.
func (v *SliceView) MouseDown(ev *desktop.MouseEvent) {
	v.mu.Lock()
	v.button = ev.Button
	v.mu.Unlock()
}

// MouseUp implements desktop.Mouseable.
func (v *SliceView) MouseUp(*desktop.MouseEvent) {
	v.mu.Lock()
	v.button = 0
	v.mu.Unlock()
}

// KeyDown implements desktop.Keyable: it notes Space and Control.
func (v *SliceView) KeyDown(ev *fyne.KeyEvent) { v.modKey(ev.Name, true) }

// KeyUp implements desktop.Keyable.
func (v *SliceView) KeyUp(ev *fyne.KeyEvent) { v.modKey(ev.Name, false) }

func (v *SliceView) modKey(k fyne.KeyName, down bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch k {
	case fyne.KeySpace:
		v.space = down
	case desktop.KeyControlLeft, desktop.KeyControlRight, desktop.KeySuperLeft, desktop.KeySuperRight:
		v.ctrl = down
	case desktop.KeyShiftLeft, desktop.KeyShiftRight:
		v.shift = down
	case desktop.KeyAltLeft, desktop.KeyAltRight:
		v.alt = down
	}
}

// DragEnd implements fyne.Draggable: it ends a painter's stroke.
func (v *SliceView) DragEnd() { v.endStroke() }

func (v *SliceView) endStroke() {
	v.mu.Lock()
	p, was := v.painter, v.painting
	v.painting = false
	v.mu.Unlock()
	if p != nil && was {
		p.End()
	}
}

// Tapped implements fyne.Tappable: it focuses the view and picks the voxel, or with a
// painter set paints it as a stroke of its own.
func (v *SliceView) Tapped(ev *fyne.PointEvent) {
	if c := fyne.CurrentApp().Driver().CanvasForObject(v); c != nil {
		c.Focus(v)
	}
	if v.paint(ev.Position, fyne.Delta{}) {
		v.endStroke()
		return
	}
	if idx, ok := v.voxelAt(ev.Position); ok {
		v.SetCrosshair(idx)
		if v.OnPick != nil {
			v.OnPick(idx)
		}
	}
}

// MouseIn implements desktop.Hoverable.
func (v *SliceView) MouseIn(ev *desktop.MouseEvent) { v.MouseMoved(ev) }

// MouseMoved implements desktop.Hoverable.
func (v *SliceView) MouseMoved(ev *desktop.MouseEvent) {
	v.mu.Lock()
	v.hover, v.hoverIn = ev.Position, true
	v.mu.Unlock()
	if h, ok := v.painterNow().(Hoverer); ok {
		if at, ok := v.PointAt(ev.Position); ok {
			h.HoverAt(at)
		}
	}
	if v.OnHover != nil {
		p, ok := v.ProbeAt(ev.Position)
		v.OnHover(p, ok)
	}
}

// MouseOut implements desktop.Hoverable.
func (v *SliceView) MouseOut() {
	v.mu.Lock()
	v.hoverIn = false
	v.mu.Unlock()
	if v.OnHover != nil {
		v.OnHover(Probe{}, false)
	}
}

// FocusGained implements fyne.Focusable.
func (v *SliceView) FocusGained() {}

// FocusLost implements fyne.Focusable.
func (v *SliceView) FocusLost() {}

// TypedRune implements fyne.Focusable: 1–5 presets, l labels, o outline, + and − zoom
// about the cursor (the centre when the cursor is elsewhere), 0 resets zoom and pan. A
// painter that takes runes (RuneTaker) has them first: 1–9 choose its label or class.
func (v *SliceView) TypedRune(r rune) {
	if v.tookRune(r) {
		return
	}
	switch {
	case r >= '1' && r <= '5':
		v.ApplyPreset(int(r - '1'))
		v.userWindow()
	case r == '+' || r == '=':
		v.ZoomAt(v.zoomPoint(), ZoomStep)
	case r == '-':
		v.ZoomAt(v.zoomPoint(), 1/ZoomStep)
	case r == '0':
		v.SetView(View{})
	case r == 'l' || r == 'L':
		v.SetLabelsVisible(!v.LabelsVisible())
	case r == 'o' || r == 'O':
		v.update(func() { v.p.Overlay.Outline = !v.p.Overlay.Outline })
	case r == 'i' || r == 'I':
		v.SetInverted(!v.Inverted())
		v.userWindow()
	default:
		if v.OnRune != nil {
			v.OnRune(r)
		}
	}
}

// zoomPoint is where keys zoom: the cursor when over the view, else the middle.
func (v *SliceView) zoomPoint() fyne.Position {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.hoverIn {
		return v.hover
	}
	return fyne.NewPos(v.area.Width/2, v.area.Height/2)
}

// TypedKey implements fyne.Focusable: arrows step one slice, PageUp/PageDown a tenth of the
// stack (at least one).
func (v *SliceView) TypedKey(ev *fyne.KeyEvent) {
	v.mu.Lock()
	page := max(1, v.layout.N/10)
	v.mu.Unlock()
	switch ev.Name {
	case fyne.KeyUp, fyne.KeyRight:
		v.SetSlice(v.Slice() + 1)
	case fyne.KeyDown, fyne.KeyLeft:
		v.SetSlice(v.Slice() - 1)
	case fyne.KeyPageUp:
		v.SetSlice(v.Slice() + page)
	case fyne.KeyPageDown:
		v.SetSlice(v.Slice() - page)
	}
}

var (
	_ fyne.Widget       = (*SliceView)(nil)
	_ fyne.Scrollable   = (*SliceView)(nil)
	_ fyne.Draggable    = (*SliceView)(nil)
	_ fyne.Tappable     = (*SliceView)(nil)
	_ fyne.Focusable    = (*SliceView)(nil)
	_ desktop.Hoverable = (*SliceView)(nil)
	_ desktop.Mouseable = (*SliceView)(nil)
	_ desktop.Keyable   = (*SliceView)(nil)
)

// IsRGB reports whether vol looks like a colour image: three or four uint8 channels.
func IsRGB(vol *volume.Volume) bool {
	return (vol.Dims[3] == 3 || vol.Dims[3] == 4) && vol.DType() == volume.Uint8
}
