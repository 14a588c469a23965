// Package training is the training loop every built-in plugin runs: steps up to a stop,
// the host's time limit, progress events (sdk.Reporter), a checkpoint at the end of each
// epoch, and resuming from a checkpoint with the optimizer's state, the learning rate of
// the step reached and the data order going on.
//
// The plugin supplies the step ([Step]): it fills the batch and runs the forward and
// backward passes and the optimizer update, wherever they run (an engine.Trainer on the
// CPU or a device; a device's weights come to the host through [Loop.Fetch] before each
// checkpoint).
// The loop owns everything around it, so that the five plugins count steps, report, save
// and resume the same way:
//
//   - The learning rate follows nnU-Net's poly schedule over the model's planned total
//     steps ([Loop.Steps]). A run may stop earlier ([Loop.Until]) and a later one continue
//     from its checkpoint: the schedule stays that of the planned total, resumed at the step
//     reached, which is what a scheduler training a lane in rounds needs.
//   - Batch k of the data order is the plugin's function of its seed and k (the engine's
//     loader, a generator seeded with (seed, k)), or comes from a generator whose state
//     ([Loop.Data]) travels in every checkpoint: either way a resumed run sees the batches an
//     uninterrupted one would.
//   - A resumed run is bit-identical to an uninterrupted one: weights, optimizer moments and
//     step count come from the checkpoint (amid/plugins/engine/ckpt), and the learning rate
//     is a function of the step.
package training

import (
	"context"
	"encoding"
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
)

const (
	// Final is the final checkpoint's file name in a run's work folder.
	Final = "final.ckpt"
	// PolyPower is the exponent of nnU-Net's poly learning-rate schedule.
	PolyPower = 0.9
)

// Step is one training step, which the plugin supplies. It fills the batch of step
// (1-based), runs the forward and backward passes and the optimizer update at learning rate
// lr, and returns the number of samples and the step's losses in the order of Loop.Losses;
// the first is the objective, which must stay finite.
type Step func(step int, lr float64) (samples int, losses []float64, err error)

// Point is where a run stands: the last step taken and the epochs completed.
type Point struct{ Step, Epoch int }

