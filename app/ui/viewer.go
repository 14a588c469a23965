package ui

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/widget"

	"amid/assets"
	"amid/viewer/imageio"
	"amid/viewer/measure"
	"amid/viewer/nifti"
	"amid/viewer/volume"
	vwidget "amid/viewer/widget"
)

// viewerScreen shows any image, with an optional label image, in the three-plane viewer
// (a 2D image in one plane); the bundled sample study when none is opened. A tool
// selector draws measurements on any plane, listed with their values beside the planes.
type viewerScreen struct {
	a       *App
	obj     fyne.CanvasObject
	summary *widget.Label
	probe   *widget.Label
	holder  *fyne.Container

	tool    *widget.Select // the measuring tool: None, Length, …
	list    *widget.List   // the measurements
	name    *widget.Entry  // the selected measurement's name
	rows    []measure.Measurement
	syncing bool // the list's selection follows the tool's: no slice to show
	meas    *vwidget.Measurer
	views   []*vwidget.SliceView // the planes shown
	capture func() (*image.RGBA, error)
}

// measureTools are the measuring tool selector's choices, None first, then measure.Kinds in order.
var measureTools = []string{"None", "Length", "Bidirectional", "Ellipse", "Freehand", "Probe", "Angle"}

func newViewerScreen(a *App, image, labels string) (*viewerScreen, error) {
	s := &viewerScreen{a: a, summary: widget.NewLabel(""), holder: container.NewStack()}
	s.tool = widget.NewSelect(measureTools, func(name string) { s.setTool(name) })
	s.list = s.newList()
	s.name = widget.NewEntry()
	s.name.SetPlaceHolder("Name the selected one, Enter")
	s.name.OnSubmitted = s.nameSelected
	s.probe = widget.NewLabel("Wheel: slices · Ctrl+wheel, +/−: zoom · middle or Space drag: pan · 0: reset · drag: window · 1–5 presets · L labels")
	s.probe.Truncation = fyne.TextTruncateEllipsis
	var ct, lab *volume.Volume
	var err error
	name := "Sample study: head CT"
	if image != "" {
		if ct, err = imageio.Read(image); err != nil {
			return nil, err
		}
		name = image
		if labels != "" {
			if lab, err = imageio.ReadLabels(labels, ct); err != nil {
				return nil, err
			}
		}
	} else {
		if ct, err = nifti.Decode(bytes.NewReader(assets.SampleCT), assets.SampleCTPath); err != nil {
			return nil, fmt.Errorf("sample study: %w", err)
		}
		if lab, err = nifti.Decode(bytes.NewReader(assets.SampleLabels), assets.SampleLabelsPath); err != nil {
			return nil, fmt.Errorf("sample study: %w", err)
		}
	}
	if err := s.show(name, ct, lab); err != nil {
		return nil, err
	}
	open := widget.NewButton("Open image…", func() { s.choose() })
	save := widget.NewButton("Save picture…", func() { s.savePicture() })
	title := widget.NewLabelWithStyle("Viewer", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	s.tool.SetSelected(measureTools[0])
	tools := container.NewHBox(widget.NewLabel("Measure:"), s.tool,
		widget.NewButton("Undo", func() { s.meas.Undo() }),
		widget.NewButton("Redo", func() { s.meas.Redo() }),
		widget.NewButton("Delete", func() { s.deleteSelected() }),
		widget.NewButton("Diameters", func() { s.diameters() }))
	side := container.NewBorder(widget.NewLabelWithStyle("Measurements", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), s.name, nil, nil, s.list)
	split := container.NewHSplit(s.holder, side)
	split.Offset = 0.75
	s.obj = container.NewBorder(container.NewVBox(container.NewHBox(title, open, save), s.summary, tools), s.probe, nil, nil, split)
	return s, nil
}

// setTool chooses the kind of measurement the primary button draws (None: the button
// moves the crosshair and the window again).
func (s *viewerScreen) setTool(name string) {
	if s.meas == nil {
		return
	}
	k := measure.Kind("")
	for i, n := range measureTools[1:] {
		if n == name {
			k = measure.Kinds[i]
		}
	}
	s.meas.SetKind(k)
}

// newList is the side panel's list: each measurement's number, kind, plane and slice,
// then its values; hovering a row highlights the measurement on its plane, selecting it
// shows its slice.
func (s *viewerScreen) newList() *widget.List {
	l := widget.NewList(func() int { return len(s.rows) },
		func() fyne.CanvasObject {
			return newMeasureRow(func(id int) {
				if s.meas != nil {
					s.meas.Highlight(id)
				}
			})
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			r := o.(*measureRow)
			m := s.rows[i]
			r.id = m.ID
			r.label.SetText(s.rowText(&m))
		})
	l.OnSelected = func(i widget.ListItemID) {
		if i < 0 || i >= len(s.rows) || s.meas == nil {
			return
		}
		m := s.rows[i]
		s.meas.Select(m.ID)
		if !s.syncing {
			s.showMeasurement(&m)
		}
	}
	return l
}

// rowText is a measurement's row: "2  Ellipse · axial 20" over its values.
func (s *viewerScreen) rowText(m *measure.Measurement) string {
	kind := string(m.Kind)
	kind = strings.ToUpper(kind[:1]) + kind[1:]
	head := fmt.Sprintf("%d  %s · %s %d", m.ID, kind, m.Plane, m.Slice)
	if m.Label != "" {
		head += " · " + m.Label
	}
	return head + "\n" + m.Text()
}

// showMeasurement shows the slice measurement m lies on, in every plane through it.
func (s *viewerScreen) showMeasurement(m *measure.Measurement) {
	if len(m.Points) == 0 {
		return
	}
	var c [3]float64
	for _, p := range m.Points {
		for a := range 3 {
			c[a] += p[a] / float64(len(m.Points))
		}
	}
	idx := [3]int{int(c[0]), int(c[1]), int(c[2])}
	idx[m.Axis] = m.Slice
	if o, ok := s.holder.Objects[0].(*vwidget.OrthoView); ok {
		o.SetCrosshair(idx)
		return
	}
	for _, v := range s.views {
		v.SetSlice(idx[v.Layout().Through])
	}
}

// deleteSelected deletes the selected measurement.
func (s *viewerScreen) deleteSelected() {
	if s.meas == nil {
		return
	}
	if id := s.meas.Selected(); id != 0 {
		if err := s.meas.Delete(id); err != nil {
			s.probe.SetText(err.Error())
		}
	}
}

// diameters adds the long and short axes (RECIST) of the selected region.
func (s *viewerScreen) diameters() {
	if s.meas == nil {
		return
	}
	id := s.meas.Selected()
	if id == 0 {
		s.probe.SetText("Select an ellipse or a freehand region first.")
		return
	}
	d, err := s.meas.Set.AddDiameters(id)
	if err != nil {
		s.probe.SetText("Not measured: " + err.Error())
		return
	}
	s.meas.Select(d.ID)
	s.meas.Changed()
}

// nameSelected names the selected measurement ("target lesion 1").
func (s *viewerScreen) nameSelected(name string) {
	if s.meas == nil {
		return
	}
	if id := s.meas.Selected(); id != 0 {
		if err := s.meas.Set.SetLabel(id, strings.TrimSpace(name)); err != nil {
			s.probe.SetText(err.Error())
			return
		}
		s.meas.Changed()
	}
}

// measured shows the measurements again, after they changed.
func (s *viewerScreen) measured() {
	s.rows = s.meas.Set.List()
	s.list.Refresh()
	sel := s.meas.Selected()
	s.syncing = true
	defer func() { s.syncing = false }()
	for i, m := range s.rows {
		if m.ID == sel {
			s.list.Select(i)
			s.name.SetText(m.Label)
			return
		}
	}
	s.list.UnselectAll()
	s.name.SetText("")
}

// measureOn gives the views of vol a new set of measurements (in HU on a CT).
func (s *viewerScreen) measureOn(vol *volume.Volume, views []*vwidget.SliceView) error {
	unit := measure.UnitNone
	if vwidget.LooksCT(vol, vwidget.PercentileWindow(vol)) {
		unit = measure.UnitHU
	}
	set, err := measure.NewSet(vol, unit)
	if err != nil {
		return err
	}
	m := vwidget.NewMeasurer(set)
	m.OnChange = s.measured
	m.OnError = func(err error) { s.probe.SetText("Not measured: " + err.Error()) }
	for _, v := range views {
		m.Attach(v)
	}
	s.meas, s.views = m, views
	s.setTool(s.tool.Selected)
	s.measured()
	return nil
}

// picture is the view as shown, with its measurements, as PNG.
func (s *viewerScreen) picture() ([]byte, error) {
	img, err := s.capture()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, fmt.Errorf("picture: %w", err)
	}
	return b.Bytes(), nil
}

