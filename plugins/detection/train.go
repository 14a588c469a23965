package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/internal/device"
	"amid/plugins/internal/training"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
	"amid/plugins/taskspec"
)

// Training constants.
const (
	clipNorm = 12 // gradient-norm clip (nnU-Net)
	// heatPrior is the initial heatmap probability (CenterNet's bias −2.19 = logit 0.1),
	// which keeps the focal loss of the first steps from being swamped by negatives.
	heatPrior = 0.1
)

func (det) Train(ctx context.Context, req *protocol.TrainRequest, report func(*protocol.Progress) error) (*protocol.TrainResult, error) {
	c, err := parseConfig(req.Config)
	if err != nil {
		return nil, err
	}
	if c.Seed == 0 {
		c.Seed = req.Seed
	}
	s, mode, err := taskSpec(req.Task)
	if err != nil {
		return nil, err
	}
	if laneMode(c.Lane) != mode {
		return nil, fmt.Errorf("detection train: lane %s does not fit a %s task", c.Lane, mode)
	}
	if len(req.Train) == 0 {
		return nil, fmt.Errorf("detection train: %w: no training cases", ErrInput)
	}
	clock := sdk.NewClock(req)
	// The training runs on its own goroutine so that a cancel returns at once, whatever
	// the step in flight; the goroutine ends after that step and keeps the checkpoints.
	return sdk.Stream(ctx, report, func(ctx context.Context, send func(*protocol.Progress) error) (*protocol.TrainResult, error) {
		return run(ctx, req, c, s, mode, clock, send)
	})
}

// learner is a network being trained, with its batch filling and its loss.
type learner struct {
	net  *engine.Net
	fill func(r *rand.Rand) error
	loss func() float64
}

// channelsOf is the number of input channels a mode's network takes.
func channelsOf(mode string) int {
	switch mode {
	case modePoints:
		return 3 // H&E colour
	case modeBoxes:
		return 1 + coordChannels
	}
	return 1
}

// imageChannels is the number of channels a mode reads of each image.
func imageChannels(mode string) int {
	if mode == modeBoxes {
		return 1
	}
	return channelsOf(mode)
}

// run trains c and sends progress; it returns the final result.
func run(ctx context.Context, req *protocol.TrainRequest, c config, s *taskspec.Spec, mode string, clock *sdk.Clock, send func(*protocol.Progress) error) (*protocol.TrainResult, error) {
	rec := saved{Config: c, Mode: mode, Channels: channelsOf(mode), Spec: s}
	if mode == modeBox3D {
		p, err := fitPrior(req.Train, s, priorCentre(c))
		if err != nil {
			return nil, fmt.Errorf("detection train: %w", err)
		}
		rec.Prior = p
	}
	switch c.Lane {
	case lanePrior3D:
		return finishPrior(ctx, req, rec, send)
	case laneTransfer:
		return finishTransfer(ctx, req, rec, send)
	}
	prog := device.NewProgress(send)
	var l *training.Loop
	be, err := device.Train(0, prog.Log, c, req.ResumeFrom, shrink, func(be engine.Backend, c config, resume string) (string, error) {
		rec.Config = c
		var err error
		l, err = trainOn(ctx, be, req, c, s, mode, &rec, clock, prog.Send, resume)
		if l == nil {
			return "", err
		}
		return l.Last, err
	})
	if err != nil {
		return nil, fmt.Errorf("detection train: %w", err)
	}
	final := l.Last
	val, err := tune(ctx, final, req, &rec, prog.Log)
	if err != nil {
		return nil, fmt.Errorf("detection train: validation: %w", err)
	}
	// The threshold and calibration chosen on validation go into the final checkpoint.
	l.Fetch = nil // the host's weights are the final ones
	if final, err = l.Save(training.Final); err != nil {
		return nil, fmt.Errorf("detection train: %w", err)
	}
	return device.Result(be, final, int64(l.At.Step), val)
}

// shrink halves the batch of a lane that did not fit its device's memory.
var shrink = device.HalveBatch(func(c *config) *int { return &c.Batch })

// trainOn trains configuration c on be from the checkpoint resume ("" for a fresh start)
// to its final checkpoint, and frees its device memory; the loop it returns (nil when it
// failed before one existed) names the newest checkpoint.
func trainOn(ctx context.Context, be engine.Backend, req *protocol.TrainRequest, c config, s *taskspec.Spec, mode string, rec *saved, clock *sdk.Clock, send func(*protocol.Progress) error, resume string) (*training.Loop, error) {
	arch := rec.arch()
	ln, err := newLearner(be, req, c, s, mode, arch, rec)
	if err != nil {
		return nil, err
	}
	defer ln.net.Free()
	opt := engine.NewAdamW(be, ln.net.Params(), c.LR, c.Decay)
	// The samples come from one generator drawn from step after step; its state travels in
	// the checkpoints, so a resumed run goes on with the data order.
	pcg := rand.NewPCG(uint64(c.Seed), 1)
	rng := rand.New(pcg)
	l := &training.Loop{
		Steps: c.Steps, Until: int(req.Until), LR: c.LR, Epoch: c.Epoch, Report: c.Report, Losses: []string{lossName(mode)},
		Dir: req.WorkDir, Arch: arch, Record: rec, Model: ln.net, Opt: opt, Data: pcg,
		Send: send, Clock: clock,
	}
	if err := l.Resume(resume); err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	// The trainer starts from the host's weights and optimizer state: the resumed ones.
	tr, err := engine.NewTrainer(ln.net, opt, engine.TrainOptions{Clip: clipNorm})
	if err != nil {
		return l, err
	}
	defer tr.Close()
	l.Fetch = tr.ToHost
	loss := make([]float64, 1)
	l.Step = func(_ int, lr float64) (int, []float64, error) {
		if err := ln.fill(rng); err != nil {
			return 0, nil, err
		}
		if _, err := tr.Step(lr); err != nil {
			return 0, nil, err
		}
		loss[0] = ln.loss()
		return c.Batch, loss, nil
	}
	if err := l.Run(ctx); err != nil {
		return l, err
	}
	_, err = l.Save(training.Final)
	return l, err
}

