package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/engine/data"
	"amid/plugins/internal/device"
	"amid/plugins/internal/training"
	"amid/plugins/metrics"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
	"amid/plugins/segmentation/plan"
)

// Training constants.
const (
	clipNorm    = 12      // gradient-norm clip (nnU-Net)
	cacheBudget = 1 << 30 // bytes of cases the loader keeps in memory
)

// sources are the data loader's sources for cases, checked to have images and a label.
func sources(cases []protocol.Case, c config, labels bool, ch int) ([]data.Source, error) {
	if len(cases) == 0 {
		return nil, errors.New("no training cases")
	}
	var out []data.Source
	for _, k := range cases {
		if len(k.Images) == 0 {
			return nil, fmt.Errorf("case %s has no image file", k.ID)
		}
		if labels && k.Label == "" {
			return nil, fmt.Errorf("case %s has no label file", k.ID)
		}
		out = append(out, &caseSource{images: k.Images, label: k.Label, spacing: c.spacingXYZ(), norm: c.norm(), classes: c.Labels, instances: c.Instances, channels: ch})
	}
	return out, nil
}

// channels is the number of channels of a case's image.
func channels(paths []string) (int, error) {
	v, err := data.ReadChannels(paths)
	if err != nil {
		return 0, err
	}
	return v.Dims[3], nil
}

// saved is the training configuration a checkpoint records: the configuration and the
// number of image channels, enough to rebuild the network for prediction.
type saved struct {
	Config   config `json:"config"`
	Channels int    `json:"channels"`
	// Lowres is a cascade's low-resolution network's record; its weights are in the
	// checkpoint too (withLowres).
	Lowres *saved `json:"lowres,omitempty"`
	// ForestWeights are the forest lane's factors from its votes to the training voxels'
	// class frequencies; its trees are the checkpoint's extra bytes (voxel.go).
	ForestWeights []float32 `json:"forest_weights,omitempty"`
}

func (seg) Train(ctx context.Context, req *protocol.TrainRequest, report func(*protocol.Progress) error) (*protocol.TrainResult, error) {
	c, err := parseConfig(req.Config)
	if err != nil {
		return nil, err
	}
	if c.Seed == 0 {
		c.Seed = req.Seed
	}
	if len(req.Train) == 0 || len(req.Train[0].Images) == 0 {
		return nil, errors.New("segmentation train: no training cases")
	}
	ch, err := channels(req.Train[0].Images)
	if err != nil {
		return nil, fmt.Errorf("segmentation train: %w", err)
	}
	if req.Task.Dims == 2 && len(req.Train[0].Images) == 1 {
		// 2D datasets may mix grayscale and colour images: the model takes the most
		// channels any training image has, and the others are conformed to it.
		for _, k := range req.Train[1:] {
			n, err := channels(k.Images)
			if err != nil {
				return nil, fmt.Errorf("segmentation train: %w", err)
			}
			ch = max(ch, n)
		}
		ch = min(ch, 3) // RGBA's alpha carries no image
	}
	src, err := sources(req.Train, c, true, ch)
	if err != nil {
		return nil, fmt.Errorf("segmentation train: %w", err)
	}
	var low *lowres
	if c.Lane == plan.Lane3DCascade {
		if low, err = openLowres(c.Cascade, c, ch); err != nil {
			return nil, fmt.Errorf("segmentation train: %w", err)
		}
	}
	// The training runs on its own goroutine so that a cancel returns at once, whatever
	// the step in flight; the goroutine ends after that step and keeps the checkpoints.
	return sdk.Stream(ctx, report, func(ctx context.Context, send func(*protocol.Progress) error) (*protocol.TrainResult, error) {
		return run(ctx, req, c, src, ch, low, send)
	})
}

