package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"

	"amid/plugins/compute"
	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/internal/cnn"
	"amid/plugins/internal/device"
	"amid/plugins/internal/imageplugin"
	"amid/plugins/internal/training"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
	"amid/plugins/taskspec"
)

// saved is what a checkpoint records beside the weights: enough to predict without the
// training set.
type saved struct {
	Config    config         `json:"config"`
	Dims      int            `json:"dims"`
	Channels  int            `json:"channels,omitempty"`
	Intensity cnn.Intensity  `json:"intensity,omitzero"`
	Heads     []head         `json:"heads,omitempty"`
	Units     []unit         `json:"units"`
	Prior     map[string]int `json:"prior"`
	// Freqs are, per attribute, the share of the training labels in each class: the prior
	// lane's probabilities (absent in older checkpoints: the prior's class gets 1).
	Freqs map[string][]float64 `json:"freqs,omitempty"`
	// Multi names the task's multi-label attribute, whose Freqs are each finding's share
	// of positives and whose heads are one sigmoid a finding (empty: none).
	Multi string `json:"multi,omitempty"`
	// Files and Forests are the forest lane's: the image files a case has, and the
	// attributes whose forests the checkpoint's extra bytes hold, in order (forest.go).
	Files   int         `json:"files,omitempty"`
	Forests []forestRef `json:"forests,omitempty"`
}

// empty is the weightless model of the prior lane's checkpoint.
type empty struct{}

func (empty) Params() []*engine.Param  { return nil }
func (empty) Buffers() []engine.Buffer { return nil }

func (cls) Train(ctx context.Context, req *protocol.TrainRequest, report func(*protocol.Progress) error) (*protocol.TrainResult, error) {
	s, err := spec(req.Task)
	if err != nil {
		return nil, fmt.Errorf("classification train: %w", err)
	}
	c, err := parseConfig(req.Config, s.Dims)
	if err != nil {
		return nil, err
	}
	if c.Seed == 0 {
		c.Seed = req.Seed
	}
	if len(req.Train) == 0 {
		return nil, errors.New("classification train: no training cases")
	}
	labels, err := readLabels(req.Train, s)
	if err != nil {
		return nil, fmt.Errorf("classification train: %w", err)
	}
	var vlabels []map[string]int
	if len(req.Validation) > 0 {
		if vlabels, err = readLabels(req.Validation, s); err != nil {
			return nil, fmt.Errorf("classification train: validation: %w", err)
		}
	}
	clock := sdk.NewClock(req)
	rec := saved{Config: c, Dims: s.Dims, Units: units(s), Prior: prior(s, labels), Freqs: freqs(s, labels)}
	var found, vfound []map[string][]int
	if ml, ok := s.MultiLabel(); ok {
		if found, err = readFindings(req.Train, s, ml); err != nil {
			return nil, fmt.Errorf("classification train: %w", err)
		}
		if vfound, err = readFindings(req.Validation, s, ml); err != nil {
			return nil, fmt.Errorf("classification train: validation: %w", err)
		}
		if rec.Freqs == nil {
			rec.Freqs = map[string][]float64{}
		}
		rec.Multi, rec.Freqs[ml.Name] = ml.Name, findingFreqs(ml, found)
	}
	return sdk.Stream(ctx, report, func(ctx context.Context, send func(*protocol.Progress) error) (*protocol.TrainResult, error) {
		var (
			path  string
			steps int
			id    *compute.Identity
			err   error
		)
		switch c.Lane {
		case lanePrior:
			path, err = trainPrior(req, rec, send)
			steps = 1
		case laneForest:
			path, err = trainForest(ctx, req, s, rec, labels, send)
			steps = 1
		default:
			path, steps, id, err = trainCNN(ctx, req, s, rec, labels, found, clock, send)
		}
		if err != nil {
			return nil, fmt.Errorf("classification train: %w", err)
		}
		val, err := validate(ctx, path, req, s, vlabels, vfound)
		if err != nil {
			return nil, fmt.Errorf("classification train: validation: %w", err)
		}
		res, err := sdk.Result(path, int64(steps), val)
		if err == nil && id != nil {
			res.Compute = *id
		}
		return res, err
	})
}

