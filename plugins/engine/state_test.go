package engine

import (
	"errors"
	"testing"
)

// TestOptimStateRoundTrip copies one Adam's state into a fresh one: both then take the
// same step to the same bits; mismatched states are refused.
func TestOptimStateRoundTrip(t *testing.T) {
	be := NewCPU(2)
	mk := func() []*Param {
		return []*Param{{Data: []float32{1, -2, 0.5}, Grad: []float32{0.1, -0.3, 0.2}, Decay: true}}
	}
	pa, pb := mk(), mk()
	a, b := NewAdamW(be, pa, 1e-2, 1e-4), NewAdamW(be, pb, 1e-2, 1e-4)
	a.Step()
	a.Step()
	copy(pb[0].Data, pa[0].Data)
	if err := b.SetState(a.State()); err != nil {
		t.Fatal(err)
	}
	a.Step()
	b.Step()
	for i := range pa[0].Data {
		if pa[0].Data[i] != pb[0].Data[i] {
			t.Fatalf("value %d: %g after restore, %g straight", i, pb[0].Data[i], pa[0].Data[i])
		}
	}
	if err := b.SetState(NewSGD(be, pa, 0.1).State()); !errors.Is(err, ErrConfig) {
		t.Fatalf("SGD state into Adam: %v", err)
	}
	short := NewAdam(be, []*Param{{Data: []float32{1}, Grad: []float32{0}}}, 1e-3)
	if err := b.SetState(short.State()); !errors.Is(err, ErrConfig) {
		t.Fatalf("state of another size: %v", err)
	}
}

// TestBuffers lists the running statistics of batch norm and none for instance norm.
func TestBuffers(t *testing.T) {
	be := NewCPU(2)
	c := cfg2D()
	u := smallUNet(t, be, c, 2, [3]int{1, 16, 16}, 1)
	if n := len(u.Buffers()); n != 0 {
		t.Fatalf("instance norm U-Net has %d buffers", n)
	}
	c.Norm = Batch
	u = smallUNet(t, be, c, 2, [3]int{1, 16, 16}, 1)
	// 3 stages down with 2 norms each, 2 stages up with 2 norms each: 10 norms, 2 buffers each.
	if n := len(u.Buffers()); n != 20 {
		t.Fatalf("batch norm U-Net has %d buffers, want 20", n)
	}
	if b := u.Buffers()[1]; b.Name != "1.norm.running_var" || b.Data[0] != 1 {
		t.Fatalf("second buffer %q starts at %g", b.Name, b.Data[0])
	}
}
