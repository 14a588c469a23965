package infer

import (
	"errors"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"amid/plugins/engine/data"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

func TestGaussian(t *testing.T) {
	for _, p := range [][3]int{{8, 6, 5}, {7, 7, 1}} {
		w := Gaussian(p)
		top := float32(0)
		for z := range p[2] {
			for y := range p[1] {
				for x := range p[0] {
					v := w[(z*p[1]+y)*p[0]+x]
					m := w[((p[2]-1-z)*p[1]+p[1]-1-y)*p[0]+p[0]-1-x]
					if v != m || !(v > 0) {
						t.Fatalf("patch %v: weight %v at (%d,%d,%d), mirror %v", p, v, x, y, z, m)
					}
					top = max(top, v)
				}
			}
		}
		if top != 1 {
			t.Fatalf("patch %v: maximum %v", p, top)
		}
	}
	// Odd patch 7: centre 3, σ = 7/8; one voxel off centre exp(-1/(2·(7/8)²)) = exp(-32/49).
	w := Gaussian([3]int{7, 1, 1})
	if want := math.Exp(-32.0 / 49); math.Abs(float64(w[4])-want) > 1e-7 {
		t.Fatalf("w[4] = %v, want %v", w[4], want)
	}
}

func TestSteps(t *testing.T) {
	// nnU-Net: n 100, p 40: ceil(60/20)+1 = 4 windows, step 20. n 90: ceil(50/20)+1 = 4,
	// step 50/3 → 0, 16.67, 33.33, 50 rounded.
	for _, c := range []struct {
		n, p int
		want []int
	}{{100, 40, []int{0, 20, 40, 60}}, {90, 40, []int{0, 17, 33, 50}}, {40, 40, []int{0}}, {30, 40, []int{-5}}, {3, 1, []int{0, 1, 2}}} {
		if got := Steps(c.n, c.p, 0.5); !slices.Equal(got, c.want) {
			t.Errorf("Steps(%d, %d) = %v, want %v", c.n, c.p, got, c.want)
		}
	}
}

// A predictor returning a constant per class gives exactly that constant everywhere,
// with and without mirroring, also when the image is smaller than the patch.
func TestWindowConstant(t *testing.T) {
	consts := []float32{0.3, 0.7, 1.0 / 3}
	pred := func(_, out []float32) {
		n := len(out) / len(consts)
		for k, c := range consts {
			for i := range n {
				out[k*n+i] = c
			}
		}
	}
	for _, dims := range [][3]int{{13, 11, 9}, {5, 20, 3}} {
		for _, mirror := range []bool{false, true} {
			img := make([]float32, 2*dims[0]*dims[1]*dims[2])
			prob, err := Window(img, dims, Options{Patch: [3]int{6, 8, 4}, Channels: 2, Classes: 3, Mirror: mirror}, pred)
			if err != nil {
				t.Fatal(err)
			}
			N := dims[0] * dims[1] * dims[2]
			for i, v := range prob {
				if v != consts[i/N] {
					t.Fatalf("dims %v mirror %v: voxel %d class %d = %v", dims, mirror, i%N, i/N, v)
				}
			}
		}
	}
}

// A predictor that echoes its input returns the image exactly wherever windows overlap
// (a weighted mean of equal values); with mirroring too, since each flip is undone.
func TestWindowEcho(t *testing.T) {
	dims := [3]int{10, 9, 7}
	N := dims[0] * dims[1] * dims[2]
	img := make([]float32, N)
	for i := range img {
		img[i] = float32(i % 17)
	}
	echo := func(in, out []float32) { copy(out, in) }
	for _, mirror := range []bool{false, true} {
		prob, err := Window(img, dims, Options{Patch: [3]int{4, 4, 4}, Channels: 1, Classes: 1, Mirror: mirror}, echo)
		if err != nil {
			t.Fatal(err)
		}
		for i := range img {
			if math.Abs(float64(prob[i]-img[i])) > 1e-5 {
				t.Fatalf("mirror %v voxel %d: %v, want %v", mirror, i, prob[i], img[i])
			}
		}
	}
	// Mirroring flips each output back: a predictor that ignores its input and outputs the
	// patch-local x gives x unmirrored; mirrored, the flipped pass is flipped back to 3-x,
	// so the mean is 1.5 everywhere.
	dims = [3]int{4, 1, 1}
	xs := func(_, out []float32) {
		for i := range out {
			out[i] = float32(i)
		}
	}
	a, _ := Window(make([]float32, 4), dims, Options{Patch: [3]int{4, 1, 1}, Channels: 1, Classes: 1}, xs)
	b, _ := Window(make([]float32, 4), dims, Options{Patch: [3]int{4, 1, 1}, Channels: 1, Classes: 1, Mirror: true}, xs)
	for i := range 4 {
		if a[i] != float32(i) || b[i] != 1.5 {
			t.Fatalf("plain %v, mirrored %v", a, b)
		}
	}
}

// TestWindowStacked runs a 2.5D "network" that echoes channel 1's stack of 3 slices as 3
// classes: class k at slice z is channel 1 at slice z−1+k, or channel 1's minimum beyond
// the volume.
func TestWindowStacked(t *testing.T) {
	dims := [3]int{6, 5, 4}
	const C, S = 2, 3
	N, XY := dims[0]*dims[1]*dims[2], dims[0]*dims[1]
	img := make([]float32, C*N)
	for i := range img {
		img[i] = float32(i%23) - 3
	}
	low := float32(math.Inf(1))
	for _, v := range img[N:] {
		low = min(low, v)
	}
	echo := func(in, out []float32) { copy(out, in[len(out):]) } // channel 1: planes S…2S−1, after S planes of len(out)/S
	for _, mirror := range []bool{false, true} {
		prob, err := Window(img, dims, Options{Patch: [3]int{4, 4, 1}, Channels: C, Classes: S, Slices: S, Mirror: mirror}, echo)
		if err != nil {
			t.Fatal(err)
		}
		for k := range S {
			for z := range dims[2] {
				for i := range XY {
					want := low
					if sz := z - 1 + k; sz >= 0 && sz < dims[2] {
						want = img[N+sz*XY+i]
					}
					if got := prob[k*N+z*XY+i]; math.Abs(float64(got-want)) > 1e-5 {
						t.Fatalf("mirror %v, class %d slice %d pixel %d: %v, want %v", mirror, k, z, i, got, want)
					}
				}
			}
		}
	}
	if _, err := Window(img, dims, Options{Patch: [3]int{4, 4, 2}, Channels: C, Classes: S, Slices: S}, echo); err == nil {
		t.Error("a 2.5D window with a 3D patch: no error")
	}
}

// TestWindowBatch predicts with 1 and with 3 patches per call and gets the same result
// bit for bit: in 3D with and without mirroring (8 flips per window, so batches straddle
// windows), and in 2.5D (batches straddle slices). The predictor, exact per patch, weighs
// its input by the class and adds the voxel's place in the patch, so that misplaced
// patches or flips show. The last call's padding patches are zero and their outputs,
// made NaN, are ignored.
func TestWindowBatch(t *testing.T) {
	const C, K, B = 2, 3, 3
	for _, tc := range []struct {
		name   string
		dims   [3]int
		opt    Options
		planes int // planes of a patch the predictor reads: C, or C·Slices in 2.5D
	}{
		{"3d", [3]int{13, 11, 9}, Options{Patch: [3]int{6, 8, 4}, Channels: C, Classes: K}, C},
		{"3d-mirror", [3]int{13, 11, 9}, Options{Patch: [3]int{6, 8, 4}, Channels: C, Classes: K, Mirror: true}, C},
		{"2.5d-mirror", [3]int{9, 9, 5}, Options{Patch: [3]int{4, 4, 1}, Channels: C, Classes: K, Slices: 3, Mirror: true}, 3 * C},
	} {
		PN := tc.opt.Patch[0] * tc.opt.Patch[1] * tc.opt.Patch[2]
		N := tc.dims[0] * tc.dims[1] * tc.dims[2]
		img := make([]float32, C*N)
		for i := range img {
			img[i] = float32(i%29)/7 - 1
		}
		one := func(in, out []float32) {
			for k := range K {
				for i := range PN {
					out[k*PN+i] = in[(k%tc.planes)*PN+i]*float32(k+1) + float32(i%5)
				}
			}
		}
		calls := 0
		single := func(in, out []float32) {
			if len(in) != tc.planes*PN || len(out) != K*PN {
				t.Fatalf("%s: batch 1 called with %d and %d values", tc.name, len(in), len(out))
			}
			calls++
			one(in, out)
		}
		want, err := Window(img, tc.dims, tc.opt, single)
		if err != nil {
			t.Fatal(err)
		}
		patches := calls
		calls = 0
		batched := func(in, out []float32) {
			if len(in) != B*tc.planes*PN || len(out) != B*K*PN {
				t.Fatalf("%s: batch %d called with %d and %d values", tc.name, B, len(in), len(out))
			}
			for j := range B {
				if calls*B+j < patches {
					one(in[j*tc.planes*PN:(j+1)*tc.planes*PN], out[j*K*PN:(j+1)*K*PN])
					continue
				}
				if slices.ContainsFunc(in[j*tc.planes*PN:(j+1)*tc.planes*PN], func(v float32) bool { return v != 0 }) {
					t.Fatalf("%s: padding patch %d of the last call is not zero", tc.name, j)
				}
				for i := range K * PN {
					out[j*K*PN+i] = float32(math.NaN())
				}
			}
			calls++
		}
		opt := tc.opt
		opt.Batch = B
		got, err := Window(img, tc.dims, opt, batched)
		if err != nil {
			t.Fatal(err)
		}
		if wantCalls := (patches + B - 1) / B; calls != wantCalls {
			t.Errorf("%s: %d calls of batch %d for %d patches, want %d", tc.name, calls, B, patches, wantCalls)
		}
		if patches%B == 0 {
			t.Errorf("%s: %d patches fill every batch of %d: the padding is not tested", tc.name, patches, B)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, want %d", tc.name, len(got), len(want))
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: value %d is %v with batch %d, %v with batch 1", tc.name, i, got[i], B, want[i])
			}
		}
	}
	if _, err := Window(make([]float32, 4), [3]int{2, 2, 1}, Options{Patch: [3]int{2, 2, 1}, Channels: 1, Classes: 1, Batch: -1}, func(_, _ []float32) {}); err == nil {
		t.Error("batch -1: no error")
	}
}

