package engine

import (
	"errors"
	"fmt"
	"math"
)

// Optimizer updates a network's parameters from their gradients: [Adam] or [SGD].
type Optimizer interface {
	Step()
	// SetLR sets the learning rate of the next steps.
	SetLR(lr float64)
	State() OptimState
	SetState(OptimState) error
}

// SetLR implements Optimizer.
func (a *Adam) SetLR(lr float64) { a.LR = lr }

// SetLR implements Optimizer.
func (s *SGD) SetLR(lr float64) { s.LR = lr }

// StepResult is what a training step gives back.
type StepResult struct {
	// Loss is the sum of the values of the network's loss layers (with deep supervision,
	// the weighted total UNet.Value gives).
	Loss float64
	// GradNorm is the gradients' L2 norm before clipping.
	GradNorm float64
	// Skipped reports a step whose gradients were not finite (GradNorm NaN or infinite):
	// the optimizer did not update the weights, as PyTorch's GradScaler skips such a step
	// in nnU-Net's mixed-precision training. A patch of one constant value (a slab's
	// empty corner, background 0 everywhere) gives every instance norm a variance of 0,
	// and each one's backward multiplies the gradient by 1/√ε ≈ 316: through the dozen
	// norms of a 6-stage U-Net it overflows float32.
	Skipped bool
}

// Finite says whether a gradient norm is a finite number: a step with any other is
// skipped.
func Finite(norm float64) bool { return !math.IsNaN(norm) && !math.IsInf(norm, 0) }

// Trainer runs training steps of a network, on whichever backend it was built: forward,
// loss, backward, gradient clipping and the optimizer's update. On the CPU a step is
// Forward, Backward, [ClipGradNorm] and Step, as a plugin's loop calls them. On a Vulkan
// device the whole step is recorded once into a command buffer and replayed: only the
// batch (the input tensors and the loss targets the caller fills, as on the CPU, through
// Tensor.Data and SetLabels/SetTargets/SetTarget) goes up, and only the loss and the
// gradient norm come back. Submit copies the batch into one of two staging buffers and
// returns while the device works, so the next batch can be prepared (and submitted)
// while the current step runs; Wait returns the results in order.
//
// A network whose last layer is an [Objective] runs its function on the host between two
// device programs (forward, then the rest), with its input read back and its gradient
// sent up.
type Trainer struct {
	net  *Net
	opt  Optimizer
	clip float64
	dev  *devTrainer
	done []StepResult // results of steps run but not yet returned by Wait (CPU)
}

// TrainOptions configure a [Trainer].
type TrainOptions struct {
	// Clip is the largest gradient norm (0: no clipping), as ClipGradNorm's maxNorm.
	Clip float64
	// Profile times every layer's forward and backward pass on a device (Trainer.Profile).
	Profile bool
}

// NewTrainer prepares training steps of net with opt, an optimizer over net's parameters
// in their order. On a device it uploads the parameters (unless the device already holds
// newer ones from an earlier trainer) and the optimizer's state, so that a network whose
// host parameters and optimizer state were restored from a checkpoint resumes from them.
func NewTrainer(net *Net, opt Optimizer, o TrainOptions) (*Trainer, error) {
	if opt == nil {
		return nil, fmt.Errorf("%w: a trainer needs an optimizer", ErrConfig)
	}
	if net.inference {
		return nil, fmt.Errorf("%w: the network was built for inference and has no gradients to train with", ErrConfig)
	}
	if !(o.Clip >= 0) || math.IsInf(o.Clip, 0) {
		return nil, fmt.Errorf("%w: gradient clipping norm %g", ErrConfig, o.Clip)
	}
	if err := sameParams(net, opt); err != nil {
		return nil, err
	}
	t := &Trainer{net: net, opt: opt, clip: o.Clip}
	if net.dev != nil {
		dt, err := newDevTrainer(net.dev, opt, o)
		if err != nil {
			return nil, err
		}
		t.dev = dt
	}
	return t, nil
}

// sameParams checks that the optimizer updates exactly the network's parameters.
func sameParams(net *Net, opt Optimizer) error {
	var ps []*Param
	switch o := opt.(type) {
	case *Adam:
		ps = o.params
	case *SGD:
		ps = o.params
	default:
		return fmt.Errorf("%w: optimizer %T is not Adam or SGD", ErrConfig, opt)
	}
	if len(ps) != len(net.params) {
		return fmt.Errorf("%w: the optimizer has %d parameters, the network %d", ErrConfig, len(ps), len(net.params))
	}
	for i, p := range ps {
		if p != net.params[i] {
			return fmt.Errorf("%w: the optimizer's parameter %d (%s) is not the network's (%s)", ErrConfig, i, p.Name, net.params[i].Name)
		}
	}
	return nil
}