// savePicture asks where to save the view as PNG and saves it there.
func (s *viewerScreen) savePicture() {
	b, err := s.picture()
	if err != nil {
		dialog.ShowError(err, s.a.W)
		return
	}
	d := dialog.NewFileSave(func(w fyne.URIWriteCloser, err error) {
		if err != nil || w == nil {
			return
		}
		_, err = w.Write(b)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			dialog.ShowError(fmt.Errorf("picture %s: %w", w.URI().Path(), err), s.a.W)
		}
	}, s.a.W)
	d.SetFileName("view.png")
	d.SetFilter(storage.NewExtensionFileFilter([]string{".png"}))
	d.Show()
}

// measureRow is a row of the measurement list: it highlights its measurement while the
// pointer is over it.
type measureRow struct {
	widget.BaseWidget
	label *widget.Label
	id    int
	hover func(id int)
}

func newMeasureRow(hover func(id int)) *measureRow {
	r := &measureRow{label: widget.NewLabel("0\n0"), hover: hover}
	r.label.Truncation = fyne.TextTruncateEllipsis
	r.ExtendBaseWidget(r)
	return r
}

// CreateRenderer implements fyne.Widget.
func (r *measureRow) CreateRenderer() fyne.WidgetRenderer { return widget.NewSimpleRenderer(r.label) }

