package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	vwidget "amid/viewer/widget"
)

func TestMainWindowShowsSample(t *testing.T) {
	// Fyne's test driver has no UI goroutine: the viewers' rendered frames would be applied
	// from their render goroutines while this one lays the window out. This test checks
	// the window's structure, not pixels, so frames are discarded.
	defer vwidget.RunFramesWith(func(func()) {})()
	a := test.NewTempApp(t)
	w, err := NewMainWindow(a)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// The summary names the sample's grid: 96×96×40 voxels of 2.4×2.4×4 mm (synth.SampleStudy).
	const want = "head CT 96×96×40, 2.4×2.4×4.0 mm"
	found, views := false, 0
	for _, o := range test.LaidOutObjects(w.Content()) {
		if l, ok := o.(*widget.Label); ok && strings.Contains(l.Text, want) {
			found = true
		}
		if _, ok := o.(*vwidget.OrthoView); ok {
			views++
		}
	}
	if !found {
		t.Errorf("no label says %q", want)
	}
	if views != 1 {
		t.Errorf("%d three-plane viewers, want 1", views)
	}
}
