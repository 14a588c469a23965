package edit

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"amid/viewer/volume"
)

// grid is an empty uint8 label map of X × Y × Z voxels of spacing sp.
func grid(t *testing.T, X, Y, Z int, sp [3]float64) *volume.Volume {
	t.Helper()
	v, err := volume.New(volume.Uint8, [4]int{X, Y, Z, 1})
	if err != nil {
		t.Fatal(err)
	}
	v.Spacing = sp
	return v
}

// count is the number of voxels of label l.
func count(v *volume.Volume, l float64) int {
	n := 0
	for i := range v.Len() {
		if v.AtIndex(i) == l {
			n++
		}
	}
	return n
}

// TestDab: a disc of radius 3 mm on a 1 mm slice holds the 29 voxels whose centres lie
// within 3 of its own (Gauss's circle problem, N(3) = 29), all on the slice painted; on a
// slice of 0.5 × 1 mm voxels, a disc of radius 2 mm holds the voxels with (0.5 du)² + dv²
// ≤ 4, counted here by brute force.
func TestDab(t *testing.T) {
	v := grid(t, 21, 21, 3, [3]float64{1, 1, 1})
	e, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Dab(2, [3]int{10, 10, 1}, 3, 2); err != nil {
		t.Fatal(err)
	}
	got := e.Labels()
	for z := range 3 {
		for y := range 21 {
			for x := range 21 {
				want := 0.0
				if z == 1 && (x-10)*(x-10)+(y-10)*(y-10) <= 9 {
					want = 2
				}
				if g := got.At(x, y, z, 0); g != want {
					t.Fatalf("voxel (%d, %d, %d) is %v, want %v", x, y, z, g, want)
				}
			}
		}
	}
	if n := count(got, 2); n != 29 {
		t.Errorf("%d voxels painted, want 29", n)
	}
	if count(v, 0) != v.Len() {
		t.Error("the map given to New changed")
	}

	an := grid(t, 21, 21, 1, [3]float64{0.5, 1, 1})
	e, _ = New(an)
	if err := e.Dab(2, [3]int{10, 10, 0}, 2, 1); err != nil {
		t.Fatal(err)
	}
	want := 0
	for dv := -2; dv <= 2; dv++ {
		for du := -4; du <= 4; du++ {
			if math.Pow(0.5*float64(du), 2)+float64(dv*dv) <= 4 {
				want++
			}
		}
	}
	if n := count(e.Labels(), 1); n != want {
		t.Errorf("anisotropic disc: %d voxels, want %d", n, want)
	}
	// The eraser on the coronal plane (axis 1) through the painted disc's centre row.
	if err := e.Dab(1, [3]int{10, 10, 0}, 1, 0); err != nil {
		t.Fatal(err)
	}
	// Radius 1 mm across x (0.5 mm voxels: du ±2) and z (one slice): 5 voxels erased.
	if n := count(e.Labels(), 1); n != want-5 {
		t.Errorf("after erasing: %d voxels, want %d", n, want-5)
	}
}

// TestUndoRedo: a stroke of two dabs is one step; undo gives back the map voxel for voxel,
// redo the stroke; a new edit drops what could be redone.
func TestUndoRedo(t *testing.T) {
	v := grid(t, 16, 16, 2, [3]float64{1, 1, 1})
	v.SetIndex(v.Index(3, 3, 0, 0), 4) // a voxel the stroke paints over
	e, _ := New(v)
	e.Begin()
	for _, c := range [][3]int{{3, 3, 0}, {5, 3, 0}} {
		if err := e.Dab(2, c, 2, 1); err != nil {
			t.Fatal(err)
		}
	}
	e.End()
	after := e.Labels().Clone()
	if !e.Undo() {
		t.Fatal("nothing to undo")
	}
	same := func(a, b *volume.Volume) bool {
		for i := range a.Len() {
			if a.AtIndex(i) != b.AtIndex(i) {
				return false
			}
		}
		return true
	}
	if !same(e.Labels(), v) {
		t.Error("undo did not give back the map")
	}
	if e.Undo() {
		t.Error("a second undo of one stroke")
	}
	if !e.Redo() || !same(e.Labels(), after) {
		t.Error("redo did not make the stroke again")
	}
	if err := e.Fill(2, [3]int{12, 12, 1}, 3); err != nil {
		t.Fatal(err)
	}
	if e.Redo() {
		t.Error("redo after a new edit")
	}
	fill, stroke := e.Undo(), e.Undo()
	if !fill || !stroke || !same(e.Labels(), v) {
		t.Error("two undos did not give back the map")
	}
}

