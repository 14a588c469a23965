package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"amid/plugins/engine"
	"amid/plugins/internal/cnn"
	"amid/plugins/plugintest"
	"amid/plugins/protocol"
)

// BenchmarkTrainStep times one training step (forward, backward, gradient clipping,
// AdamW) of the plugin's learned lane with one head per attribute, as Plan proposes it for
// TopCoW-like volumes (median 120×200×200, eight binary edge attributes), and reports it
// with plugintest.BenchTrainStep for `make bench-plugins-models`.
func BenchmarkTrainStep(b *testing.B) {
	fp := `{"cases":[`
	for i := range 9 {
		if i > 0 {
			fp += ","
		}
		fp += `{"dims":[120,200,200]}`
	}
	fp += "]}"
	sp := `{"kind":"classification","dims":3,"attributes":[`
	for i := range 8 {
		if i > 0 {
			sp += ","
		}
		sp += fmt.Sprintf(`{"name":"edge%d","classes":["absent","present"],"group":"%s"}`, i, []string{"anterior", "posterior"}[i/4])
	}
	sp += "]}"
	r, err := cls{}.Plan(context.Background(), &protocol.PlanRequest{Fingerprint: []byte(fp), Task: protocol.Task{Kind: "classification", Dims: 3, Spec: []byte(sp)}})
	if err != nil {
		b.Fatal(err)
	}
	var cfg []byte
	for _, c := range r.Candidates {
		if c.Name == "cnn-attributes" {
			cfg = c.Config
		}
	}
	c, err := parseConfig(cfg, 3)
	if err != nil {
		b.Fatal(err)
	}
	heads := []int{2, 2, 2, 2, 2, 2, 2, 2}
	be := engine.NewCPU(0)
	arch := c.Arch(1, 16)
	var loss *engine.HeadLoss
	m, err := cnn.Build(be, arch, c.Batch, c.Grid, 1, func(bd *engine.Builder, out *engine.Tensor) { loss = bd.HeadLoss(out, heads, nil) })
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	for i := range m.Input.Data {
		m.Input.Data[i] = float32(rng.NormFloat64())
	}
	lab := make([]int32, c.Batch*len(heads))
	for i := range lab {
		lab[i] = int32(rng.IntN(2))
	}
	if err := loss.SetLabels(lab); err != nil {
		b.Fatal(err)
	}
	opt := engine.NewAdamW(be, m.Params(), c.LR, c.Decay)
	spec := map[string]any{"plugin": "classification", "model": "cnn", "lane": "cnn-attributes", "batch": c.Batch, "patch": c.Grid,
		"in": 1, "out": 16, "widths": c.Widths, "convs": c.Convs, "norm": c.Norm, "pool": c.Pool, "slope": arch.Slope,
		"loss": "heads", "heads": heads, "lr": c.LR, "weight_decay": c.Decay, "clip": cnn.Clip}
	tr, err := engine.NewTrainer(m.Net, opt, engine.TrainOptions{Clip: cnn.Clip})
	if err != nil {
		b.Fatal(err)
	}
	plugintest.BenchTrainStep(b, c.Batch, spec, func() { // the training loop's step
		if _, err := tr.Step(c.LR); err != nil {
			b.Fatal(err)
		}
	})
}
