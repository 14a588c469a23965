package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// probe ends a test network with the scalar L = Σ w·y over its input y, w fixed random.
type probe struct {
	y   *Tensor
	w   []float64
	acc bool
}

func (p *probe) value() float64 {
	var s float64
	for n := range p.y.Shape.N {
		for i, v := range p.y.Sample(n) {
			s += p.w[n*p.y.Shape.Sample()+i] * float64(v)
		}
	}
	return s
}

func (p *probe) forward() {}

func (p *probe) backward() {
	for n := range p.y.Shape.N {
		g := p.y.GradSample(n)
		for i := range g {
			g[i] = float32(p.w[n*p.y.Shape.Sample()+i])
		}
	}
}

// gradCase checks a sub-network's gradients against central differences.
type gradCase struct {
	name  string
	in    Shape
	build func(b *Builder, x *Tensor) *Tensor
	// loss, when set, replaces the probe: the sub-network ends in a Loss.
	loss func(b *Builder, x *Tensor) *Loss
	// h is the finite-difference step, tol the allowed |numeric − analytic| per unit of
	// max(1, |analytic|).
	h, tol float64
}

// Tolerances: the network runs in float32 while the differences are formed in float64 from
// float32 outputs. With O(1) values each output carries a rounding error near 6e-8·|y|; a
// few hundred outputs sum to about 1e-5 of error in L, which a step of 1e-2 turns into about
// 1e-3 in the derivative; the truncation error h²·L”'/6 is below 1e-4 for these smooth
// layers. 1e-2 leaves a margin of about ten. Piecewise-linear layers (LeakyReLU, max-pool)
// have no truncation error away from their kinks; the fixed seeds keep every probed
// point more than h from a kink.
const (
	stdStep = 1e-2
	stdTol  = 1e-2
)

func runGradCase(t *testing.T, tc gradCase, opts ...Option) {
	t.Helper()
	be := NewCPU(2)
	b := NewBuilder(be, 7, opts...)
	x := b.tensor(tc.in, true)
	var pr *probe
	var loss *Loss
	if tc.loss != nil {
		loss = tc.loss(b, x)
	} else {
		y := tc.build(b, x)
		pr = &probe{y: y}
		b.use(y, &pr.acc)
		b.layers = append(b.layers, pr)
	}
	net, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64())
	}
	if pr != nil {
		pr.w = make([]float64, pr.y.Shape.Len())
		for i := range pr.w {
			pr.w[i] = r.NormFloat64()
		}
	} else {
		lab := make([]int32, x.Shape.N*x.Shape.Spatial())
		for i := range lab {
			lab[i] = int32(r.IntN(x.Shape.C))
		}
		if err := loss.SetLabels(lab); err != nil {
			t.Fatal(err)
		}
	}
	// Biases and norm parameters start at 0 and 1: move them so that their gradients are
	// checked at a generic point.
	for _, p := range net.Params() {
		if !p.Decay {
			for i := range p.Data {
				p.Data[i] += float32(0.3 * r.NormFloat64())
			}
		}
	}
	value := func() float64 {
		net.Forward()
		if loss != nil {
			return loss.Value()
		}
		return pr.value()
	}
	value()
	net.Backward()
	type target struct {
		name       string
		data, grad []float32
	}
	targets := []target{{"input", x.Data, append([]float32(nil), x.Grad...)}}
	for _, p := range net.Params() {
		targets = append(targets, target{p.Name, p.Data, append([]float32(nil), p.Grad...)})
	}
	for _, tg := range targets {
		for _, i := range pick(r, len(tg.data), 24) {
			old := tg.data[i]
			tg.data[i] = old + float32(tc.h)
			up := value()
			tg.data[i] = old - float32(tc.h)
			down := value()
			tg.data[i] = old
			num := (up - down) / (2 * tc.h)
			ana := float64(tg.grad[i])
			if d := math.Abs(num - ana); d > tc.tol*max(1, math.Abs(ana)) {
				t.Errorf("%s: d/d%s[%d]: analytic %.6g, numeric %.6g", tc.name, tg.name, i, ana, num)
			}
		}
	}
}

