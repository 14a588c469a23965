package ui

import (
	"bytes"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"amid/host/export"
	"amid/viewer/measure"
	"amid/viewer/volume"
	vwidget "amid/viewer/widget"
)

// measureBar is the measuring tools of a screen that reviews a case over its prediction
// (Review, Use model): the Viewer's tools (amid/viewer/widget.Measurer, drawing through
// the compare view's prediction plane), Undo, Redo, Delete, and Save measurements, which
// keeps them with the case's review (export.Measurements, through save); a side list of
// the case's measurements with their values, hovering a row highlights it. A case opened
// shows what was saved for it (read); a saved file that no longer reads, or no longer
// fits the image, says so in one line and the case opens without it. A measuring tool
// and the corrector's editing take the primary button in turn. Its methods run on the UI
// goroutine.
type measureBar struct {
	a    *App
	side fyne.CanvasObject // the tools over the list, with what the bar last said
	tool *widget.Select
	list *widget.List
	save *widget.Button
	note *widget.Label
	corr *corrector

	read  func(dir, id string) (*export.Measurements, error)
	write func(dir string, m *export.Measurements) error

	dir, id  string
	savable  bool
	image    *volume.Volume
	set      *measure.Set
	meas     *vwidget.Measurer
	rows     []measure.Measurement
	syncing  bool   // the list's selection follows the tool's
	baseline []byte // the measurements as read or saved, to tell a change to save
}

