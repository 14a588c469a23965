package widget

import (
	"image/color"
	"math"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"

	"amid/plugins/taskspec"
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
	box := MarksOf(&taskspec.Annotation{Box3D: &taskspec.Box3D{Min: [3]int{2, 3, 1}, Size: [3]int{4, 3, 2}}}, nil, nil, false)
	if len(box) != 1 {
		t.Fatalf("%d marks from one Box3D", len(box))
	}
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

// dentex is a task spec with DENTEX's three box attributes and two point classes.
var dentex = &taskspec.Spec{Kind: taskspec.Detection, Dims: 2,
	Attributes: []taskspec.Attribute{
		{Name: "quadrant", Classes: []string{"1", "2", "3", "4"}},
		{Name: "enumeration", Classes: []string{"1", "2", "3", "4", "5", "6", "7", "8"}},
		{Name: "diagnosis", Classes: []string{"Impacted", "Caries", "Periapical Lesion", "Deep Caries"}},
	},
	Points: []string{"tumour", "lymphocyte"},
}

func TestMarksOf(t *testing.T) {
	a := &taskspec.Annotation{
		Boxes: []taskspec.Box{
			{X: 1, Y: 2, W: 3, H: 4, Attrs: map[string]int{"quadrant": 0, "enumeration": 7, "diagnosis": 1}, Score: 0.87},
			{X: 5, Y: 5, W: 2, H: 2, Attrs: map[string]int{"diagnosis": 9}, Score: 0.2},
		},
		Points: []taskspec.Point{{X: 3, Y: 4, Class: "lymphocyte", Score: 0.6}},
	}
	cols := DefaultColors()
	ms := MarksOf(a, dentex, cols, false)
	if len(ms) != 3 {
		t.Fatalf("%d marks, want 2 boxes and a point", len(ms))
	}
	// Box 0: diagnosis class 1 (Caries) takes colour 2; its text names the classes and score.
	if ms[0].Text != "1 8 Caries 0.87" || ms[0].Color != cols[2] || ms[0].Max != [3]float64{4, 6, 1} {
		t.Errorf("box 0 = %+v", ms[0])
	}
	// An out-of-range class is named by attribute and index rather than dropped.
	if ms[1].Text != "diagnosis 9 0.20" {
		t.Errorf("box 1 text %q", ms[1].Text)
	}
	// The point is lymphocyte (class 1, colour 2), at its pixel's centre.
	if !ms[2].Point || ms[2].Color != cols[2] || ms[2].Min != [3]float64{3.5, 4.5, 0.5} {
		t.Errorf("point = %+v", ms[2])
	}
	tr := MarksOf(a, dentex, cols, true)
	if tr[0].Text != "1 8 Caries" || tr[1].Score != 1 {
		t.Errorf("truth marks carry scores: %q, %v", tr[0].Text, tr[1].Score)
	}
	if MarksOf(nil, dentex, cols, false) != nil {
		t.Error("marks from no annotation")
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
	a := &taskspec.Annotation{
		Boxes: []taskspec.Box{
			{X: 2, Y: 2, W: 8, H: 6, Attrs: map[string]int{"diagnosis": 1}, Score: 0.9},
			{X: 14, Y: 8, W: 6, H: 5, Attrs: map[string]int{"diagnosis": 3}, Score: 0.3},
		},
		Points: []taskspec.Point{{X: 4, Y: 12, Class: "tumour", Score: 0.8}, {X: 18, Y: 3, Class: "lymphocyte", Score: 0.1}},
	}
	v.SetMarks(MarksOf(a, dentex, nil, false))
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
	for _, v := range []*SliceView{c.Left, c.Right} {
		q := make(uiQueue)
		v.ui = q.run
		queues[v] = q
	}
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
	ms := MarksOf(&taskspec.Annotation{
		Boxes:  []taskspec.Box{{X: 2, Y: 2, W: 8, H: 6, Score: 0.9}},
		Points: []taskspec.Point{{X: 4, Y: 12, Score: 0.8}},
	}, nil, nil, false)
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
