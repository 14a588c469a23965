package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// focalTarget is a heatmap of n values in [0, 1) with centres (exactly 1) at every
// seventh value, as a rendered Gaussian heatmap has.
func focalTarget(r *rand.Rand, n int) []float32 {
	y := make([]float32, n)
	for i := range y {
		y[i] = float32(r.Float64() * 0.9)
		if i%7 == 3 {
			y[i] = 1
		}
	}
	return y
}

// TestFocalLossGradient compares FocalLoss's gradient with central differences in float64
// (h 1e-3: the loss is smooth, truncation h²·f”'/6 is below 1e-6; the relative
// tolerance 1e-3 is far above float32 rounding of the stored gradient, about 1e-7).
func TestFocalLossGradient(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 40
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(3 * r.NormFloat64())
	}
	y := focalTarget(r, n)
	dx := make([]float32, n)
	FocalLoss(x, y, dx)
	f := func(v []float32) float64 {
		return FocalLoss(v, y, make([]float32, n))
	}
	const h = 1e-3
	for i := range x {
		// x stays float32: perturb in float64 around the float32 value through a copy.
		up, down := slices.Clone(x), slices.Clone(x)
		up[i] += h
		down[i] -= h
		num := (f(up) - f(down)) / float64(up[i]-down[i])
		if d := math.Abs(num - float64(dx[i])); d > 1e-3*max(1, math.Abs(num)) {
			t.Errorf("d/dx[%d] (x %.3g, y %.3g): analytic %.6g, numeric %.6g", i, x[i], y[i], dx[i], num)
		}
	}
}

// TestFocalLossValues checks FocalLoss against the formula written out for one centre
// and one negative: x = 0 gives p = 1/2, so the centre costs (1/2)²·log 2 and a negative
// with y = 1/2 costs (1/2)⁴·(1/2)²·log 2; one centre divides by 1.
func TestFocalLossValues(t *testing.T) {
	got := FocalLoss([]float32{0, 0}, []float32{1, 0.5}, make([]float32, 2))
	want := 0.25*math.Ln2 + math.Pow(0.5, 4)*0.25*math.Ln2
	if math.Abs(got-want) > 1e-12 {
		t.Errorf("loss %v, want %v", got, want)
	}
	// Extreme logits stay finite.
	dx := make([]float32, 2)
	if v := FocalLoss([]float32{-200, 200}, []float32{1, 0}, dx); math.IsInf(v, 0) || math.IsNaN(v) || v < 100 {
		t.Errorf("extreme logits: loss %v, gradient %v", v, dx)
	}
}

// TestObjectiveGradient checks the gradients of a convolution ending in an Objective (the
// focal loss on channel 0, a squared error on channel 1) by central differences, as
// TestGradients does for the built-in layers.
func TestObjectiveGradient(t *testing.T) {
	be := NewCPU(2)
	b := NewBuilder(be, 7)
	x := b.tensor(Shape{2, 2, 1, 4, 5}, true)
	y := b.Conv(x, 2, [3]int{1, 3, 3}, [3]int{1, 1, 1}, [3]int{0, 1, 1}, true)
	r := rand.New(rand.NewPCG(5, 6))
	S := y.Shape.Spatial()
	targets := [][]float32{focalTarget(r, S), focalTarget(r, S)}
	obj := b.Objective(y, func(n int, v, dv []float32) float64 {
		l := FocalLoss(v[:S], targets[n], dv[:S])
		for i, a := range v[S:] {
			d := float64(a) - float64(targets[n][i])
			l += d * d / 2
			dv[S+i] = float32(d)
		}
		return l
	})
	net, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64())
	}
	value := func() float64 { net.Forward(); return obj.Value() }
	value()
	net.Backward()
	grads := map[string][]float32{"input": slices.Clone(x.Grad)}
	datas := map[string][]float32{"input": x.Data}
	for _, p := range net.Params() {
		grads[p.Name], datas[p.Name] = slices.Clone(p.Grad), p.Data
	}
	for name, d := range datas {
		for _, i := range pick(r, len(d), 12) {
			old := d[i]
			d[i] = old + stdStep
			up := value()
			d[i] = old - stdStep
			down := value()
			d[i] = old
			num := (up - down) / (2 * stdStep)
			if ana := float64(grads[name][i]); math.Abs(num-ana) > stdTol*max(1, math.Abs(ana)) {
				t.Errorf("d/d%s[%d]: analytic %.6g, numeric %.6g", name, i, ana, num)
			}
		}
	}
}