// trainPrior writes the prior lane's checkpoint: no weights, the prior in the record.
func trainPrior(req *protocol.TrainRequest, rec saved, send func(*protocol.Progress) error) (string, error) {
	p := filepath.Join(req.WorkDir, training.Final)
	if err := ckpt.Save(p, ckpt.Checkpoint{Train: rec, Epoch: 1, Step: 1, Model: empty{}}); err != nil {
		return "", err
	}
	return p, send(&protocol.Progress{Step: 1, TotalSteps: 1, Epoch: 1, Checkpoint: p, Message: fmt.Sprintf("prior: %v", rec.Prior)})
}

// trainCNN trains the cnn lane on the device the setting names (package device) and
// returns the final checkpoint, the steps done and what trained it.
func trainCNN(ctx context.Context, req *protocol.TrainRequest, s *taskspec.Spec, rec saved, labels []map[string]int, found []map[string][]int, clock *sdk.Clock, send func(*protocol.Progress) error) (string, int, *compute.Identity, error) {
	c := rec.Config
	imgs, err := imageplugin.LoadImages(ctx, req.Train, s.Dims, c.Net, 0)
	if err != nil {
		return "", 0, nil, err
	}
	if rec.Intensity, err = cnn.FitIntensity(c.Intensity, imgs); err != nil {
		return "", 0, nil, err
	}
	for _, im := range imgs {
		if err := rec.Intensity.Apply(im); err != nil {
			return "", 0, nil, err
		}
	}
	rec.Channels = imgs[0].C
	rec.Heads = heads(s, c.Heads, labels)
	sizes := make([]int, len(rec.Heads))
	for i, h := range rec.Heads {
		sizes[i] = len(h.Classes)
	}
	var w [][]float64
	if c.ClassWeights == "balanced" {
		w = weights(rec.Heads, labels)
		for i, h := range rec.Heads {
			if h.Multi {
				w[i] = findingWeights(h, found)
			}
		}
	}
	targets := make([][]int32, len(labels))
	for i, l := range labels {
		for _, h := range rec.Heads {
			if h.Multi {
				targets[i] = append(targets[i], h.findingTarget(found[i]))
				continue
			}
			targets[i] = append(targets[i], h.target(l))
		}
	}
	if req.ResumeFrom != "" {
		if err := sameHeads(req.ResumeFrom, rec.Heads); err != nil {
			return "", 0, nil, err
		}
	}
	prog := device.NewProgress(send)
	var l *training.Loop
	be, err := device.Train(0, prog.Log, c, req.ResumeFrom, shrink, func(be engine.Backend, c config, resume string) (string, error) {
		rec.Config = c
		var err error
		l, err = trainOn(ctx, be, &rec, c, imgs, sizes, w, targets, resume, func(l *training.Loop) {
			l.Dir, l.Until, l.Send, l.Clock = req.WorkDir, int(req.Until), prog.Send, clock
		})
		if l == nil {
			return "", err
		}
		return l.Last, err
	})
	if err != nil {
		return "", 0, nil, err
	}
	id := be.Identity()
	return l.Last, l.At.Step, &id, nil
}

// shrink halves the batch of a lane that did not fit its device's memory.
var shrink = device.HalveBatch(func(c *config) *int { return &c.Batch })

