package ui

import (
	"bytes"
	"fmt"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"amid/assets"
	"amid/viewer/imageio"
	"amid/viewer/nifti"
	"amid/viewer/volume"
	vwidget "amid/viewer/widget"
)

// viewerScreen shows any image, with an optional label image, in the three-plane viewer
// (a 2D image in one plane); the bundled sample study when none is opened.
type viewerScreen struct {
	a       *App
	obj     fyne.CanvasObject
	summary *widget.Label
	probe   *widget.Label
	holder  *fyne.Container
}

func newViewerScreen(a *App, image, labels string) (*viewerScreen, error) {
	s := &viewerScreen{a: a, summary: widget.NewLabel(""), holder: container.NewStack()}
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
	title := widget.NewLabelWithStyle("Viewer", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	s.obj = container.NewBorder(container.NewVBox(container.NewHBox(title, open), s.summary), s.probe, nil, nil, s.holder)
	return s, nil
}

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
