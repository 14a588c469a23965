package widget

import (
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"

	"amid/viewer/edit"
	"amid/viewer/edit/marks"
)

// voxelPos is the view position of the centre of voxel (x, y) on the slice shown.
func voxelPos(v *SliceView, x, y int) fyne.Position {
	l := v.Layout()
	idx := [3]int{x, y, v.Slice()}
	u, w, _ := l.Screen(idx)
	fx, fy := v.geometry(&l).ToView(float64(u)+0.5, float64(w)+0.5)
	return fyne.NewPos(float32(fx), float32(fy))
}

// boxDrag drags the primary button from one position to another in one motion, as the
// driver reports it: one event where it is, with how far it moved.
func boxDrag(c fyne.Canvas, from, to fyne.Position) {
	test.Drag(c, to, to.X-from.X, to.Y-from.Y)
}

// wantBox fails unless box i of e spans (x0, y0)–(x1, y1) on slice s of the axial view
// (one slice deep) with class k.
func wantBox(t *testing.T, e *marks.Editor, i int, x0, y0, x1, y1, s float64, k int) {
	t.Helper()
	bs := e.Set().Boxes
	if i >= len(bs) {
		t.Fatalf("no box %d: %d boxes", i, len(bs))
	}
	b := bs[i]
	if b.Min != [3]float64{x0, y0, s} || b.Max != [3]float64{x1, y1, s + 1} || b.Class != k {
		t.Fatalf("box %d from %v to %v class %d; want (%v, %v, %v) to (%v, %v, %v) class %d", i, b.Min, b.Max, b.Class, x0, y0, s, x1, y1, s+1, k)
	}
}

// The editors of these tests count no changes (Changes), so the point radius they are made
// with, 0, does not matter.

// TestBoxEditor drives each box tool through the view on ctVolume's 12 × 10 voxels (the
// middle slice, 2, shown) and checks the boxes and points box by box: a drag from voxel
// (2, 2) to (5, 4) draws a box over x 2..6, y 2..5; a drag from its inside voxel (4, 3) to
// (6, 5) moves it by (2, 2); a drag of its right edge (voxel 7, the last inside) to voxel
// 9 resizes it to x 10; Class gives it class 2; a point tapped at voxel (1, 8) sits at its
// centre and moves with a drag; Delete takes the point, then the box; and undo goes back
// over every step, redo forward again.
func TestBoxEditor(t *testing.T) {
	v, w := newView(t, Axial)
	c := w.Canvas()
	e := marks.New(marks.Set{}, 0)
	edits := 0
	b := &BoxEditor{View: v, Editor: e, Tool: BoxDraw, Class: 1, OnEdit: func(err error) {
		if err != nil {
			t.Error(err)
		}
		edits++
	}}
	v.SetPainter(b)
	settle(t, v)
	const s = 2 // ctVolume has 5 slices; the view opens on the middle one
	if v.Slice() != s {
		t.Fatalf("slice %d shown, want %d", v.Slice(), s)
	}
	window := v.Window()
	boxDrag(c, voxelPos(v, 2, 2), voxelPos(v, 5, 4))
	wantBox(t, e, 0, 2, 2, 6, 5, s, 1)
	if v.Window() != window {
		t.Errorf("drawing a box moved the window to %v", v.Window())
	}
	b.Tool = BoxMove
	boxDrag(c, voxelPos(v, 4, 3), voxelPos(v, 6, 5))
	wantBox(t, e, 0, 4, 4, 8, 7, s, 1)
	boxDrag(c, voxelPos(v, 7, 5), voxelPos(v, 9, 5))
	wantBox(t, e, 0, 4, 4, 10, 7, s, 1)
	b.Tool, b.Class = BoxClass, 2
	test.TapCanvas(c, voxelPos(v, 6, 5))
	wantBox(t, e, 0, 4, 4, 10, 7, s, 2)

	b.Tool, b.Class = BoxPoint, 0
	test.TapCanvas(c, voxelPos(v, 1, 8))
	if ps := e.Set().Points; len(ps) != 1 || ps[0].At != [3]float64{1.5, 8.5, s + 0.5} {
		t.Fatalf("points %+v: want one at voxel (1, 8)'s centre", ps)
	}
	b.Tool = BoxMove
	boxDrag(c, voxelPos(v, 1, 8), voxelPos(v, 2, 9))
	if ps := e.Set().Points; len(ps) != 1 || ps[0].At != [3]float64{2.5, 9.5, s + 0.5} {
		t.Fatalf("points %+v: want the point moved to voxel (2, 9)'s centre", ps)
	}
	b.Tool = BoxDelete
	test.TapCanvas(c, voxelPos(v, 2, 9))
	if n := len(e.Set().Points); n != 0 {
		t.Fatalf("%d points after deleting the one", n)
	}
	test.TapCanvas(c, voxelPos(v, 11, 0)) // nothing there
	test.TapCanvas(c, voxelPos(v, 6, 5))
	if n := len(e.Set().Boxes); n != 0 {
		t.Fatalf("%d boxes after deleting the one", n)
	}
	// Eight steps: draw, move, resize, class, add point, move point, delete point, delete box.
	const steps = 8
	for k := range steps {
		if !b.Undo() {
			t.Fatalf("undo %d: nothing to undo", k+1)
		}
	}
	if b.Undo() || len(e.Set().Boxes)+len(e.Set().Points) != 0 {
		t.Errorf("after %d undos: %+v, want nothing left to undo and an empty set", steps, e.Set())
	}
	for range steps {
		b.Redo()
	}
	if len(e.Set().Boxes)+len(e.Set().Points) != 0 || b.Redo() {
		t.Errorf("after redoing all: %+v", e.Set())
	}
	b.Undo() // the box's deletion
	wantBox(t, e, 0, 4, 4, 10, 7, s, 2)
	settle(t, v)
	if len(v.marks) != 1 {
		t.Errorf("%d marks shown, want the box's", len(v.marks))
	}
	if edits != steps {
		t.Errorf("%d edits reported, want %d (a tap on nothing is none)", edits, steps)
	}
}