func TestWindowErrors(t *testing.T) {
	if _, err := Window(make([]float32, 5), [3]int{2, 2, 1}, Options{Patch: [3]int{2, 2, 1}, Channels: 1, Classes: 1}, func(_, _ []float32) {}); err == nil {
		t.Fatal("wrong image length: no error")
	}
	if _, err := Window(make([]float32, 4), [3]int{2, 2, 1}, Options{Patch: [3]int{2, 0, 1}, Channels: 1, Classes: 1}, func(_, _ []float32) {}); err == nil {
		t.Fatal("zero patch: no error")
	}
	// 1024³ voxels × 3 classes × 4 bytes = 12 GiB of result, over volume.MaxBytes (8 GiB).
	big := [3]int{1024, 1024, 1024}
	if _, err := Window(nil, big, Options{Patch: [3]int{2, 2, 2}, Channels: 1, Classes: 3}, nil); !errors.Is(err, volume.ErrTooLarge) {
		t.Fatalf("12 GiB of result: %v", err)
	}
	// The sums hold a band of the patch's planes: 1024² × 1024 planes × 2 classes × 8 bytes
	// = 16 GiB, refused even when the result goes to a sink.
	sink := func(int, []float32) {}
	if err := WindowTo(nil, big, Options{Patch: [3]int{2, 2, 1024}, Channels: 1, Classes: 2}, nil, sink); !errors.Is(err, volume.ErrTooLarge) {
		t.Fatalf("16 GiB of sums: %v", err)
	}
}

