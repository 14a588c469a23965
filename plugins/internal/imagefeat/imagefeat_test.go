package imagefeat

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"amid/viewer/volume"
)

// image is a float32 volume of dims with the values of fn(x, y, z).
func image(t testing.TB, dims [4]int, fn func(x, y, z int) float64) *volume.Volume {
	t.Helper()
	v, err := volume.New(volume.Float32, dims)
	if err != nil {
		t.Fatal(err)
	}
	for z := range dims[2] {
		for y := range dims[1] {
			for x := range dims[0] {
				for c := range dims[3] {
					v.SetIndex(v.Index(x, y, z, c), fn(x, y, z))
				}
			}
		}
	}
	return v
}

// feature is the value of the named feature in f.
func feature(t *testing.T, f []float32, name string) float64 {
	t.Helper()
	i := slices.Index(Names(), name)
	if i < 0 {
		t.Fatalf("no feature %q", name)
	}
	return float64(f[i])
}

func near(t *testing.T, f []float32, name string, want, tol float64) {
	t.Helper()
	if got := feature(t, f, name); math.Abs(got-want) > tol {
		t.Errorf("%s = %v, want %v ± %v", name, got, want, tol)
	}
}

// TestNames: one distinct name a feature.
func TestNames(t *testing.T) {
	n := Names()
	if len(n) != Count {
		t.Fatalf("%d names for %d features", len(n), Count)
	}
	seen := map[string]bool{}
	for _, s := range n {
		if seen[s] {
			t.Errorf("name %q twice", s)
		}
		seen[s] = true
	}
	if n[0] != "log_x" || n[Count-1] != "layout_5_5" {
		t.Errorf("names run from %q to %q", n[0], n[Count-1])
	}
}

// TestGeometryAndPercentiles: a 101 × 2 ramp of the values 0 … 100 repeated on two rows
// has the percentiles of 0 … 100 (each value twice: p_k at rank k/100·201 lies between
// two copies of k or k and k+1), log dims and aspect, and one voxel in 101 at each end.
func TestGeometryAndPercentiles(t *testing.T) {
	f := Of(image(t, [4]int{101, 2, 1, 1}, func(x, _, _ int) float64 { return float64(x) }))
	near(t, f, "log_x", math.Log(101), 1e-6)
	near(t, f, "log_y", math.Log(2), 1e-6)
	near(t, f, "log_z", 0, 0)
	near(t, f, "log_aspect", math.Log(101.0/2), 1e-6)
	near(t, f, "log_channels", 0, 0)
	for _, p := range Percentiles {
		// The sorted values are 0,0,1,1,…; rank p/100·201 interpolates between them.
		pos := p / 100 * 201
		want := float64(int(pos)/2)*(1-(pos-float64(int(pos)))) + float64((int(pos)+1)/2)*(pos-float64(int(pos)))
		near(t, f, Names()[iPct+slices.Index(Percentiles[:], p)], want, 1e-4)
	}
	near(t, f, "mean", 50, 1e-6)
	near(t, f, "std", math.Sqrt((101*101-1)/12.0), 1e-4) // the uniform 0…100's variance (n²−1)/12
	near(t, f, "frac_min", 1.0/101, 1e-7)
	near(t, f, "frac_max", 1.0/101, 1e-7)
	near(t, f, "log_distinct", math.Log(102), 1e-6)
	// 0.5–99.5 percentiles are 0.5 and 99.5: 16 bins of width 6.1875; the first holds
	// 0 … 6 (7 values), the last 93.3125 … 100 (7 values).
	near(t, f, "hist_00", 7.0/101, 1e-7)
	near(t, f, "hist_15", 7.0/101, 1e-7)
}

// TestConstant: a constant image has its value for every percentile and the mean, no
// spread, noise or gradient, all voxels at the minimum and the maximum, all in the first
// histogram bin, and a layout of zeros; the same for one pixel.
func TestConstant(t *testing.T) {
	for _, dims := range [][4]int{{32, 24, 1, 1}, {1, 1, 1, 1}, {8, 8, 8, 3}} {
		f := Of(image(t, dims, func(int, int, int) float64 { return 7 }))
		for i, name := range Names() {
			want := 0.0
			switch {
			case i < iPct:
				continue // geometry
			case i < iStd:
				want = 7 // percentiles and mean
			case name == "frac_min" || name == "frac_max" || name == "hist_00":
				want = 1
			case name == "log_distinct":
				want = math.Log(2)
			}
			if math.Abs(float64(f[i])-want) > 1e-6 {
				t.Errorf("%v: %s = %v, want %v", dims, name, f[i], want)
			}
		}
	}
}