// newMeasureBar returns the measuring tools of a screen with the corrector corr (nil:
// none), reading and saving a case's measurements in a run's folder through read and
// write (write runs off the UI goroutine).
func newMeasureBar(a *App, corr *corrector, read func(dir, id string) (*export.Measurements, error), write func(dir string, m *export.Measurements) error) *measureBar {
	b := &measureBar{a: a, corr: corr, read: read, write: write, note: widget.NewLabel("")}
	b.note.Wrapping = fyne.TextWrapWord
	b.tool = widget.NewSelect(measureTools, func(name string) { b.setTool(name) })
	b.tool.SetSelected(measureTools[0])
	b.save = widget.NewButton("Save measurements", b.saveAll)
	b.save.Disable()
	b.list = widget.NewList(func() int { return len(b.rows) },
		func() fyne.CanvasObject {
			return newMeasureRow(func(id int) {
				if b.meas != nil {
					b.meas.Highlight(id)
				}
			})
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			r := o.(*measureRow)
			m := b.rows[i]
			r.id = m.ID
			r.label.SetText(measurementRow(&m))
		})
	b.list.OnSelected = func(i widget.ListItemID) {
		if i < 0 || i >= len(b.rows) || b.meas == nil || b.syncing {
			return
		}
		b.meas.Select(b.rows[i].ID)
	}
	if corr != nil {
		// The corrector's editing and a measuring tool take the primary button in turn.
		prev := corr.toggle.OnChanged
		corr.toggle.OnChanged = func(on bool) {
			if on && b.tool.Selected != measureTools[0] {
				b.tool.SetSelected(measureTools[0])
			}
			if prev != nil {
				prev(on)
			}
		}
	}
	// The tools head the side list, so that the screen's row of controls keeps its width.
	tools := container.NewVBox(widget.NewLabelWithStyle("Measurements", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		b.tool,
		container.NewGridWithColumns(3,
			widget.NewButton("Undo", func() { b.step(false) }),
			widget.NewButton("Redo", func() { b.step(true) }),
			widget.NewButton("Delete", b.deleteSelected)),
		b.save)
	// In a scroll, so that the screen keeps its minimum height.
	b.side = container.NewVScroll(container.NewBorder(tools, b.note, nil, nil, b.list))
	return b
}

// measurementRow is a measurement's row in the side list: "2  Ellipse · axial 20" over
// its values.
func measurementRow(m *measure.Measurement) string {
	kind := string(m.Kind)
	if kind != "" {
		kind = strings.ToUpper(kind[:1]) + kind[1:]
	}
	head := fmt.Sprintf("%d  %s · %s %d", m.ID, kind, m.Plane, m.Slice)
	if m.Label != "" {
		head += " · " + m.Label
	}
	return head + "\n" + m.Text()
}

// attach measures on view, which shows case id's image, of the run (or predict run) in
// dir; savable says whether the case's review keeps measurements (a test case). The same
// case shown again on the same image (on another plane) keeps the measurements under way;
// another reads what was saved for it. A nil view leaves nothing to measure.
func (b *measureBar) attach(view *vwidget.CompareView, dir, id string, image *volume.Volume, savable bool) {
	if view == nil || image == nil {
		b.dir, b.id, b.image, b.set, b.meas = "", "", nil, nil, nil
		b.save.Disable()
		b.shown()
		return
	}
	same := b.set != nil && b.dir == dir && b.id == id && sameGrid(b.image, image)
	b.dir, b.id, b.savable = dir, id, savable
	if !same {
		b.image = image
		if err := b.load(); err != nil {
			b.note.SetText(errText(err))
			if b.set == nil {
				return
			}
		}
	}
	b.meas = vwidget.NewMeasurer(b.set)
	b.meas.OnChange = b.shown
	b.meas.OnError = func(err error) { b.note.SetText("Not measured: " + errText(err)) }
	b.meas.Attach(view.Left)
	b.setTool(b.tool.Selected)
	b.shown()
}

// load makes the case's set of measurements, with what was saved for it; an error says
// why what was saved is not shown (the set is then empty).
func (b *measureBar) load() error {
	unit := measure.UnitNone
	if vwidget.LooksCT(b.image, vwidget.PercentileWindow(b.image)) {
		unit = measure.UnitHU
	}
	set, err := measure.NewSet(b.image, unit)
	if err != nil {
		b.set = nil
		return fmt.Errorf("case %s cannot be measured: %w", b.id, err)
	}
	b.set, b.baseline = set, marshalMeasurements(nil)
	b.note.SetText("")
	m, err := b.read(b.dir, b.id)
	if err != nil {
		return fmt.Errorf("the saved measurements are not shown: %w", err)
	}
	if m == nil {
		return nil
	}
	if err := set.Load(m.Measurements); err != nil {
		return fmt.Errorf("case %s's saved measurements no longer fit its image and are not shown: %w", b.id, err)
	}
	set.ForgetHistory() // Undo goes back to what was saved, not before it
	b.baseline = marshalMeasurements(set.List())
	b.note.SetText(fmt.Sprintf("%d saved measurements of case %s.", len(m.Measurements), b.id))
	return nil
}

// marshalMeasurements is ms as JSON, to compare.
func marshalMeasurements(ms []measure.Measurement) []byte {
	if ms == nil {
		ms = []measure.Measurement{}
	}
	b, _ := measure.Marshal(ms) // a set's measurements are finite: they encode
	return b
}

// sameGrid says whether a and b are the same image grid.
func sameGrid(a, b *volume.Volume) bool {
	return a != nil && b != nil && a.Dims == b.Dims && a.Spacing == b.Spacing && a.Origin == b.Origin && a.Direction == b.Direction
}

// setTool chooses the kind of measurement the primary button draws; a kind takes the
// button from the corrector.
func (b *measureBar) setTool(name string) {
	k := measure.Kind("")
	for i, n := range measureTools[1:] {
		if n == name {
			k = measure.Kinds[i]
		}
	}
	if k != "" && b.corr != nil && b.corr.toggle.Checked {
		b.corr.toggle.SetChecked(false)
	}
	if b.meas == nil {
		return
	}
	if k == "" && b.meas.Kind() == "" {
		return // the button is not the tool's: leave it where it is
	}
	b.meas.SetKind(k)
}

// step undoes (or redoes) the last change of the measurements.
func (b *measureBar) step(redo bool) {
	if b.meas == nil {
		return
	}
	if redo {
		b.meas.Redo()
	} else {
		b.meas.Undo()
	}
}

// deleteSelected deletes the selected measurement.
func (b *measureBar) deleteSelected() {
	if b.meas == nil {
		return
	}
	if id := b.meas.Selected(); id != 0 {
		if err := b.meas.Delete(id); err != nil {
			b.note.SetText(errText(err))
		}
	}
}

// shown lists the measurements again and sets Save's state.
func (b *measureBar) shown() {
	b.rows = nil
	sel := 0
	if b.meas != nil {
		b.rows = b.meas.Set.List()
		sel = b.meas.Selected()
	}
	if b.set != nil && b.savable && !bytes.Equal(marshalMeasurements(b.rows), b.baseline) {
		b.save.Enable()
	} else {
		b.save.Disable()
	}
	b.list.Refresh()
	b.syncing = true
	defer func() { b.syncing = false }()
	for i, m := range b.rows {
		if m.ID == sel {
			b.list.Select(i)
			return
		}
	}
	b.list.UnselectAll()
}

// saveAll keeps the case's measurements with its review, off the UI goroutine.
func (b *measureBar) saveAll() {
	if b.set == nil || !b.savable {
		return
	}
	dir, m := b.dir, &export.Measurements{Case: b.id, Reviewer: reviewer(), Unit: b.set.Unit(), Measurements: b.set.List()}
	set := b.set
	b.save.Disable()
	go func() {
		err := b.write(dir, m)
		b.a.do(func() {
			if err != nil {
				b.note.SetText(errText(err))
				if b.set == set {
					b.save.Enable()
				}
				return
			}
			if b.set == set {
				b.baseline = marshalMeasurements(m.Measurements)
			}
			b.note.SetText(fmt.Sprintf("Saved %d measurements of case %s with its review.", len(m.Measurements), m.Case))
			b.shown()
		})
	}()
}
