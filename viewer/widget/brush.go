package widget

import (
	"errors"

	"amid/viewer/edit"
)

// Tool is what a Brush does with the primary button.
type Tool uint8

// The tools: paint the chosen label in a disc, erase to background in a disc, fill the
// region under the pointer in the slice with the label, remove the island under the
// pointer (in 3D).
const (
	ToolPaint Tool = iota
	ToolErase
	ToolFill
	ToolIsland
)

// Brush is the Painter that corrects the labels a SliceView shows through an edit.Editor:
// its tool on the view's slice, with its label and radius. The view must show the
// editor's labels (SetLabels(Editor.Labels(), …)). Set its fields on the UI goroutine.
type Brush struct {
	View   *SliceView
	Editor *edit.Editor
	Tool   Tool
	Label  int
	Radius float64 // mm
	// OnEdit, when set, is called after each edit with its error (nil: done), on the UI
	// goroutine.
	OnEdit func(error)
	// Labels are the labels number keys 1–9 choose, in order (TakeRune); OnLabel, when
	// set, is called with the label a key chose.
	Labels  []int
	OnLabel func(int)
	// OnRadius, when set, is called with the radius the wheel set (Grow).
	OnRadius func(float64)

	last [3]int // the stroke's last voxel
	// painted are, by axis and label, the slices painted, the newest last, each once.
	painted map[[2]int][]int
}

// Paint implements Painter. A drag's dabs are joined by a line of dabs, so that a fast
// stroke leaves no gaps; a fill or an island removal acts on a stroke's first voxel.
func (b *Brush) Paint(idx [3]int, begin bool) {
	axis := b.View.Layout().Through
	var err error
	b.View.EditLabels(func() {
		switch b.Tool {
		case ToolPaint, ToolErase:
			label := b.Label
			if b.Tool == ToolErase {
				label = 0
			}
			if begin {
				b.Editor.Begin()
				err = b.Editor.Dab(axis, idx, b.Radius, label)
				b.note(axis, label, idx[axis])
				break
			}
			n := 0
			for a := range 3 {
				n = max(n, idx[a]-b.last[a], b.last[a]-idx[a])
			}
			for s := 1; s <= n && err == nil; s++ {
				var p [3]int
				for a := range 3 {
					p[a] = b.last[a] + (idx[a]-b.last[a])*s/n
				}
				err = b.Editor.Dab(axis, p, b.Radius, label)
			}
		case ToolFill:
			if begin {
				err = b.Editor.Fill(axis, idx, b.Label)
			}
		case ToolIsland:
			if begin {
				err = b.Editor.RemoveIsland(idx)
			}
		}
	})
	b.last = idx
	if b.OnEdit != nil {
		b.OnEdit(err)
	}
}

// note records that slice s normal to axis was painted with label.
func (b *Brush) note(axis, label, s int) {
	if label == 0 {
		return
	}
	if b.painted == nil {
		b.painted = map[[2]int][]int{}
	}
	k := [2]int{axis, label}
	l := b.painted[k]
	for i, x := range l {
		if x == s {
			l = append(l[:i], l[i+1:]...)
			break
		}
	}
	b.painted[k] = append(l, s)
}

// ErrNoSlices means Between has not two slices of the label to go between.
var ErrNoSlices = errors.New("paint the label on two slices of this plane first")

// Between fills the slices between the last two painted with the brush's label on the
// view's plane with the label's shape interpolated between them (edit.Editor.Interpolate):
// contour two slices apart, fill those between.
func (b *Brush) Between() error {
	axis := b.View.Layout().Through
	l := b.painted[[2]int{axis, b.Label}]
	if len(l) < 2 {
		return ErrNoSlices
	}
	var err error
	b.View.EditLabels(func() { err = b.Editor.Interpolate(axis, l[len(l)-2], l[len(l)-1], b.Label) })
	return err
}

// End implements Painter: the stroke becomes one step of the editor's history.
func (b *Brush) End() { b.Editor.End() }

// Undo takes back the editor's last step and draws the view again; false when there was
// none.
func (b *Brush) Undo() bool {
	var ok bool
	b.View.EditLabels(func() { ok = b.Editor.Undo() })
	return ok
}

// Redo makes again the last step taken back; false when there was none.
func (b *Brush) Redo() bool {
	var ok bool
	b.View.EditLabels(func() { ok = b.Editor.Redo() })
	return ok
}

// The brush's radius: its least, its greatest, and the step of one wheel notch (mm).
const (
	MinRadius  = 0.5
	MaxRadius  = 20
	RadiusStep = 0.5
)

// TakeRune implements RuneTaker: key k (1–9) chooses the k-th of Labels, when there is
// one; every number key is the brush's while it is set.
func (b *Brush) TakeRune(r rune) bool {
	if r < '1' || r > '9' {
		return false
	}
	if k := int(r - '1'); k < len(b.Labels) {
		b.Label = b.Labels[k]
		if b.OnLabel != nil {
			b.OnLabel(b.Label)
		}
	}
	return true
}

// Grow implements Sizer: each notch makes the radius RadiusStep larger (up) or smaller
// (down), within MinRadius and MaxRadius.
func (b *Brush) Grow(steps int) {
	b.Radius = min(MaxRadius, max(MinRadius, b.Radius+float64(steps)*RadiusStep))
	if b.OnRadius != nil {
		b.OnRadius(b.Radius)
	}
}
