package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/engine/data"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
	"amid/plugins/taskspec"
)

// Training constants.
const (
	clipNorm    = 12      // gradient-norm clip, as the segmentation plugin
	polyPower   = 0.9     // poly learning-rate exponent
	cacheBudget = 1 << 30 // bytes of cases the loader keeps in memory
	finalName   = "final.ckpt"
	cancelWait  = 1500 * time.Millisecond // longest wait for the step in flight after a cancel
)

// saved is the training configuration a checkpoint records.
type saved struct {
	Config config `json:"config"`
}

// event is what the training goroutine hands the Train call.
type event struct {
	p   *protocol.Progress
	res *protocol.TrainResult
	err error
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
	errs := make([]error, len(cases))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(cases)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c := cases[i]
				if len(c.Images) == 0 {
					errs[i] = fmt.Errorf("case %s has no low-quality image", c.ID)
					continue
				}
				_, _, errs[i] = readPair(c.ID, c.Images[0], c.Label)
			}
		}()
	}
	for i := range cases {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
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
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan event)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		res, err := run(ctx, req, c, clock, events)
		select {
		case events <- event{res: res, err: err}:
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-ctx.Done():
			select {
			case <-finished:
			case <-time.After(cancelWait):
			}
			return nil, ctx.Err()
		case e := <-events:
			if e.p == nil {
				if e.err != nil && ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return e.res, e.err
			}
			if err := report(e.p); err != nil {
				return nil, err
			}
		}
	}
}

// run trains c and sends progress on events; it returns the final result.
func run(ctx context.Context, req *protocol.TrainRequest, c config, clock *sdk.Clock, events chan<- event) (*protocol.TrainResult, error) {
	be := engine.NewCPU(runtime.GOMAXPROCS(0))
	arch := c.net()
	u, err := engine.BuildResUNet(be, arch, c.Batch, c.patch3(), uint64(c.Seed), c.loss())
	if err != nil {
		return nil, fmt.Errorf("enhancement train: %w", err)
	}
	opt := engine.NewAdamW(be, u.Params(), c.LR, c.Decay)
	start, epoch := 0, 0
	if req.ResumeFrom != "" {
		m, err := ckpt.Load(req.ResumeFrom, arch, u, opt)
		if err != nil {
			return nil, fmt.Errorf("enhancement train: resume: %w", err)
		}
		start, epoch = m.Step, m.Epoch
	}
	rec := saved{Config: c}
	save := func(name string, step int) (string, error) {
		p := filepath.Join(req.WorkDir, name)
		err := ckpt.Save(p, ckpt.Checkpoint{Arch: arch, Train: rec, Epoch: epoch, Step: step, Model: u, Opt: opt})
		return p, err
	}
	var src []data.Source
	for _, k := range req.Train {
		src = append(src, &pairSource{id: k.ID, low: k.Images[0], high: k.Label})
	}
	// Ultrasound has a depth direction: flip left–right only.
	aug := &data.Augment{Flip: [3]bool{true, false, false}}
	ld, err := data.NewLoader(data.Config{
		Sampler: data.Sampler{Patch: c.patchXYZ()}, Augment: aug,
		Batch: c.Batch, Channels: 2, Seed: uint64(c.Seed) + uint64(start)*0x9e3779b97f4a7c15,
		Workers: 1, Budget: cacheBudget,
	}, src)
	if err != nil {
		return nil, fmt.Errorf("enhancement train: %w", err)
	}
	defer ld.Close()
	send := func(p *protocol.Progress) error {
		select {
		case events <- event{p: p}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	target := make([]float32, len(u.Input.Data))
	PN := c.Patch[0] * c.Patch[1]
	last := start
	rep := sdk.NewReporter(send, start, c.Steps, c.Report, "loss", "l1", "ssim")
	for step := start + 1; step <= c.Steps; step++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if clock.Expired() { // the host's time limit: finish normally with what is trained
			if err := rep.Stopped(last, epoch); err != nil {
				return nil, err
			}
			break
		}
		last = step
		b, err := ld.Next()
		if err != nil {
			return nil, fmt.Errorf("enhancement train: %w", err)
		}
		for i := range c.Batch {
			copy(u.Input.Data[i*PN:(i+1)*PN], b.Image[2*i*PN:(2*i+1)*PN])
			copy(target[i*PN:(i+1)*PN], b.Image[(2*i+1)*PN:(2*i+2)*PN])
		}
		ld.Release(b)
		if err := u.Loss.SetTarget(target); err != nil {
			return nil, fmt.Errorf("enhancement train: %w", err)
		}
		opt.LR = engine.PolyLR(c.LR, step-1, c.Steps, polyPower)
		u.Forward()
		u.Backward()
		engine.ClipGradNorm(u.Params(), clipNorm)
		opt.Step()
		l1, s := u.Loss.Parts()
		rep.Add(c.Batch, u.Loss.Value(), l1, s)
		var ck string
		if step%c.Epoch == 0 {
			epoch++
			if step < c.Steps {
				if ck, err = save(fmt.Sprintf("epoch-%04d.ckpt", epoch), step); err != nil {
					return nil, fmt.Errorf("enhancement train: %w", err)
				}
			}
		}
		if rep.Due(step) || ck != "" || step == c.Steps {
			if err := rep.Report(step, epoch, ck); err != nil {
				return nil, err
			}
		}
	}
	final, err := save(finalName, last)
	if err != nil {
		return nil, fmt.Errorf("enhancement train: %w", err)
	}
	var val map[string]float64
	if len(req.Validation) > 0 {
		if val, err = validate(ctx, final, req.Validation); err != nil {
			return nil, fmt.Errorf("enhancement train: validation: %w", err)
		}
	}
	return sdk.Result(final, int64(last), val)
}
