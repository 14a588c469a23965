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
// either load into the other. ForInference among opts builds it to predict only.
func BuildUNetHead(be Backend, cfg UNetConfig, head Head, n int, patch [3]int, seed uint64, f ObjectiveFunc, opts ...Option) (*HeadUNet, error) {
	if len(cfg.Widths) < 1 || cfg.Convs < 1 || cfg.In < 1 || cfg.Classes < 1 || head.Hidden < 0 || head.Side < 0 {
		return nil, fmt.Errorf("%w: U-Net needs stages, convolutions, input channels and an output channel", ErrConfig)
	}
	b := NewBuilder(be, seed, opts...)
	u := &HeadUNet{Input: b.Input(Shape{n, cfg.In, patch[0], patch[1], patch[2]})}
	x, err := b.UNetBody(u.Input, cfg)
	if err != nil {
		return nil, err
	}
	one := [3]int{1, 1, 1}
	if head.Side > 0 {
		u.Side = b.tensor(Shape{n, head.Side, x.Shape.D, x.Shape.H, x.Shape.W}, true)
		u.Side.input = true
		x = b.Concat(x, u.Side)
	}
	if head.Hidden > 0 {
		// The first stage's kernel, as UNetBody chooses it.
		k := [3]int{3, 3, 3}
		if len(cfg.Kernels) > 0 {
			k = cfg.Kernels[0]
		} else if patch[0] == 1 {
			k[0] = 1
		}
		x = b.Norm(b.Conv(x, head.Hidden, k, one, [3]int{k[0] / 2, k[1] / 2, k[2] / 2}, true), cfg.Norm, cfg.Slope)
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
