package widget

import (
	"bytes"
	"errors"
	"flag"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"

	"amid/viewer/bridge"
	"amid/viewer/edit"
	"amid/viewer/volume"
)

var update = flag.Bool("update", false, "rewrite the golden PNGs in testdata/")

// ctVolume is a 12×10×5 int16 CT-like volume: x ramps −1000..1200 HU in steps of 200, y adds
// 10·y, z adds z; labels: class 1 in x 2..5, y 2..4 and class 2 in x 7..9, y 5..8, all slices.
func ctVolume(t testing.TB) (*volume.Volume, *volume.Volume) {
	v := newVol(t, volume.Int16, [4]int{12, 10, 5, 1})
	lab := newVol(t, volume.Uint8, [4]int{12, 10, 5, 1})
	v.Spacing = [3]float64{1, 1.5, 2}
	v.Origin = [3]float64{-10, 20, 30}
	lab.Spacing, lab.Origin = v.Spacing, v.Origin
	for z := 0; z < 5; z++ {
		for y := 0; y < 10; y++ {
			for x := 0; x < 12; x++ {
				i := v.Index(x, y, z, 0)
				v.Data.([]int16)[i] = int16(-1000 + 200*x + 10*y + z)
				switch {
				case x >= 2 && x <= 5 && y >= 2 && y <= 4:
					lab.Data.([]uint8)[i] = 1
				case x >= 7 && x <= 9 && y >= 5 && y <= 8:
					lab.Data.([]uint8)[i] = 2
				}
			}
		}
	}
	return v, lab
}

// uiQueue stands in for the UI goroutine: the test driver runs fyne.Do on the calling
// goroutine, so the views' bridge hands its flushes to the test goroutine instead, which
// runs them in settle.
type uiQueue chan func()

func (q uiQueue) run(f func()) { q <- f }

// testBridge returns a bridge whose flushes queue for settle.
func testBridge() (*bridge.Bridge, uiQueue) {
	q := make(uiQueue, 1)
	return bridge.New(q.run), q
}

var queues = map[*SliceView]uiQueue{}

// settle runs frames on the test goroutine until every requested frame has been applied.
func settle(t *testing.T, v *SliceView) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		v.mu.Lock()
		done := v.done >= v.gen
		v.mu.Unlock()
		if done {
			return
		}
		select {
		case f := <-queues[v]:
			f()
		case <-time.After(time.Millisecond):
		case <-deadline:
			t.Fatal("frames still pending after 10 s")
		}
	}
}

// newSliceView returns a view whose frames are applied by settle.
func newSliceView(p Plane) *SliceView {
	v := NewSliceView(p)
	b, q := testBridge()
	v.UseBridge(b)
	queues[v] = q
	return v
}

func newView(t *testing.T, p Plane) (*SliceView, fyne.Window) {
	test.NewTempApp(t)
	vol, lab := ctVolume(t)
	v := newSliceView(p)
	if err := v.SetVolume(vol); err != nil {
		t.Fatal(err)
	}
	if err := v.SetLabels(lab, nil); err != nil {
		t.Fatal(err)
	}
	w := test.NewTempWindow(t, v)
	w.SetPadded(false)
	w.Resize(fyne.NewSize(160, 160))
	settle(t, v)
	return v, w
}

func golden(t *testing.T, name string, img image.Image) {
	t.Helper()
	path := filepath.Join("testdata", name)
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	want, err := png.Decode(bytes.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	if want.Bounds() != img.Bounds() {
		t.Fatalf("%s: size %v, golden %v", name, img.Bounds(), want.Bounds())
	}
	diff := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r1, g1, b1, a1 := img.At(x, y).RGBA()
			r2, g2, b2, a2 := want.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 || a1 != a2 {
				diff++
			}
		}
	}
	if diff > 0 {
		_ = os.WriteFile(filepath.Join(t.TempDir(), name), buf.Bytes(), 0o644)
		t.Errorf("%s: %d pixels differ from the golden image (go test -update rewrites it)", name, diff)
	}
}

