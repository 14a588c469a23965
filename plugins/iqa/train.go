package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/internal/cnn"
	"amid/plugins/internal/imageplugin"
	"amid/plugins/metrics"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
	"amid/plugins/taskspec"
)

// saved is what a checkpoint records beside the weights.
type saved struct {
	Config    config        `json:"config"`
	Dims      int           `json:"dims"`
	Channels  int           `json:"channels"`
	Intensity cnn.Intensity `json:"intensity"`
	// Range is the score range (and grid) predictions are scaled back to and kept in.
	Range taskspec.ScoreRange `json:"range"`
	// Members is the number of trained models (Folds, or fewer when a time limit ended
	// training early).
	Members int  `json:"members"`
	Snap    bool `json:"snap"`
}

// scale maps a score to the network's [0, 1] target; unscale maps back.
func (r *saved) scale(v float64) float64   { return (v - r.Range.Min) / (r.Range.Max - r.Range.Min) }
func (r *saved) unscale(v float64) float64 { return r.Range.Min + v*(r.Range.Max-r.Range.Min) }

// readScores reads the score of every case, checked against the spec's range.
func readScores(cases []protocol.Case, s *taskspec.Spec) ([]float64, error) {
	out := make([]float64, len(cases))
	for i, c := range cases {
		if c.Label == "" {
			return nil, fmt.Errorf("case %s has no label file", c.ID)
		}
		a, err := taskspec.ReadAnnotation(c.Label, s)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.ID, err)
		}
		if a.Score == nil {
			return nil, fmt.Errorf("case %s: %w: label %s has no score", c.ID, taskspec.ErrAnnotation, c.Label)
		}
		v := *a.Score
		if r := s.Score; r != nil && (v < r.Min || v > r.Max) {
			return nil, fmt.Errorf("case %s: %w: score %g in %s is outside the task's range [%g, %g]", c.ID, taskspec.ErrAnnotation, v, c.Label, r.Min, r.Max)
		}
		out[i] = v
	}
	return out, nil
}

// scoreRange is the spec's score range, or the training scores' own when the spec has
// none.
func scoreRange(s *taskspec.Spec, scores []float64) (taskspec.ScoreRange, error) {
	if s.Score != nil {
		return *s.Score, nil
	}
	r := taskspec.ScoreRange{Min: math.Inf(1), Max: math.Inf(-1)}
	for _, v := range scores {
		r.Min, r.Max = min(r.Min, v), max(r.Max, v)
	}
	if !(r.Max > r.Min) {
		return r, fmt.Errorf("every training score is %g: nothing to learn", r.Min)
	}
	return r, nil
}

func (iqa) Train(ctx context.Context, req *protocol.TrainRequest, report func(*protocol.Progress) error) (*protocol.TrainResult, error) {
	clock := sdk.NewClock(req)
	s, err := spec(req.Task)
	if err != nil {
		return nil, fmt.Errorf("iqa train: %w", err)
	}
	c, err := parseConfig(req.Config, s.Dims)
	if err != nil {
		return nil, err
	}
	if c.Seed == 0 {
		c.Seed = req.Seed
	}
	if len(req.Train) == 0 {
		return nil, errors.New("iqa train: no training cases")
	}
	if c.Folds > len(req.Train) {
		return nil, fmt.Errorf("iqa train: %d folds of %d training cases", c.Folds, len(req.Train))
	}
	scores, err := readScores(req.Train, s)
	if err != nil {
		return nil, fmt.Errorf("iqa train: %w", err)
	}
	var vscores []float64
	if len(req.Validation) > 0 {
		if vscores, err = readScores(req.Validation, s); err != nil {
			return nil, fmt.Errorf("iqa train: validation: %w", err)
		}
	}
	rng, err := scoreRange(s, scores)
	if err != nil {
		return nil, fmt.Errorf("iqa train: %w", err)
	}
	rec := &saved{Config: c, Dims: s.Dims, Range: rng}
	return sdk.Stream(ctx, report, func(ctx context.Context, send func(*protocol.Progress) error) (*protocol.TrainResult, error) {
		res, err := train(ctx, req, rec, scores, vscores, clock, send)
		if err != nil {
			return nil, fmt.Errorf("iqa train: %w", err)
		}
		return res, nil
	})
}

