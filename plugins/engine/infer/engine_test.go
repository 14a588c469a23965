package infer_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"amid/plugins/engine"
	"amid/plugins/engine/data"
	"amid/plugins/engine/infer"
)

// A small 2D U-Net is trained on loader batches from a case whose label is "image above
// 0.5", then segments a fresh image through Window: the layouts of data, engine and infer
// fit together and the prediction is mostly right.
func TestTrainAndWindow(t *testing.T) {
	const X, Y = 48, 40
	mk := func(seed uint64) *data.Case {
		r := rand.New(rand.NewPCG(seed, 1))
		c := &data.Case{Name: "sign", Dims: [3]int{X, Y, 1}, C: 1, Image: make([]float32, X*Y), Label: make([]int32, X*Y), Min: []float32{0}}
		for i := range c.Image {
			c.Image[i] = float32(r.NormFloat64())
			if c.Image[i] > 0.5 {
				c.Label[i] = 1
			}
		}
		return c
	}
	patch := [3]int{16, 16, 1}
	l, err := data.NewLoader(data.Config{Sampler: data.Sampler{Patch: patch}, Augment: &data.Augment{Flip: [3]bool{true, true}},
		Batch: 2, Channels: 1, Seed: 3, Workers: 1, Budget: 1 << 20, Labels: true}, []data.Source{caseSource{mk(1)}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	be := engine.NewCPU(2)
	u, err := engine.BuildUNet(be, engine.UNetConfig{In: 1, Classes: 2, Widths: []int{8, 16}, Convs: 2, Slope: 0.01}, 2, [3]int{1, 16, 16}, 1)
	if err != nil {
		t.Fatal(err)
	}
	opt := engine.NewAdamW(be, u.Params(), 1e-2, 1e-4)
	for range 60 {
		b, err := l.Next()
		if err != nil {
			t.Fatal(err)
		}
		copy(u.Input.Data, b.Image)
		if err := u.Loss.SetLabels(b.Label); err != nil {
			t.Fatal(err)
		}
		l.Release(b)
		u.Forward()
		u.Backward()
		engine.ClipGradNorm(u.Params(), 12)
		opt.Step()
	}
	n := patch[0] * patch[1]
	pred := func(in, out []float32) { // sample 0 of the batch; softmax probabilities out
		copy(u.Input.Data[:n], in)
		u.Forward()
		copy(out, u.Loss.Prob()[:2*n])
	}
	test := mk(2)
	prob, err := infer.Window(test.Image, test.Dims, infer.Options{Patch: patch, Channels: 1, Classes: 2, Mirror: true}, pred)
	if err != nil {
		t.Fatal(err)
	}
	// The whole batch of 2 per call: each patch's probabilities as one at a time, up to
	// float rounding (1e-6 of probabilities in [0, 1]).
	both := func(in, out []float32) {
		copy(u.Input.Data, in)
		u.Forward()
		copy(out, u.Loss.Prob())
	}
	prob2, err := infer.Window(test.Image, test.Dims, infer.Options{Patch: patch, Channels: 1, Classes: 2, Mirror: true, Batch: 2}, both)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range prob {
		if math.Abs(float64(prob2[i]-p)) > 1e-6 {
			t.Fatalf("value %d: %v with batch 2, %v with batch 1", i, prob2[i], p)
		}
	}
	lab := infer.Argmax(prob, 2)
	right := 0
	for i, v := range lab {
		if v == test.Label[i] {
			right++
		}
	}
	// A threshold is learnable per pixel; a constant guess would be right on about 69 %
	// (P(N(0,1) ≤ 0.5) = 0.691), so 90 % shows the net learned the rule.
	acc := float64(right) / float64(len(lab))
	t.Logf("accuracy %.3f", acc)
	if acc < 0.9 {
		t.Fatalf("accuracy %.3f", acc)
	}
}

type caseSource struct{ c *data.Case }

func (s caseSource) Name() string              { return s.c.Name }
func (s caseSource) Load() (*data.Case, error) { return s.c, nil }

// unetWindow builds a 3D U-Net (seed 1, inference mode) of batch n on the CPU backend be
// and returns Window's predictor for it: n patches per call, softmax probabilities out.
func unetWindow(tb testing.TB, be engine.Backend, cfg engine.UNetConfig, n int, patch [3]int) infer.Predict {
	tb.Helper()
	u, err := engine.BuildUNet(be, cfg, n, patch, 1)
	if err != nil {
		tb.Fatal(err)
	}
	u.SetTraining(false)
	return func(in, out []float32) {
		copy(u.Input.Data, in)
		u.Forward()
		copy(out, u.Loss.Prob())
	}
}

// A 3D U-Net of batch 1 (each patch split over the 2 workers) and the same network of
// batch 2 (a patch per worker, Options.Batch 2) predict the same probabilities up to
// float rounding: 3 windows, so that the last call of 2 is padded, and mirrored (8 flips
// of each: 24 patches).
func TestWindowBatchUNet(t *testing.T) {
	be := engine.NewCPU(2)
	cfg := engine.UNetConfig{In: 1, Classes: 3, Widths: []int{4, 8}, Convs: 2, MaxPool: true, Slope: 0.01}
	patch := [3]int{8, 8, 8} // D, H, W = Z, Y, X
	dims := [3]int{16, 8, 8}
	img := make([]float32, dims[0]*dims[1]*dims[2])
	r := rand.New(rand.NewPCG(4, 1))
	for i := range img {
		img[i] = float32(r.NormFloat64())
	}
	one, two := unetWindow(t, be, cfg, 1, patch), unetWindow(t, be, cfg, 2, patch)
	for _, mirror := range []bool{false, true} {
		opt := infer.Options{Patch: [3]int{patch[2], patch[1], patch[0]}, Channels: 1, Classes: 3, Mirror: mirror}
		want, err := infer.Window(img, dims, opt, one)
		if err != nil {
			t.Fatal(err)
		}
		opt.Batch = 2
		got, err := infer.Window(img, dims, opt, two)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i, p := range want {
			worst = max(worst, math.Abs(float64(got[i]-p)))
		}
		// Both paths sum the same products in different orders: float32 rounding of
		// probabilities in [0, 1], far below 1e-5.
		t.Logf("mirror %v: largest difference %.3g", mirror, worst)
		if worst > 1e-5 {
			t.Fatalf("mirror %v: batch 2 differs from batch 1 by %g", mirror, worst)
		}
	}
}

// BenchmarkWindowUNet predicts one 96×96×64 case with 64³ windows (4 of them) of the
// reference 3D U-Net (widths 16–128), mirrored (32 patches) and not, one patch per call
// (split over the workers) and one per worker per call, side by side.
func BenchmarkWindowUNet(b *testing.B) {
	be := engine.NewCPU(0)
	cfg := engine.UNetConfig{In: 1, Classes: 2, Widths: []int{16, 32, 64, 128}, Convs: 2, MaxPool: true, Slope: 0.01}
	patch := [3]int{64, 64, 64}
	dims := [3]int{96, 96, 64}
	img := make([]float32, dims[0]*dims[1]*dims[2])
	r := rand.New(rand.NewPCG(5, 1))
	for i := range img {
		img[i] = float32(r.NormFloat64())
	}
	for _, mirror := range []bool{false, true} {
		for _, n := range []int{1, be.Workers()} {
			b.Run(fmt.Sprintf("mirror=%v/batch=%d", mirror, n), func(b *testing.B) {
				pred := unetWindow(b, be, cfg, n, patch)
				opt := infer.Options{Patch: patch, Channels: 1, Classes: 2, Mirror: mirror, Batch: n}
				// One pass first, so that the network's memory is touched outside the timing.
				pred(make([]float32, n*64*64*64), make([]float32, n*2*64*64*64))
				for b.Loop() {
					if _, err := infer.Window(img, dims, opt, pred); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/case")
			})
		}
	}
}
