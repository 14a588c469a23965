package engine

import (
	"fmt"

	"amid/plugins/engine/vk"
)

// Shape is a batch of images in NCDHW layout; a 2D image has D = 1.
type Shape struct{ N, C, D, H, W int }

// Spatial is the number of voxels of one channel.
func (s Shape) Spatial() int { return s.D * s.H * s.W }

// Sample is the number of values of one sample (all channels).
func (s Shape) Sample() int { return s.C * s.Spatial() }

// Len is the number of values of the whole batch.
func (s Shape) Len() int { return s.N * s.Sample() }

func (s Shape) String() string { return fmt.Sprintf("%d×%d×%d×%d×%d", s.N, s.C, s.D, s.H, s.W) }

func (s Shape) dims() [3]int { return [3]int{s.D, s.H, s.W} }

func (s Shape) valid() bool { return s.N > 0 && s.C > 0 && s.D > 0 && s.H > 0 && s.W > 0 }

// Tensor is an activation and its gradient. Sample n's values are
// Data[off+n·stride : off+n·stride+Shape.Sample()]; a tensor that is part of a channel
// concatenation shares its buffers with the concatenation (stride larger than its sample).
type Tensor struct {
	Shape Shape
	// Data and Grad are the whole underlying buffers (shared with a concatenation);
	// use Sample and GradSample to reach this tensor's values.
	Data, Grad []float32

	off, stride int
	root        *Tensor // the tensor owning the buffers; nil when this one does
	needGrad    bool
	// born is the index of the layer that writes the tensor (the number of layers when
	// it was made), from which an inference network plans its buffers.
	born int
	// input marks a tensor the caller fills (Builder.Input, a head's side input): on a
	// device it is uploaded before each forward pass.
	input bool
	// dd and dg are the device buffers of the root's values and gradient on a Vulkan
	// network (nil on the CPU).
	dd, dg *vk.Buffer
}

// Sample returns sample n's values (channels, then voxels).
func (t *Tensor) Sample(n int) []float32 {
	o := t.off + n*t.stride
	return t.Data[o : o+t.Shape.Sample()]
}

// GradSample returns the gradient of sample n.
func (t *Tensor) GradSample(n int) []float32 {
	o := t.off + n*t.stride
	return t.Grad[o : o+t.Shape.Sample()]
}

// Contiguous reports whether the samples follow each other without gaps.
func (t *Tensor) Contiguous() bool { return t.stride == t.Shape.Sample() && t.off == 0 }

func (t *Tensor) owner() *Tensor {
	if t.root != nil {
		return t.root
	}
	return t
}