// pick returns up to k distinct indices below n.
func pick(r *rand.Rand, n, k int) []int {
	if n <= k {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	return r.Perm(n)[:k]
}

func TestGradients(t *testing.T) {
	k3 := [3]int{1, 3, 3}
	p1 := [3]int{0, 1, 1}
	one := [3]int{1, 1, 1}
	cases := []gradCase{
		{name: "conv2d 3×3", in: Shape{2, 3, 1, 6, 7}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.Conv(x, 4, k3, one, p1, true)
		}},
		{name: "conv2d 3×3 stride 2", in: Shape{2, 2, 1, 7, 6}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.Conv(x, 3, k3, [3]int{1, 2, 2}, p1, true)
		}},
		{name: "conv2d 5×3 no padding", in: Shape{1, 2, 1, 7, 6}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.Conv(x, 3, [3]int{1, 5, 3}, one, [3]int{}, false)
		}},
		{name: "conv3d 3×3×3", in: Shape{2, 2, 4, 5, 3}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.Conv(x, 3, [3]int{3, 3, 3}, one, one, true)
		}},
		{name: "conv3d 5×3×1 padding 1×1×0", in: Shape{2, 3, 5, 4, 3}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.Conv(x, 2, [3]int{5, 3, 1}, one, [3]int{1, 1, 0}, false)
		}},
		{name: "conv3d 2×1×1 no padding", in: Shape{2, 2, 3, 2, 3}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.Conv(x, 3, [3]int{2, 1, 1}, one, [3]int{}, true)
		}},
		{name: "conv3d 1×3×3 stride 1×2×2", in: Shape{2, 2, 3, 5, 6}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.Conv(x, 3, k3, [3]int{1, 2, 2}, p1, true)
		}},
		{name: "conv3d 3×3×3 stride 2", in: Shape{1, 2, 5, 4, 5}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.Conv(x, 2, [3]int{3, 3, 3}, [3]int{2, 2, 2}, one, true)
		}},
		{name: "conv 1×1", in: Shape{2, 5, 2, 3, 3}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.Conv(x, 3, one, one, [3]int{}, true)
		}},
		{name: "transposed conv2d 2×2 stride 2", in: Shape{2, 3, 1, 3, 4}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.ConvTranspose(x, 2, [3]int{1, 2, 2}, [3]int{1, 2, 2}, [3]int{}, true)
		}},
		{name: "transposed conv3d 2×2×2 stride 2", in: Shape{2, 3, 2, 3, 2}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.ConvTranspose(x, 2, [3]int{2, 2, 2}, [3]int{2, 2, 2}, [3]int{}, true)
		}},
		{name: "transposed conv2d 3×3 stride 2 padding 1", in: Shape{1, 2, 1, 3, 4}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.ConvTranspose(x, 3, k3, [3]int{1, 2, 2}, p1, false)
		}},
		{name: "max-pool 2×2", in: Shape{2, 3, 1, 6, 5}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.MaxPool(x, [3]int{1, 2, 2})
		}},
		{name: "max-pool 2×2×2", in: Shape{2, 2, 4, 4, 6}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.MaxPool(x, [3]int{2, 2, 2})
		}},
		{name: "instance norm + LeakyReLU", in: Shape{2, 3, 2, 3, 4}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.Norm(x, Instance, 0.01)
		}},
		{name: "instance norm", in: Shape{2, 3, 1, 4, 4}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.Norm(x, Instance, -1)
		}},
		// A step in β moves all 36 outputs of the channel by h, so a step of 1e-2 crosses a
		// LeakyReLU kink; 1e-3 does not, at ten times the rounding error (about 1e-2).
		{name: "batch norm + LeakyReLU", in: Shape{3, 2, 1, 3, 4}, h: 1e-3, tol: 2e-2, build: func(b *Builder, x *Tensor) *Tensor {
			return b.Norm(x, Batch, 0.01)
		}},
		{name: "skip: conv, pool, up, concat", in: Shape{2, 2, 1, 4, 4}, build: func(b *Builder, x *Tensor) *Tensor {
			a := b.Conv(x, 3, k3, one, p1, true)
			p := b.MaxPool(a, [3]int{1, 2, 2})
			u := b.ConvTranspose(p, 2, [3]int{1, 2, 2}, [3]int{1, 2, 2}, [3]int{}, true)
			return b.Conv(b.Concat(u, a), 2, k3, one, p1, true)
		}},
		{name: "global average pool + dense", in: Shape{3, 4, 2, 2, 3}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.Dense(b.GlobalAvgPool(x), 3)
		}},
		{name: "dense on a concatenation part", in: Shape{2, 3, 1, 2, 2}, build: func(b *Builder, x *Tensor) *Tensor {
			a := b.Conv(x, 2, one, one, [3]int{}, false)
			c := b.Conv(x, 1, one, one, [3]int{}, false)
			b.Concat(a, c)
			return b.Dense(a, 2)
		}},
		{name: "softmax cross-entropy", in: Shape{2, 3, 1, 3, 4}, loss: func(b *Builder, x *Tensor) *Loss {
			return b.SoftmaxLoss(x, 1, 0)
		}},
		{name: "soft Dice", in: Shape{2, 3, 2, 2, 3}, loss: func(b *Builder, x *Tensor) *Loss {
			return b.SoftmaxLoss(x, 0, 1)
		}},
		{name: "cross-entropy + Dice", in: Shape{2, 4, 1, 4, 4}, loss: func(b *Builder, x *Tensor) *Loss {
			return b.SoftmaxLoss(x, 1, 1)
		}},
	}
	for _, budget := range []int{colBudget, 1} {
		// A budget of 1 makes every column tile one output row.
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/budget %d", tc.name, budget), func(t *testing.T) {
				if tc.h == 0 {
					tc.h, tc.tol = stdStep, stdTol
				}
				runGradCase(t, tc, withTiling(tiling{colBudget: budget}))
			})
		}
	}
}
