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
// `make bench-plugins-models` (.ci/bench_plugins_models.py builds the same from it): the
// U-Net and the image loss.
type benchSpec struct {
	plugintest.ModelSpec
	Loss engine.ImageLossConfig `json:"loss"`
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
	spec := benchSpec{ModelSpec: plugintest.ModelSpec{Plugin: "enhancement", Model: "resunet", Lane: c.Lane, Batch: c.Batch, Patch: c.patch3(),
		In: 1, Out: 1, Widths: c.Widths, MaxPool: true, Norm: "instance", Slope: 0.01,
		LR: c.LR, Decay: c.Decay, Clip: clipNorm}, Loss: c.loss()}
	spec.Planar() // BuildResUNet's defaults for a 2D patch
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
