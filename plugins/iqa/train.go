package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/internal/cnn"
	"amid/plugins/internal/device"
	"amid/plugins/internal/imageplugin"
	"amid/plugins/internal/training"
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
	// Forest is the forest lane's score classes (the edges between them and their mean
	// training scores) and Features the names of the image features its trees split
	// (featureNames when it trained); its trees and their feature bins are the
	// checkpoint's extra bytes (forest.go).
	Forest   *scoreBins `json:"forest,omitempty"`
	Features []string   `json:"features,omitempty"`
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
	if c.Lane == laneCNN && c.Folds > len(req.Train) {
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
	rec := &saved{Config: c, Dims: s.Dims, Range: rng, Snap: c.Snap == "on"}
	return sdk.Stream(ctx, report, func(ctx context.Context, send func(*protocol.Progress) error) (*protocol.TrainResult, error) {
		var (
			res *protocol.TrainResult
			err error
		)
		if c.Lane == laneForest {
			res, err = trainForest(ctx, req, rec, scores, vscores, send)
		} else {
			res, err = train(ctx, req, rec, scores, vscores, clock, send)
		}
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

// train trains one model per fold, each on the other folds' cases, on the device the
// setting names (package device), chooses whether predictions snap to the score grid,
// and returns the final result: a checkpoint holding every trained model, whose mean is
// the prediction.
func train(ctx context.Context, req *protocol.TrainRequest, rec *saved, scores, vscores []float64, clock *sdk.Clock, send func(*protocol.Progress) error) (*protocol.TrainResult, error) {
	imgs, err := prepare(ctx, req, rec)
	if err != nil {
		return nil, err
	}
	prog := device.NewProgress(send)
	var (
		e        *ensemble
		oof      []float64
		complete bool
		final    string
	)
	be, err := device.Train(0, prog.Log, rec.Config, req.ResumeFrom, shrink, func(be engine.Backend, c config, resume string) (string, error) {
		rec.Config = c
		var err error
		if e, err = newEnsemble(be, req, resume, rec, imgs, scores, clock, prog.Send); err != nil {
			if e == nil {
				return "", err
			}
			return e.loop.Last, err
		}
		defer e.close()
		if oof, complete, err = e.trainFolds(ctx); err != nil {
			return e.loop.Last, err
		}
		final, err = e.loop.Save(training.Final)
		return e.loop.Last, err
	})
	if err != nil {
		return nil, err
	}
	val, err := chooseSnap(ctx, req, rec, final, scores, vscores, oof, complete, prog.Log)
	if err != nil {
		return nil, err
	}
	if val != nil {
		if final, err = e.loop.Save(training.Final); err != nil { // with the choice
			return nil, err
		}
	}
	return device.Result(be, final, int64(e.loop.Offset+e.loop.At.Step), val)
}

// shrink halves the batch of a lane that did not fit its device's memory.
var shrink = device.HalveBatch(func(c *config) *int { return &c.Batch })

// prepare loads the training images onto the grid and normalises their intensities,
// recording the normalisation and the channels in rec.
func prepare(ctx context.Context, req *protocol.TrainRequest, rec *saved) ([]*cnn.Image, error) {
	imgs, err := imageplugin.LoadImages(ctx, req.Train, rec.Dims, rec.Config.Net, 0)
	if err != nil {
		return nil, err
	}
	if rec.Intensity, err = cnn.FitIntensity(rec.Config.Intensity, imgs); err != nil {
		return nil, err
	}
	for _, im := range imgs {
		if err := rec.Intensity.Apply(im); err != nil {
			return nil, err
		}
	}
	rec.Channels = imgs[0].C
	return imgs, nil
}

// ensemble trains the models of the folds one after another in one training loop, whose
// steps run from 1 to Folds × Steps; its checkpoints hold every member.
type ensemble struct {
	c       config
	rec     *saved
	imgs    []*cnn.Image
	targets []float32 // the scores scaled to the network's [0, 1]
	fold    []int     // each case's fold
	be      engine.Backend
	arch    cnn.Arch
	ens     *cnn.Ensemble
	loop    *training.Loop
	start   int // the fold the loop starts in (later than 0 on resume)
	// until is the request's last step of the whole run, counted over the folds as the
	// loop reports them (protocol.TrainRequest.Until); 0: the last fold's last.
	until int
	// The model of the fold being trained, its loss, its optimizer and its trainer.
	m    *cnn.Model
	loss *engine.RegressionLoss
	opt  *engine.Adam
	tr   *engine.Trainer
}

// newEnsemble sets up the folds and the loop on be, resumed from the checkpoint resume
// when it names one: the fold it was in, with that fold's model and optimizer state and
// the trained members before it. Close frees what it holds on a device.
func newEnsemble(be engine.Backend, req *protocol.TrainRequest, resume string, rec *saved, imgs []*cnn.Image, scores []float64, clock *sdk.Clock, send func(*protocol.Progress) error) (*ensemble, error) {
	c := rec.Config
	e := &ensemble{c: c, rec: rec, imgs: imgs, fold: folds(len(imgs), c.Folds, c.Seed),
		be: be, arch: c.Arch(rec.Channels, 1), until: int(req.Until)}
	for _, v := range scores {
		e.targets = append(e.targets, float32(rec.scale(v)))
	}
	if resume != "" {
		man, err := ckpt.ReadManifest(resume)
		if err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
		e.start = min(man.Step/c.Steps, c.Folds-1)
	}
	if err := e.build(e.start); err != nil {
		return nil, err
	}
	e.ens = &cnn.Ensemble{Members: make([]cnn.Member, c.Folds), Current: e.start, Opt: e.opt}
	for f := range c.Folds {
		e.ens.Members[f] = cnn.Zero(e.m.Net)
	}
	e.ens.Members[e.start] = cnn.Live(e.m.Net)
	e.loop = &training.Loop{
		Steps: c.Steps, LR: c.LR, Epoch: c.Epoch, Report: c.Report, Losses: []string{"regression"},
		Offset: e.start * c.Steps, Total: c.Folds * c.Steps,
		Dir: req.WorkDir, Arch: e.arch.UNet(), Record: rec, Model: e.ens, Opt: e.ens,
		Send: send, Clock: clock,
		Fetch: func() error { return e.tr.ToHost() },
	}
	if err := e.loop.Resume(resume); err != nil {
		e.m.Close()
		return nil, fmt.Errorf("resume: %w", err)
	}
	// The trainer starts from the host's weights and optimizer state: the resumed ones.
	if err := e.trainer(); err != nil {
		e.m.Close()
		return e, err
	}
	return e, nil
}

// trainer makes the current fold's trainer.
func (e *ensemble) trainer() error {
	var err error
	e.tr, err = engine.NewTrainer(e.m.Net, e.opt, engine.TrainOptions{Clip: cnn.Clip})
	return err
}

// close frees the current fold's trainer and model on a device; the members keep their
// host copies.
func (e *ensemble) close() {
	if e.tr != nil {
		e.tr.Close()
	}
	e.m.Close()
	e.loop.Fetch = nil // the host copies are the newest
}

// build builds fold f's model, its loss and its optimizer, with weights drawn from the
// seed plus f.
func (e *ensemble) build(f int) error {
	w := engine.RegressionWeights{MSE: e.c.Loss.MSE, Rank: e.c.Loss.Rank, Corr: e.c.Loss.Corr, Temp: e.c.Loss.Temp}
	m, err := cnn.Build(e.be, e.arch, e.c.Batch, e.c.Grid, uint64(e.c.Seed)+uint64(f), func(b *engine.Builder, out *engine.Tensor) {
		e.loss = b.RegressionLoss(out, w)
	})
	if err != nil {
		return err
	}
	e.m, e.opt = m, engine.NewAdamW(e.be, m.Params(), e.c.LR, e.c.Decay)
	return nil
}

// split returns the cases fold f trains on and those it holds out (none with one fold).
func (e *ensemble) split(f int) (train, held []int) {
	for i, k := range e.fold {
		if k != f || e.c.Folds == 1 {
			train = append(train, i)
		} else {
			held = append(held, i)
		}
	}
	return train, held
}

// trainFolds trains the folds from the loop's start to the last, or until the time limit
// or the request's last step (until), and returns the out-of-fold predictions (scores)
// and whether every fold completed. The record counts the members trained. A run that
// stops at a fold's end stops as the time limit does there: with the next fold's fresh
// model and optimizer in its checkpoint, where a later round resumes.
func (e *ensemble) trainFolds(ctx context.Context) (oof []float64, complete bool, err error) {
	c, l := e.c, e.loop
	oof = make([]float64, len(e.imgs))
	aug := c.Augment()
	for f := e.start; f < c.Folds; f++ {
		if f > e.start {
			e.tr.Close()
			e.m.Close()
			e.tr = nil
			if err := e.build(f); err != nil {
				return nil, false, err
			}
			if err := e.trainer(); err != nil {
				return nil, false, err
			}
			e.ens.Members[f], e.ens.Current, e.ens.Opt = cnn.Live(e.m.Net), f, e.opt
			l.Offset, l.At.Step = f*c.Steps, 0
		}
		if e.until > 0 {
			if e.until <= f*c.Steps { // the request ended with the fold before
				e.rec.Members = f
				return oof, false, nil
			}
			l.Until = e.until - f*c.Steps // the loop keeps the schedule over c.Steps
		}
		train, held := e.split(f)
		idx := make([]int, c.Batch)
		tg := make([]float32, c.Batch)
		v := make([]float64, 1)
		// Batch k of fold f is drawn from (seed + f, k) alone.
		l.Step = func(step int, lr float64) (int, []float64, error) {
			r := rand.New(rand.NewPCG(uint64(c.Seed)+uint64(f), uint64(step)))
			for k := range idx {
				idx[k] = train[r.IntN(len(train))]
				tg[k] = e.targets[idx[k]]
			}
			cnn.Fill(e.m.Input.Data, e.imgs, idx, aug, r)
			if err := e.loss.SetTargets(tg); err != nil {
				return 0, nil, err
			}
			if _, err := e.tr.Step(lr); err != nil {
				return 0, nil, err
			}
			v[0] = e.loss.Value()
			return len(idx), v, nil
		}
		if err := l.Run(ctx); err != nil {
			return nil, false, err
		}
		e.rec.Members = f + 1
		if l.At.Step == 0 && f > 0 { // stopped before this fold's first step
			e.rec.Members = f
		}
		if l.At.Step < c.Steps {
			return oof, false, nil
		}
		if err := e.tr.ToHost(); err != nil {
			return nil, false, err
		}
		if err := e.predictHeld(e.m, held, oof); err != nil {
			return nil, false, err
		}
		if f < c.Folds-1 {
			e.ens.Members[f] = cnn.Snapshot(e.m.Net)
		}
	}
	// The folds a resumed run did not train predict their held-out cases from their
	// members.
	if e.start > 0 {
		m, err := cnn.Build(e.be, e.arch, c.Batch, c.Grid, 0, nil)
		if err != nil {
			return nil, false, err
		}
		defer m.Close()
		for f := range e.start {
			if err := e.ens.Members[f].CopyInto(m.Net); err != nil {
				return nil, false, err
			}
			if err := m.ToDevice(); err != nil {
				return nil, false, err
			}
			_, held := e.split(f)
			if err := e.predictHeld(m, held, oof); err != nil {
				return nil, false, err
			}
		}
	}
	return oof, true, nil
}

// predictHeld predicts the held-out cases with m into oof, as scores.
func (e *ensemble) predictHeld(m *cnn.Model, held []int, oof []float64) error {
	imgs := make([]*cnn.Image, len(held))
	for j, i := range held {
		imgs[j] = e.imgs[i]
	}
	return cnn.Infer(m, imgs, func(j int, y []float32) { oof[held[j]] = e.rec.unscale(float64(y[0])) })
}

// chooseSnap scores the final model's predictions, raw and snapped to the score grid, on
// the validation cases, or without them on the out-of-fold predictions when every fold
// completed, and records in rec whether predictions snap ("auto": when snapping scores
// higher; "on" snaps whatever the scores). It returns the validation figures, nil when
// there were none to compute.
func chooseSnap(ctx context.Context, req *protocol.TrainRequest, rec *saved, final string, scores, vscores, oof []float64, complete bool, log device.Log) (map[string]float64, error) {
	c := rec.Config
	val := map[string]float64{}
	var truth, raw []float64
	switch {
	case len(vscores) > 0:
		vimgs, err := imageplugin.LoadImages(ctx, req.Validation, rec.Dims, c.Net, rec.Channels)
		if err != nil {
			return nil, fmt.Errorf("validation: %w", err)
		}
		if _, err = device.Predict(0, log, func(be engine.Backend) error {
			p, err := load(be, final)
			if err != nil {
				return err
			}
			defer p.Close()
			raw, err = p.predict(vimgs)
			return err
		}); err != nil {
			return nil, fmt.Errorf("validation: %w", err)
		}
		truth = vscores
	case c.Folds > 1 && complete:
		truth, raw = scores, oof
	}
	if c.Folds > 1 && complete {
		val["oof/score"], _, _, _ = score(oof, scores)
	}
	if truth == nil { // rec.Snap stays as configured: "on", or off for "auto"
		return nil, nil
	}
	for k, v := range judge(rec, raw, truth, req.Task.Metric) {
		val[k] = v
	}
	if len(vscores) == 0 {
		for _, k := range []string{"score", "plcc", "srocc", "krocc", "score_raw", "score_snapped"} {
			val["oof/"+k] = val[k]
			delete(val, k)
		}
	}
	return val, nil
}

// judge scores the predictions raw (score units, neither clamped nor snapped; clamped to
// the score range in place) against truth, as they are and snapped to the score grid, and records in rec whether
// predictions snap ("auto": when snapping scores higher; "on" snaps whatever the scores).
// It returns "score" (with its terms "plcc", "srocc" and "krocc", and the task's metric
// when it names another), "score_raw" and "score_snapped".
func judge(rec *saved, raw, truth []float64, metric string) map[string]float64 {
	val := map[string]float64{}
	snapped := make([]float64, len(raw))
	for i, v := range raw {
		raw[i] = rec.clamp(v)
		snapped[i] = rec.Range.Snap(v)
	}
	sr, _, _, _ := score(raw, truth)
	ss, _, _, _ := score(snapped, truth)
	val["score_raw"], val["score_snapped"] = sr, ss
	if rec.Config.Snap == "auto" {
		rec.Snap = rec.Range.Step > 0 && ss > sr
	}
	use := raw
	if rec.Snap {
		use = snapped
	}
	val["score"], val["plcc"], val["srocc"], val["krocc"] = score(use, truth)
	if _, ok := val[metric]; !ok && metric != "" {
		val[metric] = val["score"]
	}
	return val
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
