package engine

import (
	"math"
	"testing"
)

// TestSGDNesterov follows torch.optim.SGD's documented update in float64 for three steps
// with changing gradients: v₁ = g₁, vₜ = μ·vₜ₋₁ + gₜ, p −= lr·(gₜ + μ·vₜ), g including
// weight decay.
func TestSGDNesterov(t *testing.T) {
	be := NewCPU(2)
	p := &Param{Data: []float32{1, -2, 0.5}, Grad: make([]float32, 3), Decay: true}
	q := &Param{Data: []float32{3}, Grad: make([]float32, 1)} // no decay
	opt := NewSGD(be, []*Param{p, q}, 0.1)
	opt.WeightDecay = 0.01
	want := []float64{1, -2, 0.5, 3}
	v := make([]float64, 4)
	grads := [][]float32{{0.1, 0.2, -0.3, 1}, {-0.5, 0.4, 0.3, -1}, {0.2, 0.2, 0.2, 0.5}}
	for step, g := range grads {
		copy(p.Grad, g[:3])
		q.Grad[0] = g[3]
		opt.Step()
		for i := range want {
			d := float64(g[i])
			if i < 3 {
				d += 0.01 * want[i]
			}
			if step == 0 {
				v[i] = d
			} else {
				v[i] = 0.99*v[i] + d
			}
			want[i] -= 0.1 * (d + 0.99*v[i])
		}
		got := append(append([]float32(nil), p.Data...), q.Data...)
		for i := range want {
			// float32 state against float64: a few ulps of values near 1.
			if math.Abs(float64(got[i])-want[i]) > 1e-5 {
				t.Fatalf("step %d value %d: %g, want %g", step+1, i, got[i], want[i])
			}
		}
	}
}

func TestPolyLRAndClip(t *testing.T) {
	// nnU-Net: lr·(1 − epoch/max)^0.9.
	if got, want := PolyLR(0.01, 500, 1000, 0.9), 0.01*math.Pow(0.5, 0.9); math.Abs(got-want) > 1e-15 {
		t.Errorf("PolyLR = %g, want %g", got, want)
	}
	if PolyLR(0.01, 1000, 1000, 0.9) != 0 {
		t.Error("PolyLR after the last step is not 0")
	}
	p := &Param{Grad: []float32{3, 4}} // norm 5
	if n := ClipGradNorm([]*Param{p}, 1); n != 5 {
		t.Errorf("norm %g, want 5", n)
	}
	// Scaled by 1/(5+1e-6) as torch.nn.utils.clip_grad_norm_.
	if math.Abs(float64(p.Grad[0])-0.6) > 1e-6 || math.Abs(float64(p.Grad[1])-0.8) > 1e-6 {
		t.Errorf("clipped to %v, want [0.6 0.8]", p.Grad)
	}
	p.Grad = []float32{0.3, 0.4}
	ClipGradNorm([]*Param{p}, 1)
	if p.Grad[0] != 0.3 || p.Grad[1] != 0.4 {
		t.Errorf("gradient below the limit changed to %v", p.Grad)
	}
}
