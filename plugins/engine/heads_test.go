package engine

import (
	"math"
	"math/rand/v2"
	"testing"
)

// headCase checks the gradients of a dense layer followed by a loss built by mk against
// central differences, as runGradCase does for the layers.
func headCase(t *testing.T, in Shape, out int, mk func(b *Builder, y *Tensor) (value func() float64, set func(r *rand.Rand) error)) {
	t.Helper()
	b := NewBuilder(NewCPU(2), 7)
	x := b.tensor(in, true)
	value, set := mk(b, b.Dense(x, out))
	net, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64())
	}
	if err := set(r); err != nil {
		t.Fatal(err)
	}
	for _, p := range net.Params() {
		if !p.Decay {
			for i := range p.Data {
				p.Data[i] += float32(0.3 * r.NormFloat64())
			}
		}
	}
	eval := func() float64 {
		net.Forward()
		return value()
	}
	eval()
	net.Backward()
	type target struct {
		name       string
		data, grad []float32
	}
	targets := []target{{"input", x.Data, append([]float32(nil), x.Grad...)}}
	for _, p := range net.Params() {
		targets = append(targets, target{p.Name, p.Data, append([]float32(nil), p.Grad...)})
	}
	var nonzero int
	for _, tg := range targets {
		for _, i := range pick(r, len(tg.data), 24) {
			old := tg.data[i]
			tg.data[i] = old + stdStep
			up := eval()
			tg.data[i] = old - stdStep
			down := eval()
			tg.data[i] = old
			num := (up - down) / (2 * stdStep)
			ana := float64(tg.grad[i])
			if ana != 0 {
				nonzero++
			}
			if d := math.Abs(num - ana); d > stdTol*max(1, math.Abs(ana)) {
				t.Errorf("d/d%s[%d]: analytic %.6g, numeric %.6g", tg.name, i, ana, num)
			}
		}
	}
	if nonzero == 0 {
		t.Error("every probed gradient is zero")
	}
}

func TestHeadLossGradients(t *testing.T) {
	heads := []int{2, 3, 4}
	weights := [][]float64{{1, 3}, nil, {0.5, 1, 2, 0}}
	for _, tc := range []struct {
		name    string
		weights [][]float64
		ignore  bool
	}{{"unweighted", nil, false}, {"class weights", weights, false}, {"ignored labels", weights, true}} {
		t.Run(tc.name, func(t *testing.T) {
			headCase(t, Shape{4, 2, 1, 2, 2}, 9, func(b *Builder, y *Tensor) (func() float64, func(*rand.Rand) error) {
				l := b.HeadLoss(y, heads, tc.weights)
				return l.Value, func(r *rand.Rand) error {
					lab := make([]int32, 4*len(heads))
					for i := range lab {
						lab[i] = int32(r.IntN(heads[i%len(heads)]))
						if tc.ignore && i%5 == 0 {
							lab[i] = -1
						}
					}
					return l.SetLabels(lab)
				}
			})
		})
	}
}

// TestHeadLossValue compares one head's value with PyTorch's weighted cross-entropy
// written out: logits (0, 1) and (2, 0), labels 1 and 0, weights (1, 3):
// (3·(log(1+e) − 1) + 1·(log(e²+1) − 2)) / (3 + 1).
func TestHeadLossValue(t *testing.T) {
	b := NewBuilder(NewCPU(1), 1)
	x := b.Input(Shape{2, 2, 1, 1, 1})
	l := b.HeadLoss(x, []int{2}, [][]float64{{1, 3}})
	net, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	copy(x.Data, []float32{0, 1, 2, 0})
	if err := l.SetLabels([]int32{1, 0}); err != nil {
		t.Fatal(err)
	}
	net.Forward()
	want := (3*(math.Log(1+math.E)-1) + (math.Log(math.E*math.E+1) - 2)) / 4
	if got := l.Value(); math.Abs(got-want) > 1e-6 {
		t.Errorf("value %v, want %v", got, want)
	}
	if err := l.SetLabels([]int32{2, 0}); err == nil {
		t.Error("label 2 of a 2-class head accepted")
	}
}

func TestRegressionLossGradients(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    RegressionWeights
	}{
		{"mse", RegressionWeights{MSE: 1}},
		{"rank", RegressionWeights{Rank: 1, Temp: 0.5}},
		{"correlation", RegressionWeights{Corr: 1}},
		{"all", RegressionWeights{MSE: 1, Rank: 0.5, Corr: 0.3, Temp: 0.3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			headCase(t, Shape{6, 3, 1, 2, 1}, 1, func(b *Builder, y *Tensor) (func() float64, func(*rand.Rand) error) {
				l := b.RegressionLoss(y, tc.w)
				return l.Value, func(r *rand.Rand) error {
					// Targets on a grid of 0.5 with ties, as scores on a label grid have.
					tg := make([]float32, 6)
					for i := range tg {
						tg[i] = float32(r.IntN(5)) / 2
					}
					return l.SetTargets(tg)
				}
			})
		})
	}
}

// TestRegressionLossTerms checks the terms on a hand-computed batch: predictions (0, 1, 3)
// and targets (0, 2, 4): MSE (0 + 1 + 1)/3; ranking over the 3 ordered pairs with
// differences 1, 3 and 2 at temperature 1: mean softplus(−d); correlation of (−4/3, −1/3,
// 5/3) with (−2, 0, 2): 6/√(14/3·8).
func TestRegressionLossTerms(t *testing.T) {
	b := NewBuilder(NewCPU(1), 1)
	x := b.Input(Shape{3, 1, 1, 1, 1})
	l := b.RegressionLoss(x, RegressionWeights{MSE: 1, Rank: 1, Corr: 1, Temp: 1})
	net, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	copy(x.Data, []float32{0, 1, 3})
	if err := l.SetTargets([]float32{0, 2, 4}); err != nil {
		t.Fatal(err)
	}
	net.Forward()
	mse, rank, corr := l.Terms()
	sp := func(v float64) float64 { return math.Log1p(math.Exp(v)) }
	want := [3]float64{2.0 / 3, (sp(-1) + sp(-3) + sp(-2)) / 3, 1 - 6/math.Sqrt(14.0/3*8)}
	for i, got := range [3]float64{mse, rank, corr} {
		// 1e-5: the correlation's ε of 1e-6 in the prediction variance.
		if math.Abs(got-want[i]) > 1e-5 {
			t.Errorf("term %d: %v, want %v", i, got, want[i])
		}
	}
	if err := l.SetTargets([]float32{0, float32(math.NaN()), 1}); err == nil {
		t.Error("a NaN target was accepted")
	}
}
