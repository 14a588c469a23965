package infer_test

import (
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
