package widget

import (
	"math"

	"amid/viewer/edit/marks"
)

// BoxTool is what a BoxEditor does with the primary button.
type BoxTool uint8

// The box tools: draw a box by dragging from one corner to the other; move a box or a
// point by dragging it, or resize a box by dragging an edge or a corner; delete the point
// or box tapped; give the point or box tapped the editor's class; add a point where
// tapped.
const (
	BoxDraw BoxTool = iota
	BoxMove
	BoxDelete
	BoxClass
	BoxPoint
)

// boxSlop is how near (in the view's units) to a box's edge the pointer must be to grab
// it, or to a point to take it: a little wider than a box's drawn line.
const boxSlop = 6

// BoxEditor is the Painter that corrects the boxes and points a SliceView shows through a
// marks.Editor: its tool on the view's slice, with its class. Set its fields on the UI
// goroutine. A box the view hides (scoring below its threshold) cannot be taken.
type BoxEditor struct {
	View   *SliceView
	Editor *marks.Editor
	Tool   BoxTool
	Class  int
	// Marks turns the editor's set into the marks shown; nil: plain boxes and points in
	// the default colours (Marks).
	Marks func(marks.Set) []Mark
	// Show shows the marks; nil: View.SetMarks.
	Show func([]Mark)
	// OnEdit, when set, is called after each edit with its error (nil: done).
	OnEdit func(error)
	// Classes is how many classes number keys 1–9 choose from (TakeRune); OnClass, when
	// set, is called with the class a key chose.
	Classes int
	OnClass func(int)
	// One: the set holds one box at most (a task of one 3D box): a box drawn replaces it.
	One bool

	g boxHold // what the stroke under way holds
}

// boxHold is what a stroke took hold of.
type boxHold struct {
	what  uint8 // holdNone, holdNew, holdBox, holdPoint
	i     int   // the box's or point's index (holdNew: -1 until the drag leaves its voxel)
	from  [3]int
	orig  marks.Box
	edges [2][2]bool // by in-plane axis (across, down): its min edge, its max edge
}

const (
	holdNone = iota
	holdNew
	holdBox
	holdPoint
)

// Redraw shows the editor's set.
func (b *BoxEditor) Redraw() {
	s := b.Editor.Set()
	var ms []Mark
	if b.Marks != nil {
		ms = b.Marks(s)
	} else {
		ms = MarksOf(s)
	}
	if b.Show != nil {
		b.Show(ms)
	} else {
		b.View.SetMarks(ms)
	}
}

// MarksOf turns a set into marks as Marks does boxes and points.
func MarksOf(s marks.Set) []Mark {
	boxes := make([]Box, len(s.Boxes))
	for i, x := range s.Boxes {
		boxes[i] = Box{Min: x.Min, Max: x.Max, Class: x.Class, Score: x.Score}
	}
	pts := make([]Point, len(s.Points))
	for i, p := range s.Points {
		pts[i] = Point{At: p.At, Class: p.Class, Score: p.Score}
	}
	return Marks(boxes, pts, nil)
}

// Paint implements Painter: the tool's work at voxel idx of the view's slice, a drag's
// first voxel begin.
func (b *BoxEditor) Paint(idx [3]int, begin bool) {
	var err error
	changed := false
	if begin {
		b.Editor.Begin()
		b.g = boxHold{}
		n := b.Editor.Set()
		switch b.Tool {
		case BoxDraw:
			b.g = boxHold{what: holdNew, i: -1, from: idx}
		case BoxMove:
			b.g = b.hit(idx, true)
		case BoxDelete:
			switch h := b.hit(idx, false); h.what {
			case holdPoint:
				err, changed = b.Editor.DeletePoint(h.i), true
			case holdBox:
				err, changed = b.Editor.DeleteBox(h.i), true
			}
		case BoxClass:
			switch h := b.hit(idx, false); h.what {
			case holdPoint:
				changed = n.Points[h.i].Class != b.Class
				err = b.Editor.ClassPoint(h.i, b.Class)
			case holdBox:
				changed = n.Boxes[h.i].Class != b.Class
				err = b.Editor.ClassBox(h.i, b.Class)
			}
		case BoxPoint:
			_, err = b.Editor.AddPoint(marks.Point{At: voxelCentre(idx), Class: b.Class})
			changed = true
		}
	} else {
		changed = true
		switch b.g.what {
		case holdNew:
			if idx == b.g.from && b.g.i < 0 {
				changed = false
				break
			}
			lo, hi := b.span(b.g.from, idx)
			if b.g.i < 0 {
				for b.One && err == nil && len(b.Editor.Set().Boxes) > 0 {
					err = b.Editor.DeleteBox(0) // within the stroke: one step with the new box
				}
				b.g.i, err = b.Editor.AddBox(marks.Box{Min: lo, Max: hi, Class: b.Class})
				if err != nil {
					b.g = boxHold{}
				}
			} else {
				err = b.Editor.PlaceBox(b.g.i, lo, hi)
			}
		case holdBox:
			lo, hi := b.moved(idx)
			err = b.Editor.PlaceBox(b.g.i, lo, hi)
		case holdPoint:
			err = b.Editor.MovePoint(b.g.i, voxelCentre(idx))
		default:
			changed = false
		}
	}
	if changed {
		b.Redraw()
		if b.OnEdit != nil {
			b.OnEdit(err)
		}
	}
}