// trainOn trains the cnn lane's network of configuration c on be from the checkpoint
// resume ("" for a fresh start) to its final checkpoint, and frees its device memory;
// place sets where the loop writes and reports and the step it stops at. The loop it
// returns (nil when it failed before one existed) names the newest checkpoint.
func trainOn(ctx context.Context, be engine.Backend, rec *saved, c config, imgs []*cnn.Image, sizes []int, w [][]float64, targets [][]int32, resume string, place func(*training.Loop)) (*training.Loop, error) {
	arch := c.Arch(rec.Channels, rec.outputs())
	var loss *engine.HeadLoss
	m, err := cnn.Build(be, arch, c.Batch, c.Grid, uint64(c.Seed), func(b *engine.Builder, out *engine.Tensor) {
		loss = b.HeadLoss(out, sizes, w)
	})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	opt := engine.NewAdamW(be, m.Params(), c.LR, c.Decay)
	l := &training.Loop{
		Steps: c.Steps, LR: c.LR, Epoch: c.Epoch, Report: c.Report, Losses: []string{"cross_entropy"},
		Arch: arch.UNet(), Record: rec, Model: m, Opt: opt,
	}
	place(l)
	if err := l.Resume(resume); err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	tr, err := engine.NewTrainer(m.Net, opt, engine.TrainOptions{Clip: cnn.Clip})
	if err != nil {
		return l, err
	}
	defer tr.Close()
	l.Fetch = tr.ToHost
	aug := c.Augment()
	idx := make([]int, c.Batch)
	lab := make([]int32, c.Batch*len(sizes))
	v := make([]float64, 1)
	// Batch k is drawn from (seed, k) alone: a resumed run sees the batches an
	// uninterrupted one would.
	l.Step = func(step int, lr float64) (int, []float64, error) {
		r := rand.New(rand.NewPCG(uint64(c.Seed), uint64(step)))
		for k := range idx {
			idx[k] = r.IntN(len(imgs))
			copy(lab[k*len(sizes):], targets[idx[k]])
		}
		cnn.Fill(m.Input.Data, imgs, idx, aug, r)
		if err := loss.SetLabels(lab); err != nil {
			return 0, nil, err
		}
		if _, err := tr.Step(lr); err != nil {
			return 0, nil, err
		}
		v[0] = loss.Value()
		return len(idx), v, nil
	}
	if err := l.Run(ctx); err != nil {
		return l, err
	}
	_, err = l.Save(training.Final)
	return l, err
}

// outputs is the network's number of outputs: every head's classes.
func (r *saved) outputs() int {
	n := 0
	for _, h := range r.Heads {
		n += len(h.Classes)
	}
	return n
}

// sameHeads refuses to resume a checkpoint whose heads differ from those of this
// training set.
func sameHeads(path string, hs []head) error {
	man, err := ckpt.ReadManifest(path)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	var old saved
	if err := json.Unmarshal(man.Train, &old); err != nil {
		return fmt.Errorf("resume: checkpoint %s: training record: %w", path, err)
	}
	if !reflect.DeepEqual(old.Heads, hs) {
		return fmt.Errorf("resume: checkpoint %s was trained with heads %v, this training set gives %v", path, old.Heads, hs)
	}
	return nil
}

// validate scores the checkpoint and the prior on the validation cases.
func validate(ctx context.Context, path string, req *protocol.TrainRequest, s *taskspec.Spec, truth []map[string]int, found []map[string][]int) (map[string]float64, error) {
	if len(truth) == 0 {
		return nil, nil
	}
	pred := make([]map[string]int, len(truth))
	priors := make([]map[string]int, len(truth))
	ml, multi := s.MultiLabel()
	var prob, priorProb [][]float64
	_, err := device.Predict(0, device.ToLog, func(be engine.Backend) error {
		p, err := load(be, path)
		if err != nil {
			return err
		}
		defer p.Close()
		for i, k := range req.Validation {
			if err := ctx.Err(); err != nil {
				return err
			}
			var probs map[string][]float64
			if pred[i], probs, _, err = p.classes(k); err != nil {
				return fmt.Errorf("case %s: %w", k.ID, err)
			}
			priors[i] = p.rec.Prior
			if multi {
				prob, priorProb = append(prob, probs[ml.Name]), append(priorProb, p.rec.Freqs[ml.Name])
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if multi {
		out := scoreFindings(ml, found, prob)
		for k, v := range scoreFindings(ml, found, priorProb) {
			out["prior/"+k] = v
		}
		return out, nil
	}
	out := score(s, truth, pred)
	for k, v := range score(s, truth, priors) {
		out["prior/"+k] = v
	}
	if m := req.Task.Metric; m != "" && m != "balanced_accuracy" {
		out[m] = out["balanced_accuracy"]
	}
	return out, nil
}

// attribute is the number of classes of attribute a, from the record's class shares
// (false in a checkpoint older than them).
func (r *saved) attribute(a string) (int, bool) {
	f, ok := r.Freqs[a]
	return len(f), ok && len(f) > 0
}
