package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// smallUNet builds a 3-stage U-Net and fills its input and labels from seed.
func smallUNet(t testing.TB, be Backend, cfg UNetConfig, n int, patch [3]int, seed uint64, opts ...Option) *UNet {
	t.Helper()
	u, err := BuildUNet(be, cfg, n, patch, seed, opts...)
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
		// The plugins step through a Trainer, on the CPU the same calls.
		tr, err := NewTrainer(u.Net, opt, TrainOptions{Clip: 12})
		if err != nil {
			t.Fatal(err)
		}
		trStep := func() {
			if _, err := tr.Step(1e-3); err != nil {
				t.Fatal(err)
			}
		}
		trStep()
		if a := testing.AllocsPerRun(5, trStep); a != 0 {
			t.Errorf("%v: %v allocations per Trainer step", patch, a)
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

// TestUNetLevels builds cfg3D's body on a 4×16×16 patch: each level's output has its
// stage's width at the patch over the level's factor (the products of cfg3D's pools), the
// callback sees the decoder stages from the lowest level up, and a layer it adds comes
// right after its stage, before the next level's up-sampling.
func TestUNetLevels(t *testing.T) {
	cfg := cfg3D()
	b := NewBuilder(NewCPU(1), 1)
	x := b.Input(Shape{2, 1, 4, 16, 16})
	var seen []int
	head := -1
	one := [3]int{1, 1, 1}
	f, err := b.UNetLevels(x, cfg, func(s int, y *Tensor) {
		seen = append(seen, s)
		if s == 1 {
			head = len(b.layers)
			b.Conv(y, 2, one, one, [3]int{}, true)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []int{1, 0}) {
		t.Errorf("callback on levels %v, want [1 0]", seen)
	}
	want := [][3]int{{1, 1, 1}, {1, 2, 2}, {2, 4, 4}}
	if !slices.Equal(f.Factors, want) {
		t.Errorf("factors %v, want %v", f.Factors, want)
	}
	for s, y := range f.Levels {
		w := Shape{2, cfg.Widths[s], 4 / want[s][0], 16 / want[s][1], 16 / want[s][2]}
		if y == nil || y.Shape != w {
			t.Fatalf("level %d: %v, want %v", s, y, w)
		}
	}
	if f.Bottleneck() != f.Levels[2] {
		t.Error("the bottleneck is not the last level")
	}
	if c, ok := b.layers[head].(*conv); !ok || c.x != f.Levels[1] {
		t.Fatalf("layer %d is %T, want the callback's convolution on level 1", head, b.layers[head])
	}
	if _, ok := b.layers[head+1].(*convT); !ok {
		t.Errorf("layer %d after the callback's is %T, want level 0's up-sampling", head+1, b.layers[head+1])
	}
	nb := NewBuilder(NewCPU(1), 1)
	body, err := nb.UNetBody(nb.Input(Shape{2, 1, 4, 16, 16}), cfg)
	if err != nil || body.Shape != f.Levels[0].Shape {
		t.Errorf("UNetBody: %v, %v; want level 0's shape %v", body, err, f.Levels[0].Shape)
	}
}

// TestDeepSupervision builds a 4-stage 2D U-Net with deep supervision: nnU-Net's weights
// for 3 decoder outputs are 1, 1/2, 0 normalised (4/7... as 1/1.5, 0.5/1.5), so one
// auxiliary head at half resolution; its labels are the full labels at even positions; and
// the gradients of the total loss match central differences.
func TestDeepSupervision(t *testing.T) {
	if w := DeepSupervisionWeights(4); len(w) != 3 || math.Abs(w[0]-1/1.5) > 1e-15 || math.Abs(w[1]-0.5/1.5) > 1e-15 || w[2] != 0 {
		t.Fatalf("weights for 4 stages: %v, want [1/1.5 0.5/1.5 0]", w)
	}
	// nnU-Net, 6 stages: 1, 1/2, 1/4, 1/8, 0 over their sum 1.875.
	if w := DeepSupervisionWeights(6); math.Abs(w[3]-0.125/1.875) > 1e-15 || w[4] != 0 {
		t.Fatalf("weights for 6 stages: %v", w)
	}
	cfg := UNetConfig{In: 1, Classes: 3, Widths: []int{3, 4, 4, 4}, Convs: 1, Slope: 0.01, DeepSupervision: true}
	patch := [3]int{1, 16, 16}
	u, err := BuildUNet(NewCPU(2), cfg, 2, patch, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Aux) != 1 || u.Factor[0] != [3]int{1, 2, 2} || u.Aux[0].x.Shape != (Shape{2, 3, 1, 8, 8}) {
		t.Fatalf("%d auxiliary outputs, factors %v", len(u.Aux), u.Factor)
	}
	r := rand.New(rand.NewPCG(8, 9))
	for i := range u.Input.Data {
		u.Input.Data[i] = float32(r.NormFloat64())
	}
	lab := make([]int32, 2*256)
	for i := range lab {
		lab[i] = int32(r.IntN(3))
	}
	if err := u.SetLabels(lab); err != nil {
		t.Fatal(err)
	}
	for n := range 2 {
		for y := range 8 {
			for x := range 8 {
				if got, want := u.Aux[0].labels[n*64+y*8+x], lab[n*256+2*y*16+2*x]; got != want {
					t.Fatalf("auxiliary label (%d, %d, %d) = %d, want %d", n, y, x, got, want)
				}
			}
		}
	}
	for _, p := range u.Params() {
		if !p.Decay {
			for i := range p.Data {
				p.Data[i] += float32(0.3 * r.NormFloat64())
			}
		}
	}
	value := func() float64 { u.Forward(); return u.Value() }
	v := value()
	if main, aux := u.Loss.Value(), u.Aux[0].Value(); v != main+aux || !(aux > 0) {
		t.Fatalf("total %v, full-resolution %v, auxiliary %v", v, main, aux)
	}
	u.Backward()
	heads := 0
	for _, p := range u.Params() {
		grad := append([]float32(nil), p.Grad...)
		if len(p.Shape) == 5 && p.Shape[0] == 3 && p.Shape[2]*p.Shape[3]*p.Shape[4] == 1 {
			heads++ // a 1×1 head with 3 outputs: the full-resolution one or the auxiliary one
		}
		for _, i := range pick(r, len(p.Data), 6) {
			old := p.Data[i]
			p.Data[i] = old + stdStep
			up := value()
			p.Data[i] = old - stdStep
			down := value()
			p.Data[i] = old
			num := (up - down) / (2 * stdStep)
			if d := math.Abs(num - float64(grad[i])); d > stdTol*max(1, math.Abs(float64(grad[i]))) {
				t.Errorf("d/d%s[%d]: analytic %.6g, numeric %.6g", p.Name, i, grad[i], num)
			}
		}
	}
	if heads != 2 {
		t.Errorf("%d 1×1 heads with 3 outputs, want 2", heads)
	}
}

// TestProfile times every layer of a 3D U-Net step: each layer has a description and its
// convolutions took time in both passes, and a profiled step still allocates nothing.
func TestProfile(t *testing.T) {
	be := NewCPU(2)
	u := smallUNet(t, be, cfg3D(), 2, [3]int{4, 8, 8}, 3)
	u.Profile(true)
	step := func() {
		u.Forward()
		u.Backward()
	}
	if a := testing.AllocsPerRun(3, step); a != 0 {
		t.Errorf("%v allocations per profiled step", a)
	}
	prof := u.Profiled()
	convs := 0
	for _, p := range prof {
		if p.Layer == "" {
			t.Error("a layer without a description")
		}
		if strings.HasPrefix(p.Layer, "conv ") {
			convs++
			if p.Forward <= 0 || p.Backward <= 0 {
				t.Errorf("%s: forward %v, backward %v", p.Layer, p.Forward, p.Backward)
			}
		}
	}
	if convs == 0 {
		t.Errorf("no convolution among %d profiled layers", len(prof))
	}
	u.Profile(false)
	if len(u.Profiled()) != 0 {
		t.Error("times kept after Profile(false)")
	}
}
