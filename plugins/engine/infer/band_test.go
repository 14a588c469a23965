package infer

import (
	"math"
	"slices"
	"testing"

	"amid/plugins/engine/data"
	"amid/viewer/volume"
)

// wholeImage is the sliding window as it was before the sums held a band of planes: float64
// sums of the whole image, every window's flips added in order, divided at the end. Window
// must give its values bit for bit.
func wholeImage(img []float32, dims [3]int, opt Options, pred Predict) []float32 {
	r, err := newRunner(opt, nil)
	if err != nil {
		panic(err)
	}
	P, C, K, PN := r.P, r.C, r.K, r.PN
	N := dims[0] * dims[1] * dims[2]
	num, den := make([]float64, K*N), make([]float64, N)
	in, out, acc := make([]float32, C*PN), make([]float32, K*PN), make([]float64, K*PN)
	var steps [3][]int
	for a := range 3 {
		steps[a] = Steps(dims[a], P[a], r.ov)
	}
	for _, z0 := range steps[2] {
		for _, y0 := range steps[1] {
			for _, x0 := range steps[0] {
				lo := [3]int{x0, y0, z0}
				clear(acc)
				for _, m := range r.flips {
					extract(img, dims, C, lo, P, in)
					flipAxes(in, P, C, m)
					pred(in, out)
					flipAxes(out, P, K, m)
					for i, v := range out {
						acc[i] += float64(v)
					}
				}
				for z := range P[2] {
					for y := range P[1] {
						for x := range P[0] {
							vx, vy, vz := x0+x, y0+y, z0+z
							if vx < 0 || vy < 0 || vz < 0 || vx >= dims[0] || vy >= dims[1] || vz >= dims[2] {
								continue
							}
							p, v := (z*P[1]+y)*P[0]+x, (vz*dims[1]+vy)*dims[0]+vx
							den[v] += float64(r.w[p])
							for k := range K {
								num[k*N+v] += float64(r.w[p]) * (acc[k*PN+p] * r.inv)
							}
						}
					}
				}
			}
		}
	}
	res := make([]float32, K*N)
	for i := range res {
		res[i] = float32(num[i] / den[i%N])
	}
	return res
}

