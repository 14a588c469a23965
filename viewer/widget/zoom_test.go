package widget

import (
	"image/color"
	"math"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"

	"amid/viewer/volume"
)

// ZoomAbout keeps the slice point under the cursor where it was, and Pan moves the slice
// with the drag, on a layout with anisotropic pixels.
func TestZoomAboutAndPan(t *testing.T) {
	v, _ := ctVolume(t) // 12×10 axial pixels of 1×1.5 mm
	l := NewLayout(v, Axial)
	const w, h = 160.0, 120.0
	fit := NewGeometry(&l, View{}, w, h)
	// Fitted: 12 mm × 15 mm into 160×120 → 8 units per mm: 8 per pixel across, 12 down.
	if fit.SX != 8 || fit.SY != 12 {
		t.Fatalf("fitted scale %v×%v, want 8×12", fit.SX, fit.SY)
	}
	x, y := 50.0, 70.0
	u, s := fit.ToSlice(x, y)
	z := ZoomAbout(&l, View{}, w, h, x, y, 2)
	g := NewGeometry(&l, z, w, h)
	if z.Zoom != 2 || g.SX != 16 {
		t.Fatalf("zoom %v scale %v, want 2 and 16", z.Zoom, g.SX)
	}
	if u2, s2 := g.ToSlice(x, y); math.Abs(u2-u) > 1e-9 || math.Abs(s2-s) > 1e-9 {
		t.Errorf("zoom moved the point under the cursor: (%v,%v) → (%v,%v)", u, s, u2, s2)
	}
	// A 16-unit drag right at 16 units per pixel moves the centre one pixel left.
	p := Pan(&l, z, w, h, 16, 0)
	if d := p.Center[0] - z.Center[0]; math.Abs(d+1) > 1e-9 || p.Center[1] != z.Center[1] {
		t.Errorf("pan moved the centre by %v, want −1 across", p.Center)
	}
	// Limits: zoom stays within 1..MaxZoom, the centre on the slice.
	if z := ZoomAbout(&l, View{}, w, h, x, y, 0.1); z.Zoom != 1 {
		t.Errorf("zoom out below 1: %v", z.Zoom)
	}
	if z := ZoomAbout(&l, View{}, w, h, x, y, 1e6); z.Zoom != MaxZoom {
		t.Errorf("zoom beyond MaxZoom: %v", z.Zoom)
	}
	if p := Pan(&l, View{}, w, h, 1e6, -1e6); p.Center != [2]float64{0, 10} {
		t.Errorf("pan off the slice: centre %v, want the corner (0, 10)", p.Center)
	}
}

