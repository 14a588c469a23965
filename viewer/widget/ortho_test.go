package widget

import (
	"bytes"
	"image"
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

// TestOrthoOneWindow: the volume has one window. Key 4 (the bone preset, 2500/480, under
// which ctVolume's sagittal slice, 200–290 HU, is no longer all white as under the brain
// window) on the axial view changes the coronal and sagittal views too, and what they draw; key i inverts all three;
// a drag on the sagittal view moves all three windows alike; the fourth cell says the
// window. Zoom stays each view's own.
func TestOrthoOneWindow(t *testing.T) {
	test.NewTempApp(t)
	o := NewOrthoView()
	b, q := testBridge()
	o.UseBridge(b)
	for _, v := range o.Views {
		queues[v] = q
	}
	vol, _ := ctVolume(t)
	if err := o.SetVolume(vol); err != nil {
		t.Fatal(err)
	}
	w := test.NewTempWindow(t, o)
	w.Resize(fyne.NewSize(320, 320))
	settleAll := func() {
		for _, v := range o.Views {
			settle(t, v)
		}
	}
	settleAll()
	ax, co, sa := o.Views[0], o.Views[1], o.Views[2]
	pixels := func(v *SliceView) []uint8 { return append([]uint8(nil), v.img.Image.(*image.RGBA).Pix...) }
	coBefore, saBefore := pixels(co), pixels(sa)
	test.Type(ax, "4")
	settleAll()
	bone := Window{2500, 480}
	for i, v := range o.Views {
		if v.Window() != bone {
			t.Errorf("view %d: window %v after the axial view's key 4, want %v", i, v.Window(), bone)
		}
	}
	if bytes.Equal(coBefore, pixels(co)) || bytes.Equal(saBefore, pixels(sa)) {
		t.Error("the coronal or sagittal view drew the same pixels after the window changed")
	}
	if got := o.wl.Text; got != "W 2500  L 480" {
		t.Errorf("the window's text %q", got)
	}
	test.Type(co, "i")
	settleAll()
	for i, v := range o.Views {
		if !v.Inverted() {
			t.Errorf("view %d is not inverted after the coronal view's key i", i)
		}
	}
	if got := o.wl.Text; got != "W 2500  L 480  inverted" {
		t.Errorf("the window's text %q", got)
	}
	// A drag on the sagittal view: 20 px right widens by 20·2500/200 = 250 in all three.
	sa.Dragged(&fyne.DragEvent{Dragged: fyne.Delta{DX: 20}})
	for i, v := range o.Views {
		if v.Window() != (Window{2750, 480}) {
			t.Errorf("view %d: window %v after the drag, want {2750 480}", i, v.Window())
		}
	}
	ax.TypedRune('+')
	if co.View().Zoom != 0 && co.View().Zoom != 1 {
		t.Errorf("the axial view's zoom moved the coronal view's: %v", co.View())
	}
	settleAll()
}
