package data

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"amid/viewer/volume"
)

func newVol(t *testing.T, dt volume.DType, dims [4]int, f func(x, y, z, c int) float64) *volume.Volume {
	t.Helper()
	v, err := volume.New(dt, dims)
	if err != nil {
		t.Fatal(err)
	}
	for z := range dims[2] {
		for y := range dims[1] {
			for x := range dims[0] {
				for c := range dims[3] {
					v.SetIndex(v.Index(x, y, z, c), f(x, y, z, c))
				}
			}
		}
	}
	return v
}

// A linear ramp is reproduced exactly by trilinear interpolation wherever the sample point
// lies inside the input grid; geometry is kept and dims are round(extent/spacing).
func TestResampleRamp(t *testing.T) {
	ramp := func(x, y, z float64) float64 { return 2*x + 3*y + 5*z + 1 }
	v := newVol(t, volume.Float32, [4]int{5, 4, 3, 1}, func(x, y, z, _ int) float64 { return ramp(float64(x), float64(y), float64(z)) })
	v.Spacing = [3]float64{1, 2, 3}
	v.Origin = [3]float64{10, -4, 7}
	v.Direction = [9]float64{0, 1, 0, -1, 0, 0, 0, 0, 1}
	out, err := Resample(v, [3]float64{0.5, 1, 1.5}, false)
	if err != nil {
		t.Fatal(err)
	}
	if out.Dims != [4]int{10, 8, 6, 1} || out.Origin != v.Origin || out.Direction != v.Direction || out.Spacing != [3]float64{0.5, 1, 1.5} {
		t.Fatalf("grid dims %v spacing %v origin %v direction %v", out.Dims, out.Spacing, out.Origin, out.Direction)
	}
	checked := 0
	for z := range 6 {
		for y := range 8 {
			for x := range 10 {
				px, py, pz := float64(x)*0.5, float64(y)*0.5, float64(z)*0.5 // input index = i·new/old spacing
				if px > 4 || py > 3 || pz > 2 {
					continue // beyond the last input voxel: clamped, not the ramp
				}
				got := out.At(x, y, z, 0)
				if want := ramp(px, py, pz); math.Abs(got-want) > 1e-5 {
					t.Fatalf("(%d,%d,%d) = %v, want %v", x, y, z, got, want)
				}
				checked++
			}
		}
	}
	if checked != 9*7*5 {
		t.Fatalf("checked %d voxels", checked)
	}
}

func TestResampleLabelNearest(t *testing.T) {
	v := newVol(t, volume.Uint8, [4]int{4, 1, 1, 1}, func(x, _, _, _ int) float64 { return float64(x + 1) })
	out, err := Resample(v, [3]float64{0.5, 1, 1}, true)
	if err != nil {
		t.Fatal(err)
	}
	// Output voxel i samples input index i/2, rounded half away from zero, clamped to 3.
	want := []uint8{1, 2, 2, 3, 3, 4, 4, 4}
	if out.DType() != volume.Uint8 || !slices.Equal(out.Data.([]uint8), want) {
		t.Fatalf("got %v %v, want %v", out.DType(), out.Data, want)
	}
}

// A single-slice volume keeps one slice or repeats it; extreme zoom factors are errors.
func TestResampleSliceAndAnisotropy(t *testing.T) {
	v := newVol(t, volume.Int16, [4]int{3, 3, 1, 1}, func(x, y, _, _ int) float64 { return float64(x + 3*y) })
	v.Spacing = [3]float64{0.5, 0.5, 40}
	out, err := Resample(v, [3]float64{0.5, 0.5, 20}, false)
	if err != nil {
		t.Fatal(err)
	}
	if out.Dims != [4]int{3, 3, 2, 1} {
		t.Fatalf("dims %v", out.Dims)
	}
	for i := range 9 {
		if out.AtIndex(i) != float64(i) || out.AtIndex(9+i) != float64(i) {
			t.Fatalf("voxel %d: %v %v", i, out.AtIndex(i), out.AtIndex(9+i))
		}
	}
	// 40 mm to 0.5 mm is a factor 80, over the limit of 64.
	if _, err := Resample(v, [3]float64{0.5, 0.5, 0.5}, false); !errors.Is(err, volume.ErrGeometry) {
		t.Fatalf("factor 80: %v", err)
	}
	if _, err := Resample(v, [3]float64{0.5, 0, 1}, false); !errors.Is(err, volume.ErrGeometry) {
		t.Fatalf("zero spacing: %v", err)
	}
	// Back onto the original grid: the two slices at z 0 and 20 mm map to the one slice.
	back, err := ResampleTo(out, [3]int{3, 3, 1}, v.Spacing, false)
	if err != nil {
		t.Fatal(err)
	}
	if back.Dims != v.Dims || back.AtIndex(4) != 4 {
		t.Fatalf("back: dims %v voxel 4 = %v", back.Dims, back.AtIndex(4))
	}
}

