package widget

import (
	"errors"
	"image/color"
	"math"
	"slices"
	"testing"
	"time"

	usage "amid/assets/measure"
	"amid/viewer/volume"
)

func newVol(t testing.TB, dt volume.DType, dims [4]int) *volume.Volume {
	t.Helper()
	v, err := volume.New(dt, dims)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The expected grays follow Window's documented formula round((x−(L−W/2))·255/W), clamped:
// with W=100, L=50 the ramp starts at 0 and gains 2.55 per unit.
func TestWindowGray(t *testing.T) {
	v := newVol(t, volume.Int16, [4]int{6, 1, 1, 1})
	copy(v.Data.([]int16), []int16{-10, 0, 20, 50, 100, 200})
	var r Renderer
	img, err := r.Render(v, &Params{Window: Window{100, 50}})
	if err != nil {
		t.Fatal(err)
	}
	want := []uint8{0, 0, 51, 128, 255, 255}
	for x, g := range want {
		if c := img.RGBAAt(x, 0); c != (color.RGBA{g, g, g, 255}) {
			t.Errorf("pixel %d = %v, want gray %d", x, c, g)
		}
	}
}

// The 16-bit lookup table must match the direct formula, for unsigned values too and after
// the window changes.
func TestWindowLookup(t *testing.T) {
	v := newVol(t, volume.Uint16, [4]int{4, 1, 1, 1})
	copy(v.Data.([]uint16), []uint16{0, 20, 50, 65535})
	var r Renderer
	for _, c := range []struct {
		w    Window
		want []uint8
	}{
		{Window{100, 50}, []uint8{0, 51, 128, 255}},
		// W=40, L=40: ramp from 20, 6.375 per unit: 20 → 0, 50 → 191.25 → 191.
		{Window{40, 40}, []uint8{0, 0, 191, 255}},
	} {
		img, err := r.Render(v, &Params{Window: c.w})
		if err != nil {
			t.Fatal(err)
		}
		for x, g := range c.want {
			if got := img.RGBAAt(x, 0).R; got != g {
				t.Errorf("window %v pixel %d = %d, want %d", c.w, x, got, g)
			}
		}
	}
}

func TestWindowFloatNaN(t *testing.T) {
	v := newVol(t, volume.Float32, [4]int{3, 1, 1, 1})
	copy(v.Data.([]float32), []float32{float32(math.NaN()), 0.5, 1})
	var r Renderer
	img, err := r.Render(v, &Params{Window: Window{1, 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	// NaN is drawn black; 0.5 is mid-gray (127.5 rounds to 128); 1 is white.
	for x, g := range []uint8{0, 128, 255} {
		if c := img.RGBAAt(x, 0); c.R != g {
			t.Errorf("pixel %d = %v, want gray %d", x, c, g)
		}
	}
}

// rot30 is a rotation by 30° about the S axis; columns are the voxel axes in LPS.
var rot30 = [9]float64{
	math.Cos(math.Pi / 6), -math.Sin(math.Pi / 6), 0,
	math.Sin(math.Pi / 6), math.Cos(math.Pi / 6), 0,
	0, 0, 1,
}

func TestLayoutLetters(t *testing.T) {
	cases := []struct {
		name  string
		dir   [9]float64
		plane Plane
		// want: Left, Right, Top, Bottom; Across, Down, Through, FlipU, FlipV
		l, r, top, bot string
		a, d, th       int
		fu, fv         bool
	}{
		{"LPS axial", volume.Identity, Axial, "R", "L", "A", "P", 0, 1, 2, false, false},
		{"LPS coronal", volume.Identity, Coronal, "R", "L", "S", "I", 0, 2, 1, false, true},
		{"LPS sagittal", volume.Identity, Sagittal, "A", "P", "S", "I", 1, 2, 0, false, true},
		// NIfTI RAS storage: x runs to the right, y anterior, z superior.
		{"RAS axial", [9]float64{-1, 0, 0, 0, -1, 0, 0, 0, 1}, Axial, "R", "L", "A", "P", 0, 1, 2, true, true},
		{"RAS coronal", [9]float64{-1, 0, 0, 0, -1, 0, 0, 0, 1}, Coronal, "R", "L", "S", "I", 0, 2, 1, true, true},
		{"RAS sagittal", [9]float64{-1, 0, 0, 0, -1, 0, 0, 0, 1}, Sagittal, "A", "P", "S", "I", 1, 2, 0, true, true},
		// Coronal acquisition: x = L, y = I, z = P.
		{"coronal-acquired axial", [9]float64{1, 0, 0, 0, 0, 1, 0, -1, 0}, Axial, "R", "L", "A", "P", 0, 2, 1, false, false},
		{"coronal-acquired coronal", [9]float64{1, 0, 0, 0, 0, 1, 0, -1, 0}, Coronal, "R", "L", "S", "I", 0, 1, 2, false, false},
		// Oblique: x = (cos30, sin30, 0) is mostly L with some P; y = (−sin30, cos30, 0).
		{"oblique axial", rot30, Axial, "RA", "LP", "AL", "PR", 0, 1, 2, false, false},
		{"oblique sagittal", rot30, Sagittal, "AL", "PR", "S", "I", 1, 2, 0, false, true},
	}
	for _, c := range cases {
		v := newVol(t, volume.Uint8, [4]int{4, 5, 6, 1})
		v.Direction = c.dir
		l := NewLayout(v, c.plane)
		if l.Left != c.l || l.Right != c.r || l.Top != c.top || l.Bottom != c.bot {
			t.Errorf("%s: letters L=%q R=%q T=%q B=%q, want %q %q %q %q", c.name, l.Left, l.Right, l.Top, l.Bottom, c.l, c.r, c.top, c.bot)
		}
		if l.Across != c.a || l.Down != c.d || l.Through != c.th || l.FlipU != c.fu || l.FlipV != c.fv {
			t.Errorf("%s: axes %d/%d/%d flips %v/%v, want %d/%d/%d %v/%v", c.name, l.Across, l.Down, l.Through, l.FlipU, l.FlipV, c.a, c.d, c.th, c.fu, c.fv)
		}
		if l.W != v.Dims[l.Across] || l.H != v.Dims[l.Down] || l.N != v.Dims[l.Through] {
			t.Errorf("%s: size %dx%dx%d", c.name, l.W, l.H, l.N)
		}
	}
}

// The pixel at screen (u, v) must hold the voxel Layout.Voxel names, for flipped and permuted
// direction matrices; values encode the index so any mix-up shows.
func TestRenderMapping(t *testing.T) {
	dirs := [][9]float64{volume.Identity, {-1, 0, 0, 0, -1, 0, 0, 0, 1}, {1, 0, 0, 0, 0, 1, 0, -1, 0}}
	for _, dir := range dirs {
		v := newVol(t, volume.Uint8, [4]int{3, 4, 5, 1})
		v.Direction = dir
		for i := range v.Data.([]uint8) {
			v.Data.([]uint8)[i] = uint8(i)
		}
		var r Renderer
		for _, p := range []Plane{Axial, Coronal, Sagittal} {
			l := NewLayout(v, p)
			s := l.N - 1
			// Window 255/127.5 maps x to gray x exactly.
			img, err := r.Render(v, &Params{Plane: p, Slice: s, Window: Window{255, 127.5}})
			if err != nil {
				t.Fatal(err)
			}
			for y := 0; y < l.H; y++ {
				for x := 0; x < l.W; x++ {
					idx := l.Voxel(x, y, s)
					want := uint8(v.Index(idx[0], idx[1], idx[2], 0))
					if got := img.RGBAAt(x, y).R; got != want {
						t.Fatalf("%v %v: pixel (%d,%d) = %d, want %d", dir, p, x, y, got, want)
					}
					if u, w, ss := l.Screen(idx); u != x || w != y || ss != s {
						t.Fatalf("Screen(Voxel(%d,%d,%d)) = %d,%d,%d", x, y, s, u, w, ss)
					}
				}
			}
		}
	}
}

// square returns a 5×5×1 zero image and a label volume with label k in the central 3×3.
func square(t *testing.T, k uint8) (*volume.Volume, *volume.Volume) {
	img := newVol(t, volume.Int16, [4]int{5, 5, 1, 1})
	lab := newVol(t, volume.Uint8, [4]int{5, 5, 1, 1})
	for y := 1; y <= 3; y++ {
		for x := 1; x <= 3; x++ {
			lab.Data.([]uint8)[y*5+x] = k
		}
	}
	return img, lab
}

func TestOverlayFillOutline(t *testing.T) {
	img, lab := square(t, 2)
	cols := []color.RGBA{{}, {9, 9, 9, 255}, {200, 100, 50, 255}}
	var r Renderer
	p := &Params{Window: Window{100, 50}, Overlay: Overlay{Labels: lab, Colors: cols, Opacity: 1}}
	out, err := r.Render(img, p)
	if err != nil {
		t.Fatal(err)
	}
	for y := 0; y < 5; y++ {
		for x := 0; x < 5; x++ {
			want := color.RGBA{0, 0, 0, 255}
			if x >= 1 && x <= 3 && y >= 1 && y <= 3 {
				want = color.RGBA{200, 100, 50, 255}
			}
			if got := out.RGBAAt(x, y); got != want {
				t.Errorf("fill (%d,%d) = %v, want %v", x, y, got, want)
			}
		}
	}
	p.Overlay.Outline = true
	out, _ = r.Render(img, p)
	if got := out.RGBAAt(2, 2); got != (color.RGBA{0, 0, 0, 255}) {
		t.Errorf("outline centre = %v, want black (interior is not drawn)", got)
	}
	for _, q := range [][2]int{{1, 1}, {2, 1}, {3, 3}, {1, 2}} {
		if got := out.RGBAAt(q[0], q[1]); got != cols[2] {
			t.Errorf("outline border %v = %v, want %v", q, got, cols[2])
		}
	}
	// Half opacity: alpha round(0.5·255) = 128, channel = (0·127 + c·128 + 127) / 255.
	p.Overlay.Outline = false
	p.Overlay.Opacity = 0.5
	out, _ = r.Render(img, p)
	want := color.RGBA{(200*128 + 127) / 255, (100*128 + 127) / 255, (50*128 + 127) / 255, 255}
	if got := out.RGBAAt(2, 2); got != want {
		t.Errorf("half opacity = %v, want %v", got, want)
	}
	// A hidden class is not drawn.
	p.Overlay.Hidden = []bool{false, false, true}
	out, _ = r.Render(img, p)
	if got := out.RGBAAt(2, 2); got != (color.RGBA{0, 0, 0, 255}) {
		t.Errorf("hidden class drawn: %v", got)
	}
}

func TestColorWrap(t *testing.T) {
	cols := []color.RGBA{{}, {1, 0, 0, 255}, {2, 0, 0, 255}, {3, 0, 0, 255}}
	// Labels 4, 5, 6 wrap onto 1, 2, 3; negative labels have no colour.
	for k, want := range map[int32]uint8{1: 1, 3: 3, 4: 1, 5: 2, 6: 3, -1: 0} {
		if got := colorOf(cols, k).R; got != want {
			t.Errorf("colorOf(%d) = %d, want %d", k, got, want)
		}
	}
}

func TestDifference(t *testing.T) {
	img := newVol(t, volume.Int16, [4]int{4, 1, 1, 1})
	pred := newVol(t, volume.Uint8, [4]int{4, 1, 1, 1})
	truth := newVol(t, volume.Uint8, [4]int{4, 1, 1, 1})
	// pixel 0: agree (1,1); 1: FP (1,0); 2: FN (0,1); 3: wrong class (2,1).
	copy(pred.Data.([]uint8), []uint8{1, 1, 0, 2})
	copy(truth.Data.([]uint8), []uint8{1, 0, 1, 1})
	var r Renderer
	out, err := r.Render(img, &Params{Window: Window{100, 50}, Overlay: Overlay{Labels: pred, Truth: truth, Opacity: 1}})
	if err != nil {
		t.Fatal(err)
	}
	want := []color.RGBA{{0, 0, 0, 255}, FPColor, FNColor, WrongColor}
	for x, w := range want {
		if got := out.RGBAAt(x, 0); got != w {
			t.Errorf("pixel %d = %v, want %v", x, got, w)
		}
	}
	if FPColor == FNColor {
		t.Error("FP and FN colours must differ")
	}
}

func TestRenderErrors(t *testing.T) {
	img, lab := square(t, 1)
	var r Renderer
	bad := newVol(t, volume.Uint8, [4]int{4, 5, 1, 1})
	flt := newVol(t, volume.Float32, [4]int{5, 5, 1, 1})
	cases := []*Params{
		{Slice: 1},
		{Slice: -1},
		{Channel: 1},
		{Overlay: Overlay{Labels: bad}},
		{Overlay: Overlay{Labels: flt}},
		{Overlay: Overlay{Labels: lab, Truth: bad}},
	}
	for i, p := range cases {
		if _, err := r.Render(img, p); !errors.Is(err, ErrParams) {
			t.Errorf("case %d: err = %v, want ErrParams", i, err)
		}
	}
	short := &volume.Volume{Dims: [4]int{5, 5, 1, 1}, Data: []int16{1}}
	if _, err := r.Render(short, &Params{}); !errors.Is(err, ErrParams) {
		t.Errorf("short data: err = %v", err)
	}
}

func TestRenderAllocs(t *testing.T) {
	v := newVol(t, volume.Int16, [4]int{64, 64, 8, 1})
	lab := newVol(t, volume.Uint8, [4]int{64, 64, 8, 1})
	truth := newVol(t, volume.Uint8, [4]int{64, 64, 8, 1})
	for i := range lab.Data.([]uint8) {
		lab.Data.([]uint8)[i] = uint8(i % 16)
	}
	cols := DefaultColors()
	var r Renderer
	for _, p := range []*Params{
		{Plane: Axial, Slice: 3, Window: Window{400, 40}, Overlay: Overlay{Labels: lab, Colors: cols, Opacity: 0.4}},
		{Plane: Coronal, Slice: 3, Window: Window{400, 40}, Overlay: Overlay{Labels: lab, Colors: cols, Opacity: 0.4, Outline: true}},
		{Plane: Sagittal, Slice: 3, Window: Window{400, 40}, Overlay: Overlay{Labels: lab, Truth: truth, Opacity: 0.4}},
	} {
		if _, err := r.Render(v, p); err != nil { // warm-up grows the buffers
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(20, func() { _, _ = r.Render(v, p) }); n != 0 {
			t.Errorf("%v: %v allocations per render, want 0", p.Plane, n)
		}
	}
}

func TestDefaultColors(t *testing.T) {
	c := DefaultColors()
	if len(c) != 256 || c[0].A != 0 {
		t.Fatalf("%d colours, colour 0 = %v; want 256 with 0 transparent", len(c), c[0])
	}
	// The first 64 classes must be told apart: every pair differs by at least 20 in some channel.
	for i := 1; i <= 64; i++ {
		if c[i].A != 255 {
			t.Errorf("colour %d alpha %d", i, c[i].A)
		}
		for j := 1; j < i; j++ {
			d := max(absDiff(c[i].R, c[j].R), absDiff(c[i].G, c[j].G), absDiff(c[i].B, c[j].B))
			if d < 20 {
				t.Errorf("colours %d %v and %d %v too close", i, c[i], j, c[j])
			}
		}
	}
	for _, bad := range []string{`{`, `{"colors":[[0,0,0,0]]}`, `{"colors":[[0,0,0,0],[1,2,3]]}`, `{"colors":[[0,0,0,0],[1,2,3,256]]}`} {
		if _, err := ParseColors("t.json", []byte(bad)); err == nil {
			t.Errorf("ParseColors(%s) accepted", bad)
		}
	}
}

func absDiff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

func TestPercentileWindow(t *testing.T) {
	v := newVol(t, volume.Int16, [4]int{10, 10, 10, 1})
	for i := range v.Data.([]int16) {
		v.Data.([]int16)[i] = int16(i)
	}
	// 1000 sorted values 0..999: the 0.5th percentile is element round(0.005·999) = 5 and the
	// 99.5th element round(0.995·999) = 994.
	if w := PercentileWindow(v); w != (Window{989, 499.5}) {
		t.Errorf("window %v, want {989 499.5}", w)
	}
	if p := DefaultPresets(v); len(p) != 1 || p[0].Name != "auto" {
		t.Errorf("non-CT presets %v", p)
	}
	for i := range v.Data.([]int16) {
		v.Data.([]int16)[i] = int16(i) - 1024 // air at −1024 HU
	}
	if p := DefaultPresets(v); len(p) != 5 || p[2].Window != (Window{1500, -600}) {
		t.Errorf("CT presets %v", p)
	}
}

// BenchmarkRenderSlice renders the middle axial slice of a 512×512×300 int16 CT with a
// 16-class label overlay.
func BenchmarkRenderSlice(b *testing.B) {
	v := newVol(b, volume.Int16, [4]int{512, 512, 300, 1})
	lab := newVol(b, volume.Uint8, [4]int{512, 512, 300, 1})
	d, l := v.Data.([]int16), lab.Data.([]uint8)
	for i := range d {
		d[i] = int16(i%2048 - 1024)
		l[i] = uint8((i / 4096) % 16)
	}
	var r Renderer
	p := &Params{Plane: Axial, Slice: 150, Window: Window{400, 40}, Overlay: Overlay{Labels: lab, Colors: DefaultColors(), Opacity: 0.4}}
	if _, err := r.Render(v, p); err != nil {
		b.Fatal(err)
	}
	cpu := usage.CPU()
	for b.Loop() {
		if _, err := r.Render(v, p); err != nil {
			b.Fatal(err)
		}
	}
	// CPU time per render, steadier than wall time on a loaded machine.
	b.ReportMetric(float64(usage.CPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// BenchmarkScroll renders every axial slice of the same 512×512×300 CT with its 16-class
// overlay, as a full scroll through the volume, and reports the median and 95th percentile
// time per slice. One op is one full scroll.
func BenchmarkScroll(b *testing.B) {
	v := newVol(b, volume.Int16, [4]int{512, 512, 300, 1})
	lab := newVol(b, volume.Uint8, [4]int{512, 512, 300, 1})
	d, l := v.Data.([]int16), lab.Data.([]uint8)
	for i := range d {
		d[i] = int16(i%2048 - 1024)
		l[i] = uint8((i / 4096) % 16)
	}
	var r Renderer
	p := &Params{Plane: Axial, Window: Window{400, 40}, Overlay: Overlay{Labels: lab, Colors: DefaultColors(), Opacity: 0.4}}
	times := make([]time.Duration, 0, 300*b.N)
	for b.Loop() {
		for z := 0; z < 300; z++ {
			p.Slice = z
			t0 := time.Now()
			if _, err := r.Render(v, p); err != nil {
				b.Fatal(err)
			}
			times = append(times, time.Since(t0))
		}
	}
	slices.Sort(times)
	ms := func(q float64) float64 {
		return float64(times[int(q*float64(len(times)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(ms(0.5), "median-ms/slice")
	b.ReportMetric(ms(0.95), "p95-ms/slice")
}

func TestDiv255(t *testing.T) {
	for x := uint32(0); x < 255*256; x++ {
		if got, want := div255(x), uint8(x/255); got != want {
			t.Fatalf("div255(%d) = %d, want %d", x, got, want)
		}
	}
}

// TestRenderInvert: an inverted window draws each gray as 255 minus the plain one (±1 for
// rounding), on the 16-bit table path (int16 CT) and on the direct one (float32).
func TestRenderInvert(t *testing.T) {
	ct, _ := ctVolume(t)
	f := newVol(t, volume.Float32, ct.Dims)
	for i := range ct.Len() {
		f.SetIndex(i, ct.AtIndex(i))
	}
	for _, v := range []*volume.Volume{ct, f} {
		var r Renderer
		p := &Params{Plane: Axial, Slice: 2, Window: Window{1500, -600}}
		img, err := r.Render(v, p)
		if err != nil {
			t.Fatal(err)
		}
		plain := append([]uint8(nil), img.Pix...)
		p.Invert = true
		img, err = r.Render(v, p)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(plain); i += 4 {
			if d := int(img.Pix[i]) + int(plain[i]) - 255; d < -1 || d > 1 {
				t.Fatalf("%v pixel %d: %d inverted, %d plain", v.DType(), i/4, img.Pix[i], plain[i])
			}
		}
	}
}
