package widget

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	fwidget "fyne.io/fyne/v2/widget"

	"amid/viewer/volume"
)

// Probe describes the voxel under the cursor.
type Probe struct {
	Voxel [3]int     // voxel index
	Value float64    // image value (channel shown)
	Label int64      // label value, 0 without labels
	World [3]float64 // LPS position, mm
}

// FrameInterval is the shortest time between two applied frames (about 60 per second).
const FrameInterval = time.Second / 60

// SliceView shows one plane of a volume with an optional label overlay. Mouse wheel, arrow
// keys and PageUp/PageDown change the slice; dragging changes the window (right: wider, down:
// higher level); keys 1–5 apply presets; L toggles the labels and O outline mode. Slices are
// rendered off the UI goroutine and shown through fyne.DoAndWait at most 60 times a second.
//
// Setters may be called from any goroutine; the On callbacks run on the UI goroutine.
type SliceView struct {
	fwidget.BaseWidget

	// OnHover is called with the voxel under the cursor; ok is false when it leaves the image.
	OnHover func(p Probe, ok bool)
	// OnPick is called with the voxel tapped.
	OnPick func(idx [3]int)
	// OnSlice is called after the slice changes.
	OnSlice func(s int)

	mu        sync.Mutex
	vol       *volume.Volume
	layout    Layout
	p         Params
	labelsOn  bool
	presets   []Preset
	cross     [3]int
	crossOn   bool
	gen, done uint64 // frames requested and applied
	err       error  // last render error

	img    *canvas.Image
	edges  [4]*canvas.Text // left, right, top, bottom
	lines  [2]*canvas.Line // crosshair: vertical, horizontal
	rect   fyne.Position   // image area origin …
	rsize  fyne.Size       // … and size, in widget coordinates
	kick   chan struct{}
	stop   chan struct{}
	bufs   [2]Renderer
	frames int
	ui     func(func()) // runs a function on the UI goroutine and waits; fyne.DoAndWait
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
	v.p.Window = pre[0].Window
	v.p.Overlay.Labels, v.p.Overlay.Truth = nil, nil
	v.cross = [3]int{vol.Dims[0] / 2, vol.Dims[1] / 2, vol.Dims[2] / 2}
	v.mu.Unlock()
	v.request()
	fyne.Do(v.Refresh)
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
	v.mu.Lock()
	changed := v.setSliceLocked(s)
	v.mu.Unlock()
	if changed && v.OnSlice != nil {
		fyne.Do(func() { v.OnSlice(s) })
	}
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

// Layout returns the screen mapping of the current volume.
func (v *SliceView) Layout() Layout {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.layout
}

// SetCrosshair marks voxel idx with a crosshair and shows the slice through it.
func (v *SliceView) SetCrosshair(idx [3]int) {
	v.mu.Lock()
	v.cross, v.crossOn = idx, true
	changed := v.setSliceLocked(idx[v.layout.Through])
	s := v.p.Slice
	v.requestLocked()
	v.mu.Unlock()
	if changed && v.OnSlice != nil {
		fyne.Do(func() { v.OnSlice(s) })
	}
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

// loop renders requested frames until stop closes, at most one per FrameInterval.
func (v *SliceView) loop(stop chan struct{}) {
	var last time.Time
	for {
		select {
		case <-stop:
			return
		case <-v.kick:
		}
		if d := FrameInterval - time.Since(last); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
		last = time.Now()
		v.frame()
	}
}

// frame renders the current state into the buffer not on screen and swaps it in.
func (v *SliceView) frame() {
	v.mu.Lock()
	if v.done == v.gen { // a stale kick: this state is already on screen
		v.mu.Unlock()
		return
	}
	vol, p, gen, l := v.vol, v.p, v.gen, v.layout
	if !v.labelsOn {
		p.Overlay.Labels = nil
	}
	cross, crossOn := v.cross, v.crossOn
	v.mu.Unlock()
	if vol == nil {
		return
	}
	r := &v.bufs[v.frames%2]
	v.frames++
	img, err := r.Render(vol, &p)
	ui := v.ui
	if ui == nil {
		if r := frameRunner.Load(); r != nil {
			ui = *r
		} else {
			ui = fyne.DoAndWait
		}
	}
	ui(func() {
		if err == nil && v.img != nil {
			v.img.Image = img
			v.img.Refresh()
			v.placeCross(l, cross, crossOn)
		}
		v.mu.Lock() // last, so that whoever sees done also sees the frame
		v.err = err
		v.done = max(v.done, gen)
		v.mu.Unlock()
	})
}

// CreateRenderer implements fyne.Widget.
func (v *SliceView) CreateRenderer() fyne.WidgetRenderer {
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
	for i := range v.edges {
		v.edges[i] = canvas.NewText("", color.RGBA{255, 220, 0, 255})
		v.edges[i].TextStyle.Bold = true
		objs = append(objs, v.edges[i])
	}
	stop := make(chan struct{})
	v.mu.Lock()
	v.stop = stop
	v.mu.Unlock()
	go v.loop(stop)
	v.request()
	return &sliceRenderer{v: v, bg: bg, objs: objs}
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
	pw, ph := float32(float64(l.W)*l.PixelW), float32(float64(l.H)*l.PixelH)
	s := min(size.Width/pw, size.Height/ph)
	v.rsize = fyne.NewSize(pw*s, ph*s)
	v.rect = fyne.NewPos((size.Width-v.rsize.Width)/2, (size.Height-v.rsize.Height)/2)
	v.img.Move(v.rect)
	v.img.Resize(v.rsize)
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

// placeCross draws the crosshair through the centre of voxel idx.
func (v *SliceView) placeCross(l Layout, idx [3]int, on bool) {
	if !on || l.W == 0 || v.lines[0] == nil {
		for _, ln := range v.lines {
			if ln != nil {
				ln.Hide()
			}
		}
		return
	}
	u, w, _ := l.Screen(idx)
	x := v.rect.X + (float32(u)+0.5)*v.rsize.Width/float32(l.W)
	y := v.rect.Y + (float32(w)+0.5)*v.rsize.Height/float32(l.H)
	v.lines[0].Position1 = fyne.NewPos(x, v.rect.Y)
	v.lines[0].Position2 = fyne.NewPos(x, v.rect.Y+v.rsize.Height)
	v.lines[1].Position1 = fyne.NewPos(v.rect.X, y)
	v.lines[1].Position2 = fyne.NewPos(v.rect.X+v.rsize.Width, y)
	for _, ln := range v.lines {
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
	v.mu.Unlock()
}

// voxelAt maps a widget position to the voxel shown there.
func (v *SliceView) voxelAt(pos fyne.Position) ([3]int, bool) {
	v.mu.Lock()
	l, has, s := v.layout, v.vol != nil, v.p.Slice
	v.mu.Unlock()
	if !has || v.rsize.Width <= 0 || v.rsize.Height <= 0 {
		return [3]int{}, false
	}
	fx := (pos.X - v.rect.X) / v.rsize.Width * float32(l.W)
	fy := (pos.Y - v.rect.Y) / v.rsize.Height * float32(l.H)
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

// Scrolled implements fyne.Scrollable: one slice per wheel notch.
func (v *SliceView) Scrolled(ev *fyne.ScrollEvent) {
	switch {
	case ev.Scrolled.DY > 0:
		v.SetSlice(v.Slice() + 1)
	case ev.Scrolled.DY < 0:
		v.SetSlice(v.Slice() - 1)
	}
}

// Dragged implements fyne.Draggable: horizontal motion scales the width, vertical the level,
// by 1/200 of the current width per pixel.
func (v *SliceView) Dragged(ev *fyne.DragEvent) {
	v.mu.Lock()
	w := v.p.Window
	v.mu.Unlock()
	k := math.Max(w.Width, 1) / 200
	w.Width = math.Max(1e-6, w.Width+float64(ev.Dragged.DX)*k)
	w.Level += float64(ev.Dragged.DY) * k
	v.SetWindow(w)
}

// DragEnd implements fyne.Draggable.
func (v *SliceView) DragEnd() {}

// Tapped implements fyne.Tappable: it focuses the view and picks the voxel.
func (v *SliceView) Tapped(ev *fyne.PointEvent) {
	if c := fyne.CurrentApp().Driver().CanvasForObject(v); c != nil {
		c.Focus(v)
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
	if v.OnHover != nil {
		p, ok := v.ProbeAt(ev.Position)
		v.OnHover(p, ok)
	}
}

// MouseOut implements desktop.Hoverable.
func (v *SliceView) MouseOut() {
	if v.OnHover != nil {
		v.OnHover(Probe{}, false)
	}
}

// FocusGained implements fyne.Focusable.
func (v *SliceView) FocusGained() {}

// FocusLost implements fyne.Focusable.
func (v *SliceView) FocusLost() {}

// TypedRune implements fyne.Focusable: 1–5 presets, l labels, o outline.
func (v *SliceView) TypedRune(r rune) {
	switch {
	case r >= '1' && r <= '5':
		v.ApplyPreset(int(r - '1'))
	case r == 'l' || r == 'L':
		v.SetLabelsVisible(!v.LabelsVisible())
	case r == 'o' || r == 'O':
		v.update(func() { v.p.Overlay.Outline = !v.p.Overlay.Outline })
	}
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
)
