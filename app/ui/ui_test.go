package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"amid/viewer/volume"
)

func TestAxialSliceWindowing(t *testing.T) {
	v, _ := volume.New(volume.Int16, [4]int{3, 2, 1, 1})
	// Brain window 80/40: 0 HU and below is black, 80 HU and above white, 40 HU mid-grey.
	copy(v.Data.([]int16), []int16{-1000, 0, 40, 80, 1000, 20})
	img := AxialSlice(v, 0, 80, 40)
	want := []uint8{0, 0, 128, 255, 255, 64}
	for i, w := range want {
		if got := img.Pix[i]; got != w {
			t.Errorf("pixel %d = %d, want %d", i, got, w)
		}
	}
}

func TestMainWindowShowsSample(t *testing.T) {
	a := test.NewTempApp(t)
	w, err := NewMainWindow(a)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// The summary names the sample's grid: 96×96×40 voxels of 2.4×2.4×4 mm (synth.SampleStudy).
	const want = "head CT 96×96×40, 2.4×2.4×4.0 mm"
	for _, o := range test.LaidOutObjects(w.Content()) {
		if l, ok := o.(*widget.Label); ok && strings.Contains(l.Text, want) {
			return
		}
	}
	t.Fatalf("no label says %q", want)
}
