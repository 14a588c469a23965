// Package cnn is what AMID's image-level plugins (classification, image quality) share: a
// convolutional encoder on the engine with global pooling and a dense head ([Build]),
// reading a case's image onto a fixed grid ([Load]), intensity normalisation ([Intensity]),
// batches with augmentation from images in memory ([Fill]), and ensembles of one model per
// fold ([Ensemble]). Their training loop is amid/plugins/internal/training's.
package cnn

import (
	"fmt"

	"amid/plugins/engine"
)

// Arch describes an encoder: per stage Convs convolutions 3×3(×3) each followed by
// normalisation and LeakyReLU, the first of every stage after the first with stride 2 on
// each axis longer than one voxel; then global average pooling ("avg") or the final map
// flattened ("flatten", which keeps where features are), and a dense layer to Outputs.
type Arch struct {
	In      int     `json:"in"`
	Outputs int     `json:"outputs"`
	Widths  []int   `json:"widths"`
	Convs   int     `json:"convs"`
	Norm    string  `json:"norm"` // "batch" or "instance"
	Pool    string  `json:"pool"` // "avg" or "flatten"
	Slope   float64 `json:"slope"`
}

// Check reports the first field of a that cannot be built.
func (a Arch) Check() error {
	switch {
	case a.In < 1 || a.Outputs < 1:
		return fmt.Errorf("%w: %d input channels and %d outputs", engine.ErrConfig, a.In, a.Outputs)
	case len(a.Widths) == 0 || len(a.Widths) > 8:
		return fmt.Errorf("%w: %d stages, want 1 to 8", engine.ErrConfig, len(a.Widths))
	case a.Convs < 1 || a.Convs > 4:
		return fmt.Errorf("%w: %d convolutions per stage, want 1 to 4", engine.ErrConfig, a.Convs)
	case a.Norm != "batch" && a.Norm != "instance":
		return fmt.Errorf("%w: norm %q is not batch or instance", engine.ErrConfig, a.Norm)
	case a.Pool != "avg" && a.Pool != "flatten":
		return fmt.Errorf("%w: pool %q is not avg or flatten", engine.ErrConfig, a.Pool)
	}
	for _, w := range a.Widths {
		if w < 1 || w > 1024 {
			return fmt.Errorf("%w: stage width %d outside 1..1024", engine.ErrConfig, w)
		}
	}
	return nil
}

// UNet is the architecture record a checkpoint (amid/plugins/engine/ckpt) keeps and
// compares: the input channels, outputs as classes, widths, convolutions, norm and slope;
// MaxPool records a flattened head.
func (a Arch) UNet() engine.UNetConfig {
	n := engine.Instance
	if a.Norm == "batch" {
		n = engine.Batch
	}
	return engine.UNetConfig{In: a.In, Classes: a.Outputs, Widths: a.Widths, Convs: a.Convs, Norm: n, Slope: a.Slope, MaxPool: a.Pool == "flatten"}
}

// Model is a built encoder with its input (N×In×D×H×W) and outputs (N×Outputs).
type Model struct {
	*engine.Net
	Input *engine.Tensor
	Out   *engine.Tensor
	pred  *engine.Predictor // Infer's, made on first use
}

// Close frees the model's device memory (nothing on the CPU).
func (m *Model) Close() {
	if m.pred != nil {
		m.pred.Close()
		m.pred = nil
	}
	m.Free()
}

// Build builds a for a batch of n samples of the given shape (D, H, W; D = 1 for 2D)
// with parameters drawn from seed; loss, when not nil, adds the loss layer on the outputs;
// engine.ForInference among opts builds it to predict only.
func Build(be engine.Backend, a Arch, n int, shape [3]int, seed uint64, loss func(b *engine.Builder, out *engine.Tensor), opts ...engine.Option) (*Model, error) {
	if err := a.Check(); err != nil {
		return nil, err
	}
	b := engine.NewBuilder(be, seed, opts...)
	m := &Model{Input: b.Input(engine.Shape{N: n, C: a.In, D: shape[0], H: shape[1], W: shape[2]})}
	kind := engine.Instance
	if a.Norm == "batch" {
		kind = engine.Batch
	}
	k, pad, one := [3]int{3, 3, 3}, [3]int{1, 1, 1}, [3]int{1, 1, 1}
	if shape[0] == 1 {
		k[0], pad[0] = 1, 0
	}
	x := m.Input
	for s, w := range a.Widths {
		for c := range a.Convs {
			stride := one
			if s > 0 && c == 0 {
				d := [3]int{x.Shape.D, x.Shape.H, x.Shape.W}
				for ax := range 3 {
					if d[ax] > 1 {
						stride[ax] = 2
					}
				}
			}
			x = b.Conv(x, w, k, stride, pad, true)
			x = b.Norm(x, kind, a.Slope)
		}
	}
	if a.Pool == "avg" {
		x = b.GlobalAvgPool(x)
	}
	m.Out = b.Dense(x, a.Outputs)
	if loss != nil {
		loss(b, m.Out)
	}
	net, err := b.Build()
	if err != nil {
		return nil, err
	}
	m.Net = net
	return m, nil
}