func TestNormalise(t *testing.T) {
	// MR: non-zero voxels 1, 2, 3 have mean 2 and population std sqrt(2/3).
	v := newVol(t, volume.Float32, [4]int{4, 1, 1, 1}, func(x, _, _, _ int) float64 { return float64(x) })
	got, err := Norm{Modality: MR}.Apply(v)
	if err != nil {
		t.Fatal(err)
	}
	sd := math.Sqrt(2.0 / 3)
	want := []float64{0, -1 / sd, 0, 1 / sd}
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > 1e-6 {
			t.Fatalf("MR %v, want %v", got, want)
		}
	}
	// RGB, two channels, channels-fastest in the volume, planes in the output.
	v = newVol(t, volume.Uint8, [4]int{2, 1, 1, 2}, func(x, _, _, c int) float64 { return float64(100*c + 50*x) })
	got, err = Norm{Modality: RGB}.Apply(v)
	if err != nil {
		t.Fatal(err)
	}
	// Each channel has two values, z-scored to -1 and 1.
	for i, w := range []float64{-1, 1, -1, 1} {
		if math.Abs(float64(got[i])-w) > 1e-6 {
			t.Fatalf("RGB %v", got)
		}
	}
	// CT: values 0..999 in the foreground. numpy.percentile (linear) gives 0.005·999 = 4.995
	// and 994.005; mean 499.5; population std sqrt((1000²-1)/12).
	img := newVol(t, volume.Int16, [4]int{1000, 1, 2, 1}, func(x, _, z, _ int) float64 { return float64(x + 5000*z) })
	lab := newVol(t, volume.Uint8, [4]int{1000, 1, 2, 1}, func(_, _, z, _ int) float64 { return float64(1 - z) })
	var fit CTFit
	if err := fit.Add("ct", img, lab); err != nil {
		t.Fatal(err)
	}
	s, err := fit.Stats()
	if err != nil {
		t.Fatal(err)
	}
	want4 := [4]float64{4.995, 994.005, 499.5, math.Sqrt((1e6 - 1) / 12)}
	for i, g := range [4]float64{s.Lo, s.Hi, s.Mean, s.Std} {
		if math.Abs(g-want4[i]) > 1e-9 {
			t.Fatalf("CT stats %+v, want %v", s, want4)
		}
	}
	got, err = Norm{Modality: CT, CT: s}.Apply(img)
	if err != nil {
		t.Fatal(err)
	}
	// Voxel 0 clips to Lo, background 5000+ clips to Hi.
	if w := (s.Lo - s.Mean) / s.Std; math.Abs(float64(got[0])-w) > 1e-6 {
		t.Fatalf("CT voxel 0 = %v, want %v", got[0], w)
	}
	if w := (s.Hi - s.Mean) / s.Std; math.Abs(float64(got[1500])-w) > 1e-6 {
		t.Fatalf("CT voxel 1500 = %v, want %v", got[1500], w)
	}
	var empty CTFit
	if _, err := empty.Stats(); err == nil {
		t.Fatal("no foreground: no error")
	}
}

