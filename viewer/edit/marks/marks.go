// Package marks corrects a detection: the boxes and points of a case, drawn, moved,
// resized, deleted and given another class, with undo and redo over the case's whole
// history, and what the correction changed against the prediction, class by class. It
// knows nothing of windows: the viewer (amid/viewer/widget.BoxEditor) turns the pointer
// into voxel coordinates and calls it, and the screens save what it holds as a correction
// beside the prediction, in the task's annotation format (amid/plugins/taskspec's MarksOf
// and AnnotationOf), never over it.
//
// Coordinates are continuous voxel coordinates, as the viewer draws marks: voxel i covers
// [i, i+1) along each axis, so a 2D box on a 2D image spans z 0..1 and a pixel's centre is
// at i+0.5.
package marks

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// ErrMarks marks an edit the set cannot take: an index that names no box or point, a box
// that is empty or not finite, a negative class.
var ErrMarks = errors.New("marks")

// Box is an axis-aligned box from Min to Max, of class Class (the class of the task's last
// box attribute), with the model's Score (1 for the reader's own). Attrs are the box's
// attributes as the annotation had them; they travel with it and are not compared.
type Box struct {
	Min, Max [3]float64
	Class    int
	Score    float64
	Attrs    map[string]int
}

// Point is a point object at At, of class Class (its index among the task's point
// classes), with the model's Score.
type Point struct {
	At    [3]float64
	Class int
	Score float64
}

// Set is a case's boxes and points.
type Set struct {
	Boxes  []Box
	Points []Point
}

// Clone is a deep copy of s.
func (s Set) Clone() Set {
	out := Set{Boxes: make([]Box, len(s.Boxes)), Points: slices.Clone(s.Points)}
	for i, b := range s.Boxes {
		if b.Attrs != nil {
			m := make(map[string]int, len(b.Attrs))
			for k, v := range b.Attrs {
				m[k] = v
			}
			b.Attrs = m
		}
		out.Boxes[i] = b
	}
	return out
}

// Editor holds a copy of a prediction's set and the history of its edits.
type Editor struct {
	orig, cur  Set
	undo, redo []Set // the set before each step (undo), after each step taken back (redo)
	stroke     *Set  // the set when the stroke under way began
	changed    bool  // the stroke under way changed the set
	radius     float64
}

// New edits a copy of s. Changes counts a point as moved when it lies within pointRadius
// (voxels) of where it was (see Diff).
func New(s Set, pointRadius float64) *Editor {
	return &Editor{orig: s.Clone(), cur: s.Clone(), radius: pointRadius}
}

// Set is the set as edited. It is the editor's own: the caller must not change it, and it
// changes with the next edit.
func (e *Editor) Set() Set { return e.cur }

// Original is the set given to New.
func (e *Editor) Original() Set { return e.orig }

// Begin starts a stroke: the edits until End are one step of the history (a drag that
// moves a box through many places).
func (e *Editor) Begin() {
	e.End()
	s := e.cur.Clone()
	e.stroke, e.changed = &s, false
}

// End ends the stroke under way, if any: it becomes one step when it changed anything.
func (e *Editor) End() {
	if e.stroke != nil && e.changed {
		e.undo = append(e.undo, *e.stroke)
		e.redo = nil
	}
	e.stroke, e.changed = nil, false
}

// change runs f, which changes e.cur, as one step (outside a stroke) or within the stroke.
func (e *Editor) change(f func()) {
	if e.stroke != nil {
		f()
		e.changed = true
		return
	}
	before := e.cur.Clone()
	f()
	e.undo = append(e.undo, before)
	e.redo = nil
}

// Check refuses a box that is empty or not finite on an axis, or of a negative class.
func (b Box) Check() error { return checkBox(b) }

func checkBox(b Box) error {
	for a := range 3 {
		if !finite(b.Min[a], b.Max[a]) || !(b.Min[a] < b.Max[a]) {
			return fmt.Errorf("%w: box from %v to %v is empty or not finite on axis %d", ErrMarks, b.Min, b.Max, a)
		}
	}
	if b.Class < 0 {
		return fmt.Errorf("%w: class %d is negative", ErrMarks, b.Class)
	}
	return nil
}

