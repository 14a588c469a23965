// Package ui holds AMID's desktop screens, built with Fyne. It never imports the Fyne
// driver (fyne.io/fyne/v2/app): main.go creates the app and hands it here, so every screen
// is testable headless with fyne.io/fyne/v2/test.
package ui

import (
	"bytes"
	"fmt"
	"image"
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"amid/assets"
	"amid/viewer/nifti"
	"amid/viewer/volume"
)

// Brain window (width 80, level 40 HU), the usual first look at a head CT.
const brainWidth, brainLevel = 80, 40

// NewMainWindow builds the main window. Until the run screens exist it shows the bundled
// sample study: its summary and its middle axial slice in the brain window.
func NewMainWindow(a fyne.App) (fyne.Window, error) {
	w := a.NewWindow("AMID")
	w.SetIcon(fyne.NewStaticResource("icon.png", assets.Icon))
	content, err := sampleView()
	if err != nil {
		return nil, err
	}
	w.SetContent(content)
	w.Resize(fyne.NewSize(720, 560))
	return w, nil
}

func sampleView() (fyne.CanvasObject, error) {
	ct, err := nifti.Decode(bytes.NewReader(assets.SampleCT), assets.SampleCTPath)
	if err != nil {
		return nil, fmt.Errorf("sample study: %w", err)
	}
	img := canvas.NewImageFromImage(AxialSlice(ct, ct.Dims[2]/2, brainWidth, brainLevel))
	img.FillMode = canvas.ImageFillContain
	img.ScaleMode = canvas.ImageScalePixels
	img.SetMinSize(fyne.NewSize(384, 384))
	s := ct.Stats()
	summary := widget.NewLabel(fmt.Sprintf("Sample study: head CT %d×%d×%d, %.1f×%.1f×%.1f mm, %s, %.0f…%.0f HU",
		ct.Dims[0], ct.Dims[1], ct.Dims[2], ct.Spacing[0], ct.Spacing[1], ct.Spacing[2], ct.Orientation(), s.Min, s.Max))
	title := widget.NewLabelWithStyle("AMID — autonomous medical imaging development", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	return container.NewBorder(container.NewVBox(title, summary), nil, nil, nil, img), nil
}

// AxialSlice renders slice z of channel 0 as 8-bit grey with a window of the given width
// and level: values at or below level−width/2 are black, at or above level+width/2 white.
// Column x goes to the right and row y down, so an LPS volume shows in radiological
// convention (the patient's left on the screen's right, anterior up).
func AxialSlice(v *volume.Volume, z int, width, level float64) *image.Gray {
	X, Y := v.Dims[0], v.Dims[1]
	img := image.NewGray(image.Rect(0, 0, X, Y))
	lo := level - width/2
	for y := 0; y < Y; y++ {
		for x := 0; x < X; x++ {
			f := (v.At(x, y, z, 0) - lo) / width
			img.SetGray(x, y, color.Gray{Y: uint8(255*max(0, min(1, f)) + 0.5)})
		}
	}
	return img
}
