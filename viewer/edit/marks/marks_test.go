package marks

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// box is a 2D box of class k from (x0, y0) to (x1, y1), on slice 0 (z 0..1), scoring 0.9
// (a prediction's).
func box(x0, y0, x1, y1 float64, k int) Box {
	return Box{Min: [3]float64{x0, y0, 0}, Max: [3]float64{x1, y1, 1}, Class: k, Score: 0.9}
}

// radius is the distance (voxels) within which the tests' points are the same object: less
// than the 10 voxels one point of prediction moves in TestDiff, more than the 3 the other
// moves.
const radius = 4

// prediction has three boxes (classes 0, 1, 1) and two points (classes 0, 1).
func prediction() Set {
	return Set{
		Boxes:  []Box{box(0, 0, 10, 10, 0), box(20, 20, 30, 30, 1), box(40, 0, 50, 10, 1)},
		Points: []Point{{At: [3]float64{5.5, 5.5, 0.5}, Score: 0.8}, {At: [3]float64{60.5, 60.5, 0.5}, Class: 1, Score: 0.7}},
	}
}

// TestEditorHistory takes each edit in turn, undoes them all and redoes them all: each
// undo gives back the set as it was before its step, each redo the set after it.
func TestEditorHistory(t *testing.T) {
	e := New(prediction(), radius)
	var sets []Set // the set after each step
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		sets = append(sets, e.Set().Clone())
	}
	sets = append(sets, e.Set().Clone())
	_, err := e.AddBox(Box{Min: [3]float64{70, 70, 0}, Max: [3]float64{75, 78, 1}, Class: 2})
	step("add box", err)
	if b := e.Set().Boxes[3]; b.Score != 1 {
		t.Errorf("the drawn box scores %v, want 1 (the reader's own)", b.Score)
	}
	step("move box 0", e.PlaceBox(0, [3]float64{1, 1, 0}, [3]float64{11, 11, 1}))
	step("reclass box 1", e.ClassBox(1, 0))
	step("delete box 2", e.DeleteBox(2))
	_, err = e.AddPoint(Point{At: [3]float64{80.5, 1.5, 0.5}})
	step("add point", err)
	step("move point 0", e.MovePoint(0, [3]float64{6.5, 5.5, 0.5}))
	step("delete point 1", e.DeletePoint(1))
	if got := len(e.Set().Boxes); got != 3 {
		t.Fatalf("%d boxes after adding one and deleting one of 3", got)
	}
	for k := len(sets) - 2; k >= 0; k-- {
		if !e.Undo() {
			t.Fatalf("undo %d: nothing to undo", k)
		}
		if !same(e.Set(), sets[k]) {
			t.Fatalf("after undoing to step %d: %+v, want %+v", k, e.Set(), sets[k])
		}
	}
	if e.Undo() {
		t.Error("an undo past the first step")
	}
	if len(e.Changes()) != 0 {
		t.Errorf("changes after undoing all: %+v", e.Changes())
	}
	for k := 1; k < len(sets); k++ {
		if !e.Redo() || !same(e.Set(), sets[k]) {
			t.Fatalf("after redoing step %d: %+v, want %+v", k, e.Set(), sets[k])
		}
	}
	if e.Redo() {
		t.Error("a redo past the last step")
	}
	// A new step after an undo drops what could be redone.
	e.Undo()
	if err := e.ClassPoint(0, 1); err != nil {
		t.Fatal(err)
	}
	if e.Redo() {
		t.Error("a redo after a new step")
	}
}

func same(a, b Set) bool {
	return slices.EqualFunc(a.Boxes, b.Boxes, func(x, y Box) bool {
		return x.Min == y.Min && x.Max == y.Max && x.Class == y.Class && x.Score == y.Score
	}) && slices.Equal(a.Points, b.Points)
}

// TestStroke makes a drag's many moves one step, and a stroke that changes nothing none.
func TestStroke(t *testing.T) {
	e := New(prediction(), radius)
	e.Begin()
	for dx := 1.0; dx <= 5; dx++ {
		if err := e.PlaceBox(0, [3]float64{dx, 0, 0}, [3]float64{10 + dx, 10, 1}); err != nil {
			t.Fatal(err)
		}
	}
	e.End()
	e.Begin()
	e.End()
	if !e.Undo() || e.Set().Boxes[0].Min[0] != 0 {
		t.Errorf("one undo leaves box 0 at x %v, want 0 (where it was before the drag)", e.Set().Boxes[0].Min[0])
	}
	if e.Undo() {
		t.Error("the empty stroke made a step")
	}
}

// TestRefused refuses what names no box or point, empty or infinite boxes, negative
// classes, and leaves the history as it was.
func TestRefused(t *testing.T) {
	e := New(prediction(), radius)
	for what, err := range map[string]error{
		"box 3":             e.DeleteBox(3),
		"box -1":            e.ClassBox(-1, 0),
		"class -1":          e.ClassBox(0, -1),
		"an empty box":      e.PlaceBox(0, [3]float64{5, 5, 0}, [3]float64{5, 9, 1}),
		"an infinite box":   e.PlaceBox(0, [3]float64{0, 0, 0}, [3]float64{math.Inf(1), 9, 1}),
		"point 2":           e.MovePoint(2, [3]float64{}),
		"a NaN point":       e.MovePoint(0, [3]float64{math.NaN(), 0, 0}),
		"point class -1":    e.ClassPoint(0, -1),
		"delete point 9":    e.DeletePoint(9),
		"a box upside down": func() error { _, err := e.AddBox(box(5, 5, 1, 1, 0)); return err }(),
	} {
		if !errors.Is(err, ErrMarks) {
			t.Errorf("%s: %v, want ErrMarks", what, err)
		}
	}
	if e.Undo() {
		t.Error("a refused edit made a step")
	}
}

// TestDiff counts, per class, what the edits did against the prediction.
func TestDiff(t *testing.T) {
	e := New(prediction(), radius)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := e.AddBox(box(70, 70, 80, 80, 2)) // class 2: added 1
	must(err)
	must(e.PlaceBox(0, [3]float64{2, 0, 0}, [3]float64{12, 10, 1})) // class 0: moved (IoU 8/12)
	must(e.ClassBox(1, 0))                                          // class 0: reclassed (from 1)
	must(e.DeleteBox(2))                                            // class 1: removed
	must(e.MovePoint(0, [3]float64{8.5, 5.5, 0.5}))                 // point class 0: moved 3, within 4
	must(e.MovePoint(1, [3]float64{70.5, 60.5, 0.5}))               // point class 1: moved 10, beyond 4: removed and added
	want := []Change{
		{Kind: KindBox, Class: 0, Moved: 1, Reclassed: 1},
		{Kind: KindBox, Class: 1, Removed: 1},
		{Kind: KindBox, Class: 2, Added: 1},
		{Kind: KindPoint, Class: 0, Moved: 1},
		{Kind: KindPoint, Class: 1, Added: 1, Removed: 1},
	}
	if got := e.Changes(); !slices.Equal(got, want) {
		t.Errorf("changes %+v, want %+v", got, want)
	}
	// The order of the boxes does not matter: a reversed set differs in nothing.
	p := prediction()
	r := p.Clone()
	slices.Reverse(r.Boxes)
	slices.Reverse(r.Points)
	if d := Diff(p, r, radius); len(d) != 0 {
		t.Errorf("a reordered set differs: %+v", d)
	}
}