// TestNoise: white Gaussian noise of σ 10 on 256² pixels (mean 100): every Laplacian's
// robust σ estimates 10 within 5 % (the MAD's standard error on the 2¹⁴ sampled
// residuals is about 1.67σ/√n ≈ 1.3 %; 5 % is nearly four of them); the relative ones are the
// same over the 0.5–99.5 percentile range, 2·2.5758σ ≈ 51.5. The mean gradient of
// independent central differences, each N(0, σ²/2), is a Rayleigh mean σ/√2·√(π/2).
func TestNoise(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	f := Of(image(t, [4]int{256, 256, 1, 1}, func(int, int, int) float64 { return 100 + 10*r.NormFloat64() }))
	for _, s := range Spacings {
		name := Names()[iLap+slices.Index(Spacings[:], s)]
		near(t, f, name, 10, 0.5)
		// 6 %: the 5 % of the σ and about 1 % more for the tail percentiles of the range.
		near(t, f, name+"_rel", 10/(2*2.5758*10), 0.06*10/51.5)
	}
	near(t, f, "grad", 10/math.Sqrt2*math.Sqrt(math.Pi/2), 0.2)
	near(t, f, "std", 10, 0.2)
	near(t, f, "mean", 100, 0.2)
}

// TestRamp: on a linear ramp 3x + 2y the Laplacian is exactly 0 and the gradient √13 at
// every interior pixel; its layout rises from the top-left cell to the bottom-right one.
func TestRamp(t *testing.T) {
	f := Of(image(t, [4]int{60, 40, 1, 1}, func(x, y, _ int) float64 { return float64(3*x + 2*y) }))
	for _, s := range Spacings {
		near(t, f, Names()[iLap+slices.Index(Spacings[:], s)], 0, 1e-6)
	}
	near(t, f, "grad", math.Sqrt(13), 1e-5)
	if a, b := feature(t, f, "layout_0_0"), feature(t, f, "layout_5_5"); !(a < 0.1 && b > 0.9) {
		t.Errorf("layout from %v to %v, want below 0.1 and above 0.9", a, b)
	}
	// Each row of cells is brighter than the one above, each column than the one left.
	for r := range Layout - 1 {
		for c := range Layout - 1 {
			v := f[iLayout+r*Layout+c]
			if f[iLayout+r*Layout+c+1] <= v || f[iLayout+(r+1)*Layout+c] <= v {
				t.Errorf("layout not increasing at cell %d,%d", r, c)
			}
		}
	}
}

// TestLayoutSmall: a 3 × 2 image still fills the 6 × 6 grid, each pixel spread over the
// cells it covers: cell (r, c) reads pixel (c/2, r/3).
func TestLayoutSmall(t *testing.T) {
	f := Of(image(t, [4]int{3, 2, 1, 1}, func(x, y, _ int) float64 { return float64(x + 3*y) }))
	for r := range Layout {
		for c := range Layout {
			x, y := c/2, r/3
			want := min(max((float64(x+3*y)-0.025)/(4.975-0.025), 0), 1) // 0.5–99.5 percentiles of 0 … 5
			if got := float64(f[iLayout+r*Layout+c]); math.Abs(got-want) > 1e-5 {
				t.Errorf("cell %d,%d = %v, want %v", r, c, got, want)
			}
		}
	}
}

// TestChannelsAndTypes: an RGB uint8 image's features are those of its channels' mean,
// but for log_channels; a 3D volume's layout is its middle slice's.
func TestChannelsAndTypes(t *testing.T) {
	rgb, err := volume.New(volume.Uint8, [4]int{16, 12, 1, 3})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	px := rgb.Data.([]uint8)
	for i := range px {
		px[i] = uint8(r.IntN(256))
	}
	mean := image(t, [4]int{16, 12, 1, 1}, func(x, y, _ int) float64 {
		i := rgb.Index(x, y, 0, 0)
		return float64(float32((float64(px[i]) + float64(px[i+1]) + float64(px[i+2])) / 3))
	})
	a, b := Of(rgb), Of(mean)
	for i, name := range Names() {
		if name == "log_channels" {
			if a[i] != float32(math.Log(3)) || b[i] != 0 {
				t.Errorf("log_channels %v and %v", a[i], b[i])
			}
			continue
		}
		if a[i] != b[i] {
			t.Errorf("%s: %v for RGB, %v for its mean", name, a[i], b[i])
		}
	}
	vol := image(t, [4]int{12, 12, 5, 1}, func(x, _, z int) float64 {
		if z == 2 {
			return float64(x)
		}
		return 0
	})
	f := Of(vol)
	near(t, f, "log_z", math.Log(5), 1e-6)
	if feature(t, f, "layout_0_0") >= feature(t, f, "layout_0_5") {
		t.Errorf("layout of the middle slice does not rise along x: %v", f[iLayout:])
	}
}