// MouseIn implements desktop.Hoverable.
func (r *measureRow) MouseIn(*desktop.MouseEvent) { r.hover(r.id) }

// MouseMoved implements desktop.Hoverable.
func (r *measureRow) MouseMoved(*desktop.MouseEvent) {}

// MouseOut implements desktop.Hoverable.
func (r *measureRow) MouseOut() { r.hover(0) }

// show puts vol (and labels) in a three-plane view, or a single plane for a 2D image.
func (s *viewerScreen) show(name string, vol, lab *volume.Volume) error {
	st := vol.Stats()
	s.summary.SetText(fmt.Sprintf("%s %d×%d×%d, %.1f×%.1f×%.1f mm, %s, %.0f…%.0f",
		name, vol.Dims[0], vol.Dims[1], vol.Dims[2], vol.Spacing[0], vol.Spacing[1], vol.Spacing[2], vol.Orientation(), st.Min, st.Max))
	hover := func(p vwidget.Probe, ok bool) {
		if !ok {
			return
		}
		s.a.ui.Post(s.probe, func() { // the newest position wins
			s.probe.SetText(fmt.Sprintf("voxel (%d, %d, %d)  value %g  label %d  LPS (%.1f, %.1f, %.1f) mm",
				p.Voxel[0], p.Voxel[1], p.Voxel[2], p.Value, p.Label, p.World[0], p.World[1], p.World[2]))
		})
	}
	var view fyne.CanvasObject
	var views []*vwidget.SliceView
	if vol.Dims[2] == 1 {
		v := vwidget.NewSliceView(vwidget.Axial)
		v.UseBridge(s.a.ui)
		if err := v.SetVolume(vol); err != nil {
			return err
		}
		if lab != nil {
			if err := v.SetLabels(lab, nil); err != nil {
				return err
			}
		}
		v.OnHover = hover
		view = v
		views = []*vwidget.SliceView{v}
		s.capture = v.Capture
	} else {
		o := vwidget.NewOrthoView()
		o.UseBridge(s.a.ui)
		if err := o.SetVolume(vol); err != nil {
			return err
		}
		if lab != nil {
			if err := o.SetLabels(lab, nil); err != nil {
				return err
			}
		}
		if vwidget.LooksCT(vol, vwidget.PercentileWindow(vol)) {
			o.SetWindow(vwidget.CTPresets[0].Window) // brain 80/40, the first look at a head CT
		}
		o.OnHover = hover
		view = o
		views = o.Views[:]
		s.capture = o.Capture
	}
	if err := s.measureOn(vol, views); err != nil {
		return err
	}
	s.holder.Objects = []fyne.CanvasObject{view}
	s.holder.Refresh()
	return nil
}

// choose asks for an image file and shows it.
func (s *viewerScreen) choose() {
	d := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		if err != nil || r == nil {
			return
		}
		path := r.URI().Path()
		r.Close()
		go func() {
			vol, err := imageio.Read(path)
			s.a.do(func() {
				if err == nil {
					err = s.show(path, vol, nil)
				}
				if err != nil {
					dialog.ShowError(err, s.a.W)
				}
			})
		}()
	}, s.a.W)
	d.Show()
}
