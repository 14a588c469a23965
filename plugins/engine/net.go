package engine

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// ErrConfig reports a network description that cannot be built.
var ErrConfig = errors.New("engine: invalid network")

// ErrNotOnDevice reports a network a Vulkan device has no programs for (a layer without a
// Vulkan implementation, an output layout its kernels do not take) that the CPU builds: a
// lane goes on on the CPU (amid/plugins/internal/device). It wraps ErrConfig.
var ErrNotOnDevice = fmt.Errorf("%w on a Vulkan device", ErrConfig)

// Param is a trainable parameter and its gradient, in PyTorch's layout for the same layer.
type Param struct {
	Name  string
	Shape []int
	Data  []float32
	Grad  []float32
	// Decay says whether weight decay applies (weights yes, biases and norm scales no).
	Decay bool
	// aoff is the parameter's byte offset in a Vulkan network's parameter arenas.
	aoff int64
}

// layer is one step of a network; buffers are bound when the network is built.
type layer interface {
	forward()
	backward()
}

// trainer is a layer that behaves differently in training and inference.
type trainer interface{ setTraining(bool) }

// use is a consumer of a tensor's value; acc says whether its backward pass adds to the
// tensor's gradient (true) or overwrites it (false).
type use struct {
	t   *Tensor
	acc *bool
	at  int // the index of the layer that reads t
}

// workspace is scratch memory shared by layers that run one after the other: one buffer
// per worker of the backend.
type workspace struct {
	size int
	bufs [][]float32
}

// Builder describes a network layer by layer; Build allocates every buffer once.
type Builder struct {
	be      Backend
	rng     *rand.Rand
	tensors []*Tensor
	layers  []layer
	params  []*Param
	uses    []use
	ws      *workspace
	scratch [][]float32 // per-layer scratch, counted in Net.Bytes
	err     error
	// inference: built for forward passes only (ForInference).
	inference bool
	// tiling: how convolutions tile their columns (withTiling; the zero value is the
	// default).
	tiling tiling
}

// tiling says how a network's convolutions lay out their column matrices. The zero value
// is what every network uses; the engine's tests build networks with others (withTiling)
// to check each path against the others.
type tiling struct {
	// colBudget, when positive, replaces the column tile budget (colBudget): 1 makes
	// every tile one output row.
	colBudget int
	// columns turns off the folded path of stride-1 convolutions (newFolded), leaving the
	// column path.
	columns bool
}

// withTiling builds a network whose convolutions tile their columns as t says.
func withTiling(t tiling) Option { return func(b *Builder) { b.tiling = t } }

// Option is a way to build a network other than for training.
type Option func(*Builder)

// ForInference builds a network that only runs forward passes, with the memory one
// needs: no gradients and no scratch of the backward pass, and on the CPU an activation's
// buffer is taken again by a later one once every layer that reads it has run
// (planBuffers), where a training network keeps every activation for its backward pass.
// Its outputs are the tensors no layer reads and the inputs of its losses, which keep
// their buffers to the end. Such a network cannot train: Backward panics and NewTrainer
// refuses it. On a Vulkan device it is built as for training (its device memory is
// planned by the device side).
func ForInference(b *Builder) { b.inference = true }

// forwardOnly reports whether the network being built runs forward passes alone on the
// CPU, so that layers skip what only their backward pass needs.
func (b *Builder) forwardOnly() bool {
	_, onDevice := b.be.(*Vulkan)
	return b.inference && !onDevice
}

// partScratch returns one buffer of n values per worker but the first (which writes the
// result itself), for per-worker partial sums.
func (b *Builder) partScratch(n int) [][]float32 {
	s := make([][]float32, b.be.Workers())
	if b.forwardOnly() {
		return s // weight gradients only
	}
	for i := 1; i < len(s); i++ {
		s[i] = make([]float32, n)
		b.scratch = append(b.scratch, s[i])
	}
	return s
}