func finite(v ...float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

func (e *Editor) box(i int) error {
	if i < 0 || i >= len(e.cur.Boxes) {
		return fmt.Errorf("%w: box %d is not one of the %d boxes", ErrMarks, i, len(e.cur.Boxes))
	}
	return nil
}

func (e *Editor) point(i int) error {
	if i < 0 || i >= len(e.cur.Points) {
		return fmt.Errorf("%w: point %d is not one of the %d points", ErrMarks, i, len(e.cur.Points))
	}
	return nil
}

// AddBox adds b (score 1 when it has none: the reader's own) and returns its index.
func (e *Editor) AddBox(b Box) (int, error) {
	if err := checkBox(b); err != nil {
		return 0, err
	}
	if b.Score == 0 {
		b.Score = 1
	}
	e.change(func() { e.cur.Boxes = append(e.cur.Boxes, b) })
	return len(e.cur.Boxes) - 1, nil
}

// PlaceBox moves or resizes box i to span min to max; the reader vouches for it, so it
// scores 1. Placing it where it is changes nothing.
func (e *Editor) PlaceBox(i int, min, max [3]float64) error {
	if err := e.box(i); err != nil {
		return err
	}
	b := e.cur.Boxes[i]
	if b.Min == min && b.Max == max {
		return nil
	}
	b.Min, b.Max, b.Score = min, max, 1
	if err := checkBox(b); err != nil {
		return err
	}
	e.change(func() { e.cur.Boxes[i] = b })
	return nil
}

// ClassBox gives box i class k (scoring 1); giving it its own class changes nothing.
func (e *Editor) ClassBox(i, k int) error {
	if err := e.box(i); err != nil {
		return err
	}
	if k < 0 {
		return fmt.Errorf("%w: class %d is negative", ErrMarks, k)
	}
	if e.cur.Boxes[i].Class == k {
		return nil
	}
	e.change(func() { e.cur.Boxes[i].Class, e.cur.Boxes[i].Score = k, 1 })
	return nil
}

// DeleteBox deletes box i; the boxes after it move down one index.
func (e *Editor) DeleteBox(i int) error {
	if err := e.box(i); err != nil {
		return err
	}
	e.change(func() { e.cur.Boxes = slices.Delete(slices.Clone(e.cur.Boxes), i, i+1) })
	return nil
}

// AddPoint adds p (score 1 when it has none) and returns its index.
func (e *Editor) AddPoint(p Point) (int, error) {
	if !finite(p.At[:]...) || p.Class < 0 {
		return 0, fmt.Errorf("%w: point at %v of class %d is not finite or its class is negative", ErrMarks, p.At, p.Class)
	}
	if p.Score == 0 {
		p.Score = 1
	}
	e.change(func() { e.cur.Points = append(e.cur.Points, p) })
	return len(e.cur.Points) - 1, nil
}

// MovePoint moves point i to at (scoring 1); moving it where it is changes nothing.
func (e *Editor) MovePoint(i int, at [3]float64) error {
	if err := e.point(i); err != nil {
		return err
	}
	if !finite(at[:]...) {
		return fmt.Errorf("%w: point %d cannot move to %v", ErrMarks, i, at)
	}
	if e.cur.Points[i].At == at {
		return nil
	}
	e.change(func() { e.cur.Points[i].At, e.cur.Points[i].Score = at, 1 })
	return nil
}

// ClassPoint gives point i class k (scoring 1).
func (e *Editor) ClassPoint(i, k int) error {
	if err := e.point(i); err != nil {
		return err
	}
	if k < 0 {
		return fmt.Errorf("%w: class %d is negative", ErrMarks, k)
	}
	if e.cur.Points[i].Class == k {
		return nil
	}
	e.change(func() { e.cur.Points[i].Class, e.cur.Points[i].Score = k, 1 })
	return nil
}

// DeletePoint deletes point i; the points after it move down one index.
func (e *Editor) DeletePoint(i int) error {
	if err := e.point(i); err != nil {
		return err
	}
	e.change(func() { e.cur.Points = slices.Delete(slices.Clone(e.cur.Points), i, i+1) })
	return nil
}

// Undo takes back the last step; false when there is none.
func (e *Editor) Undo() bool {
	e.End()
	if len(e.undo) == 0 {
		return false
	}
	e.redo = append(e.redo, e.cur)
	e.cur = e.undo[len(e.undo)-1]
	e.undo = e.undo[:len(e.undo)-1]
	return true
}

// Redo makes again the last step taken back; false when there is none.
func (e *Editor) Redo() bool {
	e.End()
	if len(e.redo) == 0 {
		return false
	}
	e.undo = append(e.undo, e.cur)
	e.cur = e.redo[len(e.redo)-1]
	e.redo = e.redo[:len(e.redo)-1]
	return true
}

// Changes is how the set now differs from the one given to New (Diff).
func (e *Editor) Changes() []Change { return Diff(e.orig, e.cur, e.radius) }

// Kinds of mark a Change counts.
const (
	KindBox   = "box"
	KindPoint = "point"
)

// Change is how a correction moved one class of boxes or of points: how many the reader
// added, removed, moved (or resized) and gave this class (reclassed).
type Change struct {
	Kind      string `json:"kind"` // KindBox or KindPoint
	Class     int    `json:"class"`
	Added     int    `json:"added"`
	Removed   int    `json:"removed"`
	Moved     int    `json:"moved"`
	Reclassed int    `json:"reclassed"`
}

// Diff is how now differs from was, boxes then points, each in class order. Each box of
// now is paired with a box of was: first with one of the same place and class, then, the
// pairs overlapping most first, with one it overlaps; each point likewise with one at the
// same place and of the same class, then, the nearest first, with one within pointRadius.
// A pair that differs in place counts as moved and one that differs in class as reclassed
// (under its new class); what is left unpaired counts as added (in now) or removed (in
// was, under its old class). The files alone tell what a correction did, so a box moved
// off all of its old place counts as removed and added.
func Diff(was, now Set, pointRadius float64) []Change {
	by := map[[2]any]*Change{}
	get := func(kind string, k int) *Change {
		key := [2]any{kind, k}
		if by[key] == nil {
			by[key] = &Change{Kind: kind, Class: k}
		}
		return by[key]
	}
	type boxKey struct {
		min, max [3]float64
		class    int
	}
	pb := pair(len(was.Boxes), len(now.Boxes),
		func(i int) any { return boxKey{was.Boxes[i].Min, was.Boxes[i].Max, was.Boxes[i].Class} },
		func(j int) any { return boxKey{now.Boxes[j].Min, now.Boxes[j].Max, now.Boxes[j].Class} },
		func(i, j int) (float64, bool) {
			v := iou(was.Boxes[i], now.Boxes[j])
			return -v, v > 0
		})
	tallyPairs(pb, len(was.Boxes), len(now.Boxes), func(i int) int { return was.Boxes[i].Class },
		func(j int) int { return now.Boxes[j].Class },
		func(i, j int) bool {
			return was.Boxes[i].Min != now.Boxes[j].Min || was.Boxes[i].Max != now.Boxes[j].Max
		},
		func(k int) *Change { return get(KindBox, k) })
	type pointKey struct {
		at    [3]float64
		class int
	}
	pp := pair(len(was.Points), len(now.Points),
		func(i int) any { return pointKey{was.Points[i].At, was.Points[i].Class} },
		func(j int) any { return pointKey{now.Points[j].At, now.Points[j].Class} },
		func(i, j int) (float64, bool) {
			d := dist(was.Points[i].At, now.Points[j].At)
			return d, d <= pointRadius
		})
	tallyPairs(pp, len(was.Points), len(now.Points), func(i int) int { return was.Points[i].Class },
		func(j int) int { return now.Points[j].Class },
		func(i, j int) bool { return was.Points[i].At != now.Points[j].At },
		func(k int) *Change { return get(KindPoint, k) })
	out := make([]Change, 0, len(by))
	for _, c := range by {
		if *c != (Change{Kind: c.Kind, Class: c.Class}) {
			out = append(out, *c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind == KindBox
		}
		return out[i].Class < out[j].Class
	})
	return out
}

// pair matches items 0..n-1 of was with items 0..m-1 of now: first those of the same key
// (place and class), in order, then by cost, the least first, among the pairs close
// enough. It returns, per item of now, its item of was (-1: none).
func pair(n, m int, keyWas, keyNow func(int) any, cost func(i, j int) (float64, bool)) []int {
	of := make([]int, m)
	used := make([]bool, n)
	byKey := map[any][]int{}
	for i := range n {
		k := keyWas(i)
		byKey[k] = append(byKey[k], i)
	}
	for j := range of {
		of[j] = -1
		k := keyNow(j)
		if l := byKey[k]; len(l) > 0 {
			of[j], used[l[0]] = l[0], true
			byKey[k] = l[1:]
		}
	}
	type cand struct {
		c    float64
		i, j int
	}
	var cs []cand
	for j := range m {
		if of[j] >= 0 {
			continue
		}
		for i := range n {
			if used[i] {
				continue
			}
			if c, ok := cost(i, j); ok {
				cs = append(cs, cand{c, i, j})
			}
		}
	}
	sort.SliceStable(cs, func(a, b int) bool { return cs[a].c < cs[b].c })
	for _, c := range cs {
		if of[c.j] < 0 && !used[c.i] {
			of[c.j], used[c.i] = c.i, true
		}
	}
	return of
}

// tallyPairs counts the pairs of pair's answer of.
func tallyPairs(of []int, n, m int, wasClass, nowClass func(int) int, moved func(i, j int) bool, get func(int) *Change) {
	used := make([]bool, n)
	for j := range m {
		i := of[j]
		if i < 0 {
			get(nowClass(j)).Added++
			continue
		}
		used[i] = true
		if moved(i, j) {
			get(nowClass(j)).Moved++
		}
		if wasClass(i) != nowClass(j) {
			get(nowClass(j)).Reclassed++
		}
	}
	for i := range n {
		if !used[i] {
			get(wasClass(i)).Removed++
		}
	}
}

// iou is the intersection over union of two boxes' volumes.
func iou(a, b Box) float64 {
	inter, va, vb := 1.0, 1.0, 1.0
	for k := range 3 {
		inter *= math.Max(0, math.Min(a.Max[k], b.Max[k])-math.Max(a.Min[k], b.Min[k]))
		va *= a.Max[k] - a.Min[k]
		vb *= b.Max[k] - b.Min[k]
	}
	if inter <= 0 {
		return 0
	}
	return inter / (va + vb - inter)
}

func dist(a, b [3]float64) float64 {
	return math.Sqrt((a[0]-b[0])*(a[0]-b[0]) + (a[1]-b[1])*(a[1]-b[1]) + (a[2]-b[2])*(a[2]-b[2]))
}
