package ui

import (
	"fmt"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"amid/host/export"
	"amid/plugins/taskspec"
	"amid/viewer/edit"
	"amid/viewer/edit/marks"
	"amid/viewer/imageio"
	"amid/viewer/volume"
	vwidget "amid/viewer/widget"
)

// Correction tools, as the bar names them.
var toolNames = []string{"Paint", "Erase", "Fill", "Remove island"}

// corrector is the editing bar of a screen that shows a prediction over its image (Review,
// Use model). For a segmentation, Correct turns the view's primary button into the brush
// (amid/viewer/widget.Brush on an amid/viewer/edit.Editor of the prediction's label map),
// with a tool, a label (also number keys 1–9) and a radius (also the wheel with Shift or
// Alt); for a detection, into the box editor (amid/viewer/widget.BoxEditor on an
// amid/viewer/edit/marks.Editor of the prediction's boxes and points: boxcorrect.go), with
// a tool and a class. Undo and Redo (also Ctrl+Z, Ctrl+Shift+Z) go over the case's whole
// history; the screen's Save correction keeps the result beside the prediction (saver).
// Its methods run on the UI goroutine.
type corrector struct {
	obj     fyne.CanvasObject
	toggle  *widget.Check
	tool    *widget.Select
	label   *widget.Select
	radius  *widget.Slider
	size    *widget.Label
	undo    *widget.Button
	redo    *widget.Button
	between *widget.Button
	save    *widget.Button
	onSave  func()
	labels  []taskspec.Label
	view    *vwidget.CompareView
	brush   *vwidget.Brush
	say     func(string) // a sentence on the screen
	id      string       // the case corrected
	// pred is the prediction's label map file, image its image (nil: nothing to correct).
	pred  string
	image *volume.Volume
	// boxes: the prediction is a detection's annotation, corrected through the box editor.
	boxes boxCorrection
	// kept is the correction of the case shown before, kept for its next attach (keep).
	kept *keptCorrection
}

// keptCorrection is a case's correction under way while its screen shows it again (on
// another plane): the editors, with their histories.
type keptCorrection struct {
	id, pred string
	labels   *edit.Editor
	boxes    *marks.Editor
	base     *taskspec.Annotation
}

// keep keeps the correction under way for the next attach of the same case and
// prediction, which goes on with it (the screen shows the case on another plane); an
// attach of any other case drops it.
func (c *corrector) keep() {
	k := &keptCorrection{id: c.id, pred: c.pred}
	if c.brush != nil {
		k.labels = c.brush.Editor
	}
	if c.boxes.editor != nil {
		k.boxes, k.base = c.boxes.editor.Editor, c.boxes.base
	}
	c.kept = nil
	if k.labels != nil || k.boxes != nil {
		c.kept = k
	}
}

// resume takes the kept correction of case id's prediction pred, if any.
func (c *corrector) resume(id, pred string) *keptCorrection {
	k := c.kept
	if k == nil || id == "" {
		return nil
	}
	c.kept = nil
	if k.id != id || k.pred != pred {
		return nil
	}
	return k
}

// newCorrector builds the bar; onSave is the screen's Save correction, say shows a
// sentence on the screen (what each edit has changed so far, or why it cannot edit).
func newCorrector(onSave func(), say func(string)) *corrector {
	c := &corrector{onSave: onSave, say: say, size: widget.NewLabel("")}
	c.toggle = widget.NewCheck("Correct", func(on bool) { c.setEditing(on) })
	c.tool = widget.NewSelect(toolNames, nil)
	c.tool.SetSelected(toolNames[0])
	c.label = widget.NewSelect(nil, nil)
	c.radius = widget.NewSlider(vwidget.MinRadius, vwidget.MaxRadius)
	c.radius.Step = vwidget.RadiusStep
	c.radius.SetValue(3)
	c.tool.OnChanged = func(string) { c.configure() }
	c.label.OnChanged = func(string) { c.configure() }
	c.radius.OnChanged = func(float64) { c.configure() }
	c.between = widget.NewButton("Fill between", c.fillBetween)
	c.undo = widget.NewButton("Undo", func() { c.step(false) })
	c.redo = widget.NewButton("Redo", func() { c.step(true) })
	c.save = widget.NewButton("Save correction", func() {
		if c.onSave != nil {
			c.onSave()
		}
	})
	c.save.Importance = widget.WarningImportance
	c.obj = container.NewVBox(container.NewHBox(c.toggle, c.tool, c.label, c.between),
		container.NewBorder(nil, nil, c.size, container.NewHBox(c.undo, c.redo, c.save), c.radius))
	c.attach(nil, "", "", nil, nil)
	return c
}