func TestSliceViewZoomPan(t *testing.T) {
	v, w := newView(t, Axial)
	c := w.Canvas()
	pos := fyne.NewPos(60, 50)
	before, ok := v.ProbeAt(pos)
	if !ok {
		t.Fatal("no voxel at (60, 50)")
	}
	// Without Control the wheel changes slices; with it, it zooms about the cursor.
	v.KeyDown(&fyne.KeyEvent{Name: desktop.KeyControlLeft})
	// test.Scroll sends no position, so the event is built here.
	v.Scrolled(&fyne.ScrollEvent{PointEvent: fyne.PointEvent{Position: pos}, Scrolled: fyne.Delta{DY: 10}})
	v.KeyUp(&fyne.KeyEvent{Name: desktop.KeyControlLeft})
	settle(t, v)
	if z := v.View().Zoom; z != ZoomStep {
		t.Fatalf("zoom %v after ctrl+wheel, want %v", z, ZoomStep)
	}
	if v.Slice() != 2 {
		t.Errorf("ctrl+wheel changed the slice to %d", v.Slice())
	}
	after, _ := v.ProbeAt(pos)
	if after.Voxel != before.Voxel {
		t.Errorf("voxel under the cursor moved from %v to %v", before.Voxel, after.Voxel)
	}
	test.Type(v, "+")
	settle(t, v)
	if z := v.View().Zoom; math.Abs(z-ZoomStep*ZoomStep) > 1e-9 {
		t.Errorf("zoom %v after +, want %v", z, ZoomStep*ZoomStep)
	}
	golden(t, "sliceview_zoom.png", c.Capture())

	// Space + drag pans and leaves the window alone; so does a middle-button drag.
	win := v.Window()
	c0 := v.View().Center
	v.KeyDown(&fyne.KeyEvent{Name: fyne.KeySpace})
	test.Drag(c, pos, 20, 0)
	v.KeyUp(&fyne.KeyEvent{Name: fyne.KeySpace})
	c1 := v.View().Center
	if c1[0] >= c0[0] || c1[1] != c0[1] || v.Window() != win {
		t.Errorf("space+drag right: centre %v → %v, window %v → %v; want the centre to move left only", c0, c1, win, v.Window())
	}
	v.MouseDown(&desktop.MouseEvent{Button: desktop.MouseButtonTertiary})
	test.Drag(c, pos, 0, 20)
	v.MouseUp(&desktop.MouseEvent{Button: desktop.MouseButtonTertiary})
	c2 := v.View().Center
	if c2[1] >= c1[1] || c2[0] != c1[0] || v.Window() != win {
		t.Errorf("middle drag down: centre %v → %v, window changed: %v", c1, c2, v.Window() != win)
	}
	test.Type(v, "0")
	settle(t, v)
	if !v.View().Fitted(&v.layout) {
		t.Errorf("key 0 left view %+v", v.View())
	}
	test.Type(v, "-") // zooming out of the fitted view stays fitted
	if z := v.View().Zoom; z != 1 {
		t.Errorf("zoom %v after −, want 1", z)
	}
	settle(t, v)
	if err := v.Err(); err != nil {
		t.Error(err)
	}
}