// End implements Painter: the stroke becomes one step of the editor's history.
func (b *BoxEditor) End() {
	b.Editor.End()
	b.g = boxHold{}
}

// Undo takes back the editor's last step and shows the set; false when there was none.
func (b *BoxEditor) Undo() bool {
	ok := b.Editor.Undo()
	b.Redraw()
	return ok
}

// Redo makes again the last step taken back; false when there was none.
func (b *BoxEditor) Redo() bool {
	ok := b.Editor.Redo()
	b.Redraw()
	return ok
}

// TakeRune implements RuneTaker: key k (1–9) chooses class k−1 of Classes.
func (b *BoxEditor) TakeRune(r rune) bool {
	if r < '1' || r > '9' {
		return false
	}
	if k := int(r - '1'); k < b.Classes {
		b.Class = k
		if b.OnClass != nil {
			b.OnClass(k)
		}
	}
	return true
}

// voxelCentre is the centre of voxel idx.
func voxelCentre(idx [3]int) [3]float64 {
	return [3]float64{float64(idx[0]) + 0.5, float64(idx[1]) + 0.5, float64(idx[2]) + 0.5}
}

// span is the box whose corners are voxels a and b on the view's slice: it covers both
// voxels and those between them, one slice deep.
func (b *BoxEditor) span(a, c [3]int) (lo, hi [3]float64) {
	for k := range 3 {
		lo[k] = float64(min(a[k], c[k]))
		hi[k] = float64(max(a[k], c[k]) + 1)
	}
	return lo, hi
}

// moved is the grabbed box with the pointer at idx: moved by as many voxels as the pointer
// moved in the plane, or, when an edge was grabbed, that edge at the pointer's voxel (the
// box keeping one voxel at least).
func (b *BoxEditor) moved(idx [3]int) (lo, hi [3]float64) {
	l := b.View.Layout()
	o := b.g.orig
	lo, hi = o.Min, o.Max
	resize := false
	for k, a := range [2]int{l.Across, l.Down} {
		e := b.g.edges[k]
		if e[0] {
			lo[a] = math.Min(float64(idx[a]), o.Max[a]-1)
		}
		if e[1] {
			hi[a] = math.Max(float64(idx[a]+1), o.Min[a]+1)
		}
		resize = resize || e[0] || e[1]
	}
	if !resize {
		for _, a := range [2]int{l.Across, l.Down} {
			d := float64(idx[a] - b.g.from[a])
			lo[a], hi[a] = o.Min[a]+d, o.Max[a]+d
		}
	}
	return lo, hi
}

// hit is what lies under voxel idx on the view's slice: the nearest point within reach,
// else, of the boxes shown that hold it or whose edge is within reach, the smallest; edges
// tells whether a box's edges within reach are grabbed (to resize it) rather than the box
// (to move it).
func (b *BoxEditor) hit(idx [3]int, edges bool) boxHold {
	v := b.View
	l := v.Layout()
	geo := v.geometry(&l)
	thr := v.ScoreThreshold()
	s := b.Editor.Set()
	ax := [2]int{l.Across, l.Down}
	// reach is, per in-plane axis, how many voxels boxSlop spans, half a voxel at least.
	reach := [2]float64{math.Max(0.5, boxSlop/math.Max(geo.SX, 1e-9)), math.Max(0.5, boxSlop/math.Max(geo.SY, 1e-9))}
	c := voxelCentre(idx)
	through := float64(idx[l.Through]) + 0.5
	best, bestD := -1, math.Inf(1)
	for i, p := range s.Points {
		if p.Score < thr || math.Abs(p.At[l.Through]-through) > 0.5 {
			continue
		}
		du, dv := math.Abs(p.At[ax[0]]-c[ax[0]]), math.Abs(p.At[ax[1]]-c[ax[1]])
		if d := math.Hypot(du, dv); du <= reach[0]+0.5 && dv <= reach[1]+0.5 && d < bestD {
			best, bestD = i, d
		}
	}
	if best >= 0 {
		return boxHold{what: holdPoint, i: best, from: idx}
	}
	g := boxHold{what: holdNone}
	area := math.Inf(1)
	for i, x := range s.Boxes {
		if x.Score < thr || through < x.Min[l.Through] || through > x.Max[l.Through] {
			continue
		}
		var near [2][2]bool
		in, nearBox := true, true
		for k, a := range ax {
			r := reach[k] + 0.5 // from a voxel's centre to the edge beside it
			in = in && c[a] > x.Min[a] && c[a] < x.Max[a]
			nearBox = nearBox && c[a] > x.Min[a]-r && c[a] < x.Max[a]+r
			dMin, dMax := math.Abs(c[a]-x.Min[a]), math.Abs(c[a]-x.Max[a])
			switch {
			case dMin <= r && dMin <= dMax:
				near[k][0] = true
			case dMax <= r:
				near[k][1] = true
			}
		}
		onEdge := near[0][0] || near[0][1] || near[1][0] || near[1][1]
		if !nearBox || !(in || onEdge) {
			continue
		}
		if a := (x.Max[ax[0]] - x.Min[ax[0]]) * (x.Max[ax[1]] - x.Min[ax[1]]); a < area {
			area = a
			g = boxHold{what: holdBox, i: i, from: idx, orig: x}
			if edges {
				g.edges = near
			}
		}
	}
	return g
}
