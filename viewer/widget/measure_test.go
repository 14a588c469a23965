package widget

import (
	"errors"
	"image"
	"math"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"

	"amid/viewer/measure"
)

// newMeasured returns ctVolume's axial view (160×160, as newView) with a Measurer of kind k,
// and the errors it reports.
func newMeasured(t *testing.T, k measure.Kind) (*SliceView, fyne.Window, *Measurer, *[]error) {
	v, w := newView(t, Axial)
	vol, _ := ctVolume(t)
	set, err := measure.NewSet(vol, measure.UnitHU)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMeasurer(set)
	var errs []error
	m.OnError = func(err error) { errs = append(errs, err) }
	m.Attach(v)
	m.SetKind(k)
	settle(t, v)
	return v, w, m, &errs
}

// drag drags the pointer from a to b, continuous voxel points on the view's slice, in one
// driver event (which holds where the pointer is and how far it moved).
func drag(t *testing.T, v *SliceView, w fyne.Window, a, b [3]float64) {
	t.Helper()
	from, to := v.PositionOf(a), v.PositionOf(b)
	test.Drag(w.Canvas(), to, to.X-from.X, to.Y-from.Y)
	settle(t, v)
}

func value(t *testing.T, m measure.Measurement, name string) float64 {
	t.Helper()
	x, ok := m.Value(name)
	if !ok {
		t.Fatalf("%s has no %s", m.Kind, name)
	}
	return x.Value
}

// shownTexts are the texts the view shows beside its marks and measurements.
func shownTexts(v *SliceView) string {
	var b strings.Builder
	for _, t := range v.texts {
		if t.Visible() {
			b.WriteString(t.Text + "\n")
		}
	}
	return b.String()
}

// TestMeasureLength draws a length by a drag on ctVolume's axial slice (1 × 1.5 mm
// voxels): from (2, 3) to (10, 7) it is √(8² + (4·1.5)²) = 10 mm. Its value is drawn
// beside it; the pointer over a handle highlights it; a drag from its end handle moves that end to (10, 3), 8 mm; undo takes the
// move back, and delete and undo the length; the window stays as it was.
func TestMeasureLength(t *testing.T) {
	v, w, m, errs := newMeasured(t, measure.Length)
	window := v.Window()
	z := 2.5 // the middle of the view's slice, 2
	drag(t, v, w, [3]float64{2, 3, z}, [3]float64{10, 7, z})
	list := m.Set.List()
	if len(list) != 1 || len(*errs) > 0 {
		t.Fatalf("%d measurements, errors %v; want one length", len(list), *errs)
	}
	// Widget positions are float32: the ends come back within 1e-4 voxel.
	if got := value(t, list[0], "length"); math.Abs(got-10) > 1e-3 {
		t.Errorf("length %v mm, want 10", got)
	}
	if s := shownTexts(v); !strings.Contains(s, "10.0 mm") {
		t.Errorf("the view shows %q, want the length 10.0 mm", s)
	}
	if v.Window() != window {
		t.Errorf("drawing a length moved the window to %v", v.Window())
	}
	// The pointer over its end handle highlights it; away from it, nothing.
	v.MouseMoved(&desktop.MouseEvent{PointEvent: fyne.PointEvent{Position: v.PositionOf(list[0].Points[1])}})
	if h := m.Highlighted(); h != list[0].ID {
		t.Errorf("over the end handle: %d highlighted, want %d", h, list[0].ID)
	}
	v.MouseMoved(&desktop.MouseEvent{PointEvent: fyne.PointEvent{Position: v.PositionOf([3]float64{6, 9, z})}})
	if h := m.Highlighted(); h != 0 {
		t.Errorf("away from the handles: %d highlighted", h)
	}
	drag(t, v, w, list[0].Points[1], [3]float64{10, 3, z})
	if got := value(t, m.Set.List()[0], "length"); m.Set.Len() != 1 || math.Abs(got-8) > 1e-3 {
		t.Errorf("after moving its end: %d measurements, length %v mm; want one of 8", m.Set.Len(), got)
	}
	if !m.Undo() || math.Abs(value(t, m.Set.List()[0], "length")-10) > 1e-3 {
		t.Error("undo did not take the move back")
	}
	if err := m.Delete(list[0].ID); err != nil || m.Set.Len() != 0 {
		t.Errorf("delete: %v, %d left", err, m.Set.Len())
	}
	m.Undo()
	settle(t, v)
	if m.Set.Len() != 1 || !strings.Contains(shownTexts(v), "10.0 mm") {
		t.Errorf("after undoing the delete: %d measurements, the view shows %q", m.Set.Len(), shownTexts(v))
	}
	// On another slice the length is not drawn.
	v.SetSlice(3)
	settle(t, v)
	if s := shownTexts(v); strings.Contains(s, "mm") {
		t.Errorf("slice 3 shows %q", s)
	}
}

