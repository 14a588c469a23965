// Package ui holds AMID's desktop screens, built with Fyne. It never imports the Fyne
// driver (fyne.io/fyne/v2/app): main.go creates the app and hands it here, so every screen
// is testable headless with fyne.io/fyne/v2/test.
package ui

import (
	"bytes"
	"fmt"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"amid/assets"
	"amid/viewer/nifti"
	vwidget "amid/viewer/widget"
)

// NewMainWindow builds the main window. Until the run screens exist it shows the bundled
// sample study in the three-plane viewer with its label overlay, in the CT brain window.
func NewMainWindow(a fyne.App) (fyne.Window, error) {
	w := a.NewWindow("AMID")
	w.SetIcon(fyne.NewStaticResource("icon.png", assets.Icon))
	content, err := sampleView()
	if err != nil {
		return nil, err
	}
	w.SetContent(content)
	w.Resize(fyne.NewSize(960, 720))
	return w, nil
}

func sampleView() (fyne.CanvasObject, error) {
	ct, err := nifti.Decode(bytes.NewReader(assets.SampleCT), assets.SampleCTPath)
	if err != nil {
		return nil, fmt.Errorf("sample study: %w", err)
	}
	labels, err := nifti.Decode(bytes.NewReader(assets.SampleLabels), assets.SampleLabelsPath)
	if err != nil {
		return nil, fmt.Errorf("sample study: %w", err)
	}
	view := vwidget.NewOrthoView()
	if err := view.SetVolume(ct); err != nil {
		return nil, fmt.Errorf("sample study: %w", err)
	}
	if err := view.SetLabels(labels, nil); err != nil {
		return nil, fmt.Errorf("sample study: %w", err)
	}
	view.SetWindow(vwidget.CTPresets[0].Window) // brain 80/40, the first look at a head CT
	s := ct.Stats()
	summary := widget.NewLabel(fmt.Sprintf("Sample study: head CT %d×%d×%d, %.1f×%.1f×%.1f mm, %s, %.0f…%.0f HU",
		ct.Dims[0], ct.Dims[1], ct.Dims[2], ct.Spacing[0], ct.Spacing[1], ct.Spacing[2], ct.Orientation(), s.Min, s.Max))
	probe := widget.NewLabel("Scroll to change slices, drag to window, keys 1–5 for presets, L for labels.")
	view.OnHover = func(p vwidget.Probe, ok bool) {
		if !ok {
			return
		}
		fyne.Do(func() {
			probe.SetText(fmt.Sprintf("voxel (%d, %d, %d)  %g HU  label %d  LPS (%.1f, %.1f, %.1f) mm",
				p.Voxel[0], p.Voxel[1], p.Voxel[2], p.Value, p.Label, p.World[0], p.World[1], p.World[2]))
		})
	}
	title := widget.NewLabelWithStyle("AMID — autonomous medical imaging development", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	return container.NewBorder(container.NewVBox(title, summary), probe, nil, nil, view), nil
}
