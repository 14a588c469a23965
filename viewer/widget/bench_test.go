package widget

import (
	"math"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	usage "amid/assets/measure"
	"amid/viewer/edit"
	"amid/viewer/imageio"
	"amid/viewer/measure"
	"amid/viewer/volume"
)

// benchCT returns the benchmark study: a 512×512×300 int16 CT with a 16-class overlay.
func benchCT(b *testing.B) (*volume.Volume, *volume.Volume) {
	v := newVol(b, volume.Int16, [4]int{512, 512, 300, 1})
	lab := newVol(b, volume.Uint8, [4]int{512, 512, 300, 1})
	d, l := v.Data.([]int16), lab.Data.([]uint8)
	for i := range d {
		d[i] = int16(i%2048 - 1024)
		l[i] = uint8((i / 4096) % 16)
	}
	return v, lab
}

// BenchmarkZoomedSlice renders the middle axial slice of the benchmark study and composes
// it zoomed 2× into a 512×512 view with 40 labelled boxes, the work of one frame of a
// zoomed view (a fitted view without marks skips the compose).
func BenchmarkZoomedSlice(b *testing.B) {
	v, lab := benchCT(b)
	var boxes []Box
	for i := 0; i < 40; i++ {
		x, y := float64(12*i), float64(10*i)
		boxes = append(boxes, Box{Min: [3]float64{x, y, 0}, Max: [3]float64{x + 40, y + 30, 1}, Score: 0.9, Text: "0.90"})
	}
	ms := Marks(boxes, nil, nil)
	l := NewLayout(v, Axial)
	g := NewGeometry(&l, View{Zoom: 2, Center: [2]float64{200, 300}}, 512, 512)
	var r Renderer
	var c Composer
	p := &Params{Plane: Axial, Slice: 150, Window: Window{400, 40}, Overlay: Overlay{Labels: lab, Colors: DefaultColors(), Opacity: 0.4}}
	frame := func() {
		img, err := r.Render(v, p)
		if err != nil {
			b.Fatal(err)
		}
		c.Compose(img, &l, 150, g, 512, 512, ms, 0, 1)
	}
	frame()
	cpu := usage.CPU()
	for b.Loop() {
		frame()
	}
	b.ReportMetric(float64(usage.CPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// BenchmarkStudyMemory loads the benchmark study from NIfTI files (image and labels) into a
// three-plane viewer in a window, renders its frames, and reports the heap the loaded study
// holds against the size of its voxel data (image + labels): the viewer's overhead is
// x-data − 1.
func BenchmarkStudyMemory(b *testing.B) {
	dir := b.TempDir()
	img, lab := filepath.Join(dir, "ct.nii"), filepath.Join(dir, "labels.nii")
	{
		v, l := benchCT(b)
		if err := imageio.Write(img, v); err != nil {
			b.Fatal(err)
		}
		if err := imageio.Write(lab, l); err != nil {
			b.Fatal(err)
		}
	}
	test.NewTempApp(b)
	var held, data float64
	for b.Loop() {
		base := heap()
		v, err := imageio.Read(img)
		if err != nil {
			b.Fatal(err)
		}
		l, err := imageio.Read(lab)
		if err != nil {
			b.Fatal(err)
		}
		o := NewOrthoView()
		if err := o.SetVolume(v); err != nil {
			b.Fatal(err)
		}
		if err := o.SetLabels(l, nil); err != nil {
			b.Fatal(err)
		}
		w := test.NewWindow(o)
		w.Resize(fyne.NewSize(1024, 1024))
		for _, sv := range o.Views {
			waitFrames(b, sv)
		}
		held = float64(heap() - base)
		data = float64(v.Len()*v.DType().Size() + l.Len()*l.DType().Size())
		runtime.KeepAlive(o)
		w.Close()
	}
	b.ReportMetric(held/(1<<20), "MiB-held")
	b.ReportMetric(data/(1<<20), "MiB-data")
	b.ReportMetric(held/data, "x-data")
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func waitFrames(b *testing.B, v *SliceView) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		v.mu.Lock()
		done := v.done >= v.gen && v.gen > 0
		v.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal("frames still pending after 30 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkEditSlice is one frame of a correction on the benchmark study: a brush dab of
// 10 mm on its middle axial slice (a 1 mm grid: about 317 voxels), the changes the
// correction bar shows, and the slice rendered again with the edited overlay. Compare it
// with BenchmarkRenderSlice, the redraw of the same slice alone.
func BenchmarkEditSlice(b *testing.B) {
	v, lab := benchCT(b)
	lab.Spacing = [3]float64{1, 1, 1}
	ed, err := edit.New(lab)
	if err != nil {
		b.Fatal(err)
	}
	var r Renderer
	p := &Params{Plane: Axial, Slice: 150, Window: Window{400, 40}, Overlay: Overlay{Labels: ed.Labels(), Colors: DefaultColors(), Opacity: 0.4}}
	k := 0
	frame := func() {
		// Dabs along a line across the slice, alternating labels, so each one changes voxels.
		c := [3]int{20 + k%470, 256, 150}
		if err := ed.Dab(2, c, 10, 1+k%15); err != nil {
			b.Fatal(err)
		}
		_ = ed.Changes()
		if _, err := r.Render(v, p); err != nil {
			b.Fatal(err)
		}
		k++
	}
	frame()
	cpu := usage.CPU()
	for b.Loop() {
		frame()
	}
	b.ReportMetric(float64(usage.CPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// BenchmarkMeasuredSlice is one frame of the benchmark study's middle axial slice with ten
// measurements on it (two each of lengths, bidirectional pairs, ellipses, 64-point freehand
// regions and angles, their values computed when drawn, not per frame), fitted into a
// 512×512 view: the render, the compose at the view's resolution that a slice with
// measurements takes, and the measurements drawn with their handles and texts. Compare it
// with BenchmarkRenderSlice, the redraw of the same slice alone.
func BenchmarkMeasuredSlice(b *testing.B) {
	v, lab := benchCT(b)
	set, err := measure.NewSet(v, measure.UnitHU)
	if err != nil {
		b.Fatal(err)
	}
	z := 150.5 // the middle of slice 150
	for i := range 2 {
		o := float64(200 * i)
		ring := make([][3]float64, 64)
		for j := range ring {
			a := 2 * math.Pi * float64(j) / 64
			ring[j] = [3]float64{o + 150 + 40*math.Cos(a), 300 + 30*math.Sin(a), z}
		}
		for _, m := range []measure.Measurement{
			{Kind: measure.Length, Points: [][3]float64{{o + 10, 10, z}, {o + 180, 120, z}}},
			{Kind: measure.Bidirectional, Points: [][3]float64{{o + 20, 200, z}, {o + 160, 260, z}}},
			{Kind: measure.Ellipse, Points: [][3]float64{{o + 30, 380, z}, {o + 150, 470, z}}},
			{Kind: measure.Freehand, Points: ring},
			{Kind: measure.Angle, Points: [][3]float64{{o + 40, 140, z}, {o + 100, 180, z}, {o + 170, 140, z}}},
		} {
			m.Axis, m.Slice = 2, 150
			if _, err := set.Add(m); err != nil {
				b.Fatal(err)
			}
		}
	}
	ms := NewMeasurer(set)
	tool := &measureTool{m: ms}
	l := NewLayout(v, Axial)
	g := NewGeometry(&l, View{}, 512, 512)
	var r Renderer
	var c Composer
	p := &Params{Plane: Axial, Slice: 150, Window: Window{400, 40}, Overlay: Overlay{Labels: lab, Colors: DefaultColors(), Opacity: 0.4}}
	frame := func() {
		img, err := r.Render(v, p)
		if err != nil {
			b.Fatal(err)
		}
		if !tool.On(&l, 150) {
			b.Fatal("no measurement on the slice")
		}
		img = c.Compose(img, &l, 150, g, 512, 512, nil, 0, 1)
		if placed := drawOver(tool, img, &l, 150, g, 1, c.Placed); len(placed) != 10 {
			b.Fatalf("%d texts placed, want 10", len(placed))
		}
	}
	frame()
	cpu := usage.CPU()
	for b.Loop() {
		frame()
	}
	b.ReportMetric(float64(usage.CPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}