// TestWindowBand: the band of sums gives the whole image's sums bit for bit (images taller
// than the patch with uneven steps, as tall, shorter, smaller than the patch; mirrored;
// batched), and WindowTo hands every slice once, in order, each as soon as no later window
// covers it.
func TestWindowBand(t *testing.T) {
	const C, K = 2, 3
	P := [3]int{6, 5, 4}
	for _, dims := range [][3]int{{13, 11, 17}, {9, 7, 4}, {7, 12, 3}, {4, 3, 2}} {
		for _, mirror := range []bool{false, true} {
			for _, batch := range []int{1, 3} {
				opt := Options{Patch: P, Channels: C, Classes: K, Mirror: mirror, Batch: batch}
				N := dims[0] * dims[1] * dims[2]
				img := make([]float32, C*N)
				for i := range img {
					img[i] = float32(math.Sin(float64(i) * 0.37))
				}
				PN := P[0] * P[1] * P[2]
				one := func(in, out []float32) {
					for k := range K {
						for i := range PN {
							out[k*PN+i] = float32(math.Exp(float64(in[(k%C)*PN+i]*float32(k+1)))) + float32(i%7)/9
						}
					}
				}
				want := wholeImage(img, dims, Options{Patch: P, Channels: C, Classes: K, Mirror: mirror}, one)
				calls, first := 0, -1 // predictor calls in all, and before slice 0 was handed
				pred := func(in, out []float32) {
					for j := range batch {
						one(in[j*C*PN:(j+1)*C*PN], out[j*K*PN:(j+1)*K*PN])
					}
					calls++
				}
				XY := dims[0] * dims[1]
				got := make([]float32, K*N)
				var order []int
				sink := func(z int, slice []float32) {
					order = append(order, z)
					if z == 0 {
						first = calls
					}
					for k := range K {
						copy(got[k*N+z*XY:k*N+(z+1)*XY], slice[k*XY:(k+1)*XY])
					}
				}
				if err := WindowTo(img, dims, opt, pred, sink); err != nil {
					t.Fatal(err)
				}
				total := calls
				res, err := Window(img, dims, opt, pred)
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(res[i]) != math.Float32bits(want[i]) {
						t.Fatalf("dims %v mirror %v batch %d: value %d: WindowTo %v, Window %v, whole image %v", dims, mirror, batch, i, got[i], res[i], want[i])
					}
				}
				if !slices.Equal(order, seq(dims[2])) {
					t.Fatalf("dims %v: slices handed in order %v", dims, order)
				}
				// With more than one row of windows along z, slice 0 is handed before the
				// last call.
				if len(Steps(dims[2], P[2], 0.5)) > 1 && first >= total {
					t.Errorf("dims %v mirror %v batch %d: slice 0 handed after the last of %d calls", dims, mirror, batch, total)
				}
			}
		}
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestClassesMatchSegment: Classes gives Segment's classes and Confidence bit for bit,
// streaming the windows (a predictor, a Stream) or from whole scores (Run, a resampled
// image), on the network's grid and resampled, and the 2.5D windows too.
func TestClassesMatchSegment(t *testing.T) {
	img, _ := volume.New(volume.Int16, [4]int{19, 14, 11, 1})
	img.Spacing = [3]float64{1, 1, 2}
	for i := range img.NumVoxels() {
		img.SetIndex(i, float64((i*37)%101+(i/50)%13))
	}
	const K = 4
	pred := func(in, out []float32) { // from the patch's first plane
		n := len(out) / K
		for i, v := range in[:n] {
			for k := range K {
				out[k*n+i] = float32(math.Exp(-math.Abs(float64(v) - float64(k-1))))
			}
		}
	}
	for _, tc := range []struct {
		name    string
		opt     Options
		spacing [3]float64
	}{
		{"3d", Options{Patch: [3]int{8, 6, 4}, Channels: 1, Classes: K, Mirror: true, Batch: 2}, [3]float64{}},
		{"3d-resampled", Options{Patch: [3]int{8, 6, 4}, Channels: 1, Classes: K}, [3]float64{1.5, 1, 1.5}},
		{"2.5d", Options{Patch: [3]int{8, 6, 1}, Channels: 1, Classes: K, Slices: 3}, [3]float64{}},
	} {
		m := Model{Options: tc.opt, Spacing: tc.spacing, Norm: data.Norm{Modality: data.MR}, Mapping: []int{0, 1, 2, 3}, Predict: pred}
		_, prob, err := Segment(img, m)
		if err != nil {
			t.Fatal(err)
		}
		want := Argmax(prob, K)
		wantConf := Confidence(prob, K, want)
		run := m
		run.Predict = nil
		run.Run = func(planes []float32, dims [3]int) ([]float32, error) { return Window(planes, dims, tc.opt, pred) }
		stream := m
		stream.Predict = nil
		stream.Stream = func(planes []float32, dims [3]int, sink Sink) error {
			return WindowTo(planes, dims, tc.opt, pred, sink)
		}
		for name, mm := range map[string]Model{"predict": m, "run": run, "stream": stream} {
			cls, conf, err := Classes(img, mm, true)
			if err != nil {
				t.Fatal(err)
			}
			if plain, c, err := Classes(img, mm, false); err != nil || !slices.Equal(plain, cls) || c != 0 {
				t.Fatalf("%s %s: without confidence: %v, %v", tc.name, name, c, err)
			}
			if !slices.Equal(cls, want) || math.Float64bits(conf) != math.Float64bits(wantConf) {
				t.Fatalf("%s %s: classes differ from Segment's or confidence %v, want %v", tc.name, name, conf, wantConf)
			}
		}
		if _, sp, err := Segment(img, stream); err != nil || !slices.Equal(sp, prob) {
			t.Fatalf("%s: Segment through Stream: %v", tc.name, err)
		}
		if c := slices.Max(want); c == 0 {
			t.Fatalf("%s: every voxel is background: the test shows nothing", tc.name)
		}
	}
}