// folds assigns each of n cases to one of k folds, a seeded shuffle dealt round-robin.
func folds(n, k int, seed int64) []int {
	out := make([]int, n)
	for pos, i := range rand.New(rand.NewPCG(uint64(seed), 0x666f6c64)).Perm(n) {
		out[i] = pos % k
	}
	return out
}

// train runs every fold and returns the final result.
func train(ctx context.Context, req *protocol.TrainRequest, rec *saved, scores, vscores []float64, clock *sdk.Clock, send func(*protocol.Progress) error) (*protocol.TrainResult, error) {
	c := rec.Config
	imgs, err := imageplugin.LoadImages(ctx, req.Train, rec.Dims, c.Net, 0)
	if err != nil {
		return nil, err
	}
	if rec.Intensity, err = cnn.FitIntensity(c.Intensity, imgs); err != nil {
		return nil, err
	}
	for _, im := range imgs {
		if err := rec.Intensity.Apply(im); err != nil {
			return nil, err
		}
	}
	rec.Channels = imgs[0].C
	targets := make([]float32, len(scores))
	for i, v := range scores {
		targets[i] = float32(rec.scale(v))
	}
	be := engine.NewCPU(runtime.GOMAXPROCS(0))
	arch := c.Arch(rec.Channels, 1)
	w := engine.RegressionWeights{MSE: c.Loss.MSE, Rank: c.Loss.Rank, Corr: c.Loss.Corr, Temp: c.Loss.Temp}
	build := func(f int) (*cnn.Model, *engine.RegressionLoss, *engine.Adam, error) {
		var loss *engine.RegressionLoss
		m, err := cnn.Build(be, arch, c.Batch, c.Grid, uint64(c.Seed)+uint64(f), func(b *engine.Builder, out *engine.Tensor) {
			loss = b.RegressionLoss(out, w)
		})
		if err != nil {
			return nil, nil, nil, err
		}
		return m, loss, engine.NewAdamW(be, m.Params(), c.LR, c.Decay), nil
	}
	K, P := c.Folds, c.Steps
	fold := folds(len(imgs), K, c.Seed)
	m, loss, opt, err := build(0)
	if err != nil {
		return nil, err
	}
	ens := &cnn.Ensemble{Members: make([]cnn.Member, K), Opt: opt}
	for f := range K {
		ens.Members[f] = cnn.Zero(m.Net)
	}
	ens.Members[0] = cnn.Live(m.Net)
	cur, start, epoch := 0, 0, 0
	if req.ResumeFrom != "" {
		man, err := ckpt.ReadManifest(req.ResumeFrom)
		if err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
		cur = min(man.Step/P, K-1)
		if cur > 0 {
			if m, loss, opt, err = build(cur); err != nil {
				return nil, err
			}
			ens.Members[0], ens.Members[cur] = cnn.Zero(m.Net), cnn.Live(m.Net)
			ens.Opt = opt
		}
		ens.Current = cur
		if _, err := ckpt.Load(req.ResumeFrom, arch.UNet(), ens, ens); err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
		start, epoch = man.Step-cur*P, man.Epoch
	}
	save := func(name string, step, ep int) (string, error) {
		p := filepath.Join(req.WorkDir, name)
		return p, ckpt.Save(p, ckpt.Checkpoint{Arch: arch.UNet(), Train: rec, Epoch: ep, Step: step, Model: ens, Opt: ens})
	}
	aug := c.Augment()
	oof := make([]float64, len(imgs)) // out-of-fold predictions, scores
	steps, complete := 0, true
	for f := cur; f < K; f++ {
		if f > cur {
			if m, loss, opt, err = build(f); err != nil {
				return nil, err
			}
			ens.Members[f], ens.Current, ens.Opt = cnn.Live(m.Net), f, opt
			start = 0
		}
		var train, held []int
		for i, k := range fold {
			if k != f || K == 1 {
				train = append(train, i)
			} else {
				held = append(held, i)
			}
		}
		idx := make([]int, c.Batch)
		tg := make([]float32, c.Batch)
		loop := cnn.Loop{
			Net: m.Net, Opt: opt, Loss: loss.Value, Save: save, Send: send, LossName: "regression",
			Batch: func(step int) (int, error) {
				r := rand.New(rand.NewPCG(uint64(c.Seed)+uint64(f), uint64(step)))
				for k := range idx {
					idx[k] = train[r.IntN(len(train))]
					tg[k] = targets[idx[k]]
				}
				cnn.Fill(m.Input.Data, imgs, idx, aug, r)
				return len(idx), loss.SetTargets(tg)
			},
			First: start + 1, Last: P, Offset: f * P, Total: K * P, Epoch: c.Epoch, Report: c.Report, Epochs: epoch,
			LR: c.LR, Clip: cnn.Clip, Clock: clock,
		}
		var last int
		if epoch, last, err = loop.Run(ctx); err != nil {
			return nil, err
		}
		steps = f*P + max(last, start)
		rec.Members = f + 1
		if max(last, start) == 0 && f > 0 { // stopped before this fold's first step
			rec.Members = f
		}
		if last < P && start < P {
			complete = false
			break
		}
		heldImgs := make([]*cnn.Image, len(held))
		for j, i := range held {
			heldImgs[j] = imgs[i]
		}
		cnn.Infer(m, heldImgs, func(j int, y []float32) { oof[held[j]] = rec.unscale(float64(y[0])) })
		if f < K-1 {
			ens.Members[f] = cnn.Snapshot(m.Net)
		}
	}
	final, err := save(imageplugin.FinalName, steps, epoch)
	if err != nil {
		return nil, err
	}
	// Snapping: chosen on the validation cases, else on the out-of-fold predictions.
	val := map[string]float64{}
	var truth, raw []float64
	switch {
	case len(vscores) > 0:
		p, err := load(final)
		if err != nil {
			return nil, err
		}
		vimgs, err := imageplugin.LoadImages(ctx, req.Validation, rec.Dims, c.Net, rec.Channels)
		if err != nil {
			return nil, fmt.Errorf("validation: %w", err)
		}
		if raw, err = p.predict(vimgs); err != nil {
			return nil, fmt.Errorf("validation: %w", err)
		}
		truth = vscores
	case K > 1 && complete:
		truth, raw = scores, oof
	}
	if K > 1 && complete {
		val["oof/score"], _, _, _ = score(oof, scores)
	}
	rec.Snap = c.Snap == "on"
	if truth != nil {
		snapped := make([]float64, len(raw))
		for i, v := range raw {
			raw[i] = rec.clamp(v)
			snapped[i] = rec.Range.Snap(v)
		}
		sr, _, _, _ := score(raw, truth)
		ss, _, _, _ := score(snapped, truth)
		val["score_raw"], val["score_snapped"] = sr, ss
		if c.Snap == "auto" {
			rec.Snap = rec.Range.Step > 0 && ss > sr
		}
		use := raw
		if rec.Snap {
			use = snapped
		}
		val["score"], val["plcc"], val["srocc"], val["krocc"] = score(use, truth)
		if _, ok := val[req.Task.Metric]; !ok && req.Task.Metric != "" {
			val[req.Task.Metric] = val["score"]
		}
		if len(vscores) == 0 {
			for _, k := range []string{"score", "plcc", "srocc", "krocc", "score_raw", "score_snapped"} {
				val["oof/"+k] = val[k]
				delete(val, k)
			}
		}
		if final, err = save(imageplugin.FinalName, steps, epoch); err != nil { // with the choice
			return nil, err
		}
	}
	if len(val) == 0 {
		val = nil
	}
	return sdk.Result(final, int64(steps), val)
}

// clamp keeps v inside the score range.
func (r *saved) clamp(v float64) float64 { return min(max(v, r.Range.Min), r.Range.Max) }

// output is a prediction as written: inside the range, on the grid when snapping.
func (r *saved) output(v float64) float64 {
	if r.Snap {
		return r.Range.Snap(v)
	}
	return r.clamp(v)
}

// score is the LDCT-IQA score |PLCC| + |SROCC| + |KROCC| of pred against truth with its
// three terms (metrics.LDCTScore), except that a NaN term (a constant prediction, which
// the grader refuses) counts 0, so that a validation figure is always a number.
func score(pred, truth []float64) (total, plcc, srocc, krocc float64) {
	_, plcc, srocc, krocc = metrics.LDCTScore(pred, truth)
	z := func(v float64) float64 {
		if math.IsNaN(v) {
			return 0
		}
		return v
	}
	plcc, srocc, krocc = z(plcc), z(srocc), z(krocc)
	return plcc + srocc + krocc, plcc, srocc, krocc
}