func TestSliceViewGolden(t *testing.T) {
	for _, p := range []Plane{Axial, Coronal, Sagittal} {
		v, w := newView(t, p)
		v.SetCrosshair([3]int{3, 3, 2})
		settle(t, v)
		golden(t, "sliceview_"+p.String()+".png", w.Canvas().Capture())
	}
}

func TestSliceViewEvents(t *testing.T) {
	v, w := newView(t, Axial)
	c := w.Canvas()
	mid := fyne.NewPos(80, 80)
	if s := v.Slice(); s != 2 {
		t.Fatalf("initial slice %d, want the middle of 5 (2)", s)
	}
	// The volume's values reach −1000 HU, so the CT presets apply; the first is brain 80/40.
	if got := v.Window(); got != CTPresets[0].Window {
		t.Errorf("initial window %v, want %v", got, CTPresets[0].Window)
	}
	var slices []int
	v.OnSlice = func(s int) { slices = append(slices, s) }
	test.Scroll(c, mid, 0, 10)
	if s := v.Slice(); s != 3 {
		t.Errorf("after wheel up: slice %d, want 3", s)
	}
	test.Scroll(c, mid, 0, -10)
	test.Scroll(c, mid, 0, -10)
	if s := v.Slice(); s != 1 {
		t.Errorf("after two wheel downs: slice %d, want 1", s)
	}
	v.TypedKey(&fyne.KeyEvent{Name: fyne.KeyUp})
	if s := v.Slice(); s != 2 {
		t.Errorf("after Up: slice %d, want 2", s)
	}
	// PageUp steps max(1, 5/10) = 1 slice; PageDown twice clamps at 0 after slice 3.
	v.TypedKey(&fyne.KeyEvent{Name: fyne.KeyPageUp})
	v.TypedKey(&fyne.KeyEvent{Name: fyne.KeyPageDown})
	v.TypedKey(&fyne.KeyEvent{Name: fyne.KeyPageDown})
	v.TypedKey(&fyne.KeyEvent{Name: fyne.KeyDown})
	v.TypedKey(&fyne.KeyEvent{Name: fyne.KeyDown})
	if s := v.Slice(); s != 0 {
		t.Errorf("after paging down: slice %d, want 0", s)
	}
	// The changes came faster than the bridge flushes: OnSlice saw some of them, the last
	// being the newest, 0.
	settle(t, v)
	if len(slices) == 0 || len(slices) > 8 || slices[len(slices)-1] != 0 {
		t.Errorf("OnSlice saw %v, want up to the 8 changes 3 2 1 2 3 2 1 0, ending on 0", slices)
	}
	test.Type(v, "3")
	if got := v.Window(); got != (Window{1500, -600}) {
		t.Errorf("after key 3: window %v, want lung 1500/−600", got)
	}
	// Dragging 20 px right widens by 20·1500/200 = 150; 10 px down raises the level by 75.
	test.Drag(c, mid, 20, 10)
	if got := v.Window(); got != (Window{1650, -525}) {
		t.Errorf("after drag: window %v, want {1650 -525}", got)
	}
	test.Type(v, "l")
	if v.LabelsVisible() {
		t.Error("key l did not hide the labels")
	}
	settle(t, v)
	if err := v.Err(); err != nil {
		t.Error(err)
	}
}