// Step runs one training step with learning rate lr and returns its result; on a device
// it waits for every step submitted before too, and returns this one's.
func (t *Trainer) Step(lr float64) (StepResult, error) {
	if err := t.Submit(lr); err != nil {
		return StepResult{}, err
	}
	var r StepResult
	var err error
	for t.Pending() > 0 && err == nil {
		r, err = t.Wait()
	}
	return r, err
}

// Submit starts a training step with learning rate lr on the batch the caller has filled;
// the caller may refill the inputs and targets as soon as it returns. At most two steps
// are in flight: a third waits for the first (whose result Wait still returns).
func (t *Trainer) Submit(lr float64) error {
	if !(lr >= 0) || math.IsInf(lr, 0) {
		return fmt.Errorf("%w: learning rate %g", ErrConfig, lr)
	}
	t.opt.SetLR(lr)
	if t.dev != nil {
		return t.dev.submit(lr)
	}
	n := t.net
	n.Forward()
	n.Backward()
	var norm float64
	if t.clip > 0 {
		norm = ClipGradNorm(n.params, t.clip)
	} else {
		norm = gradNorm(n.params)
	}
	skip := !Finite(norm)
	if !skip {
		t.opt.Step()
	}
	t.done = append(t.done, StepResult{Loss: n.lossValue(), GradNorm: norm, Skipped: skip})
	return nil
}

// Pending is the number of submitted steps whose results Wait has not returned.
func (t *Trainer) Pending() int {
	if t.dev != nil {
		return len(t.dev.pending) + len(t.dev.done)
	}
	return len(t.done)
}

// errNothingPending reports a Wait without a submitted step.
var errNothingPending = errors.New("engine: no training step is pending")

// Wait returns the result of the oldest submitted step, waiting for it on a device. The
// loss layers' Value (and Parts, Terms) then describe that step.
func (t *Trainer) Wait() (StepResult, error) {
	if t.dev != nil {
		return t.dev.wait()
	}
	if len(t.done) == 0 {
		return StepResult{}, errNothingPending
	}
	r := t.done[0]
	t.done = append(t.done[:0], t.done[1:]...) // in place: a CPU step allocates nothing
	return r, nil
}

// ToHost waits for the pending steps and copies the parameters, their gradients, batch
// norm's running statistics and the optimizer's state from the device into their host
// slices (Param.Data and Grad, Net.Buffers, the optimizer's State), for a checkpoint; on
// the CPU there is nothing to do.
func (t *Trainer) ToHost() error {
	if t.dev == nil {
		return nil
	}
	if err := t.dev.drain(); err != nil {
		return err
	}
	return t.dev.dn.pullParams(t.dev.state)
}

// ToDevice copies the host parameters, batch norm state and optimizer state to the
// device (after restoring them from a checkpoint); on the CPU there is nothing to do.
func (t *Trainer) ToDevice() error {
	if t.dev == nil {
		return nil
	}
	if err := t.dev.drain(); err != nil {
		return err
	}
	return t.dev.dn.pushParams(t.dev.state, false)
}

// Close releases a trainer's device programs and staging memory (nothing on the CPU);
// pending steps are waited for.
func (t *Trainer) Close() {
	if t.dev != nil {
		_ = t.dev.drain()
		t.dev.free()
		t.dev = nil
	}
}

// Profile returns each layer's forward and backward device time in the last step, when
// the trainer was made with TrainOptions.Profile (nil otherwise, and on the CPU: use
// Net.Profile there).
func (t *Trainer) Profile() ([]LayerTime, error) {
	if t.dev == nil {
		return nil, nil
	}
	return t.dev.profile()
}

// gradNorm is the gradients' joint L2 norm.
func gradNorm(params []*Param) float64 {
	var s float64
	for _, p := range params {
		for _, g := range p.Grad {
			s += float64(g) * float64(g)
		}
	}
	return math.Sqrt(s)
}

// lossValue is the sum of the loss layers' values of the last forward pass.
func (n *Net) lossValue() float64 {
	var v float64
	for _, l := range n.layers {
		switch l := l.(type) {
		case *Loss:
			v += l.Value()
		case *HeadLoss:
			v += l.Value()
		case *RegressionLoss:
			v += l.Value()
		case *ImageLoss:
			v += l.Value()
		case *Objective:
			v += l.Value()
		case *Focal:
			v += l.Value()
		}
	}
	return v
}
