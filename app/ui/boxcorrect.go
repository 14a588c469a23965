package ui

import (
	"fmt"
	"strings"

	"amid/host/export"
	"amid/plugins/taskspec"
	"amid/viewer/edit/marks"
	vwidget "amid/viewer/widget"
)

// Box correction tools, as the bar names them (in amid/viewer/widget.BoxTool order).
var boxToolNames = []string{"Draw box", "Move/resize", "Delete", "Class", "Add point"}

// boxCorrection is what the corrector holds of a detection's correction.
type boxCorrection struct {
	spec    *taskspec.Spec
	base    *taskspec.Annotation // the prediction, read when editing starts
	classes []string             // the classes the bar offers
	editor  *vwidget.BoxEditor   // nil until editing starts
}

// attachBoxes offers the correction of case id's detection pred (an annotation file of
// the task spec) shown in view: its boxes and points. A nil view, or no file, offers
// nothing. Editing starts off.
func (c *corrector) attachBoxes(view *vwidget.CompareView, id, pred string, spec *taskspec.Spec) {
	kept := c.kept
	c.attach(nil, "", "", nil, nil)
	c.kept = kept
	if view == nil || pred == "" || spec == nil {
		return
	}
	c.view, c.id, c.pred = view, id, pred
	c.boxes = boxCorrection{spec: spec, classes: boxClassNames(spec)}
	c.tool.Options = boxToolNames
	c.tool.SetSelected(boxToolNames[0])
	c.label.Options = c.boxes.classes
	c.label.SetSelected(c.boxes.classes[0])
	c.radius.Hide()
	c.size.Hide()
	c.between.Hide()
	c.toggle.Enable()
	c.enable(false)
	if k := c.resume(id, pred); k != nil && k.boxes != nil {
		c.boxes.base = k.base
		c.newBoxEditor(k.boxes)
		c.edited()
	}
}

// boxClassNames are the classes a detection's boxes take (its last box attribute's), or
// without box attributes its point classes, or the one class "object".
func boxClassNames(spec *taskspec.Spec) []string {
	if cs := taskspec.BoxClasses(spec); len(cs) > 0 {
		return cs
	}
	if len(spec.Points) > 0 {
		return spec.Points
	}
	return []string{"object"}
}

// segmentationTools gives the bar a segmentation's tools back.
func (c *corrector) segmentationTools() {
	c.tool.Options = toolNames
	c.tool.SetSelected(toolNames[0])
	c.radius.Show()
	c.size.Show()
	c.between.Show()
}

// editBoxes starts editing the detection: the prediction read from its file, shown and
// given to the box editor.
func (c *corrector) editBoxes() {
	b := &c.boxes
	if b.editor == nil {
		a, err := taskspec.ReadAnnotation(c.pred, b.spec)
		var s marks.Set
		if err == nil {
			s, err = taskspec.MarksOf(a, b.spec)
		}
		if err != nil {
			c.say("Cannot correct: " + errText(err))
			c.toggle.SetChecked(false)
			return
		}
		b.base = a
		c.newBoxEditor(marks.New(s, export.PointRadius(b.spec)))
		c.view.SetMode(vwidget.ShowPrediction)
	}
	c.configure()
	c.view.Left.SetPainter(b.editor)
	c.enable(true)
	c.edited()
}

// newBoxEditor makes the box editor that corrects through ed on the view, and shows ed's
// set.
func (c *corrector) newBoxEditor(ed *marks.Editor) {
	b := &c.boxes
	b.editor = &vwidget.BoxEditor{View: c.view.Left, Editor: ed,
		Marks: c.boxMarks,
		Show:  func(ms []vwidget.Mark) { _ = c.view.SetPrediction(nil, ms) }, // no labels: no grid to check
		OnEdit: func(err error) {
			c.edited()
			if err != nil {
				c.say("Cannot edit: " + errText(err))
			}
		},
		Classes: len(b.classes),
		OnClass: func(k int) { c.label.SetSelected(b.classes[k]) },
		One:     b.spec.Box3D,
	}
	b.editor.Redraw()
}

// boxMarks are the marks of a set as the screen shows a detection's (marksOf: classes
// named, scores written), or plain ones when the set does not fit the task.
func (c *corrector) boxMarks(s marks.Set) []vwidget.Mark {
	a, err := taskspec.AnnotationOf(s, c.boxes.base, c.boxes.spec)
	if err != nil {
		return vwidget.MarksOf(s)
	}
	return marksOf(a, c.boxes.spec, false)
}

// configureBoxes gives the box editor the bar's tool and class.
func (c *corrector) configureBoxes() {
	e := c.boxes.editor
	if e == nil {
		return
	}
	for i, n := range boxToolNames {
		if n == c.tool.Selected {
			e.Tool = vwidget.BoxTool(i)
		}
	}
	for i, n := range c.boxes.classes {
		if n == c.label.Selected {
			e.Class = i
		}
	}
}

// boxChanges are the boxes and points the correction changed, by class (none before
// editing a detection).
func (c *corrector) boxChanges() []marks.Change {
	if c.boxes.editor == nil {
		return nil
	}
	return c.boxes.editor.Editor.Changes()
}

// correctedAnnotation is the corrected detection in the task's annotation format, nil
// before any change.
func (c *corrector) correctedAnnotation() (*taskspec.Annotation, error) {
	if len(c.boxChanges()) == 0 {
		return nil, nil
	}
	return taskspec.AnnotationOf(c.boxes.editor.Editor.Set(), c.boxes.base, c.boxes.spec)
}

// marksText says what a detection's correction changed: "Caries boxes: 1 added, 1 moved;
// lymphocyte points: 1 removed".
func marksText(ch []marks.Change, spec *taskspec.Spec) string {
	var parts []string
	for _, x := range ch {
		names := taskspec.BoxClasses(spec)
		if x.Kind == marks.KindPoint {
			names = spec.Points
		}
		name := fmt.Sprintf("class %d", x.Class)
		if x.Class < len(names) {
			name = names[x.Class]
		}
		var did []string
		for _, n := range []struct {
			k    int
			word string
		}{{x.Added, "added"}, {x.Removed, "removed"}, {x.Moved, "moved"}, {x.Reclassed, "reclassed"}} {
			if n.k > 0 {
				did = append(did, fmt.Sprintf("%d %s", n.k, n.word))
			}
		}
		parts = append(parts, fmt.Sprintf("%s %ss: %s", name, x.Kind, strings.Join(did, ", ")))
	}
	return strings.Join(parts, "; ")
}