func TestSliceViewHover(t *testing.T) {
	v, _ := newView(t, Axial)
	// 160×160 widget; the image is 12 mm × 15 mm (12 px × 1 mm, 10 px × 1.5 mm), so it is
	// scaled by 160/15 to 128×160 and placed at x = 16. Voxel (x, y) covers
	// [16 + 128/12·x, …) × [16·y, …); the centre of voxel (3, 4) is (16+10.67·3.5, 16·4.5).
	var got Probe
	var ok bool
	v.OnHover = func(p Probe, in bool) { got, ok = p, in }
	v.MouseMoved(&desktop.MouseEvent{PointEvent: fyne.PointEvent{Position: fyne.NewPos(16+128.0/12*3.5, 16*4.5)}})
	if !ok || got.Voxel != [3]int{3, 4, 2} {
		t.Fatalf("probe %+v ok=%v, want voxel (3,4,2)", got, ok)
	}
	// Value −1000 + 200·3 + 10·4 + 2; world = origin + spacing·index = (−10+3, 20+6, 30+4).
	if got.Value != -358 || got.Label != 1 || got.World != [3]float64{-7, 26, 34} {
		t.Errorf("probe %+v, want value −358, label 1, world (−7, 26, 34)", got)
	}
	v.MouseMoved(&desktop.MouseEvent{PointEvent: fyne.PointEvent{Position: fyne.NewPos(5, 80)}})
	if ok {
		t.Error("hover left of the image still reports a voxel")
	}
}

// A burst of slice changes renders far fewer frames than changes (frames are coalesced and
// shown at most once per bridge flush) and ends on the last state.
func TestSliceViewCoalesce(t *testing.T) {
	v, _ := newView(t, Axial)
	before := v.frames
	for i := 0; i < 100; i++ {
		v.SetSlice(i % 5)
		v.SetWindow(Window{float64(100 + i), 0})
	}
	settle(t, v)
	if n := v.frames - before; n > 50 || n < 1 {
		t.Errorf("%d frames for 200 changes, want between 1 and 50", n)
	}
	if w := v.Window(); w.Width != 199 {
		t.Errorf("final width %v, want 199", w.Width)
	}
}

func TestSliceViewBadLabels(t *testing.T) {
	test.NewTempApp(t)
	vol, _ := ctVolume(t)
	v := newSliceView(Axial)
	if err := v.SetVolume(vol); err != nil {
		t.Fatal(err)
	}
	other := newVol(t, volume.Uint8, [4]int{12, 10, 4, 1})
	if err := v.SetLabels(other, nil); err == nil {
		t.Error("labels on another grid accepted")
	}
	if err := v.SetVolume(&volume.Volume{Dims: [4]int{2, 2, 2, 1}, Data: []int16{1}}); err == nil {
		t.Error("invalid volume accepted")
	}
}