// TestMeasureROI draws an ellipse by a drag over the box (2, 2)–(6, 5) of ctVolume's
// slice 2 and checks its values against the voxels whose centres lie inside the ellipse,
// from ctVolume's formula −1000 + 200x + 10y + z; and a freehand region by a drag through
// the corners of the box (3, 1)–(7, 4), whose 4 × 3 voxels it holds, against the same.
func TestMeasureROI(t *testing.T) {
	v, w, m, errs := newMeasured(t, measure.Ellipse)
	z := 2.5
	drag(t, v, w, [3]float64{2, 2, z}, [3]float64{6, 5, z})
	if m.Set.Len() != 1 {
		t.Fatalf("%d measurements, errors %v; want the ellipse", m.Set.Len(), *errs)
	}
	var vals []float64
	for y := range 10 {
		for x := range 12 {
			// Centre (4, 3.5), radii 2 and 1.5 voxels.
			dx, dy := (float64(x)+0.5-4)/2, (float64(y)+0.5-3.5)/1.5
			if dx*dx+dy*dy <= 1 {
				vals = append(vals, float64(-1000+200*x+10*y+2))
			}
		}
	}
	// Radii 2 × 1 mm and 1.5 × 1.5 mm.
	checkROI(t, m.Set.List()[0], math.Pi*2*2.25, vals)
	if s := shownTexts(v); !strings.Contains(s, "mm²") || !strings.Contains(s, "HU") {
		t.Errorf("the view shows %q, want the area and the mean in HU", s)
	}

	m.SetKind(measure.Freehand)
	corners := [][3]float64{{3, 1, z}, {7, 1, z}, {7, 4, z}, {3, 4, z}}
	at := v.PositionOf(corners[0])
	for _, c := range corners[1:] {
		to := v.PositionOf(c)
		v.Dragged(&fyne.DragEvent{PointEvent: fyne.PointEvent{Position: to}, Dragged: fyne.NewDelta(to.X-at.X, to.Y-at.Y)})
		at = to
	}
	v.DragEnd()
	settle(t, v)
	if m.Set.Len() != 2 {
		t.Fatalf("%d measurements, errors %v; want the ellipse and the region", m.Set.Len(), *errs)
	}
	vals = vals[:0]
	for y := 1; y < 4; y++ {
		for x := 3; x < 7; x++ {
			vals = append(vals, float64(-1000+200*x+10*y+2))
		}
	}
	// 4 × 1 mm by 3 × 1.5 mm.
	checkROI(t, m.Set.List()[1], 4*4.5, vals)
}

