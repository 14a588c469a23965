package widget

import (
	"fmt"
	"strings"
	"sync"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	fwidget "fyne.io/fyne/v2/widget"

	"amid/viewer/bridge"
	"amid/viewer/volume"
)

// OrthoView shows the axial, coronal and sagittal planes of one volume with a linked
// crosshair: tapping a voxel in one view, or changing a view's slice, moves the crosshair
// and the slices of the other two. The volume has one window: a preset key, a drag or an
// inversion in one view changes all three (zoom and pan stay each view's own), and the
// fourth cell shows it.
type OrthoView struct {
	fwidget.BaseWidget

	// Views are the axial, coronal and sagittal views, in that order.
	Views [3]*SliceView
	// OnHover is called with the voxel under the cursor in any of the views.
	OnHover func(p Probe, ok bool)

	mu    sync.Mutex
	cross [3]int
	wl    *canvas.Text // the window and level, in the fourth cell
}

// NewOrthoView returns an empty three-plane view.
func NewOrthoView() *OrthoView {
	o := &OrthoView{}
	for i, p := range []Plane{Axial, Coronal, Sagittal} {
		v := NewSliceView(p)
		o.Views[i] = v
		v.OnPick = o.SetCrosshair
		v.OnSlice = func(s int) {
			o.mu.Lock()
			o.cross[v.Layout().Through] = s
			c := o.cross
			o.mu.Unlock()
			o.setCross(c)
		}
		v.OnHover = func(p Probe, ok bool) {
			if o.OnHover != nil {
				o.OnHover(p, ok)
			}
		}
		v.OnWindow = func(Window) {
			for _, w := range o.Views {
				if w != v {
					w.follow(v)
				}
			}
			o.showWindow()
		}
	}
	o.wl = canvas.NewText("", theme.Color(theme.ColorNameForeground))
	o.ExtendBaseWidget(o)
	return o
}

// WindowText says the volume's window: "W 1500  L −600", and "inverted" when it is.
func (o *OrthoView) WindowText() string {
	w := o.Views[0].Window()
	s := fmt.Sprintf("W %.4g  L %.4g", w.Width, w.Level)
	if o.Views[0].Inverted() {
		s += "  inverted"
	}
	return strings.ReplaceAll(s, "-", "−")
}

// showWindow shows the window in the fourth cell, on the UI goroutine.
func (o *OrthoView) showWindow() {
	o.Views[0].post("window text", func() {
		o.wl.Text = o.WindowText()
		o.wl.Refresh()
	})
}

// UseBridge makes the three views reach the UI goroutine through b (see
// SliceView.UseBridge). Call it before the view is used.
func (o *OrthoView) UseBridge(b *bridge.Bridge) {
	for _, v := range o.Views {
		v.UseBridge(b)
	}
}

// SetVolume shows vol in all three views with the crosshair at its centre.
func (o *OrthoView) SetVolume(vol *volume.Volume) error {
	for _, v := range o.Views {
		if err := v.SetVolume(vol); err != nil {
			return err
		}
	}
	o.SetCrosshair([3]int{vol.Dims[0] / 2, vol.Dims[1] / 2, vol.Dims[2] / 2})
	o.showWindow()
	return nil
}

// SetLabels sets the overlay (and, with truth, the difference view) of all three views.
func (o *OrthoView) SetLabels(labels, truth *volume.Volume) error {
	for _, v := range o.Views {
		if err := v.SetLabels(labels, truth); err != nil {
			return err
		}
	}
	return nil
}

// SetWindow sets the display window of all three views.
func (o *OrthoView) SetWindow(w Window) {
	for _, v := range o.Views {
		v.SetWindow(w)
	}
	o.showWindow()
}

// SetCrosshair moves the crosshair to voxel idx in all three views.
func (o *OrthoView) SetCrosshair(idx [3]int) {
	o.mu.Lock()
	o.cross = idx
	o.mu.Unlock()
	o.setCross(idx)
}

// setCross moves every view's crosshair to idx. The views follow without reporting their
// own slice changes back: an echo carrying an older crosshair could undo a newer one.
func (o *OrthoView) setCross(idx [3]int) {
	for _, v := range o.Views {
		v.setCrosshair(idx)
	}
}

// Crosshair returns the voxel under the crosshair.
func (o *OrthoView) Crosshair() [3]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cross
}

// CreateRenderer implements fyne.Widget: a 2×2 grid, axial and coronal on top, sagittal
// below left.
func (o *OrthoView) CreateRenderer() fyne.WidgetRenderer {
	return fwidget.NewSimpleRenderer(container.NewGridWithColumns(2, o.Views[0], o.Views[1], o.Views[2], container.NewPadded(container.NewVBox(o.wl))))
}