func TestArgmaxToVolume(t *testing.T) {
	// Two classes over three voxels; voxel 1 is a tie and goes to class 0.
	lab := Argmax([]float32{0.9, 0.5, 0.2, 0.1, 0.5, 0.8}, 2)
	if !slices.Equal(lab, []int32{0, 0, 1}) {
		t.Fatalf("argmax %v", lab)
	}
	ref, _ := volume.New(volume.Float32, [4]int{3, 1, 1, 1})
	ref.Spacing, ref.Origin = [3]float64{0.7, 0.8, 2.5}, [3]float64{-100, 20, 3}
	ref.Direction = [9]float64{-1, 0, 0, 0, -1, 0, 0, 0, 1}
	v, err := ToVolume(ref, lab, []int{0, 300})
	if err != nil {
		t.Fatal(err)
	}
	if v.DType() != volume.Int16 || !slices.Equal(v.Data.([]int16), []int16{0, 0, 300}) || !volume.SameGrid(v, ref, 0) {
		t.Fatalf("%v %v %+v", v.DType(), v.Data, v)
	}
	if v, _ = ToVolume(ref, lab, []int{0, 5}); v.DType() != volume.Uint8 {
		t.Fatalf("type %v", v.DType())
	}
	if _, err := ToVolume(ref, []int32{0, 2, 1}, []int{0, 5}); err == nil {
		t.Fatal("class without mapping: no error")
	}
	if _, err := ToVolume(ref, lab[:2], []int{0, 5}); !errors.Is(err, volume.ErrGeometry) {
		t.Fatalf("short map: %v", err)
	}
}