// checkROI compares a region's values with its area and the values inside, in mm² and HU.
func checkROI(t *testing.T, ms measure.Measurement, area float64, vals []float64) {
	t.Helper()
	var sum, lo, hi = 0.0, math.Inf(1), math.Inf(-1)
	for _, x := range vals {
		sum += x
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	mean := sum / float64(len(vals))
	ss := 0.0
	for _, x := range vals {
		ss += (x - mean) * (x - mean)
	}
	want := map[string]float64{"area": area, "mean": mean, "sd": math.Sqrt(ss / float64(len(vals))), "min": lo, "max": hi, "voxels": float64(len(vals))}
	for name, x := range want {
		// The area from float32 widget positions: to 1e-3 mm².
		if got := value(t, ms, name); math.Abs(got-x) > 1e-3 {
			t.Errorf("%s %s = %v, want %v", ms.Kind, name, got, x)
		}
	}
}

// TestMeasureProbeAngle: a tap with the probe reads voxel (3, 4, 2), −358 HU (−1000 +
// 200·3 + 10·4 + 2); an angle drawn as a drag from (8, 2) to its vertex (2, 2), then a tap
// at (2, 6), its arms along x and y, reads 90°; a region too small to hold a voxel centre
// is refused with a reason; choosing no kind frees the button, unless a brush holds it.
func TestMeasureProbeAngle(t *testing.T) {
	v, w, m, errs := newMeasured(t, measure.Probe)
	z := 2.5
	test.TapCanvas(w.Canvas(), v.PositionOf([3]float64{3.5, 4.5, z}))
	settle(t, v)
	if m.Set.Len() != 1 || value(t, m.Set.List()[0], "value") != -358 {
		t.Fatalf("probe: %v, errors %v", m.Set.List(), *errs)
	}
	m.SetKind(measure.Angle)
	drag(t, v, w, [3]float64{8, 2, z}, [3]float64{2, 2, z})
	if m.Set.Len() != 1 {
		t.Fatalf("the first arm made a measurement")
	}
	test.TapCanvas(w.Canvas(), v.PositionOf([3]float64{2, 6, z}))
	settle(t, v)
	if m.Set.Len() != 2 {
		t.Fatalf("%d measurements, errors %v; want the probe and the angle", m.Set.Len(), *errs)
	}
	if got := value(t, m.Set.List()[1], "angle"); math.Abs(got-90) > 1e-3 {
		t.Errorf("angle %v°, want 90", got)
	}
	m.SetKind(measure.Ellipse)
	drag(t, v, w, [3]float64{9.1, 7.1, z}, [3]float64{9.3, 7.3, z})
	if m.Set.Len() != 2 || len(*errs) != 1 || !errors.Is((*errs)[0], measure.ErrDegenerate) {
		t.Errorf("a tiny ellipse: %d measurements, errors %v", m.Set.Len(), *errs)
	}
	// No kind gives the button back; a brush set meanwhile keeps it.
	m.SetKind("")
	if v.painterNow() != nil {
		t.Error("no kind left the tool on the button")
	}
	m.SetKind(measure.Length)
	b := &Brush{View: v}
	v.SetPainter(b)
	m.SetKind("")
	if v.painterNow() != Painter(b) {
		t.Error("no kind took the button from a brush")
	}
}

// TestMeasureCapture: the capture of a view with a length holds the length's colour, and
// without a size it is the fitted slice 512 pixels on its longer side (ctVolume's axial
// slice is 12 × 15 mm: 410 × 512).
func TestMeasureCapture(t *testing.T) {
	v, w, m, _ := newMeasured(t, measure.Length)
	drag(t, v, w, [3]float64{2, 3, 2.5}, [3]float64{10, 7, 2.5})
	img, err := v.Capture()
	if err != nil {
		t.Fatal(err)
	}
	if img.Rect != image.Rect(0, 0, 160, 160) {
		t.Errorf("capture %v, want the view's 160×160", img.Rect)
	}
	if n := count(img, MeasureHotColor); n == 0 {
		t.Error("the capture shows no measurement")
	}
	u := NewSliceView(Axial)
	vol, _ := ctVolume(t)
	if err := u.SetVolume(vol); err != nil {
		t.Fatal(err)
	}
	m.Attach(u)
	img, err = u.Capture()
	if err != nil {
		t.Fatal(err)
	}
	// 12 mm × 512/15 = 409.6.
	if img.Rect != image.Rect(0, 0, 410, 512) || count(img, MeasureHotColor) == 0 {
		t.Errorf("capture of a view not laid out: %v, %d measurement pixels", img.Rect, count(img, MeasureHotColor))
	}
	if _, err := NewSliceView(Axial).Capture(); !errors.Is(err, ErrNoImage) {
		t.Errorf("capture without an image: %v", err)
	}
}

func count(img *image.RGBA, c interface{ RGBA() (r, g, b, a uint32) }) int {
	r0, g0, b0, _ := c.RGBA()
	n := 0
	for i := 0; i < len(img.Pix); i += 4 {
		if uint32(img.Pix[i])*0x101 == r0 && uint32(img.Pix[i+1])*0x101 == g0 && uint32(img.Pix[i+2])*0x101 == b0 {
			n++
		}
	}
	return n
}

// TestMeasurePlaneNames: a measurement names its plane as the view that shows it does, on
// an axis-aligned grid and on ones turned 30°, 40° (near the diagonal, where a grid's axes
// could swap names) and 135° about S.
func TestMeasurePlaneNames(t *testing.T) {
	vol, _ := ctVolume(t)
	for _, deg := range []float64{0, 30, 40, 135} {
		c, s := math.Cos(deg*math.Pi/180), math.Sin(deg*math.Pi/180)
		vol.Direction = [9]float64{c, -s, 0, s, c, 0, 0, 0, 1}
		for _, p := range []Plane{Axial, Coronal, Sagittal} {
			l := NewLayout(vol, p)
			if got := measure.PlaneName(vol, l.Through); got != p.String() {
				t.Errorf("turned %v°: the %v view's measurements say %q", deg, p, got)
			}
		}
	}
}
