package main

import (
	"context"
	"math/rand/v2"
	"testing"

	"amid/plugins/engine"
	"amid/plugins/plugintest"
	"amid/plugins/protocol"
)

// BenchmarkTrainStep times one training step (forward, backward, gradient clipping,
// AdamW) of the plugin's default 2D model: the 2d lane Plan proposes for 40 single-channel
// 256×256 images with two classes, reported by plugintest.BenchTrainStep.
func BenchmarkTrainStep(b *testing.B) {
	fp := `{"modality":"MR","channels":1,"classes":2,"cases":[`
	for i := range 40 {
		if i > 0 {
			fp += ","
		}
		fp += `{"dims":[1,256,256],"spacing":[1,1,1]}`
	}
	fp += "]}"
	r, err := seg{}.Plan(context.Background(), &protocol.PlanRequest{Fingerprint: []byte(fp), Task: protocol.Task{Kind: "segmentation", Dims: 2}})
	if err != nil {
		b.Fatal(err)
	}
	c, err := parseConfig(r.Candidates[0].Config)
	if err != nil {
		b.Fatal(err)
	}
	be := engine.NewCPU(0)
	arch := c.net(1)
	u, err := engine.BuildUNet(be, arch, c.Batch, c.Patch, 1)
	if err != nil {
		b.Fatal(err)
	}
	spec := plugintest.ModelSpec{Plugin: "segmentation", Model: "unet", Lane: c.Lane, Batch: c.Batch, Patch: c.Patch,
		In: 1, Out: arch.Classes, Widths: c.Widths, Kernels: c.Kernels, Pools: c.Pools, MaxPool: arch.MaxPool,
		Norm: "instance", Slope: arch.Slope, LR: c.LR, Decay: c.Decay, Clip: clipNorm}
	if len(spec.Kernels) != len(c.Widths) || len(spec.Pools) != len(c.Widths)-1 {
		b.Fatalf("planned kernels %v and pools %v for %d stages", c.Kernels, c.Pools, len(c.Widths))
	}
	rng := rand.New(rand.NewPCG(2, 2))
	for i := range u.Input.Data {
		u.Input.Data[i] = float32(rng.NormFloat64())
	}
	lab := make([]int32, c.Batch*u.Input.Shape.Spatial())
	for i := range lab {
		lab[i] = int32(rng.IntN(arch.Classes))
	}
	if err := u.Loss.SetLabels(lab); err != nil {
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
	b.Logf("lane %s: patch %v batch %d widths %v", c.Lane, c.Patch, c.Batch, c.Widths)
	plugintest.BenchTrainStep(b, c.Batch, spec, step)
}
