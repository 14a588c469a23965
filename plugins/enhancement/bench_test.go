package main

import (
	"context"
	"math/rand/v2"
	"testing"

	"amid/plugins/engine"
	"amid/plugins/plugintest"
	"amid/plugins/protocol"
)

// benchSpec describes the benchmarked model for the PyTorch side of
// `make bench-plugins-models` (.ci/bench_plugins_models.py builds the same from it).
type benchSpec struct {
	Plugin  string                 `json:"plugin"`
	Model   string                 `json:"model"`
	Lane    string                 `json:"lane"`
	Batch   int                    `json:"batch"`
	Patch   [3]int                 `json:"patch"` // D, H, W
	In      int                    `json:"in"`
	Out     int                    `json:"out"`
	Widths  []int                  `json:"widths"`
	Kernels [][3]int               `json:"kernels"`
	Pools   [][3]int               `json:"pools"`
	MaxPool bool                   `json:"maxpool"`
	Norm    string                 `json:"norm"`
	Slope   float64                `json:"slope"`
	Loss    engine.ImageLossConfig `json:"loss"`
	LR      float64                `json:"lr"`
	Decay   float64                `json:"weight_decay"`
	Clip    float64                `json:"clip"`
}

// BenchmarkTrainStep times one training step (forward, backward, gradient clipping,
// AdamW) of the plugin's default model: the base lane Plan proposes for USenhance-like
// images (median 480×640), reported by plugintest.BenchTrainStep.
func BenchmarkTrainStep(b *testing.B) {
	r, err := enh{}.Plan(context.Background(), &protocol.PlanRequest{Fingerprint: fingerprintJSON(9, 480, 640), Task: task()})
	if err != nil {
		b.Fatal(err)
	}
	c, err := parseConfig(r.Candidates[0].Config)
	if err != nil {
		b.Fatal(err)
	}
	be := engine.NewCPU(0)
	u, err := engine.BuildResUNet(be, c.net(), c.Batch, c.patch3(), 1, c.loss())
	if err != nil {
		b.Fatal(err)
	}
	st := len(c.Widths)
	spec := benchSpec{Plugin: "enhancement", Model: "resunet", Lane: c.Lane, Batch: c.Batch, Patch: c.patch3(),
		In: 1, Out: 1, Widths: c.Widths, MaxPool: true, Norm: "instance", Slope: 0.01, Loss: c.loss(),
		LR: c.LR, Decay: c.Decay, Clip: clipNorm}
	for s := range st {
		spec.Kernels = append(spec.Kernels, [3]int{1, 3, 3})
		if s > 0 {
			spec.Pools = append(spec.Pools, [3]int{1, 2, 2})
		}
	}
	rng := rand.New(rand.NewPCG(2, 2))
	tgt := make([]float32, len(u.Input.Data))
	for i := range tgt {
		tgt[i] = float32(rng.Float64())
		u.Input.Data[i] = min(1, tgt[i]*float32(rng.ExpFloat64()))
	}
	if err := u.Loss.SetTarget(tgt); err != nil {
		b.Fatal(err)
	}
	opt := engine.NewAdamW(be, u.Params(), c.LR, c.Decay)
	tr, err := engine.NewTrainer(u.Net, opt, engine.TrainOptions{Clip: clipNorm})
	if err != nil {
		b.Fatal(err)
	}
	step := func() { // the training loop's step
		if _, err := tr.Step(c.LR); err != nil {
			b.Fatal(err)
		}
	}
	plugintest.BenchTrainStep(b, c.Batch, spec, step)
}