// TestBoxEditorOne: with One set (a task of one 3D box), a box drawn replaces the one
// there, in one step.
func TestBoxEditorOne(t *testing.T) {
	v, w := newView(t, Axial)
	old := marks.Box{Min: [3]float64{0, 0, 0}, Max: [3]float64{4, 4, 5}, Score: 1}
	e := marks.New(marks.Set{Boxes: []marks.Box{old}}, 0)
	b := &BoxEditor{View: v, Editor: e, Tool: BoxDraw, One: true}
	v.SetPainter(b)
	settle(t, v)
	s := float64(v.Slice())
	boxDrag(w.Canvas(), voxelPos(v, 6, 5), voxelPos(v, 8, 7))
	wantBox(t, e, 0, 6, 5, 9, 8, s, 0)
	if n := len(e.Set().Boxes); n != 1 {
		t.Fatalf("%d boxes, want the drawn one alone", n)
	}
	if !b.Undo() || len(e.Set().Boxes) != 1 || e.Set().Boxes[0].Max != old.Max {
		t.Errorf("one undo gives %+v, want the old box back", e.Set().Boxes)
	}
}

// TestBoxEditorHidden cannot take a box the view hides below its score threshold.
func TestBoxEditorHidden(t *testing.T) {
	v, w := newView(t, Axial)
	e := marks.New(marks.Set{Boxes: []marks.Box{{Min: [3]float64{2, 2, 0}, Max: [3]float64{8, 8, 5}, Score: 0.2}}}, 0)
	b := &BoxEditor{View: v, Editor: e, Tool: BoxDelete}
	v.SetPainter(b)
	v.SetScoreThreshold(0.5)
	settle(t, v)
	test.TapCanvas(w.Canvas(), voxelPos(v, 5, 5))
	if len(e.Set().Boxes) != 1 {
		t.Error("a hidden box was deleted")
	}
	v.SetScoreThreshold(0)
	test.TapCanvas(w.Canvas(), voxelPos(v, 5, 5))
	if len(e.Set().Boxes) != 0 {
		t.Error("a box shown was not deleted")
	}
}

