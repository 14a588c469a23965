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
// itself. ForInference among opts builds it to predict only.
func BuildResUNet(be Backend, cfg UNetConfig, n int, patch [3]int, seed uint64, loss ImageLossConfig, opts ...Option) (*ResUNet, error) {
	if cfg.In < 1 || cfg.Classes != cfg.In {
		return nil, fmt.Errorf("%w: a residual U-Net has as many outputs as inputs, not %d and %d", ErrConfig, cfg.Classes, cfg.In)
	}
	b := NewBuilder(be, seed, opts...)
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