// TestNonFinite: NaN and ±Inf voxels leave the statistics of the finite ones unchanged
// and give finite features; an image with no finite voxel, a nil volume and data that
// does not match its dims give zeros beyond the geometry.
func TestNonFinite(t *testing.T) {
	clean := image(t, [4]int{20, 20, 1, 1}, func(x, y, _ int) float64 { return float64(x * y) })
	dirty := clean.Clone()
	d := dirty.Data.([]float32)
	d[0], d[5], d[399] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
	f := Of(dirty)
	for i, x := range f {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			t.Errorf("%s = %v", Names()[i], x)
		}
	}
	near(t, f, "p50", float64(percentileOf(t, d)), 1e-6)
	near(t, f, "mean", meanOf(d), 1e-4)
	allNaN := image(t, [4]int{4, 4, 1, 1}, func(int, int, int) float64 { return math.NaN() })
	huge := image(t, [4]int{4, 4, 1, 1}, func(x, _, _ int) float64 { return float64(x) * 1e38 })
	bad := &volume.Volume{Dims: [4]int{4, 4, 1, 1}, Data: []float32{1, 2}}
	odd := &volume.Volume{Dims: [4]int{0, -3, 1, 1}, Data: "pixels"}
	vast := &volume.Volume{Dims: [4]int{1 << 40, 1 << 40, 1 << 40, 1}, Data: []uint8{1}}
	for name, v := range map[string]*volume.Volume{"all NaN": allNaN, "huge": huge, "short data": bad, "odd": odd, "vast": vast, "nil": nil} {
		f := Of(v)
		if len(f) != Count {
			t.Fatalf("%s: %d features", name, len(f))
		}
		for i, x := range f {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Errorf("%s: %s = %v", name, Names()[i], x)
			}
			if name != "huge" && i >= iPct && x != 0 {
				t.Errorf("%s: %s = %v, want 0", name, Names()[i], x)
			}
		}
	}
}

// percentileOf is the median of the finite values of d.
func percentileOf(t *testing.T, d []float32) float32 {
	t.Helper()
	var s []float32
	for _, x := range d {
		if finite(x) {
			s = append(s, x)
		}
	}
	slices.Sort(s)
	return float32(percentile(s, 50))
}

// meanOf is the mean of the finite values of d.
func meanOf(d []float32) float64 {
	var s float64
	n := 0
	for _, x := range d {
		if finite(x) {
			s += float64(x)
			n++
		}
	}
	return s / float64(n)
}

// TestSortFloat32: the radix sort agrees with slices.Sort on negatives, zeros, subnormals
// and repeats.
func TestSortFloat32(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	a := make([]float32, 5000)
	for i := range a {
		switch i % 5 {
		case 0:
			a[i] = float32(r.NormFloat64() * 1e6)
		case 1:
			a[i] = -float32(r.IntN(10))
		case 2:
			a[i] = math.Float32frombits(uint32(r.IntN(1000))) // subnormal
		case 3:
			a[i] = float32(r.ExpFloat64())
		default:
			a[i] = 0
		}
	}
	b := slices.Clone(a)
	sortFloat32(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		t.Error("radix sort differs from slices.Sort")
	}
}

// BenchmarkOf512 is the cost of one 512² image's features (the package documentation's "a few
// milliseconds"; a benchmark, not a test: no wall-clock time is asserted).
func BenchmarkOf512(b *testing.B) {
	v, _ := volume.New(volume.Uint8, [4]int{512, 512, 1, 1})
	r := rand.New(rand.NewPCG(7, 8))
	for i, px := 0, v.Data.([]uint8); i < len(px); i++ {
		px[i] = uint8(r.IntN(256))
	}
	for b.Loop() {
		Of(v)
	}
}

// FuzzFeatures: any small volume of any element type, with any bytes for its values
// (NaNs and infinities among them), gives Count finite features without panicking.
func FuzzFeatures(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(1), uint8(1), uint8(0), []byte{7})
	f.Add(uint8(8), uint8(3), uint8(1), uint8(1), uint8(6), binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(math.NaN()))))
	f.Add(uint8(5), uint8(5), uint8(2), uint8(3), uint8(7), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xef, 0x7f})
	f.Add(uint8(16), uint8(9), uint8(1), uint8(1), uint8(3), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Fuzz(func(t *testing.T, x, y, z, c, typ uint8, data []byte) {
		dims := [4]int{int(x%17) + 1, int(y%17) + 1, int(z%5) + 1, int(c%4) + 1}
		dt := volume.DType(typ%8 + 1)
		v, err := volume.New(dt, dims)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 0 {
			raw := make([]byte, v.Len()*dt.Size())
			for i := range raw {
				raw[i] = data[i%len(data)]
			}
			v.Data = volume.DecodeBytes(raw, dt, binary.LittleEndian)
		}
		out := Of(v)
		if len(out) != Count {
			t.Fatalf("%d features", len(out))
		}
		for i, x := range out {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("%s = %v", Names()[i], x)
			}
		}
	})
}