// withPriors gives each training case of src the low-resolution segmentation of the
// cascade's 3d_lowres checkpoint, predicted once here on the setting's device and
// degraded as nnU-Net's cascade augmentation does (degrade).
func withPriors(ctx context.Context, c config, cases []protocol.Case, src []data.Source, ch int, log device.Log) error {
	log(fmt.Sprintf("cascade: segmenting %d training cases with the 3d_lowres network of %s", len(cases), c.Cascade.Checkpoint))
	_, err := device.Predict(0, log, func(be engine.Backend) error {
		m, err := load(be, c.Cascade.Checkpoint, nil)
		if err != nil {
			return err
		}
		defer m.Close()
		for i, k := range cases {
			if err := ctx.Err(); err != nil {
				return err
			}
			img, cls, _, err := m.classes(k.Images, false)
			if err != nil {
				return fmt.Errorf("case %s: %w", k.ID, err)
			}
			degrade(cls, [3]int{img.Dims[0], img.Dims[1], img.Dims[2]}, len(c.Labels), rand.New(rand.NewPCG(uint64(c.Seed), uint64(i))), degradeMorph, degradeRemove)
			s := src[i].(*caseSource)
			if s.prior, err = classVolume(img, cls, len(c.Labels)); err != nil {
				return fmt.Errorf("case %s: %w", k.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cascade: %w", err)
	}
	return nil
}

// run trains c and sends progress; it returns the final result. The lane trains on the
// device the setting names (package device): re-planned smaller once when it does not fit
// the device's memory, continued on the CPU from its last checkpoint when the device is
// lost.
func run(ctx context.Context, req *protocol.TrainRequest, c config, src []data.Source, ch int, low *lowres, send func(*protocol.Progress) error) (*protocol.TrainResult, error) {
	prog := device.NewProgress(send)
	clock := sdk.NewClock(req)
	sp, err := spec(req.Task)
	if err != nil {
		return nil, fmt.Errorf("segmentation train: %w", err)
	}
	rule := metrics.DiceUnion // a task without a spec has no grader
	if sp != nil {
		rule = metrics.DiceRuleOf(sp.Challenge)
	}
	if low != nil {
		if err := withPriors(ctx, c, req.Train, src, ch, prog.Log); err != nil {
			return nil, fmt.Errorf("segmentation train: %w", err)
		}
	}
	if c.Lane == plan.LaneForest {
		return trainForest(ctx, req, c, src, ch, rule, clock, prog)
	}
	return device.TrainLoop("segmentation", prog.Log, c, req, shrink, func(be engine.Backend, c config, resume string) (*training.Loop, error) {
		return train(ctx, be, req, c, src, ch, low, clock, prog.Send, resume)
	}, func(final string, cases []protocol.Case) (map[string]float64, error) {
		return validate(ctx, final, cases, rule, prog.Log)
	})
}

// train trains c on be from the checkpoint resume ("" for a fresh start) up to its final
// checkpoint, and frees its device memory; the loop it returns (nil when it failed before
// one existed) names the newest checkpoint. A cascade's checkpoints carry low, its
// low-resolution network.
func train(ctx context.Context, be engine.Backend, req *protocol.TrainRequest, c config, src []data.Source, ch int, low *lowres, clock *sdk.Clock, send func(*protocol.Progress) error, resume string) (*training.Loop, error) {
	arch := c.net(ch)
	u, err := engine.BuildUNet(be, arch, c.Batch, c.Patch, uint64(c.Seed))
	if err != nil {
		return nil, err
	}
	defer u.Free()
	opt := engine.NewAdamW(be, u.Params(), c.LR, c.Decay)
	rec, saves := saved{Config: c, Channels: ch}, ckpt.Model(u)
	if low != nil {
		rec.Lowres, saves = &low.rec, withLowres{full: u, low: low.weights}
	}
	l := &training.Loop{
		Steps: c.Steps, Until: int(req.Until), LR: c.LR, Epoch: c.Epoch, Report: c.Report, Losses: []string{"dice_ce"},
		Dir: req.WorkDir, Arch: arch, Record: rec, Model: saves, Opt: opt,
		Send: send, Clock: clock,
	}
	if err := l.Resume(resume); err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	// The trainer starts from the host's weights and optimizer state: the resumed ones.
	tr, err := engine.NewTrainer(u.Net, opt, engine.TrainOptions{Clip: clipNorm})
	if err != nil {
		return l, err
	}
	defer tr.Close()
	l.Fetch = tr.ToHost
	aug := &data.Augment{Flip: [3]bool{true, true, c.is3D()}}
	// Batch k of the stream is drawn from (seed, k) alone: a resumed run starts the
	// loader at the step it resumes from and sees the batches an uninterrupted one would.
	ld, err := data.NewLoader(data.Config{
		Sampler: data.Sampler{Patch: c.samplePatch(), FgProb: c.FgProb, Stack: c.Lane == plan.Lane25D}, Augment: aug,
		Batch: c.Batch, Channels: c.norm().Planes(c.inputs(ch)), Seed: uint64(c.Seed), Start: l.At.Step,
		Workers: 1, Budget: cacheBudget, Labels: true,
	}, src)
	if err != nil {
		return l, err
	}
	defer ld.Close()
	// A 2.5d stack's label is that of its centre slice.
	S, plane := c.stack(), c.Patch[1]*c.Patch[2]
	var centre []int32
	if S > 1 {
		centre = make([]int32, c.Batch*plane)
	}
	loss := make([]float64, 1)
	l.Step = func(_ int, lr float64) (int, []float64, error) {
		b, err := ld.Next()
		if err != nil {
			return 0, nil, err
		}
		feed(u, b.Image, c.Batch, S) // a 2.5d stack's slices are the channels' planes in order
		labels := b.Label
		if S > 1 {
			for i := range c.Batch {
				copy(centre[i*plane:(i+1)*plane], b.Label[(i*S+S/2)*plane:])
			}
			labels = centre
		}
		err = u.SetLabels(labels)
		ld.Release(b)
		if err != nil {
			return 0, nil, err
		}
		if _, err := tr.Step(lr); err != nil {
			return 0, nil, err
		}
		loss[0] = u.Value() // the loss layers' values describe the step just waited for
		return c.Batch, loss, nil
	}
	if err := l.Run(ctx); err != nil {
		return l, err
	}
	_, err = l.Save(training.Final)
	return l, err
}