func lossName(mode string) string {
	switch mode {
	case modeBoxes:
		return "centernet"
	case modePoints:
		return "focal"
	}
	return "dice_ce"
}

func priorCentre(c config) string {
	if c.Centre == "" {
		return "mean"
	}
	return c.Centre
}

// emptyModel is the box3d_prior lane's network: nothing to learn.
type emptyModel struct{}

func (emptyModel) Params() []*engine.Param  { return nil }
func (emptyModel) Buffers() []engine.Buffer { return nil }

// finishPrior writes the box3d_prior lane's checkpoint and scores it.
func finishPrior(ctx context.Context, req *protocol.TrainRequest, rec saved, send func(*protocol.Progress) error) (*protocol.TrainResult, error) {
	p := filepath.Join(req.WorkDir, training.Final)
	if err := ckpt.Save(p, ckpt.Checkpoint{Train: rec, Epoch: 1, Step: 1, Model: emptyModel{}}); err != nil {
		return nil, fmt.Errorf("detection train: %w", err)
	}
	if err := send(&protocol.Progress{Step: 1, TotalSteps: 1, Epoch: 1, Losses: map[string]float64{"prior": 0}, Checkpoint: p,
		Message: "box size prior fitted on the training boxes"}); err != nil {
		return nil, err
	}
	val, err := tune(ctx, p, req, &rec, device.ToLog)
	if err != nil {
		return nil, fmt.Errorf("detection train: validation: %w", err)
	}
	return sdk.Result(p, 1, val)
}

// newLearner builds the network of a lane with its batch filling and loss.
func newLearner(be engine.Backend, req *protocol.TrainRequest, c config, s *taskspec.Spec, mode string, arch engine.UNetConfig, rec *saved) (*learner, error) {
	if mode == modeBox3D {
		return newSeg3D(be, req, c, s, arch)
	}
	ld, err := newLoader2D(req.Train, s, mode, c, imageChannels(mode))
	if err != nil {
		return nil, err
	}
	if mode == modeBoxes {
		if err := ld.prime(); err != nil {
			return nil, err
		}
		rec.RefSize = ld.refSize
	}
	P := c.sizeXYZ()
	S := P[0] * P[1]
	K := len(s.Points)
	if mode == modeBoxes {
		K = 1
	}
	targets := make([]target, c.Batch)
	for i := range targets {
		targets[i].heat = make([]float32, K*S)
	}
	var groups []int
	for _, a := range s.Attributes {
		groups = append(groups, len(a.Classes))
	}
	obj := func(n int, x, dx []float32) float64 {
		if mode == modeBoxes {
			return boxLoss(x, dx, &targets[n], S, groups)
		}
		return engine.FocalLoss(x, targets[n].heat, dx)
	}
	u, err := engine.BuildUNetHead(be, arch, c.head(mode), c.Batch, c.Size, uint64(c.Seed), obj)
	if err != nil {
		return nil, err
	}
	bias := u.HeadBias()
	for k := range K {
		bias[k] = logit(heatPrior)
	}
	in := arch.In * S
	return &learner{
		net: u.Net, loss: u.Objective.Value,
		fill: func(r *rand.Rand) error {
			for n := range c.Batch {
				x := u.Input.Data[n*in : (n+1)*in]
				if err := ld.sample(r, x, &targets[n]); err != nil {
					return err
				}
				if u.Side != nil { // the coordinates, also input channels 1 and 2
					copy(u.Side.Sample(n), x[S:])
				}
			}
			return nil
		},
	}, nil
}

// newSeg3D is the box3d_seg lane's learner: a U-Net segmenting the box's inside on the
// coarse grid, fed whole volumes.
func newSeg3D(be engine.Backend, req *protocol.TrainRequest, c config, s *taskspec.Spec, arch engine.UNetConfig) (*learner, error) {
	grid := c.sizeXYZ()
	var items []item3D
	for _, k := range req.Train {
		a, v, err := read3D(k, s)
		if err != nil {
			return nil, err
		}
		p, err := prepare(v, arch.In, grid)
		if err != nil {
			return nil, fmt.Errorf("case %s: image %s: %w", k.ID, k.Images[0], err)
		}
		items = append(items, item3D{img: p.data, lab: coarseMask(a.Box3D, p.scale, grid)})
	}
	u, err := engine.BuildUNet(be, arch, c.Batch, c.Size, uint64(c.Seed))
	if err != nil {
		return nil, err
	}
	S := grid[0] * grid[1] * grid[2]
	labels := make([]int32, c.Batch*S)
	return &learner{
		net: u.Net, loss: u.Loss.Value,
		fill: func(r *rand.Rand) error {
			for n := range c.Batch {
				it := items[r.IntN(len(items))]
				gain, bias := float32(0.9+0.2*r.Float64()), float32(0.2*r.Float64()-0.1)
				dst := u.Input.Data[n*arch.In*S : (n+1)*arch.In*S]
				for i, v := range it.img {
					dst[i] = v*gain + bias
				}
				copy(labels[n*S:], it.lab)
			}
			return u.Loss.SetLabels(labels)
		},
	}, nil
}
