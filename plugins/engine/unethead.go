package engine

import "fmt"

// HeadUNet is a U-Net whose output is a dense head of raw values (heatmap logits, box
// sizes, class logits) and whose loss, if any, is an [Objective].
type HeadUNet struct {
	*Net
	Input *Tensor
	// Side is the head's side input (nil without): channels the caller fills, sample by
	// sample through Side.Sample, that join the U-Net's output before the head.
	Side   *Tensor
	Logits *Tensor
	// Objective is nil when the network was built without one (inference).
	Objective *Objective
}

// Head describes the layers between a U-Net's last stage and its output convolution.
type Head struct {
	// Hidden > 0 puts a convolution of Hidden channels (kernel of the first stage) with
	// normalisation and LeakyReLU before the 1×1 output convolution, as CenterNet's heads
	// have.
	Hidden int
	// Side > 0 joins Side channels of caller-given values (e.g. pixel coordinates) to the
	// U-Net's output before the head.
	Side int
}

// BuildUNetHead builds cfg as [BuildUNet] does, with cfg.Classes output channels (one or
// more) ending in an Objective computed by f instead of the softmax loss; f nil builds
// the network without a loss, for inference. With a zero head the parameters have the
// names and shapes of BuildUNet's for the same configuration, so ckpt checkpoints of
// either load into the other.
func BuildUNetHead(be Backend, cfg UNetConfig, head Head, n int, patch [3]int, seed uint64, f ObjectiveFunc) (*HeadUNet, error) {
	st := len(cfg.Widths)
	if st < 1 || cfg.Convs < 1 || cfg.In < 1 || cfg.Classes < 1 || head.Hidden < 0 || head.Side < 0 {
		return nil, fmt.Errorf("%w: U-Net needs stages, convolutions, input channels and an output channel", ErrConfig)
	}
	kernels, pools := cfg.Kernels, cfg.Pools
	if len(kernels) == 0 {
		kernels = make([][3]int, st)
		for i := range kernels {
			kernels[i] = [3]int{3, 3, 3}
			if patch[0] == 1 {
				kernels[i][0] = 1
			}
		}
	}
	if len(pools) == 0 {
		pools = make([][3]int, st-1)
		for i := range pools {
			for a := range 3 {
				pools[i][a] = 1
				if patch[a] > 1 {
					pools[i][a] = 2
				}
			}
		}
	}
	if len(kernels) != st || len(pools) != st-1 {
		return nil, fmt.Errorf("%w: U-Net with %d stages has %d kernels and %d pools", ErrConfig, st, len(kernels), len(pools))
	}
	b := NewBuilder(be, seed)
	u := &HeadUNet{Input: b.Input(Shape{n, cfg.In, patch[0], patch[1], patch[2]})}
	pad := func(k [3]int) [3]int { return [3]int{k[0] / 2, k[1] / 2, k[2] / 2} }
	one := [3]int{1, 1, 1}
	stage := func(x *Tensor, s int, first [3]int) *Tensor {
		for c := range cfg.Convs {
			stride := one
			if c == 0 {
				stride = first
			}
			x = b.Conv(x, cfg.Widths[s], kernels[s], stride, pad(kernels[s]), true)
			x = b.Norm(x, cfg.Norm, cfg.Slope)
		}
		return x
	}
	skips := make([]*Tensor, st)
	x := u.Input
	for s := range st {
		first := one
		if s > 0 {
			if cfg.MaxPool {
				x = b.MaxPool(x, pools[s-1])
			} else {
				first = pools[s-1]
			}
		}
		x = stage(x, s, first)
		skips[s] = x
	}
	for s := st - 2; s >= 0; s-- {
		up := b.ConvTranspose(x, cfg.Widths[s], pools[s], pools[s], [3]int{}, true)
		if b.Err() == nil && up.Shape.dims() != skips[s].Shape.dims() {
			return nil, fmt.Errorf("%w: patch %v is not divisible by the pooling at stage %d", ErrConfig, patch, s+1)
		}
		x = stage(b.Concat(up, skips[s]), s, one)
	}
	if head.Side > 0 {
		u.Side = b.tensor(Shape{n, head.Side, x.Shape.D, x.Shape.H, x.Shape.W}, true)
		x = b.Concat(x, u.Side)
	}
	if head.Hidden > 0 {
		x = b.Norm(b.Conv(x, head.Hidden, kernels[0], one, pad(kernels[0]), true), cfg.Norm, cfg.Slope)
	}
	u.Logits = b.Conv(x, cfg.Classes, one, one, [3]int{}, true)
	if f != nil {
		u.Objective = b.Objective(u.Logits, f)
	}
	net, err := b.Build()
	if err != nil {
		return nil, err
	}
	u.Net = net
	return u, nil
}

// HeadBias is the bias of the head's output channels (the last parameter of a
// [HeadUNet]), e.g. to start heatmap logits at a prior probability.
func (u *HeadUNet) HeadBias() []float32 {
	p := u.Params()
	return p[len(p)-1].Data
}