// grid builds an X·Y·Z map from z-slices of rows drawn with '.', '1', '2'.
func grid(t *testing.T, slices ...[]string) ([]int32, [3]int) {
	t.Helper()
	dims := [3]int{len(slices[0][0]), len(slices[0]), len(slices)}
	var out []int32
	for _, s := range slices {
		for _, row := range s {
			for _, c := range row {
				if c == '.' {
					out = append(out, 0)
				} else {
					out = append(out, c-'0')
				}
			}
		}
	}
	return out, dims
}

func TestKeepLargestRemoveSmall(t *testing.T) {
	// Class 1: a 4-voxel block, a 2-voxel pair diagonal to nothing, and a single voxel that
	// touches the block only by a corner across slices (26-connected: part of the block).
	// Class 2: components of 3 and 1 voxels.
	lab, dims := grid(t,
		[]string{
			"11...",
			"11..1",
			".....",
			"22.2.",
			"2....",
		},
		[]string{
			"....1",
			"..1..",
			".....",
			".....",
			".....",
		})
	want, _ := grid(t,
		[]string{
			"11...",
			"11...",
			".....",
			"22...",
			"2....",
		},
		[]string{
			".....",
			"..1..",
			".....",
			".....",
			".....",
		})
	got := slices.Clone(lab)
	KeepLargest(got, dims)
	if !slices.Equal(got, want) {
		t.Fatalf("KeepLargest\n got %v\nwant %v", got, want)
	}
	// Components under 3 voxels go: the class-1 pair and the class-2 single.
	want, _ = grid(t,
		[]string{
			"11...",
			"11...",
			".....",
			"22...",
			"2....",
		},
		[]string{
			".....",
			"..1..",
			".....",
			".....",
			".....",
		})
	got = slices.Clone(lab)
	RemoveSmall(got, dims, 3)
	if !slices.Equal(got, want) {
		t.Fatalf("RemoveSmall\n got %v\nwant %v", got, want)
	}
	got = slices.Clone(lab)
	RemoveSmall(got, dims, 1)
	if !slices.Equal(got, lab) {
		t.Fatal("RemoveSmall(1) changed the map")
	}
}

func TestFillHoles(t *testing.T) {
	// Middle slice of three: a one-voxel hole inside class 1 (closed above and below by the
	// other slices) and a background run inside class 2 that reaches the border at x 7,
	// so it is not a hole.
	ring := []string{
		"........",
		".111222.",
		".111222.",
		".111222.",
		"........",
	}
	lab, dims := grid(t, ring, []string{
		"........",
		".111222.",
		".1.12...",
		".111222.",
		"........",
	}, ring)
	want, _ := grid(t, ring, []string{
		"........",
		".111222.",
		".1112...",
		".111222.",
		"........",
	}, ring)
	got := slices.Clone(lab)
	FillHoles(got, dims)
	if !slices.Equal(got, want) {
		t.Fatalf("FillHoles\n got %v\nwant %v", got, want)
	}
	// A hole between classes 1 (4 face neighbours) and 2 (2) takes class 1.
	lab, dims = grid(t, []string{
		"...",
		".1.",
		"...",
	}, []string{
		".2.",
		"1.1",
		".1.",
	}, []string{
		"...",
		".2.",
		"...",
	})
	FillHoles(lab, dims)
	if lab[13] != 1 {
		t.Fatalf("hole filled with %d, want 1", lab[13])
	}
}

func BenchmarkSlidingWindow(b *testing.B) {
	dims, P := [3]int{128, 128, 128}, [3]int{64, 64, 64}
	N := dims[0] * dims[1] * dims[2]
	img := make([]float32, N)
	pred := func(in, out []float32) { // 3 classes, a cheap stand-in for the network
		n := len(in)
		copy(out[:n], in)
		copy(out[n:2*n], in)
		copy(out[2*n:], in)
	}
	for b.Loop() {
		if _, err := Window(img, dims, Options{Patch: P, Channels: 1, Classes: 3}, pred); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*N)/b.Elapsed().Seconds()/1e6, "Mvoxel/s")
}