// attach offers the correction of case id's prediction pred (a label map file on image's
// grid) shown in view, with the task's labels; a nil view, or no file, offers nothing.
// Editing starts off.
func (c *corrector) attach(view *vwidget.CompareView, id, pred string, image *volume.Volume, labels []taskspec.Label) {
	if c.view != nil {
		c.view.Left.SetPainter(nil)
	}
	c.view, c.id, c.pred, c.image, c.brush = view, id, pred, image, nil
	c.boxes = boxCorrection{}
	c.segmentationTools()
	c.labels = nil
	var names []string
	for _, l := range labels {
		if l.Value != 0 {
			c.labels = append(c.labels, l)
			names = append(names, labelName(l))
		}
	}
	c.label.Options = names
	if len(names) > 0 {
		c.label.SetSelected(names[0])
	}
	c.toggle.SetChecked(false)
	if view == nil || pred == "" || len(names) == 0 {
		c.toggle.Disable()
	} else {
		c.toggle.Enable()
	}
	c.enable(false)
	if k := c.resume(id, pred); k != nil && k.labels != nil && view != nil {
		c.newBrush(k.labels)
		if err := c.view.SetPrediction(k.labels.Labels(), nil); err != nil {
			c.brush = nil
			return
		}
		c.edited()
	}
}

// newBrush makes the brush that corrects through ed on the view.
func (c *corrector) newBrush(ed *edit.Editor) {
	c.brush = &vwidget.Brush{View: c.view.Left, Editor: ed, OnEdit: func(error) { c.edited() },
		OnLabel: c.chooseLabel, OnRadius: c.radius.SetValue}
	for _, l := range c.labels {
		c.brush.Labels = append(c.brush.Labels, l.Value)
	}
}

func labelName(l taskspec.Label) string {
	if l.Name == "" {
		return strconv.Itoa(l.Value)
	}
	return fmt.Sprintf("%d %s", l.Value, l.Name)
}

// setEditing starts editing (the label map read from its file, shown and given to the
// brush) or stops it, keeping the edits made.
func (c *corrector) setEditing(on bool) {
	if c.view == nil {
		return
	}
	if !on {
		c.view.Left.SetPainter(nil)
		c.enable(false)
		if c.dirty() {
			c.save.Enable() // stopping keeps what was drawn, to save
		}
		return
	}
	if c.boxes.spec != nil {
		c.editBoxes()
		return
	}
	if c.brush == nil {
		lab, err := imageio.ReadLabels(c.pred, c.image)
		if err == nil {
			var ed *edit.Editor
			if ed, err = edit.New(lab); err == nil {
				c.newBrush(ed)
				c.view.SetMode(vwidget.ShowPrediction)
				err = c.view.SetPrediction(ed.Labels(), nil)
			}
		}
		if err != nil {
			c.say("Cannot correct: " + errText(err))
			c.toggle.SetChecked(false)
			return
		}
	}
	c.configure()
	c.view.Left.SetPainter(c.brush)
	c.enable(true)
	c.edited()
}

// chooseLabel selects label l in the bar (a number key chose it).
func (c *corrector) chooseLabel(l int) {
	for _, x := range c.labels {
		if x.Value == l {
			c.label.SetSelected(labelName(x))
		}
	}
}

// configure gives the brush, or the box editor, the bar's tool, label and radius.
func (c *corrector) configure() {
	c.size.SetText(fmt.Sprintf("%.1f mm", c.radius.Value))
	if c.boxes.spec != nil {
		c.configureBoxes()
		return
	}
	if c.brush == nil {
		return
	}
	for i, n := range toolNames {
		if n == c.tool.Selected {
			c.brush.Tool = vwidget.Tool(i)
		}
	}
	for _, l := range c.labels {
		if labelName(l) == c.label.Selected {
			c.brush.Label = l.Value
		}
	}
	c.brush.Radius = c.radius.Value
}

