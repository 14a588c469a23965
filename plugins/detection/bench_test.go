package main

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"amid/plugins/engine"
	"amid/plugins/plugintest"
	"amid/plugins/protocol"
)

// benchSpec describes the benchmarked model for the PyTorch side of
// `make bench-plugins-models` (.ci/bench_plugins_models.py builds the same from it): the
// U-Net (In: the image and the coordinate channels; Out: heatmap, offset, size, then each
// attribute's classes) and its head.
type benchSpec struct {
	plugintest.ModelSpec
	// Side is the number of coordinate channels joined to the U-Net's output before the
	// head; Hidden the channels of the head's 3×3 convolution.
	Side   int `json:"side"`
	Hidden int `json:"head_width"`
	// Groups are the attributes' class counts; Objects the boxes of each sample.
	Groups  []int `json:"groups"`
	Objects int   `json:"objects"`
}

// benchObjects is the number of boxes in each benchmarked sample: DENTEX's 705 fully
// labelled panoramic X-rays carry about 3,500 diagnosis boxes, 5 an image.
const benchObjects = 5

// BenchmarkTrainStep times one training step (forward, the centernet loss, backward,
// gradient clipping, AdamW) of the plugin's default 2D-boxes model: the centernet lane
// Plan proposes for a DENTEX-like task (40 grayscale panoramic images of 512×256, the
// quadrant, enumeration and diagnosis attributes), reported by plugintest.BenchTrainStep.
func BenchmarkTrainStep(b *testing.B) {
	fp := `{"modality":"XR","channels":1,"cases":[` +
		strings.TrimSuffix(strings.Repeat(`{"dims":[1,256,512],"spacing":[1,1,1]},`, 40), ",") + "]}"
	s := boxSpec()
	r, err := det{}.Plan(context.Background(), &protocol.PlanRequest{Fingerprint: []byte(fp), Task: task(b, s)})
	if err != nil {
		b.Fatal(err)
	}
	c, err := parseConfig(r.Candidates[0].Config)
	if err != nil {
		b.Fatal(err)
	}
	if c.Lane != laneBoxes {
		b.Fatalf("Plan's first lane is %s, not %s", c.Lane, laneBoxes)
	}
	rec := saved{Config: c, Mode: modeBoxes, Channels: channelsOf(modeBoxes), Spec: s}
	arch := rec.arch()
	var groups []int
	for _, a := range s.Attributes {
		groups = append(groups, len(a.Classes))
	}
	P := c.sizeXYZ()
	W, H := P[0], P[1]
	S := W * H
	targets := make([]target, c.Batch)
	obj := func(n int, x, dx []float32) float64 { return boxLoss(x, dx, &targets[n], S, groups) }
	be := engine.NewCPU(0)
	u, err := engine.BuildUNetHead(be, arch, c.head(modeBoxes), c.Batch, c.Size, 1, obj)
	if err != nil {
		b.Fatal(err)
	}
	u.HeadBias()[chHeat] = logit(heatPrior)
	spec := benchSpec{ModelSpec: plugintest.ModelSpec{Plugin: "detection", Model: "centernet", Lane: c.Lane, Batch: c.Batch, Patch: c.Size,
		In: arch.In, Out: arch.Classes, Widths: c.Widths, MaxPool: arch.MaxPool, Norm: "instance", Slope: arch.Slope,
		LR: c.LR, Decay: c.Decay, Clip: clipNorm}, Side: coordChannels, Hidden: c.HeadWidth, Groups: groups, Objects: benchObjects}
	spec.Planar() // BuildUNetHead's defaults for a 2D patch
	rng := rand.New(rand.NewPCG(2, 2))
	in := arch.In * S
	for n := range c.Batch {
		x := u.Input.Data[n*in : (n+1)*in]
		for i := range S {
			x[i] = float32(rng.NormFloat64())
		}
		coords(x[S:], W, H, 0, 0)
		copy(u.Side.Sample(n), x[S:])
		t := &targets[n]
		t.heat = make([]float32, S)
		// Tooth-sized boxes (10–40 working pixels, as Plan's sizing keeps them) at random
		// centres, the training loader's Gaussians and targets.
		for range benchObjects {
			bw, bh := 10+30*rng.Float64(), 10+30*rng.Float64()
			cx, cy := bw/2+rng.Float64()*(float64(W)-bw), bh/2+rng.Float64()*(float64(H)-bh)
			ix, iy := int(cx), int(cy)
			render(t.heat, W, H, ix, iy, max(0.8, 0.09*bw), max(0.8, 0.09*bh))
			o := object{cell: iy*W + ix, off: [2]float32{float32(cx - float64(ix)), float32(cy - float64(iy))},
				size: [2]float32{float32(math.Log(bw / 25)), float32(math.Log(bh / 25))}}
			for _, g := range groups {
				o.attrs = append(o.attrs, rng.IntN(g))
			}
			t.objs = append(t.objs, o)
			t.nbr = append(t.nbr, neighbours(o.cell, W, H))
		}
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
	if v := u.Objective.Value(); math.IsNaN(v) || math.IsInf(v, 0) {
		b.Fatalf("centernet loss %v after %d steps", v, b.N+1)
	}
}
