package ui

import (
	"bytes"
	"image/png"
	"math"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"amid/viewer/measure"
	vwidget "amid/viewer/widget"
)

// TestViewerMeasures draws a length on the sample CT's axial plane with the Viewer's
// Length tool, by a drag from the centre of voxel (20, 30) to that of (50, 70): on its
// 2.4 mm voxels that is 2.4 · √(30² + 40²) = 120 mm. The side panel lists it with its
// value, hovering its row highlights it and selecting it shows its middle (drawing it
// moves nothing), it takes a name, Undo takes it back (the name, then the length); a
// region too small to hold a voxel centre says why it was not measured; the picture of the view is a PNG with the measurement drawn; Diameters
// adds an ellipse's long and short axes.
func TestViewerMeasures(t *testing.T) {
	a, q := newApp(t)
	a.W.Resize(fyne.NewSize(1200, 900))
	a.tabs.SelectIndex(tabViewer)
	q.drain()
	s := a.viewer
	s.tool.SetSelected("Length")
	if k := s.meas.Kind(); k != measure.Length {
		t.Fatalf("tool %q, want length", k)
	}
	v := s.views[0]
	drag := func(from, to [3]float64) {
		t.Helper()
		base := fyne.CurrentApp().Driver().AbsolutePositionForObject(v)
		a, b := v.PositionOf(from), v.PositionOf(to)
		test.Drag(s.a.W.Canvas(), base.Add(b), b.X-a.X, b.Y-a.Y)
		q.drain()
	}
	z := float64(v.Slice()) + 0.5
	o := s.holder.Objects[0].(*vwidget.OrthoView)
	cross := o.Crosshair()
	drag([3]float64{20.5, 30.5, z}, [3]float64{50.5, 70.5, z})
	if len(s.rows) != 1 {
		t.Fatalf("%d measurements listed, want the length; the screen says %q", len(s.rows), s.probe.Text)
	}
	if got, _ := s.rows[0].Value("length"); math.Abs(got.Value-120) > 0.01 {
		t.Errorf("length %v mm, want 120", got.Value)
	}
	text := panelText(s)
	if !strings.Contains(text, "1  Length · axial") || !strings.Contains(text, "120.0 mm") {
		t.Errorf("the side panel says %q, want the length and its 120.0 mm", text)
	}
	if c := o.Crosshair(); c != cross {
		t.Errorf("drawing moved the crosshair from %v to %v", cross, c)
	}
	// Selecting the row shows the voxel of the length's middle, near (35.5, 50.5) on its
	// slice (the canvas places the pointer to within a pixel).
	s.list.UnselectAll()
	s.list.Select(0)
	p, r := s.rows[0].Points[0], s.rows[0].Points[1]
	if c, want := o.Crosshair(), [3]int{int((p[0] + r[0]) / 2), int((p[1] + r[1]) / 2), int(z)}; c != want {
		t.Errorf("selecting the row put the crosshair at %v, want %v", c, want)
	}
	for _, o := range test.LaidOutObjects(s.list) {
		if r, ok := o.(*measureRow); ok && r.id == 1 {
			r.MouseIn(nil)
		}
	}
	if h := s.meas.Highlighted(); h != 1 {
		t.Errorf("hovering the row highlights %d, want 1", h)
	}
	s.name.SetText("target 1")
	s.name.OnSubmitted(s.name.Text)
	if text := panelText(s); !strings.Contains(text, "axial 20 · target 1") {
		t.Errorf("after naming it the side panel says %q, want its name", text)
	}
	b, err := s.picture()
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	drawn := 0
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			c := vwidget.MeasureHotColor
			if r>>8 == uint32(c.R) && g>>8 == uint32(c.G) && b>>8 == uint32(c.B) {
				drawn++
			}
		}
	}
	if drawn == 0 {
		t.Error("the picture shows no measurement")
	}
	s.meas.Undo()
	s.meas.Undo()
	q.drain()
	if len(s.rows) != 0 {
		t.Errorf("after Undo: %d measurements listed", len(s.rows))
	}
	s.tool.SetSelected("Ellipse")
	drag([3]float64{20.1, 30.1, z}, [3]float64{20.2, 30.2, z})
	if len(s.rows) != 0 || s.probe.Text != "Not measured: degenerate measurement: the ellipse region holds no voxel centre; draw it larger" {
		t.Errorf("a tiny ellipse: %d listed, the screen says %q", len(s.rows), s.probe.Text)
	}
	// An ellipse over the box (20, 30)–(50, 50): diameters 30 and 20 voxels, 72 and 48 mm.
	drag([3]float64{20, 30, z}, [3]float64{50, 50, z})
	s.diameters()
	q.drain()
	if len(s.rows) != 2 || !strings.Contains(panelText(s), "72.0 × 48.0 mm") {
		t.Errorf("after Diameters: %d listed, the side panel says %q", len(s.rows), panelText(s))
	}
}

// panelText is the text of the measurements' panel. It lays out the panel alone: laying
// out the whole screen (texts) would start the planes' renderers again, each with a frame
// loop of its own racing the first.
func panelText(s *viewerScreen) string {
	var b strings.Builder
	for _, o := range test.LaidOutObjects(s.list) {
		if l, ok := o.(*widget.Label); ok {
			b.WriteString(l.Text + "\n")
		}
	}
	return b.String()
}
