package engine

import "fmt"

// ResUNet is a built residual U-Net for image-to-image tasks: the U-Net of a
// [UNetConfig] whose 1×1 head predicts a correction that is added to the input, ending in
// an [ImageLoss] against the target image.
type ResUNet struct {
	*Net
	Input *Tensor
	// Output is input + correction, the restored image.
	Output *Tensor
	Loss   *ImageLoss
}

// BuildResUNet builds cfg for a batch of n samples of the given patch (D, H, W; D = 1 for
// 2D). cfg.Classes is the number of output channels and must equal cfg.In (the residual
// connection adds the input channel by channel). The head's weights and bias start at
// zero, so the untrained network is the identity and training starts from the input
// itself.
func BuildResUNet(be Backend, cfg UNetConfig, n int, patch [3]int, seed uint64, loss ImageLossConfig) (*ResUNet, error) {
	if cfg.In < 1 || cfg.Classes != cfg.In {
		return nil, fmt.Errorf("%w: a residual U-Net has as many outputs as inputs, not %d and %d", ErrConfig, cfg.Classes, cfg.In)
	}
	b := NewBuilder(be, seed)
	u := &ResUNet{Input: b.Input(Shape{n, cfg.In, patch[0], patch[1], patch[2]})}
	x, err := b.UNetBody(u.Input, cfg)
	if err != nil {
		return nil, err
	}
	one := [3]int{1, 1, 1}
	head := b.Conv(x, cfg.Classes, one, one, [3]int{}, true)
	hw, hb := len(b.params)-2, len(b.params)-1
	u.Output = b.Add(u.Input, head)
	u.Loss = b.ImageLoss(u.Output, loss)
	net, err := b.Build()
	if err != nil {
		return nil, err
	}
	clear(net.params[hw].Data)
	clear(net.params[hb].Data)
	u.Net = net
	return u, nil
}

// UNetBody adds the encoder and decoder of the U-Net cfg describes (everything but its
// head) on x and returns the last decoder stage's features (cfg.Widths[0] channels at
// x's size). cfg.Classes is not used. It is the body [BuildUNet] builds, for networks
// with other heads.
func (b *Builder) UNetBody(x *Tensor, cfg UNetConfig) (*Tensor, error) {
	st := len(cfg.Widths)
	if st < 1 || cfg.Convs < 1 || cfg.In < 1 {
		return nil, fmt.Errorf("%w: U-Net needs stages, convolutions and input channels", ErrConfig)
	}
	if x.Shape.C != cfg.In {
		return nil, fmt.Errorf("%w: U-Net for %d input channels on a tensor of %d", ErrConfig, cfg.In, x.Shape.C)
	}
	patch := x.Shape.dims()
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
	return x, b.Err()
}
