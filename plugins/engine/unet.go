package engine

import (
	"fmt"
	"math"
)

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
	// DeepSupervision adds a 1×1 head and a loss to the decoder stages below full
	// resolution, on labels down-sampled by nearest voxel (UNet.SetLabels). Output i (0:
	// full resolution) of the n = stages−1 decoder outputs weighs 2^−i, the lowest one 0
	// (so it gets no head), all normalised to sum to 1 (nnU-Net).
	DeepSupervision bool
	// Position is the number of position planes (UNet.Position) the head takes beside the
	// body's features, through a 1×1 convolution of PositionWidth channels: where a
	// voxel lies enters after the body's last normalisation, which would erase it (an
	// instance norm removes whatever is constant over a patch). 0: none.
	Position int `json:",omitempty"`
}

// PositionWidth is the channels the position planes are mapped to before the head.
const PositionWidth = 16

// DeepSupervisionWeights are the loss weights of the decoder outputs of a U-Net of the
// given stages with deep supervision, full resolution first (see UNetConfig).
func DeepSupervisionWeights(stages int) []float64 {
	n := max(stages-1, 1)
	w := make([]float64, n)
	var sum float64
	for i := range w {
		if i == n-1 && n > 1 {
			break
		}
		w[i] = math.Ldexp(1, -i)
		sum += w[i]
	}
	for i := range w {
		w[i] /= sum
	}
	return w
}

// UNet is a built U-Net with its input, logits and loss.
type UNet struct {
	*Net
	Input *Tensor
	// Position holds the position planes of each sample (cfg.Position of them, at the
	// input's size), nil without.
	Position *Tensor
	Logits   *Tensor
	// Loss is the full-resolution loss; with deep supervision Aux are the losses of the
	// lower-resolution outputs, highest resolution first, and Factor their down-sampling
	// factors (D, H, W) relative to the input.
	Loss   *Loss
	Aux    []*Loss
	Factor [][3]int
	scr    []int32
}

// SetLabels sets the class of every voxel of the input (N × D·H·W, sample-major) as the
// target of the loss and, down-sampled by nearest voxel (the voxel at the first corner of
// each block), of every auxiliary loss.
func (u *UNet) SetLabels(labels []int32) error {
	if err := u.Loss.SetLabels(labels); err != nil {
		return err
	}
	in := u.Input.Shape
	for j, l := range u.Aux {
		f, s := u.Factor[j], l.x.Shape
		u.scr = u.scr[:0]
		for n := range s.N {
			for d := range s.D {
				for h := range s.H {
					row := ((n*in.D+d*f[0])*in.H + h*f[1]) * in.W
					for w := range s.W {
						u.scr = append(u.scr, labels[row+w*f[2]])
					}
				}
			}
		}
		if err := l.SetLabels(u.scr); err != nil {
			return err
		}
	}
	return nil
}

// Value is the loss of the last forward pass: the full-resolution loss plus, with deep
// supervision, the auxiliary ones, each weighted.
func (u *UNet) Value() float64 {
	v := u.Loss.Value()
	for _, l := range u.Aux {
		v += l.Value()
	}
	return v
}