// Segment on a resampled grid: a "network" that thresholds its (MR-normalised) input at 0
// into two classes gives back, on the image's own grid, the bright half as the task's
// value 7, with the image's geometry.
func TestSegment(t *testing.T) {
	img, _ := volume.New(volume.Int16, [4]int{16, 12, 6, 1})
	img.Spacing, img.Origin = [3]float64{1, 1, 2.5}, [3]float64{3, -2, 40}
	img.Direction = [9]float64{-1, 0, 0, 0, -1, 0, 0, 0, 1}
	for z := range 6 {
		for y := range 12 {
			for x := range 16 {
				v := 100.0
				if x >= 8 {
					v = 300
				}
				img.SetIndex(img.Index(x, y, z, 0), v)
			}
		}
	}
	thr := func(in, out []float32) {
		n := len(in)
		for i, v := range in {
			if v > 0 {
				out[n+i] = 1
			} else {
				out[i] = 1
			}
		}
	}
	m := Model{Options: Options{Patch: [3]int{8, 8, 4}, Channels: 1, Classes: 2, Mirror: true},
		Spacing: [3]float64{2, 2, 2}, Norm: data.Norm{Modality: data.MR}, Mapping: []int{0, 7}, Predict: thr}
	lab, prob, err := Segment(img, m)
	if err != nil {
		t.Fatal(err)
	}
	if !volume.SameGrid(lab, img, 0) || len(prob) != 2*img.NumVoxels() {
		t.Fatalf("grid %+v, %d scores", lab, len(prob))
	}
	// The resampled grid has the edge between its voxels 3 (x 6 mm) and 4 (x 8 mm);
	// interpolating back, image voxels x ≤ 6 are background, x ≥ 8 foreground, and x 7
	// lies halfway (a tie, background).
	for z := range 6 {
		for y := range 12 {
			for x := range 16 {
				want := 0.0
				if x >= 8 {
					want = 7
				}
				if got := lab.At(x, y, z, 0); got != want {
					t.Fatalf("(%d,%d,%d) = %v, want %v", x, y, z, got, want)
				}
			}
		}
	}
	// Written as NIfTI and read back: same grid and values.
	path := filepath.Join(t.TempDir(), "seg.nii.gz")
	if err := imageio.Write(path, lab); err != nil {
		t.Fatal(err)
	}
	back, err := imageio.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !volume.SameGrid(back, img, 1e-5) || !slices.Equal(back.Data.([]uint8), lab.Data.([]uint8)) {
		t.Fatalf("read back %+v", back)
	}
	m.Mapping = []int{0}
	if _, _, err := Segment(img, m); err == nil {
		t.Fatal("short mapping: no error")
	}
}

// TestInstances draws three discs on a 40×30 image, two of them touching and one 2-pixel
// speck; the classes of the instance map turned back into instances give the same objects
// (as a permutation of ids), the speck lost when seeds need 3 voxels and kept when they
// need 1, and foreground with no seed stays 0.
func TestInstances(t *testing.T) {
	dims := [3]int{40, 30, 1}
	ids := make([]int32, 40*30)
	disc := func(cx, cy, r float64, id int32) {
		for y := range 30 {
			for x := range 40 {
				if math.Hypot(float64(x)-cx, float64(y)-cy) <= r {
					ids[y*40+x] = id
				}
			}
		}
	}
	disc(10, 10, 6, 7)
	disc(21, 10, 5.5, 3) // touches disc 7 along x = 15..16
	disc(28, 22, 4, 9)
	ids[2*40+35], ids[2*40+36] = 5, 5 // the speck: all boundary, no interior
	cls := InstanceClasses(ids, dims)
	if cls[10*40+10] != 1 || cls[10*40+4] != 2 || cls[0] != 0 || cls[2*40+35] != 2 {
		t.Fatalf("classes at the centre, rim, corner and speck: %d %d %d %d", cls[10*40+10], cls[10*40+4], cls[0], cls[2*40+35])
	}
	got := Instances(cls, dims, 3)
	perm := map[int32]int32{}
	for i, g := range got {
		want := ids[i]
		if want == 5 {
			want = 0 // the speck has no seed
		}
		if (g == 0) != (want == 0) {
			t.Fatalf("pixel %d: instance %d, want object %d", i, g, ids[i])
		}
		if g == 0 {
			continue
		}
		if p, ok := perm[g]; ok && p != want {
			t.Fatalf("instance %d covers objects %d and %d", g, p, want)
		}
		perm[g] = want
	}
	if len(perm) != 3 {
		t.Fatalf("%d instances, want 3: %v", len(perm), perm)
	}
	// A seed of one voxel: a single interior pixel grows through its boundary ring.
	cls = make([]int32, 9)
	for i := range cls {
		cls[i] = 2
	}
	cls[4] = 1
	if got := Instances(cls, [3]int{3, 3, 1}, 1); !slices.Equal(got, []int32{1, 1, 1, 1, 1, 1, 1, 1, 1}) {
		t.Fatalf("ring around one seed: %v", got)
	}
	if got := Instances(cls, [3]int{3, 3, 1}, 2); !slices.Equal(got, make([]int32, 9)) {
		t.Fatalf("ring around a seed too small: %v", got)
	}
}