// NewBuilder starts a network whose parameters are initialised from seed, built for
// training unless an option says otherwise.
func NewBuilder(be Backend, seed uint64, opts ...Option) *Builder {
	b := &Builder{be: be, rng: rand.New(rand.NewPCG(seed, 0x616d6964)), ws: &workspace{}}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Err is the first error met while describing the network.
func (b *Builder) Err() error { return b.err }

func (b *Builder) fail(format string, args ...any) {
	if b.err == nil {
		b.err = fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
}

func (b *Builder) tensor(s Shape, grad bool) *Tensor {
	if !s.valid() {
		b.fail("tensor shape %v has a zero or negative size", s)
		s = Shape{1, 1, 1, 1, 1}
	}
	t := &Tensor{Shape: s, stride: s.Sample(), needGrad: grad, born: len(b.layers)}
	b.tensors = append(b.tensors, t)
	return t
}

// Input adds a tensor the caller fills before Forward; it gets no gradient.
func (b *Builder) Input(s Shape) *Tensor {
	t := b.tensor(s, false)
	t.input = true
	return t
}

// use registers the layer being built (the next one) as a reader of t.
func (b *Builder) use(t *Tensor, acc *bool) { b.uses = append(b.uses, use{t, acc, len(b.layers)}) }

func (b *Builder) param(name string, shape []int, decay bool) *Param {
	n := 1
	for _, d := range shape {
		n *= d
	}
	p := &Param{Name: name, Shape: shape, Data: make([]float32, n), Decay: decay}
	if !b.forwardOnly() {
		p.Grad = make([]float32, n)
	}
	b.params = append(b.params, p)
	return p
}

// kaiming fills p with N(0, 2/((1+a²)·fanIn)), PyTorch's kaiming_normal_ with
// LeakyReLU slope a as nnU-Net initialises its convolutions.
func (b *Builder) kaiming(p *Param, fanIn int, a float64) {
	if v, ok := b.be.(*Vulkan); ok && v.dev.Sizing() {
		return // a network that is only sized needs no values
	}
	std := math.Sqrt(2 / ((1 + a*a) * float64(fanIn)))
	for i := range p.Data {
		p.Data[i] = float32(b.rng.NormFloat64() * std)
	}
}

func (b *Builder) name(kind string) string { return fmt.Sprintf("%d.%s", len(b.layers), kind) }

// Net is a built network: Forward, Backward, then an optimizer step on Params.
type Net struct {
	be     Backend
	layers []layer
	params []*Param
	zero   [][]float32
	zeroT  []*Tensor // the roots of zero, for a device
	ws     *workspace
	bytes  int64
	// inference: built for forward passes only (ForInference), with no gradients.
	inference bool
	// tensors are every tensor of the network; dev is its device side on a Vulkan
	// backend (nil on the CPU).
	tensors  []*Tensor
	dev      *devNet
	training bool
	// prof, when set, holds each layer's accumulated forward and backward time.
	prof []LayerTime
}

// LayerTime is the time one layer spent in Forward and Backward since profiling began.
type LayerTime struct {
	Layer             string // the layer's kind and output shape
	Forward, Backward time.Duration
}

// Profile starts (on) or stops timing every layer of Forward and Backward; starting
// resets the times. Profiling reads the clock twice per layer and allocates nothing.
func (n *Net) Profile(on bool) {
	if !on {
		n.prof = nil
		return
	}
	n.prof = make([]LayerTime, len(n.layers))
	for i, l := range n.layers {
		n.prof[i].Layer = describe(l)
	}
}

// Profiled is a copy of the layer times since Profile(true), in layer order.
func (n *Net) Profiled() []LayerTime { return append([]LayerTime(nil), n.prof...) }

// describe names a layer by its kind and, where it has one, its output shape.
func describe(l layer) string {
	if s, ok := l.(fmt.Stringer); ok {
		return s.String()
	}
	kind := strings.TrimPrefix(fmt.Sprintf("%T", l), "*engine.")
	if o, ok := l.(interface{ output() *Tensor }); ok && o.output() != nil {
		return fmt.Sprintf("%s %v", kind, o.output().Shape)
	}
	return kind
}

// Build allocates every buffer and returns the network.
func (b *Builder) Build() (*Net, error) {
	if b.err != nil {
		return nil, b.err
	}
	n := &Net{be: b.be, layers: b.layers, params: b.params, ws: b.ws, tensors: b.tensors, training: true}
	v, onDevice := b.be.(*Vulkan)
	if b.forwardOnly() {
		n.bytes = b.planBuffers()
		n.inference = true
	}
	for _, t := range b.tensors {
		if t.root != nil || onDevice || n.inference {
			// A device network's memory is allocated below (host memory only for inputs
			// and outputs read back); an inference network's was planned.
			continue
		}
		t.Data = make([]float32, t.Shape.Len())
		n.bytes += int64(4 * len(t.Data))
		if t.needGrad {
			t.Grad = make([]float32, t.Shape.Len())
			n.bytes += int64(4 * len(t.Grad))
		}
	}
	for _, t := range b.tensors {
		if r := t.root; r != nil {
			t.Data, t.Grad, t.needGrad = r.Data, r.Grad, r.needGrad
		}
	}
	// The consumer registered last runs its backward pass first: it overwrites the
	// gradient and the others add to it. When that consumer sees only part of the buffer
	// (a view into a concatenation) every consumer adds and the buffer is zeroed per step.
	last := map[*Tensor]int{}
	for i, u := range b.uses {
		last[u.t.owner()] = i
	}
	for i, u := range b.uses {
		*u.acc = true
		if last[u.t.owner()] == i && u.t.root == nil {
			*u.acc = false
		}
	}
	for _, r := range b.tensors {
		if i, ok := last[r]; ok && r.root == nil && b.uses[i].t.root != nil && r.needGrad {
			n.zero = append(n.zero, r.Grad)
			n.zeroT = append(n.zeroT, r)
		}
	}
	if onDevice {
		dn, err := newDevNet(v, n)
		if err != nil {
			return nil, err
		}
		n.dev = dn
		return n, nil
	}
	for range b.be.Workers() {
		b.ws.bufs = append(b.ws.bufs, make([]float32, b.ws.size))
		n.bytes += int64(4 * b.ws.size)
	}
	for _, s := range b.scratch {
		n.bytes += int64(4 * len(s))
	}
	for _, p := range b.params {
		n.bytes += int64(4 * (len(p.Data) + len(p.Grad)))
	}
	if n.inference {
		n.SetTraining(false)
	}
	return n, nil
}

// Forward runs the network on its input tensors. A network on a Vulkan device runs
// through a [Trainer] or a [Predictor] instead (calling Forward on one is a programming
// error and panics).
func (n *Net) Forward() {
	n.onHost("Forward")
	if n.prof != nil {
		for i, l := range n.layers {
			t := time.Now()
			l.forward()
			n.prof[i].Forward += time.Since(t)
		}
		return
	}
	for _, l := range n.layers {
		l.forward()
	}
}

// Backward computes every parameter's gradient from the loss (the last layer). Gradients
// are overwritten, not accumulated across calls. Like Forward it is for the CPU.
func (n *Net) Backward() {
	n.onHost("Backward")
	if n.inference {
		panic("engine: Backward on a network built for inference")
	}
	for _, z := range n.zero {
		clear(z)
	}
	for i := len(n.layers) - 1; i >= 0; i-- {
		if n.prof != nil {
			t := time.Now()
			n.layers[i].backward()
			n.prof[i].Backward += time.Since(t)
			continue
		}
		n.layers[i].backward()
	}
}

// onHost panics when a host-only method is called on a device network.
func (n *Net) onHost(what string) {
	if n.dev != nil {
		panic("engine: " + what + " on a network on a Vulkan device: use a Trainer or a Predictor")
	}
}

// Backend is the backend the network was built on.
func (n *Net) Backend() Backend { return n.be }

// Params are the trainable parameters in the order they were created.
func (n *Net) Params() []*Param { return n.params }

// Bytes is the memory held by activations, gradients, parameters and workspace: on a
// device, the device memory ([Net.DeviceBytes]).
func (n *Net) Bytes() int64 { return n.bytes }

// SetTraining switches layers with different inference behaviour (batch norm).
func (n *Net) SetTraining(on bool) {
	n.training = on
	for _, l := range n.layers {
		if t, ok := l.(trainer); ok {
			t.setTraining(on)
		}
	}
}

// The output of layers that have one, for Profile's descriptions.
func (l *convT) output() *Tensor   { return l.y }
func (l *norm) output() *Tensor    { return l.y }
func (l *maxPool) output() *Tensor { return l.y }
func (l *gap) output() *Tensor     { return l.y }
func (l *dense) output() *Tensor   { return l.y }

// String describes a convolution as its channels, kernel, stride and output shape.
func (l *conv) String() string {
	return fmt.Sprintf("conv %d→%d k%v s%v %v", l.x.Shape.C, l.y.Shape.C, l.g.k, l.g.s, l.y.Shape)
}
