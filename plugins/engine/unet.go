package engine

import "fmt"

// UNetConfig describes an nnU-Net style U-Net (PlainConvUNet): per stage, Convs
// convolutions each followed by normalisation and LeakyReLU; down-sampling by a strided
// first convolution or by max-pooling; up-sampling by a transposed convolution whose
// kernel equals its stride; skip connections by concatenation [up, skip]; a 1×1 head.
type UNetConfig struct {
	In, Classes int
	// Widths are the channels per stage, e.g. 32, 64, 128, 256.
	Widths []int
	// Kernels per stage (D, H, W); empty means 3×3×3, or 1×3×3 when the patch has D = 1.
	Kernels [][3]int
	// Pools per stage after the first: the down-sampling factor entering that stage;
	// empty means 2 on every axis longer than 1.
	Pools [][3]int
	// Convs per stage (nnU-Net: 2).
	Convs int
	// MaxPool down-samples with max-pooling instead of a strided convolution.
	MaxPool bool
	Norm    NormKind
	// Slope of LeakyReLU (nnU-Net: 0.01).
	Slope float64
}

// UNet is a built U-Net with its input, logits and loss.
type UNet struct {
	*Net
	Input  *Tensor
	Logits *Tensor
	Loss   *Loss
}

// BuildUNet builds cfg for a batch of n samples of the given patch (D, H, W; D = 1 for
// 2D), ending in softmax cross-entropy + Dice with weights 1 and 1.
func BuildUNet(be Backend, cfg UNetConfig, n int, patch [3]int, seed uint64) (*UNet, error) {
	st := len(cfg.Widths)
	if st < 1 || cfg.Convs < 1 || cfg.In < 1 || cfg.Classes < 2 {
		return nil, fmt.Errorf("%w: U-Net needs stages, convolutions, input channels and two classes or more", ErrConfig)
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
	u := &UNet{Input: b.Input(Shape{n, cfg.In, patch[0], patch[1], patch[2]})}
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
	u.Logits = b.Conv(x, cfg.Classes, one, one, [3]int{}, true)
	u.Loss = b.SoftmaxLoss(u.Logits, 1, 1)
	net, err := b.Build()
	if err != nil {
		return nil, err
	}
	u.Net = net
	return u, nil
}

// Flops is the number of floating-point operations of the matrix products of one
// training step (forward, weight and input gradients), the figure GFLOP/s are quoted in.
func (n *Net) Flops() float64 {
	var f float64
	for _, l := range n.layers {
		switch l := l.(type) {
		case *conv:
			m := 2 * float64(l.x.Shape.N) * float64(l.y.Shape.C) * float64(l.g.rows()) * float64(l.g.outS())
			f += 2 * m
			if l.x.needGrad {
				f += m
			}
		case *convT:
			m := 2 * float64(l.x.Shape.N) * float64(l.x.Shape.C) * float64(l.g.rows()) * float64(l.g.outS())
			f += 3 * m
		}
	}
	return f
}