// A 3D box is drawn on exactly the slices it crosses, in each plane, and a point in its
// class's colour.
func TestMarksCrossPlanes(t *testing.T) {
	v := newVol(t, volume.Uint8, [4]int{12, 10, 5, 1})
	box := Marks([]Box{{Min: [3]float64{2, 3, 1}, Max: [3]float64{6, 6, 3}, Score: 1}}, nil, nil)
	want := colorOf(DefaultColors(), 1)
	// The box covers x 2..5, y 3..5, z 1..2.
	for _, c := range []struct {
		p     Plane
		cross []int // slices the box crosses
	}{
		{Axial, []int{1, 2}},
		{Coronal, []int{3, 4, 5}},
		{Sagittal, []int{2, 3, 4, 5}},
	} {
		l := NewLayout(v, c.p)
		for s := 0; s < l.N; s++ {
			var r Renderer
			var cm Composer
			src, err := r.Render(v, &Params{Plane: c.p, Slice: s, Window: Window{1, 0.5}})
			if err != nil {
				t.Fatal(err)
			}
			// 10 image pixels per slice pixel; the box's outline is 1 pixel wide.
			g := Geometry{W: float64(10 * l.W), H: float64(10 * l.H), SX: 10, SY: 10}
			img := cm.Compose(src, &l, s, g, 10*l.W, 10*l.H, box, 0, 1)
			u0, v0, _, _, ok := markRect(&l, &box[0], s)
			drawn := ok && img.RGBAAt(int(u0*10), int(v0*10)) == want
			if crosses := contains(c.cross, s); drawn != crosses {
				t.Errorf("%v slice %d: box drawn %v, crosses %v", c.p, s, drawn, crosses)
			}
		}
	}
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// Class k takes colour k+1, as label k+1 of an overlay; a point is a mark with Min = Max.
func TestMarks(t *testing.T) {
	cols := DefaultColors()
	ms := Marks([]Box{{Min: [3]float64{1, 2, 0}, Max: [3]float64{4, 6, 1}, Class: 1, Score: 0.87, Text: "Caries 0.87"}},
		[]Point{{At: [3]float64{3.5, 4.5, 0.5}, Class: 0, Score: 0.6}}, cols)
	if len(ms) != 2 {
		t.Fatalf("%d marks, want a box and a point", len(ms))
	}
	if b := ms[0]; b.Point || b.Color != cols[2] || b.Min != [3]float64{1, 2, 0} || b.Max != [3]float64{4, 6, 1} || b.Score != 0.87 || b.Text != "Caries 0.87" {
		t.Errorf("box = %+v", b)
	}
	if p := ms[1]; !p.Point || p.Color != cols[1] || p.Min != p.Max || p.Min != [3]float64{3.5, 4.5, 0.5} || p.Score != 0.6 {
		t.Errorf("point = %+v", p)
	}
	if Marks(nil, nil, cols) != nil {
		t.Error("marks from no boxes and no points")
	}
	if def := Marks(nil, []Point{{Class: 2}}, nil); def[0].Color != cols[3] {
		t.Errorf("without a colour table, class 2 is %v, want the default table's colour 3 %v", def[0].Color, cols[3])
	}
}

// rgbTile is a 24×16 RGB uint8 tile: red rises across, green down, blue is 40.
func rgbTile(t testing.TB) *volume.Volume {
	v := newVol(t, volume.Uint8, [4]int{24, 16, 1, 3})
	d := v.Data.([]uint8)
	for y := 0; y < 16; y++ {
		for x := 0; x < 24; x++ {
			i := v.Index(x, y, 0, 0)
			d[i], d[i+1], d[i+2] = uint8(10*x), uint8(15*y), 40
		}
	}
	return v
}

func TestRenderRGB(t *testing.T) {
	v := rgbTile(t)
	var r Renderer
	img, err := r.Render(v, &Params{RGB: true, Window: RGBWindow})
	if err != nil {
		t.Fatal(err)
	}
	// RGBWindow shows stored values as they are.
	for _, p := range [][2]int{{0, 0}, {5, 3}, {23, 15}} {
		want := color.RGBA{uint8(10 * p[0]), uint8(15 * p[1]), 40, 255}
		if got := img.RGBAAt(p[0], p[1]); got != want {
			t.Errorf("pixel %v = %v, want %v", p, got, want)
		}
	}
	// A narrower window applies to each channel: W=100, L=50 maps 40 to round(40·2.55) = 102.
	img, _ = r.Render(v, &Params{RGB: true, Window: Window{100, 50}})
	if got := img.RGBAAt(1, 1); got != (color.RGBA{26, 38, 102, 255}) {
		t.Errorf("windowed pixel = %v, want {26 38 102 255}", got)
	}
	if !IsRGB(v) || DefaultPresets(v)[0].Window != RGBWindow {
		t.Error("tile not recognised as RGB")
	}
	gray := newVol(t, volume.Uint8, [4]int{2, 2, 1, 1})
	if _, err := r.Render(gray, &Params{RGB: true}); err == nil {
		t.Error("RGB of a one-channel image accepted")
	}
}

// The RGB tile zoomed with boxes (labels, scores) and points: the threshold hides the
// low-scoring box and point.
func TestSliceViewMarksGolden(t *testing.T) {
	test.NewTempApp(t)
	v := newSliceView(Axial)
	if err := v.SetVolume(rgbTile(t)); err != nil {
		t.Fatal(err)
	}
	// DENTEX-like boxes (diagnosis Caries, class 1; Deep Caries, class 3) and two point
	// classes, as the Review screen gives them.
	v.SetMarks(Marks([]Box{
		{Min: [3]float64{2, 2, 0}, Max: [3]float64{10, 8, 1}, Class: 1, Score: 0.9, Text: "Caries 0.90"},
		{Min: [3]float64{14, 8, 0}, Max: [3]float64{20, 13, 1}, Class: 3, Score: 0.3, Text: "Deep Caries 0.30"},
	}, []Point{{At: [3]float64{4.5, 12.5, 0.5}, Class: 0, Score: 0.8}, {At: [3]float64{18.5, 3.5, 0.5}, Class: 1, Score: 0.1}}, nil))
	w := test.NewTempWindow(t, v)
	w.SetPadded(false)
	w.Resize(fyne.NewSize(240, 160))
	settle(t, v)
	golden(t, "sliceview_marks.png", w.Canvas().Capture())
	if n := visibleTexts(v); n != 2 {
		t.Errorf("%d box texts shown, want 2", n)
	}
	v.SetScoreThreshold(0.5)
	settle(t, v)
	if n := visibleTexts(v); n != 1 {
		t.Errorf("%d box texts above threshold 0.5, want 1", n)
	}
	golden(t, "sliceview_marks_threshold.png", w.Canvas().Capture())
}

func visibleTexts(v *SliceView) int {
	n := 0
	for _, t := range v.texts {
		if t.Visible() {
			n++
		}
	}
	return n
}

func newCompare(t *testing.T) (*CompareView, fyne.Window) {
	test.NewTempApp(t)
	c := NewCompareView(Axial)
	b, q := testBridge()
	c.UseBridge(b)
	queues[c.Left], queues[c.Right] = q, q
	vol, truth := ctVolume(t)
	// The prediction: class 1 one voxel wider (false positives at x = 6), class 2 missing
	// its top row (false negatives at y = 5).
	pred := truth.Clone()
	for z := 0; z < 5; z++ {
		for y := 2; y <= 4; y++ {
			pred.Data.([]uint8)[pred.Index(6, y, z, 0)] = 1
		}
		for x := 7; x <= 9; x++ {
			pred.Data.([]uint8)[pred.Index(x, 5, z, 0)] = 0
		}
	}
	if err := c.SetVolume(vol); err != nil {
		t.Fatal(err)
	}
	if err := c.SetTruth(truth, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPrediction(pred, nil); err != nil {
		t.Fatal(err)
	}
	w := test.NewTempWindow(t, c)
	w.SetPadded(false)
	w.Resize(fyne.NewSize(322, 160))
	settleAll(t, c)
	return c, w
}

func settleAll(t *testing.T, c *CompareView) {
	settle(t, c.Left)
	settle(t, c.Right)
}

func TestCompareView(t *testing.T) {
	c, w := newCompare(t)
	at := func(v *SliceView, x, y int) color.RGBA {
		l := v.Layout()
		g := v.geometry(&l)
		px, py := g.ToView(float64(x)+0.5, float64(y)+0.5)
		return color.RGBAModel.Convert(w.Canvas().Capture().At(int(px+float64(v.Position().X)), int(py))).(color.RGBA)
	}
	// Prediction alone: voxel (6, 3) carries class 1's colour over the image.
	predPix := at(c.Left, 6, 3)
	test.Type(c.Left, "t")
	settleAll(t, c)
	if c.Mode() != ShowTruth {
		t.Fatalf("mode %v after t, want truth", c.Mode())
	}
	if at(c.Left, 6, 3) == predPix {
		t.Error("the truth view shows the prediction's extra voxel")
	}
	test.Type(c.Left, "d")
	settleAll(t, c)
	// Voxel (6, 3, 2) holds −1000 + 1200 + 30 + 2 = 232 HU, white in the brain window; the
	// false-positive colour is blended over it at opacity 0.5 (alpha 128).
	px := []uint8{255, 255, 255}
	blend(px, FPColor, 128)
	want := color.RGBA{px[0], px[1], px[2], 255}
	if got := at(c.Left, 6, 3); got != want {
		t.Errorf("difference at a false positive = %v, want %v", got, want)
	}
	golden(t, "compare_difference.png", w.Canvas().Capture())
	test.Type(c.Left, "s")
	settleAll(t, c)
	if !c.Right.Visible() {
		t.Fatal("side by side shows one view")
	}
	// The views are linked: a slice step, a window preset and a zoom in one show in the other.
	c.Left.TypedKey(&fyne.KeyEvent{Name: fyne.KeyUp})
	test.Type(c.Left, "3")
	c.Left.ZoomAt(fyne.NewPos(40, 60), 2)
	settleAll(t, c)
	if c.Right.Slice() != c.Left.Slice() || c.Right.Window() != c.Left.Window() || c.Right.View() != c.Left.View() {
		t.Errorf("right view not linked: slice %d/%d window %v/%v view %+v/%+v",
			c.Left.Slice(), c.Right.Slice(), c.Left.Window(), c.Right.Window(), c.Left.View(), c.Right.View())
	}
	// Voxel (4, 4) is class 1 in both; (6, 4) only in the prediction.
	if at(c.Left, 4, 4) != at(c.Right, 4, 4) || at(c.Left, 6, 4) == at(c.Right, 6, 4) {
		t.Errorf("side by side: voxel (4,4) %v/%v, (6,4) %v/%v; want equal, then different",
			at(c.Left, 4, 4), at(c.Right, 4, 4), at(c.Left, 6, 4), at(c.Right, 6, 4))
	}
	golden(t, "compare_side_by_side.png", w.Canvas().Capture())
}

func TestComposeAllocs(t *testing.T) {
	v := rgbTile(t)
	l := NewLayout(v, Axial)
	ms := Marks([]Box{{Min: [3]float64{2, 2, 0}, Max: [3]float64{10, 8, 1}, Score: 0.9, Text: "0.90"}},
		[]Point{{At: [3]float64{4.5, 12.5, 0.5}, Score: 0.8}}, nil)
	var r Renderer
	var c Composer
	p := &Params{RGB: true, Window: RGBWindow}
	g := NewGeometry(&l, View{Zoom: 3, Center: [2]float64{8, 8}}, 300, 200)
	run := func() {
		src, _ := r.Render(v, p)
		c.Compose(src, &l, 0, g, 300, 200, ms, 0, 1)
	}
	run()
	if n := testing.AllocsPerRun(20, run); n != 0 {
		t.Errorf("%v allocations per render and compose, want 0", n)
	}
}

// quiet runs the flushes q hands over until none comes for 200 ms (twelve bridge
// intervals) and returns how many ran; it fails after 200, a view that never settles.
func quiet(t *testing.T, q uiQueue) int {
	t.Helper()
	for n := 0; ; n++ {
		select {
		case f := <-q:
			f()
		case <-time.After(200 * time.Millisecond):
			return n
		}
		if n > 200 {
			t.Fatalf("still flushing after %d flushes: linked views echo each other", n)
		}
	}
}

// Linked views follow each other without echoing back: a second change of the left view
// made before the bridge has shown the right view following the first is kept, and the
// two settle on it (an echo of the older slice would undo it, and the two would trade
// old and new slices at every flush).
func TestCompareLinkedNoEcho(t *testing.T) {
	c, _ := newCompare(t)
	c.SetMode(SideBySide)
	q := queues[c.Left]
	quiet(t, q)
	c.Left.SetSlice(1)
	(<-q)() // the flush that has the right view follow to slice 1
	c.Left.SetSlice(3)
	quiet(t, q)
	if l, r := c.Left.Slice(), c.Right.Slice(); l != 3 || r != 3 {
		t.Errorf("slices %d and %d, want both on the newest, 3", l, r)
	}
	// The same for zoom and pan.
	c.Right.SetView(View{Zoom: 2, Center: [2]float64{4, 4}})
	(<-q)()
	c.Right.SetView(View{Zoom: 3, Center: [2]float64{5, 5}})
	quiet(t, q)
	if l, r := c.Left.View(), c.Right.View(); l != r || r.Zoom != 3 {
		t.Errorf("views %+v and %+v, want both on the newest, zoom 3", l, r)
	}
}

// In three linked planes, scrolling one view twice across a flush ends with every
// crosshair on the newest slice.
func TestOrthoLinkedNoEcho(t *testing.T) {
	test.NewTempApp(t)
	o := NewOrthoView()
	b, q := testBridge()
	o.UseBridge(b)
	vol, _ := ctVolume(t)
	if err := o.SetVolume(vol); err != nil {
		t.Fatal(err)
	}
	w := test.NewTempWindow(t, o)
	w.Resize(fyne.NewSize(320, 320))
	quiet(t, q)
	ax := o.Views[0]
	ax.SetSlice(3)
	(<-q)()
	ax.SetSlice(4)
	quiet(t, q)
	if c := o.Crosshair(); c[2] != 4 || ax.Slice() != 4 {
		t.Errorf("crosshair %v, axial slice %d; want z = 4 for both", c, ax.Slice())
	}
	for _, v := range o.Views[1:] {
		v.mu.Lock()
		cross := v.cross
		v.mu.Unlock()
		if cross[2] != 4 {
			t.Errorf("%v view's crosshair %v, want z = 4", v.p.Plane, cross)
		}
	}
}
