package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestAddGradients(t *testing.T) {
	k3, p1, one := [3]int{1, 3, 3}, [3]int{0, 1, 1}, [3]int{1, 1, 1}
	for _, tc := range []gradCase{
		{name: "residual: conv + input", in: Shape{2, 2, 1, 5, 4}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.Add(b.Conv(x, 2, k3, one, p1, true), x)
		}},
		{name: "sum of a tensor with itself", in: Shape{2, 3, 1, 3, 3}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.Add(x, x)
		}},
		{name: "sum of concatenation parts", in: Shape{2, 2, 1, 4, 3}, build: func(b *Builder, x *Tensor) *Tensor {
			a := b.Conv(x, 2, one, one, [3]int{}, false)
			c := b.Conv(x, 2, k3, one, p1, false)
			b.Concat(a, c)
			return b.Conv(b.Add(a, c), 1, one, one, [3]int{}, true)
		}},
	} {
		tc.h, tc.tol = stdStep, stdTol
		runGradCase(t, tc)
	}
	b := NewBuilder(NewCPU(1), 1)
	b.Add(b.Input(Shape{1, 1, 1, 2, 2}), b.Input(Shape{1, 2, 1, 2, 2}))
	if _, err := b.Build(); err == nil {
		t.Error("a sum of tensors of different shapes was built")
	}
}

// denoisePair fills a batch of n 1×s×s images with smooth random ramps (the target) and
// the same with Gaussian noise of σ 0.2 added (the input).
func denoisePair(r *rand.Rand, n, s int) (in, tgt []float32) {
	for range n {
		a, b, c := r.Float64(), r.Float64()-0.5, r.Float64()-0.5
		for y := range s {
			for x := range s {
				v := a + b*float64(x)/float64(s) + c*float64(y)/float64(s)
				tgt = append(tgt, float32(v))
				in = append(in, float32(v+0.2*r.NormFloat64()))
			}
		}
	}
	return in, tgt
}

// TestResUNet checks that the untrained network is the identity, that training lowers the
// loss on a denoising task below the identity's, and that its parameters are those of
// BuildUNet's body with a one-channel head.
func TestResUNet(t *testing.T) {
	be := NewCPU(2)
	cfg := UNetConfig{In: 1, Classes: 1, Widths: []int{8, 16}, Convs: 2, Slope: 0.01}
	loss := ImageLossConfig{L1: 0.16, SSIM: 0.84, Window: 7, Range: 1}
	u, err := BuildResUNet(be, cfg, 4, [3]int{1, 16, 16}, 3, loss)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(4, 4))
	in, tgt := denoisePair(r, 4, 16)
	copy(u.Input.Data, in)
	if err := u.Loss.SetTarget(tgt); err != nil {
		t.Fatal(err)
	}
	u.Forward()
	if !slices.Equal(u.Output.Data, u.Input.Data) {
		t.Fatal("the untrained residual U-Net is not the identity")
	}
	identity := u.Loss.Value()
	opt := NewAdamW(be, u.Params(), 3e-3, 0)
	for range 60 {
		in, tgt := denoisePair(r, 4, 16)
		copy(u.Input.Data, in)
		if err := u.Loss.SetTarget(tgt); err != nil {
			t.Fatal(err)
		}
		u.Forward()
		u.Backward()
		opt.Step()
	}
	in, tgt = denoisePair(rand.New(rand.NewPCG(4, 4)), 4, 16)
	copy(u.Input.Data, in)
	if err := u.Loss.SetTarget(tgt); err != nil {
		t.Fatal(err)
	}
	u.Forward()
	// 0.8: the loss after 60 steps must be clearly below the identity's on the first
	// batch; a network that learned nothing stays at 1×.
	if v := u.Loss.Value(); !(v < 0.8*identity) || math.IsNaN(v) {
		t.Errorf("loss %v after training, identity %v", v, identity)
	}

	seg, err := BuildUNet(be, UNetConfig{In: 1, Classes: 2, Widths: cfg.Widths, Convs: 2, Slope: 0.01}, 1, [3]int{1, 16, 16}, 3)
	if err != nil {
		t.Fatal(err)
	}
	a, b := seg.Params(), u.Params()
	if len(a) != len(b) {
		t.Fatalf("%d parameters, BuildUNet %d", len(b), len(a))
	}
	for i := range a {
		same := a[i].Name == b[i].Name && slices.Equal(a[i].Shape[1:], b[i].Shape[1:])
		if i < len(a)-2 && !slices.Equal(a[i].Shape, b[i].Shape) || !same {
			t.Errorf("parameter %d: %s %v, BuildUNet %s %v", i, b[i].Name, b[i].Shape, a[i].Name, a[i].Shape)
		}
	}

	for _, bad := range []UNetConfig{
		{In: 1, Classes: 2, Widths: []int{4}, Convs: 2},
		{In: 1, Classes: 1, Widths: []int{4, 8}, Convs: 2},
	} {
		patch := [3]int{1, 8, 8}
		if bad.Classes == 1 {
			patch = [3]int{1, 9, 9} // not divisible by the pooling
		}
		if _, err := BuildResUNet(be, bad, 1, patch, 1, loss); err == nil {
			t.Errorf("%+v on %v was built", bad, patch)
		}
	}
}