// TestHeadUNetParams checks that BuildUNetHead's parameters are BuildUNet's, name for name
// and shape for shape, so that checkpoints carry over, and that a head of one channel and
// an inference network with a hidden head layer, a side input and no objective builds.
func TestHeadUNetParams(t *testing.T) {
	be := NewCPU(1)
	cfg := UNetConfig{In: 1, Classes: 3, Widths: []int{4, 8}, Convs: 2, Norm: Instance, Slope: 0.01}
	u, err := BuildUNet(be, cfg, 1, [3]int{1, 8, 8}, 1)
	if err != nil {
		t.Fatal(err)
	}
	h, err := BuildUNetHead(be, cfg, Head{}, 1, [3]int{1, 8, 8}, 1, func(int, []float32, []float32) float64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	a, c := u.Params(), h.Params()
	if len(a) != len(c) {
		t.Fatalf("%d parameters, BuildUNet has %d", len(c), len(a))
	}
	for i := range a {
		if a[i].Name != c[i].Name || !slices.Equal(a[i].Shape, c[i].Shape) || !slices.Equal(a[i].Data, c[i].Data) {
			t.Errorf("parameter %d: %s %v, BuildUNet %s %v (or other initial values)", i, c[i].Name, c[i].Shape, a[i].Name, a[i].Shape)
		}
	}
	if len(h.HeadBias()) != 3 {
		t.Errorf("head bias of %d values, want 3", len(h.HeadBias()))
	}
	cfg.Classes = 1
	inf, err := BuildUNetHead(be, cfg, Head{Hidden: 4, Side: 2}, 1, [3]int{1, 8, 8}, 1, nil)
	if err != nil || inf.Objective != nil {
		t.Fatalf("inference network: %v, objective %v", err, inf.Objective)
	}
	if s := inf.Side.Shape; s != (Shape{1, 2, 1, 8, 8}) || len(inf.Side.Sample(0)) != 2*64 {
		t.Fatalf("side input %v", s)
	}
	inf.Forward()
	if inf.Logits.Shape != (Shape{1, 1, 1, 8, 8}) || len(inf.Params()) != len(a)+4 {
		t.Errorf("logits %v, %d parameters (with a hidden head: conv and norm, 4 more than %d)", inf.Logits.Shape, len(inf.Params()), len(a))
	}
}

// The Focal layer is the mean over samples of FocalLoss, its gradient FocalLoss's over N.
func TestFocalLayer(t *testing.T) {
	b := NewBuilder(NewCPU(2), 1)
	x := b.tensor(Shape{2, 2, 1, 3, 4}, true)
	l := b.Focal(x)
	n, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	tg := make([]float32, x.Shape.Len())
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64())
		tg[i] = float32(r.Float64() * 0.9)
	}
	tg[5], tg[30] = 1, 1
	if err := l.SetTarget(tg); err != nil {
		t.Fatal(err)
	}
	n.Forward()
	n.Backward()
	S := x.Shape.Sample()
	var want float64
	for s := range 2 {
		dx := make([]float32, S)
		want += FocalLoss(x.Sample(s), tg[s*S:(s+1)*S], dx) / 2
		for i, g := range dx {
			if got := x.GradSample(s)[i]; got != g/2 {
				t.Fatalf("sample %d value %d: gradient %v, want %v", s, i, got, g/2)
			}
		}
	}
	if l.Value() != want {
		t.Fatalf("value %v, want %v", l.Value(), want)
	}
	for _, bad := range [][]float32{make([]float32, 3), append(make([]float32, len(tg)-1), 1.5)} {
		if err := l.SetTarget(bad); err == nil {
			t.Errorf("target %v accepted", bad[len(bad)-1])
		}
	}
}