// BuildUNet builds cfg for a batch of n samples of the given patch (D, H, W; D = 1 for
// 2D), ending in softmax cross-entropy + Dice with weights 1 and 1. ForInference among
// opts builds it to predict only.
func BuildUNet(be Backend, cfg UNetConfig, n int, patch [3]int, seed uint64, opts ...Option) (*UNet, error) {
	st := len(cfg.Widths)
	if st < 1 || cfg.Convs < 1 || cfg.In < 1 || cfg.Classes < 2 {
		return nil, fmt.Errorf("%w: U-Net needs stages, convolutions, input channels and two classes or more", ErrConfig)
	}
	b := NewBuilder(be, seed, opts...)
	u := &UNet{Input: b.Input(Shape{n, cfg.In, patch[0], patch[1], patch[2]})}
	one := [3]int{1, 1, 1}
	ds := DeepSupervisionWeights(st)
	if !cfg.DeepSupervision {
		ds = []float64{1}
	}
	// The auxiliary heads follow their decoder stage, so that the layers, and with them
	// the parameters' names and initial values, keep their order.
	var auxLevels []int
	f, err := b.UNetLevels(u.Input, cfg, func(s int, x *Tensor) {
		if s > 0 && s < len(ds) && ds[s] > 0 {
			head := b.Conv(x, cfg.Classes, one, one, [3]int{}, true)
			u.Aux = append([]*Loss{b.SoftmaxLoss(head, ds[s], ds[s])}, u.Aux...)
			auxLevels = append([]int{s}, auxLevels...)
		}
	})
	if err != nil {
		return nil, err
	}
	for _, s := range auxLevels {
		u.Factor = append(u.Factor, f.Factors[s])
	}
	feat := f.Levels[0]
	if cfg.Position > 0 {
		u.Position = b.Input(Shape{n, cfg.Position, patch[0], patch[1], patch[2]})
		feat = b.Concat(feat, b.Conv(u.Position, PositionWidth, one, one, [3]int{}, true))
	}
	u.Logits = b.Conv(feat, cfg.Classes, one, one, [3]int{}, true)
	u.Loss = b.SoftmaxLoss(u.Logits, ds[0], ds[0])
	net, err := b.Build()
	if err != nil {
		return nil, err
	}
	u.Net = net
	if len(u.Aux) > 0 {
		u.scr = make([]int32, 0, u.Aux[0].x.Shape.N*u.Aux[0].x.Shape.Spatial())
	}
	return u, nil
}

// UNetFeatures are the outputs of a U-Net body's levels, level 0 at full resolution.
type UNetFeatures struct {
	// Levels[s] is the output of the decoder stage of level s (cfg.Widths[s] channels),
	// for s below the last level; the last level's is the bottleneck, the encoder's last
	// stage. Levels[0] is the body's output.
	Levels []*Tensor
	// Factors[s] is the down-sampling factor (D, H, W) of level s relative to the input.
	Factors [][3]int
}

// Bottleneck is the output of the encoder's last stage, the lowest level.
func (f *UNetFeatures) Bottleneck() *Tensor { return f.Levels[len(f.Levels)-1] }

// UNetBody adds the encoder and decoder of the U-Net cfg describes (everything but its
// head) on x and returns the last decoder stage's features (cfg.Widths[0] channels at
// x's size). cfg.Classes is not used. It is the body [BuildUNet] builds, for networks
// with other heads.
func (b *Builder) UNetBody(x *Tensor, cfg UNetConfig) (*Tensor, error) {
	f, err := b.UNetLevels(x, cfg, nil)
	if err != nil {
		return nil, err
	}
	return f.Levels[0], nil
}

// UNetLevels builds the body [Builder.UNetBody] builds and returns the outputs of all its
// levels. After each decoder stage, from the lowest level up, it calls at (when not nil)
// with the stage's level and output, so that the layers at adds there (e.g. deep
// supervision's heads) come right after that stage, before the next level's
// up-sampling.
func (b *Builder) UNetLevels(x *Tensor, cfg UNetConfig, at func(level int, x *Tensor)) (*UNetFeatures, error) {
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
	f := &UNetFeatures{Levels: make([]*Tensor, st), Factors: make([][3]int, st)}
	f.Factors[0] = [3]int{1, 1, 1}
	for s, p := range pools {
		for a := range 3 {
			f.Factors[s+1][a] = f.Factors[s][a] * p[a]
		}
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
	f.Levels[st-1] = x
	for s := st - 2; s >= 0; s-- {
		up := b.ConvTranspose(x, cfg.Widths[s], pools[s], pools[s], [3]int{}, true)
		if b.Err() == nil && up.Shape.dims() != skips[s].Shape.dims() {
			return nil, fmt.Errorf("%w: patch %v is not divisible by the pooling at stage %d", ErrConfig, patch, s+1)
		}
		x = stage(b.Concat(up, skips[s]), s, one)
		f.Levels[s] = x
		if at != nil {
			at(s, x)
		}
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	return f, nil
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