// TestFill: a ring of label 1 on one slice; a fill inside its hole takes the hole alone,
// not the ring, the outside or the other slices.
func TestFill(t *testing.T) {
	v := grid(t, 12, 12, 2, [3]float64{1, 1, 1})
	for y := 2; y <= 8; y++ {
		for x := 2; x <= 8; x++ {
			if x == 2 || x == 8 || y == 2 || y == 8 {
				v.SetIndex(v.Index(x, y, 0, 0), 1)
			}
		}
	}
	e, _ := New(v)
	if err := e.Fill(2, [3]int{5, 5, 0}, 2); err != nil {
		t.Fatal(err)
	}
	l := e.Labels()
	if n := count(l, 2); n != 25 { // the 5 × 5 hole
		t.Errorf("%d voxels filled, want the hole's 25", n)
	}
	if n := count(l, 1); n != 24 { // the ring's 7 × 7 − 5 × 5
		t.Errorf("the ring has %d voxels, want 24", n)
	}
	if l.At(5, 5, 1, 0) != 0 || l.At(0, 0, 0, 0) != 0 {
		t.Error("the fill left its slice or its hole")
	}
}

// TestRemoveIsland: two blocks of label 1 apart; a click on one removes it whole, in 3D,
// and leaves the other.
func TestRemoveIsland(t *testing.T) {
	v := grid(t, 10, 10, 4, [3]float64{1, 1, 1})
	for z := range 3 {
		for y := 1; y < 3; y++ {
			for x := 1; x < 3; x++ {
				v.SetIndex(v.Index(x, y, z, 0), 1)
				v.SetIndex(v.Index(x+5, y+5, z, 0), 1)
			}
		}
	}
	e, _ := New(v)
	if err := e.RemoveIsland([3]int{1, 1, 2}); err != nil {
		t.Fatal(err)
	}
	l := e.Labels()
	if n := count(l, 1); n != 12 || l.At(6, 6, 0, 0) != 1 {
		t.Errorf("%d voxels left, want the other block's 12", n)
	}
	if ch := e.Changes(); len(ch) != 2 || ch[0] != (Change{Label: 0, Added: 12}) || ch[1] != (Change{Label: 1, Removed: 12}) {
		t.Errorf("changes %+v: want 12 voxels from label 1 to background", ch)
	}
}

// TestInterpolate: a disc of radius 2 on slice 0 and one of radius 6 on slice 4 (same
// centre, 1 mm voxels); on slice 2, half way, the mixed signed distances put the edge near
// radius 4: every voxel within 3 of the centre takes the label, none at 5 or more, and a
// stray voxel of the label on slice 2 is replaced by the interpolated shape.
func TestInterpolate(t *testing.T) {
	v := grid(t, 21, 21, 5, [3]float64{1, 1, 1})
	disc := func(z int, r float64) {
		for y := range 21 {
			for x := range 21 {
				if math.Hypot(float64(x-10), float64(y-10)) <= r {
					v.SetIndex(v.Index(x, y, z, 0), 1)
				}
			}
		}
	}
	disc(0, 2)
	disc(4, 6)
	v.SetIndex(v.Index(0, 0, 2, 0), 1)
	e, _ := New(v)
	if err := e.Interpolate(2, 4, 0, 1); err != nil {
		t.Fatal(err)
	}
	l := e.Labels()
	for y := range 21 {
		for x := range 21 {
			r := math.Hypot(float64(x-10), float64(y-10))
			got := l.At(x, y, 2, 0)
			if (r <= 3 && got != 1) || (r >= 5 && got != 0) {
				t.Fatalf("slice 2, voxel (%d, %d) at %.2f mm from the centre: %v", x, y, r, got)
			}
		}
	}
	// Slices 1 and 3 lie between: slice 1 nearer the small disc, slice 3 the large.
	if a, b := count1(l, 1), count1(l, 3); !(a < b) {
		t.Errorf("slice 1 has %d voxels, slice 3 %d: want the shape to grow towards slice 4", a, b)
	}
	if err := e.Interpolate(2, 0, 4, 0); !errors.Is(err, ErrEdit) {
		t.Errorf("interpolating background: %v", err)
	}
}

