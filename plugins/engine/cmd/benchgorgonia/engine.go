//go:build linux

package main

import (
	"runtime"

	"amid/plugins/engine"
)

// engineNet is the benchmark network in the engine.
type engineNet struct {
	net  *engine.Net
	loss *engine.Loss
	opt  *engine.Adam
}

func newEngine(m model) (*engineNet, error) {
	be := engine.NewCPU(runtime.GOMAXPROCS(0))
	b := engine.NewBuilder(be, 1)
	in := b.Input(engine.Shape{N: m.Batch, C: 1, D: 1, H: m.Size, W: m.Size})
	k3, k1, p1, one := [3]int{1, 3, 3}, [3]int{1, 1, 1}, [3]int{0, 1, 1}, [3]int{1, 1, 1}
	two := [3]int{1, 2, 2}
	block := func(x *engine.Tensor, w int) *engine.Tensor {
		for range 2 {
			x = b.Norm(b.Conv(x, w, k3, one, p1, false), engine.Batch, 0.01)
		}
		return x
	}
	x := in
	var skips []*engine.Tensor
	for i, w := range m.Widths {
		if i > 0 {
			x = b.MaxPool(x, two)
		}
		x = block(x, w)
		skips = append(skips, x)
	}
	for i := len(m.Widths) - 2; i >= 0; i-- {
		// Upsampling and a 3×3 convolution where the reference has a transposed convolution.
		up := b.Conv(b.Upsample(x, two), m.Widths[i], k3, one, p1, false)
		x = block(b.Concat(up, skips[i]), m.Widths[i])
	}
	loss := b.SoftmaxLoss(b.Conv(x, m.Classes, k1, one, [3]int{}, false), 1, 0)
	net, err := b.Build()
	if err != nil {
		return nil, err
	}
	img, lab := batchData(m)
	copy(in.Data, img)
	if err := loss.SetLabels(lab); err != nil {
		return nil, err
	}
	return &engineNet{net: net, loss: loss, opt: engine.NewAdam(be, net.Params(), 1e-3)}, nil
}

func (e *engineNet) step() (float64, error) {
	e.net.Forward()
	e.net.Backward()
	e.opt.Step()
	return e.loss.Value(), nil
}

func (e *engineNet) params() int {
	n := 0
	for _, p := range e.net.Params() {
		n += len(p.Data)
	}
	return n
}
