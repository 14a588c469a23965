package main

import (
	"context"
	"errors"
	"fmt"

	"amid/plugins/engine"
	"amid/plugins/engine/data"
	"amid/plugins/internal/device"
	"amid/plugins/internal/training"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
	"amid/plugins/taskspec"
)

// Training constants.
const (
	clipNorm    = 12      // gradient-norm clip, as the segmentation plugin
	cacheBudget = 1 << 30 // bytes of cases the loader keeps in memory
)

// saved is the training configuration a checkpoint records.
type saved struct {
	Config config `json:"config"`
}

// checkTask refuses a task of another kind or dimension and a malformed task spec; it
// returns the spec (nil when the task has none).
func checkTask(t protocol.Task) (*taskspec.Spec, error) {
	if t.Kind != "" && t.Kind != taskspec.Enhancement {
		return nil, fmt.Errorf("the enhancement plugin does not handle %q tasks", t.Kind)
	}
	if t.Dims != 0 && t.Dims != 2 {
		return nil, fmt.Errorf("the enhancement plugin handles 2D images, not %d-D", t.Dims)
	}
	if len(t.Spec) == 0 {
		return nil, nil
	}
	s, err := taskspec.Parse(t.Spec)
	if err != nil {
		return nil, fmt.Errorf("task spec: %w", err)
	}
	if s.Kind != taskspec.Enhancement {
		return nil, fmt.Errorf("task spec is for %q, not enhancement", s.Kind)
	}
	return s, nil
}

// checkPairs reads every case once, in parallel, so that a missing target, a corrupt file
// or a pair of different sizes is reported before training starts.
func checkPairs(ctx context.Context, cases []protocol.Case) error {
	errs, err := sdk.EachCase(ctx, len(cases), func(i int) error {
		c := cases[i]
		if len(c.Images) == 0 {
			return fmt.Errorf("case %s has no low-quality image", c.ID)
		}
		_, _, err := readPair(c.ID, c.Images[0], c.Label)
		return err
	})
	if err != nil {
		return err
	}
	return errors.Join(errs...)
}

func (enh) Train(ctx context.Context, req *protocol.TrainRequest, report func(*protocol.Progress) error) (*protocol.TrainResult, error) {
	clock := sdk.NewClock(req)
	c, err := parseConfig(req.Config)
	if err != nil {
		return nil, err
	}
	if c.Seed == 0 {
		c.Seed = req.Seed
	}
	if _, err := checkTask(req.Task); err != nil {
		return nil, fmt.Errorf("enhancement train: %w", err)
	}
	if len(req.Train) == 0 {
		return nil, errors.New("enhancement train: no training cases")
	}
	if err := checkPairs(ctx, req.Train); err != nil {
		return nil, fmt.Errorf("enhancement train: %w", err)
	}
	if err := checkPairs(ctx, req.Validation); err != nil {
		return nil, fmt.Errorf("enhancement train: validation: %w", err)
	}
	// Training runs on its own goroutine so that a cancel returns at once, whatever the
	// step in flight; the goroutine ends after that step and keeps the checkpoints.
	return sdk.Stream(ctx, report, func(ctx context.Context, send func(*protocol.Progress) error) (*protocol.TrainResult, error) {
		return run(ctx, req, c, clock, send)
	})
}

// run trains c on the device the setting names (package device) and sends progress; it
// returns the final result.
func run(ctx context.Context, req *protocol.TrainRequest, c config, clock *sdk.Clock, send func(*protocol.Progress) error) (*protocol.TrainResult, error) {
	prog := device.NewProgress(send)
	return device.TrainLoop("enhancement", prog.Log, c, req, shrink, func(be engine.Backend, c config, resume string) (*training.Loop, error) {
		return train(ctx, be, req, c, clock, prog.Send, resume)
	}, func(final string, cases []protocol.Case) (map[string]float64, error) {
		return validate(ctx, final, cases, prog.Log)
	})
}

// shrink halves the batch of a lane that did not fit its device's memory.
var shrink = device.HalveBatch(func(c *config) *int { return &c.Batch })

// train trains c on be from the checkpoint resume ("" for a fresh start) to its final
// checkpoint, and frees its device memory; the loop it returns (nil when it failed before
// one existed) names the newest checkpoint.
func train(ctx context.Context, be engine.Backend, req *protocol.TrainRequest, c config, clock *sdk.Clock, send func(*protocol.Progress) error, resume string) (*training.Loop, error) {
	arch := c.net()
	u, err := engine.BuildResUNet(be, arch, c.Batch, c.patch3(), uint64(c.Seed), c.loss())
	if err != nil {
		return nil, err
	}
	defer u.Free()
	opt := engine.NewAdamW(be, u.Params(), c.LR, c.Decay)
	l := &training.Loop{
		Steps: c.Steps, Until: int(req.Until), LR: c.LR, Epoch: c.Epoch, Report: c.Report, Losses: []string{"loss", "l1", "ssim"},
		Dir: req.WorkDir, Arch: arch, Record: saved{Config: c}, Model: u, Opt: opt,
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
	var src []data.Source
	for _, k := range req.Train {
		src = append(src, &pairSource{id: k.ID, low: k.Images[0], high: k.Label})
	}
	// Ultrasound has a depth direction: flip left–right only. Batch k is drawn from (seed,
	// k) alone, so a resumed run sees the batches an uninterrupted one would.
	aug := &data.Augment{Flip: [3]bool{true, false, false}}
	ld, err := data.NewLoader(data.Config{
		Sampler: data.Sampler{Patch: c.patchXYZ()}, Augment: aug,
		Batch: c.Batch, Channels: 2, Seed: uint64(c.Seed), Start: l.At.Step,
		Workers: 1, Budget: cacheBudget,
	}, src)
	if err != nil {
		return l, err
	}
	defer ld.Close()
	target := make([]float32, len(u.Input.Data))
	PN := c.Patch[0] * c.Patch[1]
	losses := make([]float64, 3)
	l.Step = func(_ int, lr float64) (int, []float64, error) {
		b, err := ld.Next()
		if err != nil {
			return 0, nil, err
		}
		for i := range c.Batch {
			copy(u.Input.Data[i*PN:(i+1)*PN], b.Image[2*i*PN:(2*i+1)*PN])
			copy(target[i*PN:(i+1)*PN], b.Image[(2*i+1)*PN:(2*i+2)*PN])
		}
		ld.Release(b)
		if err := u.Loss.SetTarget(target); err != nil {
			return 0, nil, err
		}
		if _, err := tr.Step(lr); err != nil {
			return 0, nil, err
		}
		l1, s := u.Loss.Parts()
		losses[0], losses[1], losses[2] = u.Loss.Value(), l1, s
		return c.Batch, losses, nil
	}
	if err := l.Run(ctx); err != nil {
		return l, err
	}
	_, err = l.Save(training.Final)
	return l, err
}