// TestToolKeys: while a brush is set, number keys choose its label (key 2: the second of
// its labels) and the wheel with Shift or Alt its radius, a step a notch; Control and the
// wheel still zoom, and without a painter key 2 is the second window preset again. While
// a box editor is set, key 3 chooses class 2.
func TestToolKeys(t *testing.T) {
	v, _ := newView(t, Axial)
	_, lab := ctVolume(t)
	ed, err := edit.New(lab)
	if err != nil {
		t.Fatal(err)
	}
	label, radius := 0, 0.0
	br := &Brush{View: v, Editor: ed, Label: 1, Labels: []int{1, 5, 7}, Radius: 3,
		OnLabel: func(l int) { label = l }, OnRadius: func(r float64) { radius = r }}
	v.SetPainter(br)
	window := v.Window()
	v.TypedRune('2')
	if br.Label != 5 || label != 5 || v.Window() != window {
		t.Errorf("key 2: label %d (told %d), window %v; want the second label, 5, and the window kept", br.Label, label, v.Window())
	}
	v.TypedRune('9') // no ninth label: nothing changes, and no preset either
	if br.Label != 5 || v.Window() != window {
		t.Errorf("key 9: label %d, window %v", br.Label, v.Window())
	}
	notch := func(dy float32) {
		v.Scrolled(&fyne.ScrollEvent{PointEvent: fyne.PointEvent{Position: fyne.NewPos(80, 80)}, Scrolled: fyne.Delta{DY: dy}})
	}
	slice := v.Slice()
	for _, k := range []fyne.KeyName{desktop.KeyShiftLeft, desktop.KeyAltRight} {
		v.KeyDown(&fyne.KeyEvent{Name: k})
		notch(10)
		notch(10)
		notch(-10)
		v.KeyUp(&fyne.KeyEvent{Name: k})
	}
	// Two notches up and one down, twice: 3 + 2 × RadiusStep.
	if want := 3 + 2*RadiusStep; br.Radius != want || radius != want || v.Slice() != slice {
		t.Errorf("radius %v (told %v), slice %d; want %v on slice %d", br.Radius, radius, v.Slice(), want, slice)
	}
	for range 100 { // far past the greatest
		br.Grow(1)
	}
	if br.Radius != MaxRadius {
		t.Errorf("radius %v past the greatest, %v", br.Radius, MaxRadius)
	}
	v.KeyDown(&fyne.KeyEvent{Name: desktop.KeyControlLeft})
	v.KeyDown(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
	notch(10)
	v.KeyUp(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
	v.KeyUp(&fyne.KeyEvent{Name: desktop.KeyControlLeft})
	if br.Radius != MaxRadius || v.View().Zoom <= 1 {
		t.Errorf("Control, Shift and the wheel: radius %v, zoom %v; want the radius kept and the view zoomed", br.Radius, v.View().Zoom)
	}
	notch(10) // no modifier: the next slice
	if v.Slice() != slice+1 {
		t.Errorf("the wheel alone: slice %d, want %d", v.Slice(), slice+1)
	}
	be := &BoxEditor{View: v, Editor: marks.New(marks.Set{}, 0), Classes: 3} // three classes: key 3 chooses the last
	v.SetPainter(be)
	v.TypedRune('3')
	if be.Class != 2 {
		t.Errorf("key 3 with the box editor: class %d, want 2", be.Class)
	}
	v.SetPainter(nil)
	v.TypedRune('2')
	if v.Window() != v.Presets()[1].Window {
		t.Errorf("key 2 without a painter: window %v, want the second preset's %v", v.Window(), v.Presets()[1].Window)
	}
	settle(t, v)
}