// TestSliceViewPaint corrects the labels through the view with a Brush: a tap paints the
// voxel under it (radius 0.5 mm: the voxel alone, the volume's voxels being 1 × 1.5 mm), a
// drag paints the line between its ends and leaves the window as it was, a fill on class 1
// takes its 4 × 3 voxels on the slice (ctVolume), and undo gives each back in turn.
func TestSliceViewPaint(t *testing.T) {
	v, w := newView(t, Axial)
	c := w.Canvas()
	_, lab := ctVolume(t)
	ed, err := edit.New(lab)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetLabels(ed.Labels(), nil); err != nil {
		t.Fatal(err)
	}
	edits := 0
	b := &Brush{View: v, Editor: ed, Tool: ToolPaint, Label: 3, Radius: 0.5, OnEdit: func(err error) {
		if err != nil {
			t.Error(err)
		}
		edits++
	}}
	v.SetPainter(b)
	settle(t, v)
	window := v.Window()
	at := fyne.NewPos(20, 80)
	idx, ok := v.voxelAt(at)
	if !ok {
		t.Fatal("no voxel under the tap")
	}
	test.TapCanvas(c, at)
	if got := ed.Labels().At(idx[0], idx[1], idx[2], 0); got != 3 || count3(ed) != 1 {
		t.Fatalf("after a tap on %v: the voxel is %v, %d voxels of label 3; want it alone", idx, got, count3(ed))
	}
	// A row of voxels without labels (y 0), across the image.
	row := float32(-1)
	for y := float32(0); y < 160 && row < 0; y++ {
		if p, ok := v.voxelAt(fyne.NewPos(80, y)); ok && p[1] == 0 {
			row = y
		}
	}
	from, to := fyne.NewPos(20, row), fyne.NewPos(140, row)
	a, _ := v.voxelAt(from)
	z, _ := v.voxelAt(to)
	// A driver's drag event holds where the pointer is and how far it moved.
	test.Drag(c, to, to.X-from.X, 0)
	settle(t, v)
	if v.Window() != window {
		t.Errorf("a paint stroke moved the window to %v", v.Window())
	}
	for x := min(a[0], z[0]); x <= max(a[0], z[0]); x++ {
		if ed.Labels().At(x, a[1], a[2], 0) != 3 {
			t.Errorf("voxel (%d, %d, %d) on the stroke from %v to %v is not painted", x, a[1], a[2], a, z)
		}
	}
	b.Tool, b.Label = ToolFill, 4
	one := fyne.NewPos(0, 0)
	for x := float32(0); x < 160; x++ { // a screen point over class 1 (x 2..5, y 2..4)
		if p, ok := v.voxelAt(fyne.NewPos(x, 80)); ok && p[0] == 3 {
			for y := float32(0); y < 160; y++ {
				if q, ok := v.voxelAt(fyne.NewPos(x, y)); ok && q[0] == 3 && q[1] == 3 {
					one = fyne.NewPos(x, y)
				}
			}
		}
	}
	before := ed.Labels().Clone()
	test.TapCanvas(c, one)
	filled := 0
	for i := range before.Len() {
		if ed.Labels().AtIndex(i) == 4 {
			filled++
			if before.AtIndex(i) != 1 {
				t.Fatalf("the fill took voxel %d of label %v", i, before.AtIndex(i))
			}
		}
	}
	if filled != 12 {
		t.Errorf("the fill took %d voxels, want class 1's 12 on the slice", filled)
	}
	for range 3 {
		if !b.Undo() {
			t.Fatal("nothing to undo")
		}
	}
	// Four edits (the tap, the stroke's two ends, the fill) in three steps.
	if count3(ed) != 0 || b.Undo() || edits != 4 {
		t.Errorf("after three undos: %d voxels of label 3, %d edits; want none and 4", count3(ed), edits)
	}
	settle(t, v)
	if err := v.Err(); err != nil {
		t.Error(err)
	}
}

func count3(ed *edit.Editor) int {
	n := 0
	for i := range ed.Labels().Len() {
		if ed.Labels().AtIndex(i) == 3 {
			n++
		}
	}
	return n
}

// TestBrushBetween paints label 3 at one voxel of slice 0 and of slice 4 (a disc of 2 mm
// on 1 × 1.5 mm voxels) and fills the slices between: each takes the label at that voxel,
// as the shape interpolated between the two discs covers it; without two slices painted
// it says so.
func TestBrushBetween(t *testing.T) {
	v, w := newView(t, Axial)
	_, lab := ctVolume(t)
	ed, err := edit.New(lab)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetLabels(ed.Labels(), nil); err != nil {
		t.Fatal(err)
	}
	b := &Brush{View: v, Editor: ed, Tool: ToolPaint, Label: 3, Radius: 2}
	v.SetPainter(b)
	if err := b.Between(); !errors.Is(err, ErrNoSlices) {
		t.Errorf("between before any painting: %v", err)
	}
	at := fyne.NewPos(80, 80)
	for _, s := range []int{0, 4} {
		v.SetSlice(s)
		settle(t, v)
		test.TapCanvas(w.Canvas(), at)
	}
	idx, _ := v.voxelAt(at)
	if err := b.Between(); err != nil {
		t.Fatal(err)
	}
	for z := range 5 {
		if got := ed.Labels().At(idx[0], idx[1], z, 0); got != 3 {
			t.Errorf("slice %d at %v: %v, want 3", z, idx, got)
		}
	}
	settle(t, v)
}
