package engine

import (
	"math/rand/v2"
	"testing"
)

// smallUNet builds a 3-stage U-Net and fills its input and labels from seed.
func smallUNet(t testing.TB, be Backend, cfg UNetConfig, n int, patch [3]int, seed uint64) *UNet {
	t.Helper()
	u, err := BuildUNet(be, cfg, n, patch, seed)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range u.Input.Data {
		u.Input.Data[i] = float32(r.NormFloat64())
	}
	lab := make([]int32, n*u.Input.Shape.Spatial())
	for i := range lab {
		// Classes as intervals of the first input channel, so the task is learnable.
		v := u.Input.Data[(i/u.Input.Shape.Spatial())*u.Input.Shape.Sample()+i%u.Input.Shape.Spatial()]
		switch {
		case v > 0.3:
			lab[i] = 1
		case v < -0.5 && cfg.Classes > 2:
			lab[i] = 2
		}
	}
	if err := u.Loss.SetLabels(lab); err != nil {
		t.Fatal(err)
	}
	return u
}

func cfg2D() UNetConfig {
	return UNetConfig{In: 1, Classes: 2, Widths: []int{4, 8, 16}, Convs: 2, Slope: 0.01}
}

func cfg3D() UNetConfig {
	return UNetConfig{In: 1, Classes: 3, Widths: []int{4, 8, 8}, Convs: 2, Slope: 0.01,
		Kernels: [][3]int{{1, 3, 3}, {3, 3, 3}, {3, 3, 3}}, Pools: [][3]int{{1, 2, 2}, {2, 2, 2}}}
}

func TestUNetTrains(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   UNetConfig
		n     int
		patch [3]int
	}{
		{"2D strided", cfg2D(), 2, [3]int{1, 16, 16}},
		{"2D max-pool batch norm", func() UNetConfig { c := cfg2D(); c.MaxPool, c.Norm = true, Batch; return c }(), 2, [3]int{1, 16, 16}},
		{"3D anisotropic", cfg3D(), 2, [3]int{4, 8, 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			be := NewCPU(2)
			u := smallUNet(t, be, tc.cfg, tc.n, tc.patch, 5)
			opt := NewAdamW(be, u.Params(), 1e-2, 1e-4)
			var first, last float64
			for step := range 50 {
				u.Forward()
				u.Backward()
				ClipGradNorm(u.Params(), 12)
				opt.Step()
				if step == 0 {
					first = u.Loss.Value()
				}
				last = u.Loss.Value()
			}
			// Fitting 50 steps on one fixed batch must at least halve the loss.
			if !(last < first/2) {
				t.Fatalf("loss %g after 50 steps, %g at the start", last, first)
			}
		})
	}
}

// TestDeterministic trains twice from the same seed and expects identical bits.
func TestDeterministic(t *testing.T) {
	run := func() ([]float32, float64) {
		be := NewCPU(2)
		u := smallUNet(t, be, cfg3D(), 2, [3]int{4, 8, 8}, 9)
		opt := NewAdam(be, u.Params(), 1e-3)
		for range 3 {
			u.Forward()
			u.Backward()
			opt.Step()
		}
		var w []float32
		for _, p := range u.Params() {
			w = append(w, p.Data...)
		}
		return w, u.Loss.Value()
	}
	w1, l1 := run()
	w2, l2 := run()
	if l1 != l2 {
		t.Fatalf("loss %v then %v", l1, l2)
	}
	for i := range w1 {
		if w1[i] != w2[i] {
			t.Fatalf("weight %d: %v then %v", i, w1[i], w2[i])
		}
	}
}

func TestTrainingStepAllocatesNothing(t *testing.T) {
	be := NewCPU(2)
	for _, cfg := range []UNetConfig{cfg2D(), cfg3D()} {
		patch := [3]int{1, 16, 16}
		if cfg.Classes == 3 {
			patch = [3]int{4, 8, 8}
		}
		u := smallUNet(t, be, cfg, 2, patch, 3)
		opt := NewAdamW(be, u.Params(), 1e-3, 1e-2)
		sgd := NewSGD(be, u.Params(), 1e-3)
		step := func() {
			u.Forward()
			u.Backward()
			ClipGradNorm(u.Params(), 12)
			opt.Step()
			sgd.Step()
		}
		step()
		if a := testing.AllocsPerRun(5, step); a != 0 {
			t.Errorf("%v: %v allocations per training step", patch, a)
		}
	}
}

func TestUNetConfigErrors(t *testing.T) {
	be := NewCPU(1)
	for _, tc := range []struct {
		name  string
		cfg   UNetConfig
		patch [3]int
	}{
		{"no stages", UNetConfig{In: 1, Classes: 2, Convs: 2}, [3]int{1, 8, 8}},
		{"one class", UNetConfig{In: 1, Classes: 1, Widths: []int{4}, Convs: 2}, [3]int{1, 8, 8}},
		{"indivisible patch", cfg2D(), [3]int{1, 10, 10}},
		{"patch too small", cfg2D(), [3]int{1, 2, 2}},
	} {
		if _, err := BuildUNet(be, tc.cfg, 1, tc.patch, 1); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}