func TestCaseErrors(t *testing.T) {
	img := newVol(t, volume.Float32, [4]int{3, 1, 1, 1}, func(x, _, _, _ int) float64 { return float64(x) })
	img.Data.([]float32)[1] = float32(math.NaN())
	if _, err := NewCase("case7", img, nil, Norm{Modality: MR}, nil); !errors.Is(err, ErrNonFinite) || !strings.Contains(err.Error(), "case7") {
		t.Fatalf("NaN: %v", err)
	}
	img.Data.([]float32)[1] = float32(math.Inf(-1))
	if _, err := NewCase("case7", img, nil, Norm{Modality: MR}, nil); !errors.Is(err, ErrNonFinite) {
		t.Fatalf("Inf: %v", err)
	}
	img.Data.([]float32)[1] = 1
	lab := newVol(t, volume.Uint8, [4]int{3, 1, 1, 1}, func(x, _, _, _ int) float64 { return float64(2 * x) })
	_, err := NewCase("case8", img, lab, Norm{Modality: MR}, []int{0, 2})
	if err == nil || !strings.Contains(err.Error(), "case8") || !strings.Contains(err.Error(), "value 4") {
		t.Fatalf("label outside set: %v", err)
	}
	c, err := NewCase("case9", img, lab, Norm{Modality: MR}, []int{0, 2, 4})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Label, []int32{0, 1, 2}) || !slices.Equal(c.FgClasses(), []int{1, 2}) {
		t.Fatalf("labels %v classes %v", c.Label, c.FgClasses())
	}
	// Float label maps are common in NIfTI; integral values are accepted, others are not.
	flab := newVol(t, volume.Float32, [4]int{3, 1, 1, 1}, func(x, _, _, _ int) float64 { return float64(2 * x) })
	if c, err := NewCase("case11", img, flab, Norm{Modality: MR}, []int{0, 2, 4}); err != nil || !slices.Equal(c.Label, []int32{0, 1, 2}) {
		t.Fatalf("float labels: %v", err)
	}
	flab.Data.([]float32)[1] = 2.5
	if _, err := NewCase("case12", img, flab, Norm{Modality: MR}, []int{0, 2, 4}); err == nil || !strings.Contains(err.Error(), "value 2.5") {
		t.Fatalf("label 2.5: %v", err)
	}
	flab.Data.([]float32)[1] = float32(math.NaN())
	if _, err := NewCase("case13", img, flab, Norm{Modality: MR}, []int{0, 2, 4}); err == nil || !strings.Contains(err.Error(), "case13") {
		t.Fatalf("label NaN: %v", err)
	}
	short := newVol(t, volume.Uint8, [4]int{2, 1, 1, 1}, func(int, int, int, int) float64 { return 0 })
	if _, err := NewCase("case10", img, short, Norm{Modality: MR}, []int{0}); !errors.Is(err, volume.ErrGeometry) {
		t.Fatalf("grid mismatch: %v", err)
	}
}

