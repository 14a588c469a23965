package widget

import (
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

func TestOrthoLinked(t *testing.T) {
	test.NewTempApp(t)
	o := NewOrthoView()
	b, q := testBridge()
	o.UseBridge(b)
	for _, v := range o.Views {
		queues[v] = q
	}
	vol, lab := ctVolume(t)
	if err := o.SetVolume(vol); err != nil {
		t.Fatal(err)
	}
	if err := o.SetLabels(lab, nil); err != nil {
		t.Fatal(err)
	}
	w := test.NewTempWindow(t, o)
	w.Resize(fyne.NewSize(320, 320))
	for _, v := range o.Views {
		settle(t, v)
	}
	// The centre of 12×10×5 is voxel (6, 5, 2): axial slice z=2, coronal y=5, sagittal x=6.
	if c := o.Crosshair(); c != [3]int{6, 5, 2} {
		t.Fatalf("crosshair %v, want [6 5 2]", c)
	}
	ax, co, sa := o.Views[0], o.Views[1], o.Views[2]
	if ax.Slice() != 2 || co.Slice() != 5 || sa.Slice() != 6 {
		t.Fatalf("slices %d %d %d, want 2 5 6", ax.Slice(), co.Slice(), sa.Slice())
	}
	// Tap the centre of axial screen pixel (3, 4): identity direction, so voxel (3, 4, 2).
	l := ax.Layout()
	pos := fyne.NewPos(ax.rect.X+(3.5)*ax.rsize.Width/float32(l.W), ax.rect.Y+(4.5)*ax.rsize.Height/float32(l.H))
	ax.Tapped(&fyne.PointEvent{Position: pos})
	if c := o.Crosshair(); c != [3]int{3, 4, 2} {
		t.Fatalf("after tap: crosshair %v, want [3 4 2]", c)
	}
	if co.Slice() != 4 || sa.Slice() != 3 {
		t.Errorf("after tap: coronal %d sagittal %d, want 4 and 3", co.Slice(), sa.Slice())
	}
	// Scrolling the coronal view moves the crosshair's y and nothing else (once the bridge
	// has called OnSlice).
	co.TypedKey(&fyne.KeyEvent{Name: fyne.KeyUp})
	settle(t, co)
	if c := o.Crosshair(); c != [3]int{3, 5, 2} {
		t.Errorf("after coronal step: crosshair %v, want [3 5 2]", c)
	}
	if ax.Slice() != 2 || sa.Slice() != 3 {
		t.Errorf("other views moved: axial %d sagittal %d", ax.Slice(), sa.Slice())
	}
	for _, v := range o.Views {
		settle(t, v)
		if err := v.Err(); err != nil {
			t.Error(err)
		}
	}
	golden(t, "orthoview.png", w.Canvas().Capture())
}