// State is the state of a data order that is not a function of the step alone, such as a
// random generator drawn from step after step (*rand.PCG is one).
type State interface {
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// Loop is a run of training steps of one model. Set its fields, Resume when the request
// names a checkpoint, then Run, then Save the final checkpoint.
type Loop struct {
	// Steps is the model's planned total number of steps: the learning rate at step s is
	// LR·(1 − (s−1)/Steps)^PolyPower.
	Steps int
	// Until is the last step of this run; 0 means Steps. A run that continues a model from
	// its checkpoint to a later Until keeps the schedule over Steps.
	Until int
	LR    float64
	// Epoch is the number of steps in an epoch: a checkpoint (epoch-NNNN.ckpt) is written at
	// the end of every epoch but at the run's last step, where the plugin writes Final.
	Epoch int
	// Report is the number of steps between progress events; sdk.Reporter also reports
	// every sdk.ReportInterval, and the loop at each checkpoint, at the last step and when
	// the time limit ends the run.
	Report int
	// Losses name the step's losses in progress events.
	Losses []string
	// Offset is added to every step reported and saved, and Total is the whole run's number
	// of steps reported (0: Until), for a run that trains several models one after another
	// (the image quality plugin's folds).
	Offset, Total int

	// Step is the plugin's step.
	Step Step
	// Dir is the folder checkpoints are written to. A checkpoint records Arch, Record (the
	// plugin's training record, as JSON), Model, Opt and Data.
	Dir    string
	Arch   engine.UNetConfig
	Record any
	Model  ckpt.Model
	Opt    ckpt.Optimizer
	// Data, when not nil, is the data order's state, saved with each checkpoint and
	// restored by Resume.
	Data State
	// Extra, when not nil, gives the bytes each checkpoint carries beside its tensors
	// (ckpt.Checkpoint.Extra: a forest's trees), after Fetch.
	Extra func() ([]byte, error)
	// Fetch, when not nil, is called before every checkpoint: a step that keeps the
	// weights and the optimizer state on a device copies them into Model's and Opt's host
	// buffers, which a checkpoint holds (checkpoints are device-independent).
	Fetch func() error

	// Send takes the progress events.
	Send func(*protocol.Progress) error
	// Clock, when not nil, ends the run before a step once the request's time limit has
	// elapsed, as if its last step had been reached.
	Clock *sdk.Clock

	// At is where the run stands: before Run, where it starts (the zero Point, or what
	// Resume read); after it, the last step taken and the epochs completed.
	At Point
	// Stopped reports that the time limit ended the last Run before its last step.
	Stopped bool
	// Last is the newest checkpoint: the one Resume read or Save wrote last ("" before
	// either). A lane whose device was lost goes on from it on the CPU.
	Last string
}

// ErrDiverged reports a step whose objective is not a finite number.
var ErrDiverged = errors.New("training diverged")

// LRAt is the learning rate of step (1-based).
func (l *Loop) LRAt(step int) float64 { return engine.PolyLR(l.LR, step-1, l.Steps, PolyPower) }

// until is the run's last step.
func (l *Loop) until() int {
	if l.Until > 0 {
		return min(l.Until, l.Steps)
	}
	return l.Steps
}

// Resume loads the checkpoint at path (nothing when path is empty) into Model, Opt and
// Data, and sets At to its step (less Offset) and epoch. A checkpoint without a data
// state leaves Data as it is.
func (l *Loop) Resume(path string) error {
	if path == "" {
		return nil
	}
	m, err := ckpt.Load(path, l.Arch, l.Model, l.Opt)
	if err != nil {
		return err
	}
	if l.Data != nil && len(m.DataState) > 0 {
		if err := l.Data.UnmarshalBinary(m.DataState); err != nil {
			return fmt.Errorf("checkpoint %s: data order: %w", path, err)
		}
	}
	l.At = Point{Step: m.Step - l.Offset, Epoch: m.Epoch}
	l.Last = path
	return nil
}

// Save writes the checkpoint of At as name in Dir and returns its path.
func (l *Loop) Save(name string) (string, error) {
	if l.Fetch != nil {
		if err := l.Fetch(); err != nil {
			return "", fmt.Errorf("checkpoint %s: %w", name, err)
		}
	}
	c := ckpt.Checkpoint{Arch: l.Arch, Train: l.Record, Epoch: l.At.Epoch, Step: l.Offset + l.At.Step, Model: l.Model, Opt: l.Opt}
	if l.Data != nil {
		b, err := l.Data.MarshalBinary()
		if err != nil {
			return "", fmt.Errorf("data order: %w", err)
		}
		c.DataState = b
	}
	if l.Extra != nil {
		b, err := l.Extra()
		if err != nil {
			return "", fmt.Errorf("checkpoint %s: %w", name, err)
		}
		c.Extra = b
	}
	p := filepath.Join(l.Dir, name)
	if err := ckpt.Save(p, c); err != nil {
		return "", err
	}
	l.Last = p
	return p, nil
}

// Run takes the steps from At.Step+1 to the run's last, or until the time limit or ctx
// ends it; it returns ctx's error when cancelled, and a step's, a checkpoint's or a
// progress event's error.
func (l *Loop) Run(ctx context.Context) error {
	if l.Step == nil || l.Steps < 1 || l.Epoch < 1 || len(l.Losses) == 0 {
		return fmt.Errorf("training loop: %d steps, %d steps per epoch, %d losses and a step function are needed", l.Steps, l.Epoch, len(l.Losses))
	}
	until := l.until()
	total := l.Total
	if total == 0 {
		total = until
	}
	rep := sdk.NewReporter(l.Send, l.Offset+l.At.Step, total, l.Report, l.Losses...)
	l.Stopped = false
	for step := l.At.Step + 1; step <= until; step++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if l.Clock != nil && l.Clock.Expired() { // the host's time limit: end normally
			l.Stopped = true
			return rep.Stopped(l.Offset+l.At.Step, l.At.Epoch)
		}
		n, losses, err := l.Step(step, l.LRAt(step))
		if err != nil {
			return err
		}
		if len(losses) != len(l.Losses) {
			return fmt.Errorf("training loop: the step returned %d losses for %d names", len(losses), len(l.Losses))
		}
		if v := losses[0]; math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w at step %d (loss %v): lower the learning rate", ErrDiverged, l.Offset+step, v)
		}
		rep.Add(n, losses...)
		l.At.Step = step
		var ck string
		if step%l.Epoch == 0 {
			l.At.Epoch++
			if step < until {
				if ck, err = l.Save(fmt.Sprintf("epoch-%04d.ckpt", l.At.Epoch)); err != nil {
					return err
				}
			}
		}
		if rep.Due(step) || ck != "" || step == until {
			if err := rep.Report(l.Offset+step, l.At.Epoch, ck); err != nil {
				return err
			}
		}
	}
	return nil
}
