package widget

import (
	"fmt"
	"image/color"
	"sync"

	"fyne.io/fyne/v2"
	fwidget "fyne.io/fyne/v2/widget"

	"amid/viewer/bridge"
	"amid/viewer/volume"
)

// CompareMode is how a CompareView shows a prediction against the ground truth.
type CompareMode uint8

// The compare modes.
const (
	ShowPrediction CompareMode = iota // the prediction alone
	ShowTruth                         // the ground truth alone
	SideBySide                        // prediction left, truth right, linked
	ShowDifference                    // false positives and negatives in one view
)

func (m CompareMode) String() string {
	switch m {
	case ShowPrediction:
		return "prediction"
	case ShowTruth:
		return "truth"
	case SideBySide:
		return "side by side"
	case ShowDifference:
		return "difference"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// Mark colours of the difference view: predicted marks and true marks.
var (
	PredMarkColor  = FPColor
	TruthMarkColor = color.RGBA{40, 220, 120, 255}
)

// CompareView shows one plane of an image with a prediction and its ground truth (label
// images, marks, or both): by toggle (key T switches prediction and truth), side by side
// (key S; the two views share slice, window, zoom and pan), or as the difference view (key
// D: the overlay's false positives and negatives, predicted marks in PredMarkColor and
// true ones in TruthMarkColor). Setters may be called from any goroutine.
type CompareView struct {
	fwidget.BaseWidget

	// Left shows the prediction, the truth or the difference; Right the truth, side by side.
	Left, Right *SliceView
	// OnMode is called after the mode changes.
	OnMode func(CompareMode)

	mu                    sync.Mutex
	mode                  CompareMode
	pred, truth           *volume.Volume
	predMarks, truthMarks []Mark

	shown CompareMode // the mode on screen (UI goroutine)
}

// UseBridge makes both views, and the view itself, reach the UI goroutine through b (see
// SliceView.UseBridge). Call it before the view is used.
func (c *CompareView) UseBridge(b *bridge.Bridge) {
	c.Left.UseBridge(b)
	c.Right.UseBridge(b)
}

// NewCompareView returns an empty compare view of plane p.
func NewCompareView(p Plane) *CompareView {
	c := &CompareView{Left: NewSliceView(p), Right: NewSliceView(p)}
	c.Right.Hide()
	// b follows a without reporting back to it: an echo carrying an older slice or view
	// could undo a newer change of a.
	link := func(a, b *SliceView) {
		a.OnSlice = func(s int) { b.setSlice(s) }
		a.OnView = func(v View) { b.setView(v) }
		a.OnWindow = func(Window) { b.follow(a) }
		a.OnRune = c.key
	}
	link(c.Left, c.Right)
	link(c.Right, c.Left)
	c.ExtendBaseWidget(c)
	return c
}

func (c *CompareView) key(r rune) {
	switch r {
	case 't', 'T':
		if c.Mode() == ShowPrediction {
			c.SetMode(ShowTruth)
		} else {
			c.SetMode(ShowPrediction)
		}
	case 's', 'S':
		c.SetMode(SideBySide)
	case 'd', 'D':
		c.SetMode(ShowDifference)
	}
}

// SetVolume shows vol in both views and clears prediction and truth.
func (c *CompareView) SetVolume(vol *volume.Volume) error {
	for _, v := range []*SliceView{c.Left, c.Right} {
		if err := v.SetVolume(vol); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.pred, c.truth, c.predMarks, c.truthMarks = nil, nil, nil, nil
	c.mu.Unlock()
	return nil
}

// SetPrediction sets the predicted labels (nil: none) and marks (see Marks).
func (c *CompareView) SetPrediction(labels *volume.Volume, marks []Mark) error {
	if err := c.Left.SetLabels(labels, nil); err != nil { // checks the grid
		return err
	}
	c.mu.Lock()
	c.pred, c.predMarks = labels, marks
	c.mu.Unlock()
	return c.apply()
}

// SetTruth sets the true labels (nil: none) and marks.
func (c *CompareView) SetTruth(labels *volume.Volume, marks []Mark) error {
	if err := c.Right.SetLabels(labels, nil); err != nil {
		return err
	}
	c.mu.Lock()
	c.truth, c.truthMarks = labels, marks
	c.mu.Unlock()
	return c.apply()
}

// SetMode switches the mode.
func (c *CompareView) SetMode(m CompareMode) {
	c.mu.Lock()
	c.mode = m
	c.mu.Unlock()
	_ = c.apply() // the grids were checked when the volumes were set
	c.Left.bridge().Post(postKey{c, "mode"}, c.showMode)
}

// showMode shows the newest mode (UI goroutine): the right view side by side only, and
// OnMode when the mode on screen changes.
func (c *CompareView) showMode() {
	m := c.Mode()
	if m == SideBySide {
		c.Right.Show()
	} else {
		c.Right.Hide()
	}
	c.Refresh()
	if m != c.shown {
		c.shown = m
		if c.OnMode != nil {
			c.OnMode(m)
		}
	}
}

// Mode returns the mode.
func (c *CompareView) Mode() CompareMode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mode
}

// SetScoreThreshold hides marks scoring below t in both views.
func (c *CompareView) SetScoreThreshold(t float64) {
	c.Left.SetScoreThreshold(t)
	c.Right.SetScoreThreshold(t)
}

// apply gives each view what the mode shows.
func (c *CompareView) apply() error {
	c.mu.Lock()
	m, pred, truth, pm, tm := c.mode, c.pred, c.truth, c.predMarks, c.truthMarks
	c.mu.Unlock()
	switch m {
	case ShowTruth:
		c.Left.SetMarks(tm)
		return c.Left.SetLabels(truth, nil)
	case SideBySide:
		c.Left.SetMarks(pm)
		c.Right.SetMarks(tm)
		if err := c.Right.SetLabels(truth, nil); err != nil {
			return err
		}
		return c.Left.SetLabels(pred, nil)
	case ShowDifference:
		marks := append(Recolor(pm, PredMarkColor), Recolor(tm, TruthMarkColor)...)
		c.Left.SetMarks(marks)
		if pred != nil && truth != nil {
			return c.Left.SetLabels(pred, truth)
		}
		return c.Left.SetLabels(pred, nil)
	}
	c.Left.SetMarks(pm)
	return c.Left.SetLabels(pred, nil)
}

// CreateRenderer implements fyne.Widget.
func (c *CompareView) CreateRenderer() fyne.WidgetRenderer {
	return fwidget.NewSimpleRenderer(&fyne.Container{Layout: halves{}, Objects: []fyne.CanvasObject{c.Left, c.Right}})
}

// halves lays out the first object over the whole area, or the two side by side when the
// second is visible.
type halves struct{}

func (halves) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	if len(objs) < 2 || !objs[1].Visible() {
		objs[0].Move(fyne.NewPos(0, 0))
		objs[0].Resize(size)
		return
	}
	gap := float32(2)
	w := (size.Width - gap) / 2
	objs[0].Move(fyne.NewPos(0, 0))
	objs[0].Resize(fyne.NewSize(w, size.Height))
	objs[1].Move(fyne.NewPos(w+gap, 0))
	objs[1].Resize(fyne.NewSize(w, size.Height))
}

func (halves) MinSize(objs []fyne.CanvasObject) fyne.Size {
	m := objs[0].MinSize()
	return fyne.NewSize(2*m.Width+2, m.Height)
}
