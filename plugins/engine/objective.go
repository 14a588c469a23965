package engine

import "math"

// ObjectiveFunc computes the loss of sample n from its output values x (channels, then
// voxels, as Tensor.Sample returns them) and writes the gradient of that loss with
// respect to x into dx, overwriting it. Different samples are computed concurrently, so
// it must only write dx and state of its own sample, and must not call Backend.Parallel.
type ObjectiveFunc func(n int, x, dx []float32) float64

// Objective is a loss layer whose per-sample value and gradient a caller's function
// computes: detection heads (heatmaps with focal loss, box regression, classes read at
// object centres) whose targets are not a class per voxel. Its value is the mean of the
// per-sample losses. It is the last layer of a network.
type Objective struct {
	be    Backend
	x     *Tensor
	f     ObjectiveFunc
	grad  []float32 // per-sample gradients, sample-major
	vals  []float64
	acc   bool
	fn    func(part, lo, hi int)
	value float64
	dv    *objectiveDev // on a Vulkan device
}

// Objective adds a loss computed by f on x.
func (b *Builder) Objective(x *Tensor, f ObjectiveFunc) *Objective {
	o := b.newObjective(x, f)
	b.layers = append(b.layers, o)
	return o
}

// newObjective makes an objective on x without adding it as a layer.
func (b *Builder) newObjective(x *Tensor, f ObjectiveFunc) *Objective {
	if f == nil {
		b.fail("objective on %v without a function", x.Shape)
	}
	o := &Objective{be: b.be, x: x, f: f, grad: make([]float32, x.Shape.Len()), vals: make([]float64, x.Shape.N)}
	b.scratch = append(b.scratch, o.grad)
	o.fn = o.run
	b.use(x, &o.acc)
	return o
}

// Value is the loss of the last forward pass.
func (o *Objective) Value() float64 { return o.value }

func (o *Objective) run(_, lo, hi int) {
	S := o.x.Shape.Sample()
	for n := lo; n < hi; n++ {
		o.vals[n] = o.f(n, o.x.Sample(n), o.grad[n*S:(n+1)*S])
	}
}

func (o *Objective) forward() {
	o.be.Parallel(o.x.Shape.N, o.fn)
	var s float64
	for _, v := range o.vals {
		s += v
	}
	o.value = s / float64(len(o.vals))
}

func (o *Objective) backward() {
	if !o.x.needGrad {
		return
	}
	N, S := o.x.Shape.N, o.x.Shape.Sample()
	k := float32(1 / float64(N))
	for n := range N {
		g, dx := o.grad[n*S:(n+1)*S], o.x.GradSample(n)
		if o.acc {
			for i, v := range g {
				dx[i] += k * v
			}
		} else {
			for i, v := range g {
				dx[i] = k * v
			}
		}
	}
}

// softplus is log(1 + e^v), computed without overflow.
func softplus(v float64) float64 {
	if v > 0 {
		return v + math.Log1p(math.Exp(-v))
	}
	return math.Log1p(math.Exp(v))
}