func (c *corrector) enable(on bool) {
	for _, w := range []fyne.Disableable{c.tool, c.label, c.radius, c.undo, c.redo, c.between, c.save} {
		if on {
			w.Enable()
		} else {
			w.Disable()
		}
	}
}

// step undoes or redoes one step of the history.
func (c *corrector) step(redo bool) {
	if c.boxes.editor != nil && c.toggle.Checked {
		if redo {
			c.boxes.editor.Redo()
		} else {
			c.boxes.editor.Undo()
		}
		c.edited()
		return
	}
	if c.brush == nil || !c.toggle.Checked {
		return
	}
	if redo {
		c.brush.Redo()
	} else {
		c.brush.Undo()
	}
	c.edited()
}

// fillBetween fills the slices between the last two painted with the label on the plane
// shown (Brush.Between).
func (c *corrector) fillBetween() {
	if c.brush == nil || !c.toggle.Checked {
		return
	}
	if err := c.brush.Between(); err != nil {
		c.say(errText(err) + ".")
		return
	}
	c.edited()
}

// edited shows how far the correction has gone and enables Save while it changes anything.
func (c *corrector) edited() {
	if !c.dirty() {
		c.save.Disable()
		return
	}
	c.save.Enable()
	if c.boxes.editor != nil {
		c.say("Correction of " + c.id + ": " + marksText(c.boxChanges(), c.boxes.spec) + ". Save correction records it.")
		return
	}
	c.say("Correction of " + c.id + ": " + changesText(c.changes()) + " voxels. Save correction records it.")
}

// dirty reports whether the correction changes anything yet.
func (c *corrector) dirty() bool { return len(c.changes()) > 0 || len(c.boxChanges()) > 0 }

// saver is the screen's Save correction's work, to run off the UI goroutine: it writes the
// correction as it is now beside the prediction, in the run's or predict run's folder dir
// (a label map, or a detection's annotation), and returns its path relative to dir for the
// decision; nil before any change.
func (c *corrector) saver() func(dir string) (string, error) {
	id := c.id
	if c.boxes.editor != nil {
		a, err := c.correctedAnnotation()
		if a == nil && err == nil {
			return nil
		}
		return func(dir string) (string, error) {
			if err != nil {
				return "", err
			}
			return export.SaveAnnotationCorrection(dir, id, a)
		}
	}
	lab := c.corrected()
	if lab == nil {
		return nil
	}
	return func(dir string) (string, error) { return export.SaveCorrection(dir, id, lab) }
}

// changes are the voxels the correction moved, by label (none before editing).
func (c *corrector) changes() []edit.Change {
	if c.brush == nil {
		return nil
	}
	return c.brush.Editor.Changes()
}

// corrected is the corrected label map, nil before any change.
func (c *corrector) corrected() *volume.Volume {
	if len(c.changes()) == 0 {
		return nil
	}
	return c.brush.Editor.Labels()
}

// decisionRow is a screen's decision controls: a comment entry and Approve and Reject,
// disabled until a case is shown, each calling decide with its decision.
func decisionRow(decide func(string)) (note *widget.Entry, approve, reject *widget.Button, row fyne.CanvasObject) {
	note = widget.NewEntry()
	note.SetPlaceHolder("comment (optional)")
	approve = widget.NewButton("Approve", func() { decide(export.Approved) })
	reject = widget.NewButton("Reject", func() { decide(export.Rejected) })
	approve.Importance = widget.SuccessImportance
	reject.Importance = widget.DangerImportance
	approve.Disable()
	reject.Disable()
	return note, approve, reject, container.NewBorder(nil, nil, nil, container.NewHBox(approve, reject), note)
}

// changesText says what a correction changed: "label 2 +130 −12; label 0 +12 −130".
func changesText(ch []edit.Change) string {
	var parts []string
	for _, x := range ch {
		parts = append(parts, fmt.Sprintf("label %d +%d −%d", x.Label, x.Added, x.Removed))
	}
	return strings.Join(parts, "; ")
}