// count1 is the voxels of label 1 on slice z.
func count1(v *volume.Volume, z int) int {
	n := 0
	for y := range v.Dims[1] {
		for x := range v.Dims[0] {
			if v.At(x, y, z, 0) == 1 {
				n++
			}
		}
	}
	return n
}

// TestDistance compares the two-pass transform with the brute-force nearest distance on
// random masks of anisotropic pixels: they must agree to rounding.
func TestDistance(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		W, H := 1+r.IntN(17), 1+r.IntN(13)
		sx, sy := 0.3+r.Float64(), 0.3+r.Float64()
		to := make([]bool, W*H)
		for i := range to {
			to[i] = r.Float64() < 0.1*float64(trial%4)
		}
		got := distance(to, W, H, sx, sy)
		for y := range H {
			for x := range W {
				want := math.Inf(1)
				for yy := range H {
					for xx := range W {
						if to[yy*W+xx] {
							want = math.Min(want, math.Hypot(float64(x-xx)*sx, float64(y-yy)*sy))
						}
					}
				}
				if g := got[y*W+x]; !(g == want || math.Abs(g-want) < 1e-9) {
					t.Fatalf("trial %d (%d × %d), pixel (%d, %d): %v, want %v", trial, W, H, x, y, g, want)
				}
			}
		}
	}
}

// TestBadEdits: voxels off the grid, an axis that is none, a label a uint8 map cannot
// hold, and a map of floats are refused with ErrEdit, the map unchanged.
func TestBadEdits(t *testing.T) {
	v := grid(t, 4, 4, 4, [3]float64{1, 1, 1})
	e, _ := New(v)
	for name, err := range map[string]error{
		"off the grid": e.Dab(2, [3]int{4, 0, 0}, 1, 1),
		"axis 3":       e.Fill(3, [3]int{0, 0, 0}, 1),
		"label 300":    e.Dab(2, [3]int{0, 0, 0}, 1, 300),
		"negative":     e.RemoveIsland([3]int{-1, 0, 0}),
		"slices":       e.Interpolate(2, 0, 9, 1),
	} {
		if !errors.Is(err, ErrEdit) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if count(e.Labels(), 0) != v.Len() || e.Undo() {
		t.Error("a refused edit changed the map or the history")
	}
	f, _ := volume.New(volume.Float32, [4]int{2, 2, 2, 1})
	if _, err := New(f); !errors.Is(err, ErrEdit) {
		t.Errorf("a float map: %v", err)
	}
}

// TestChangesAgreeWithDiff: after random strokes, fills, island removals, undos and redos,
// the changes the editor keeps (from the voxels it edited) are those Diff counts over the
// whole map against the original.
func TestChangesAgreeWithDiff(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 3))
	v := grid(t, 20, 16, 5, [3]float64{0.8, 1, 2})
	for i := range v.Len() {
		v.SetIndex(i, float64(r.IntN(3)))
	}
	e, _ := New(v)
	at := func() [3]int { return [3]int{r.IntN(20), r.IntN(16), r.IntN(5)} }
	for range 200 {
		var err error
		switch k := r.IntN(6); k {
		case 0, 1:
			e.Begin()
			for range 1 + r.IntN(4) {
				err = e.Dab(r.IntN(3), at(), 3*r.Float64(), r.IntN(4))
			}
			e.End()
		case 2:
			err = e.Fill(r.IntN(3), at(), r.IntN(4))
		case 3:
			err = e.RemoveIsland(at())
		case 4:
			e.Undo()
		case 5:
			e.Redo()
		}
		if err != nil {
			t.Fatal(err)
		}
		want, err := Diff(v, e.Labels())
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Changes(); !slices.Equal(got, want) {
			t.Fatalf("changes %v, the whole map's %v", got, want)
		}
	}
}