// The fraction of patches forced onto foreground matches FgProb; forced patches contain
// foreground; an empty label map is still sampled and never forced.
func TestSampleForeground(t *testing.T) {
	img := newVol(t, volume.Float32, [4]int{32, 32, 32, 1}, func(x, y, z, _ int) float64 { return float64(x + y + z) })
	lab := newVol(t, volume.Uint8, [4]int{32, 32, 32, 1}, func(x, y, z, _ int) float64 {
		if x >= 28 && y < 2 && z >= 10 && z < 12 {
			return 1
		}
		return 0
	})
	c, err := NewCase("fg", img, lab, Norm{Modality: MR}, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	s := Sampler{Patch: [3]int{8, 8, 8}, FgProb: 1.0 / 3}
	r := rand.New(rand.NewPCG(1, 2))
	pi, pl := make([]float32, s.Len()), make([]int32, s.Len())
	const n = 3000
	forced := 0
	for range n {
		if !s.Sample(r, c, pi, pl) {
			continue
		}
		forced++
		if !slices.Contains(pl, 1) {
			t.Fatal("forced patch without foreground")
		}
	}
	// Binomial(3000, 1/3): std sqrt(3000·(1/3)·(2/3)) ≈ 25.8; allow 4 std.
	if math.Abs(float64(forced)-n/3.0) > 4*25.8 {
		t.Fatalf("%d of %d patches forced", forced, n)
	}
	empty := newVol(t, volume.Uint8, [4]int{32, 32, 32, 1}, func(int, int, int, int) float64 { return 0 })
	c, err = NewCase("empty", img, empty, Norm{Modality: MR}, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if s.Sample(r, c, pi, pl) {
			t.Fatal("empty label map forced")
		}
	}
}

// A case smaller than the patch lies inside it; the rest is the image minimum and label 0.
func TestSamplePadding(t *testing.T) {
	img := newVol(t, volume.Float32, [4]int{2, 2, 1, 1}, func(x, y, _, _ int) float64 { return float64(1 + x + 2*y) })
	lab := newVol(t, volume.Uint8, [4]int{2, 2, 1, 1}, func(int, int, int, int) float64 { return 1 })
	c, err := NewCase("small", img, lab, Norm{Modality: RGB}, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	s := Sampler{Patch: [3]int{4, 3, 1}}
	pi, pl := make([]float32, 12), make([]int32, 12)
	r := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		s.Sample(r, c, pi, pl)
		var vals []float32
		n1 := 0
		for i, l := range pl {
			if l == 1 {
				vals = append(vals, pi[i])
				n1++
			} else if pi[i] != c.Min[0] {
				t.Fatalf("padding %v, want min %v", pi[i], c.Min[0])
			}
		}
		slices.Sort(vals)
		if n1 != 4 || !slices.Equal(vals, slices.Sorted(slices.Values(c.Image))) {
			t.Fatalf("patch %v labels %v", pi, pl)
		}
	}
}

// Spatial transforms move labels with the image; flips and rotations are permutations.
func TestAugmentSpatial(t *testing.T) {
	p := [3]int{4, 4, 3}
	a := Augment{Flip: [3]bool{true, true, true}, Rot90: true}
	seen := map[string]bool{}
	for seed := range uint64(200) {
		img, lab := make([]float32, 48), make([]int32, 48)
		for i := range lab {
			lab[i], img[i] = int32(i), float32(i)
		}
		a.Apply(rand.New(rand.NewPCG(seed, 0)), p, 1, img, lab)
		for i := range lab {
			if img[i] != float32(lab[i]) {
				t.Fatal("image and labels moved differently")
			}
		}
		if !slices.Equal(slices.Sorted(slices.Values(lab)), func() []int32 {
			s := make([]int32, 48)
			for i := range s {
				s[i] = int32(i)
			}
			return s
		}()) {
			t.Fatal("not a permutation")
		}
		// The first plane's corner values identify the transform.
		seen[string([]byte{byte(lab[0]), byte(lab[3]), byte(lab[12]), byte(lab[15])})] = true
	}
	// 8 rotations/reflections of the square times 2 z-flips give 16 distinct layouts, all
	// reachable (flips of X, Y and rotations generate the dihedral group of order 8).
	if len(seen) != 16 {
		t.Fatalf("%d distinct layouts, want 16", len(seen))
	}
}

func TestAugmentIntensity(t *testing.T) {
	a := Augment{Scale: [2]float64{0.7, 1.4}, Shift: 0.1, Gamma: [2]float64{0.7, 1.5}, Noise: 0.1}
	img := make([]float32, 64)
	for i := range img {
		img[i] = float32(i) / 10
	}
	b := slices.Clone(img)
	a.Apply(rand.New(rand.NewPCG(5, 6)), [3]int{4, 4, 4}, 1, img, nil)
	a.Apply(rand.New(rand.NewPCG(5, 6)), [3]int{4, 4, 4}, 1, b, nil)
	if !slices.Equal(img, b) {
		t.Fatal("same seed, different result")
	}
	for _, v := range img {
		if math.IsNaN(float64(v)) {
			t.Fatal("NaN")
		}
	}
}

type memSource struct {
	c   *Case
	err error
}

func (m memSource) Name() string { return m.c.Name }
func (m memSource) Load() (*Case, error) {
	return m.c, m.err
}

func testCases(t testing.TB, n int, dims [3]int) []Source {
	var src []Source
	for k := range n {
		S := dims[0] * dims[1] * dims[2]
		c := &Case{Name: string(rune('a' + k)), Dims: dims, C: 1, Image: make([]float32, S), Label: make([]int32, S), Min: []float32{0}}
		r := rand.New(rand.NewPCG(uint64(k), 9))
		for i := range c.Image {
			c.Image[i] = float32(r.NormFloat64())
			if c.Image[i] > 2 {
				c.Label[i] = 1
			}
		}
		c.fg = [][]int32{nil, nil}
		for i, l := range c.Label {
			if l == 1 {
				c.fg[1] = append(c.fg[1], int32(i))
			}
		}
		src = append(src, memSource{c: c})
	}
	return src
}

// The same seed gives the same batches whatever the worker count and whether cases are
// resident or streamed.
func TestLoaderDeterministic(t *testing.T) {
	src := testCases(t, 3, [3]int{12, 10, 8})
	cfg := Config{Sampler: Sampler{Patch: [3]int{6, 6, 4}, FgProb: 1.0 / 3}, Augment: &Augment{Flip: [3]bool{true, true, true}, Rot90: true, Noise: 0.1},
		Batch: 3, Channels: 1, Seed: 42, Budget: 1 << 30, Labels: true}
	run := func(workers int, budget int64) ([][]float32, [][]int32, int) {
		c := cfg
		c.Workers, c.Budget = workers, budget
		l, err := NewLoader(c, src)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var imgs [][]float32
		var labs [][]int32
		for k := range 12 {
			b, err := l.Next()
			if err != nil {
				t.Fatal(err)
			}
			if b.Index != k {
				t.Fatalf("batch %d at position %d", b.Index, k)
			}
			imgs, labs = append(imgs, slices.Clone(b.Image)), append(labs, slices.Clone(b.Label))
			l.Release(b)
		}
		return imgs, labs, l.Resident()
	}
	l, err := NewLoader(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	l.Close() // twice is fine
	if _, err := l.Next(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	i1, l1, r1 := run(1, 1<<30)
	i3, l3, r3 := run(3, 0)
	if r1 != 3 || r3 != 0 {
		t.Fatalf("resident %d and %d cases", r1, r3)
	}
	for k := range i1 {
		if !slices.Equal(i1[k], i3[k]) || !slices.Equal(l1[k], l3[k]) {
			t.Fatalf("batch %d differs", k)
		}
	}
	if slices.Equal(i1[0], i1[1]) {
		t.Fatal("batches 0 and 1 equal")
	}
	// A loader started at batch 5 (a resumed run) continues the uninterrupted stream.
	c := cfg
	c.Start, c.Workers = 5, 2
	ls, err := NewLoader(c, src)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	for k := 5; k < len(i1); k++ {
		b, err := ls.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b.Index != k || !slices.Equal(b.Image, i1[k]) || !slices.Equal(b.Label, l1[k]) {
			t.Fatalf("resumed batch %d (index %d) differs from the uninterrupted one", k, b.Index)
		}
		ls.Release(b)
	}
	c.Start = -1
	if _, err := NewLoader(c, src); err == nil {
		t.Error("a negative start was accepted")
	}
}

// TestSampleStack cuts 2.5D stacks of 5 slices from a 6-slice case whose slice z holds the
// constant z+1: every slice of the case is a centre slice, the stack's slices are the
// centre's neighbours in order (the minimum beyond the case), and a forced stack is centred
// on the foreground slice.
func TestSampleStack(t *testing.T) {
	const Z, S = 6, 5
	img := newVol(t, volume.Float32, [4]int{8, 8, Z, 1}, func(_, _, z, _ int) float64 { return float64(z + 1) })
	lab := newVol(t, volume.Uint8, [4]int{8, 8, Z, 1}, func(_, _, z, _ int) float64 {
		if z == Z-1 {
			return 1
		}
		return 0
	})
	c, err := NewCase("stack", img, lab, Norm{Modality: RGB}, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	slice := func(z int) float32 { return c.Image[z*64] } // the case's value on slice z
	// 5×5 in-plane: the warp maps the middle pixel (2, 2) onto a voxel centre exactly, so
	// with or without the warp it holds its slice's value; without it every pixel does.
	const P = 25
	r := rand.New(rand.NewPCG(5, 6))
	for _, warp := range []bool{false, true} {
		s := Sampler{Patch: [3]int{5, 5, S}, Stack: true}
		if warp {
			s.Rotate, s.Zoom, s.PSpatial = 0.3, [2]float64{1.25, 1.25}, 1
		}
		pi, pl := make([]float32, s.Len()), make([]int32, s.Len())
		centres := map[int]bool{}
		for range 400 {
			s.Sample(r, c, pi, pl)
			// The centre slice's value names it.
			zc := -1
			for z := range Z {
				if pi[S/2*P+12] == slice(z) {
					zc = z
				}
			}
			if zc < 0 {
				t.Fatalf("warp %v: centre slice value %v is no slice of the case", warp, pi[S/2*P+12])
			}
			centres[zc] = true
			for j := range S {
				want := c.Min[0]
				if z := zc - S/2 + j; z >= 0 && z < Z {
					want = slice(z)
				}
				for i, v := range pi[j*P : (j+1)*P] {
					if (i == 12 || !warp) && v != want {
						t.Fatalf("warp %v, centre %d: stack slice %d pixel %d holds %v, want %v", warp, zc, j, i, v, want)
					}
				}
			}
		}
		if len(centres) != Z {
			t.Errorf("warp %v: centre slices %v, want all %d", warp, centres, Z)
		}
	}
	s := Sampler{Patch: [3]int{5, 5, S}, Stack: true, FgProb: 1}
	pi, pl := make([]float32, s.Len()), make([]int32, s.Len())
	for range 20 {
		if !s.Sample(r, c, pi, pl) {
			t.Fatal("a stack was not forced with FgProb 1")
		}
		if pi[S/2*P] != slice(Z-1) || pl[S/2*P] != 1 {
			t.Fatalf("forced stack centred on value %v label %d, want slice %d", pi[S/2*P], pl[S/2*P], Z-1)
		}
	}
}

func TestLoaderErrors(t *testing.T) {
	src := testCases(t, 2, [3]int{4, 4, 4})
	cfg := Config{Sampler: Sampler{Patch: [3]int{2, 2, 2}}, Batch: 2, Channels: 1, Labels: true, Budget: 1 << 30}
	bad := []Source{src[0], src[1], memSource{c: &Case{Name: "broken"}, err: errors.New("broken.nii: file truncated")}}
	if _, err := NewLoader(cfg, bad); err == nil || !strings.Contains(err.Error(), "broken.nii") {
		t.Fatalf("bad resident case: %v", err)
	}
	unlabelled := *src[0].(memSource).c
	unlabelled.Label = nil
	if _, err := NewLoader(cfg, []Source{memSource{c: &unlabelled}}); err == nil || !strings.Contains(err.Error(), "no label map") {
		t.Fatalf("unlabelled case: %v", err)
	}
	cfg.Channels = 2
	if _, err := NewLoader(cfg, src); err == nil || !strings.Contains(err.Error(), "channels") {
		t.Fatalf("channel mismatch: %v", err)
	}
	// A streamed case that fails surfaces from Next.
	cfg.Channels = 1
	cfg.Budget = 0
	fail := &failAfter{memSource: src[1].(memSource)}
	fail.n.Store(1)
	l, err := NewLoader(cfg, []Source{src[0], fail})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 10 {
		b, err := l.Next()
		if err != nil {
			if !strings.Contains(err.Error(), "gone") {
				t.Fatal(err)
			}
			return
		}
		l.Release(b)
	}
	t.Fatal("streamed failure not reported")
}

type failAfter struct {
	memSource
	n atomic.Int32
}

func (f *failAfter) Load() (*Case, error) {
	if f.n.Add(-1) < 0 {
		return nil, errors.New("b.nii: gone")
	}
	return f.c, nil
}

// BenchmarkPatchLoader: batches of two 128³ patches from one resident 256³ case, on
// GOMAXPROCS workers: plain crops, crops with flips, rotations and intensity transforms,
// and resampled (rotated and zoomed) patches with the same transforms.
func BenchmarkPatchLoader(b *testing.B) {
	src := testCases(b, 1, [3]int{256, 256, 256})
	aug := &Augment{Flip: [3]bool{true, true, true}, Rot90: true, Scale: [2]float64{0.75, 1.25}, Gamma: [2]float64{0.7, 1.5}}
	for _, c := range []struct {
		name string
		aug  *Augment
		warp bool
	}{{"crop", nil, false}, {"augment", aug, false}, {"warp", aug, true}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := Config{Sampler: Sampler{Patch: [3]int{128, 128, 128}, FgProb: 1.0 / 3}, Augment: c.aug,
				Batch: 2, Channels: 1, Seed: 1, Budget: 1 << 30, Labels: true}
			if c.warp {
				cfg.Rotate, cfg.Zoom, cfg.PSpatial = 0.5, [2]float64{0.8, 1.25}, 1
			}
			l, err := NewLoader(cfg, src)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			for b.Loop() {
				bt, err := l.Next()
				if err != nil {
					b.Fatal(err)
				}
				l.Release(bt)
			}
			b.ReportMetric(float64(b.N*cfg.Batch)/b.Elapsed().Seconds(), "patches/s")
		})
	}
}

// The gamma table matches math.Pow within its documented bound.
func TestGammaLUT(t *testing.T) {
	for _, g := range []float64{0.7, 1, 1.5} {
		s := make([]float32, 10001)
		for i := range s {
			s[i] = -2 + 4*float32(i)/10000
		}
		want := slices.Clone(s)
		gammaLUT(s, -2, 4, g)
		for i, v := range want {
			w := -2 + math.Pow(float64(v+2)/4, g)*4
			if math.Abs(float64(s[i])-w) > 4e-3 { // 1e-3 of the range 4
				t.Fatalf("gamma %v at %v: %v, want %v", g, v, s[i], w)
			}
		}
	}
}

// With no rotation and zoom 1 the warp reproduces the plain crop exactly; a rotation by
// 90° (Rotate π/2 drawn at its extreme is unlikely, so warp is called directly) matches
// the transposed-and-flipped crop.
func TestSampleWarp(t *testing.T) {
	img := newVol(t, volume.Float32, [4]int{9, 9, 3, 1}, func(x, y, z, _ int) float64 { return float64(x + 10*y + 100*z) })
	lab := newVol(t, volume.Uint8, [4]int{9, 9, 3, 1}, func(x, y, _, _ int) float64 { return float64((x + y) % 2) })
	c, err := NewCase("warp", img, lab, Norm{Modality: RGB}, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	s := Sampler{Patch: [3]int{5, 5, 2}}
	n := s.Len()
	a, al, b, bl := make([]float32, n), make([]int32, n), make([]float32, n), make([]int32, n)
	lo := [3]int{2, 3, 1}
	s.crop(c, lo, a, al)
	s.warp(c, lo, 0, 1, b, bl)
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-6 || al[i] != bl[i] {
			t.Fatalf("voxel %d: crop %v/%d, warp %v/%d", i, a[i], al[i], b[i], bl[i])
		}
	}
	// 90° about the patch centre: patch voxel (x, y) samples centre + (-(y-2), x-2).
	s.warp(c, lo, math.Pi/2, 1, b, bl)
	for z := range 2 {
		for y := range 5 {
			for x := range 5 {
				sx, sy, sz := lo[0]+2-(y-2), lo[1]+2+(x-2), lo[2]+z
				want := float32(c.Min[0])
				if sz < 3 && sx >= 0 && sx < 9 && sy >= 0 && sy < 9 {
					want = c.Image[(sz*9+sy)*9+sx]
				}
				if got := b[(z*5+y)*5+x]; math.Abs(float64(got-want)) > 1e-5 {
					t.Fatalf("(%d,%d,%d): %v, want %v", x, y, z, got, want)
				}
			}
		}
	}
	// Through Sample, labels stay within the task's classes and images finite.
	s.Rotate, s.Zoom, s.PSpatial = 0.5, [2]float64{0.8, 1.25}, 1
	r := rand.New(rand.NewPCG(8, 9))
	for range 20 {
		s.Sample(r, c, b, bl)
		for i := range b {
			if math.IsNaN(float64(b[i])) || bl[i] < 0 || bl[i] > 1 {
				t.Fatalf("voxel %d: %v / %d", i, b[i], bl[i])
			}
		}
	}
}
