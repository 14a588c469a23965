package cnn

import (
	"context"
	"fmt"
	"math"

	"amid/plugins/engine"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
)

// Loop is a run of training steps: for each step it calls Batch (which fills the inputs
// and the loss's labels and returns the number of samples), then the forward and backward
// passes, gradient clipping, the learning rate of a poly schedule and an optimizer step;
// it saves a checkpoint at the end of every epoch but the last and reports progress
// (sdk.Reporter) every Report steps or sdk.ReportInterval, at each checkpoint, at the last
// step and when the time limit ends it.
type Loop struct {
	Net   *engine.Net
	Opt   *engine.Adam
	Loss  func() float64
	Batch func(step int) (int, error)
	// Save writes the checkpoint of an epoch and returns its path.
	Save func(name string, step, epoch int) (string, error)
	Send func(*protocol.Progress) error
	// LossName names the loss in progress events.
	LossName string
	// First and Last are the loop's steps, 1-based (First > 1 on resume); Offset is added to
	// every step reported and Total is the whole run's number of steps, for runs made of
	// several loops (folds).
	First, Last, Offset, Total int
	Epoch, Report, Epochs      int // steps per epoch, steps between reports; Epochs done so far
	LR, Clip                   float64
	// Clock, when not nil, ends the loop before a step once the request's time limit has
	// elapsed, as if the last step had been reached.
	Clock *sdk.Clock
}

// polyPower is nnU-Net's poly learning-rate exponent.
const polyPower = 0.9

// Run runs the loop and returns the epochs done and the last step taken.
func (l *Loop) Run(ctx context.Context) (epochs, last int, err error) {
	rep := sdk.NewReporter(l.Send, l.Offset+l.First-1, l.Total, l.Report, l.LossName)
	epochs, last = l.Epochs, l.First-1
	for step := l.First; step <= l.Last; step++ {
		if err := ctx.Err(); err != nil {
			return epochs, last, err
		}
		if l.Clock != nil && l.Clock.Expired() {
			return epochs, last, rep.Stopped(l.Offset+last, epochs)
		}
		k, err := l.Batch(step)
		if err != nil {
			return epochs, last, err
		}
		l.Opt.LR = engine.PolyLR(l.LR, step-1, l.Last, polyPower)
		l.Net.Forward()
		l.Net.Backward()
		engine.ClipGradNorm(l.Net.Params(), l.Clip)
		l.Opt.Step()
		v := l.Loss()
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return epochs, last, fmt.Errorf("training diverged at step %d (loss %v): lower the learning rate", l.Offset+step, v)
		}
		rep.Add(k, v)
		last = step
		var ck string
		if step%l.Epoch == 0 {
			epochs++
			if step < l.Last {
				if ck, err = l.Save(fmt.Sprintf("epoch-%04d.ckpt", epochs), l.Offset+step, epochs); err != nil {
					return epochs, last, err
				}
			}
		}
		if rep.Due(step) || ck != "" || step == l.Last {
			if err := rep.Report(l.Offset+step, epochs, ck); err != nil {
				return epochs, last, err
			}
		}
	}
	return epochs, last, nil
}
