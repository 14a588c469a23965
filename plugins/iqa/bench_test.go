package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"amid/plugins/engine"
	"amid/plugins/internal/cnn"
	"amid/plugins/plugintest"
	"amid/plugins/protocol"
)

// BenchmarkTrainStep times one training step (forward, backward, gradient clipping,
// AdamW) of the plugin's default model, the first network lane Plan proposes for
// LDCT-like 2D slices of 512×512 (the forest, first, has no such step), as
// plugintest.BenchTrainStep reports it for `make bench-plugins-models`.
func BenchmarkTrainStep(b *testing.B) {
	fp := `{"cases":[`
	for i := range 9 {
		fp += fmt.Sprintf(`%s{"dims":[1,512,512]}`, map[bool]string{true: ",", false: ""}[i > 0])
	}
	fp += "]}"
	tk := protocol.Task{Kind: "iqa", Dims: 2}
	r, err := iqa{}.Plan(context.Background(), &protocol.PlanRequest{Fingerprint: []byte(fp), Task: tk})
	if err != nil {
		b.Fatal(err)
	}
	first := slices.IndexFunc(r.Candidates, func(c protocol.Candidate) bool { return c.Name != laneForest })
	c, err := parseConfig(r.Candidates[first].Config, 2)
	if err != nil {
		b.Fatal(err)
	}
	be := engine.NewCPU(0)
	arch := c.Arch(1, 1)
	var loss *engine.RegressionLoss
	w := engine.RegressionWeights{MSE: c.Loss.MSE, Rank: c.Loss.Rank, Corr: c.Loss.Corr, Temp: c.Loss.Temp}
	m, err := cnn.Build(be, arch, c.Batch, c.Grid, 1, func(bd *engine.Builder, out *engine.Tensor) { loss = bd.RegressionLoss(out, w) })
	if err != nil {
		b.Fatal(err)
	}
	if w.Rank != 0 || w.Corr != 0 {
		b.Fatalf("the default lane's loss %+v is not plain MSE, which the PyTorch side models", w)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	for i := range m.Input.Data {
		m.Input.Data[i] = float32(rng.NormFloat64())
	}
	tg := make([]float32, c.Batch)
	for i := range tg {
		tg[i] = float32(rng.Float64())
	}
	if err := loss.SetTargets(tg); err != nil {
		b.Fatal(err)
	}
	opt := engine.NewAdamW(be, m.Params(), c.LR, c.Decay)
	spec := map[string]any{"plugin": "iqa", "model": "cnn", "lane": r.Candidates[first].Name, "batch": c.Batch, "patch": c.Grid,
		"in": 1, "out": 1, "widths": c.Widths, "convs": c.Convs, "norm": c.Norm, "pool": c.Pool, "slope": arch.Slope,
		"loss": "mse", "lr": c.LR, "weight_decay": c.Decay, "clip": cnn.Clip}
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
