package engine

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// naiveSSIM is skimage's structural_similarity of one H×W plane with a k×k box window,
// sample covariances and the mean over the windows wholly inside the plane, computed
// window by window.
func naiveSSIM(y, t []float32, H, W, k int, rng float64) (sum float64, count int) {
	n := float64(k * k)
	c1, c2 := (0.01*rng)*(0.01*rng), (0.03*rng)*(0.03*rng)
	for r := 0; r+k <= H; r++ {
		for c := 0; c+k <= W; c++ {
			var my, mt float64
			for i := range k {
				for j := range k {
					my += float64(y[(r+i)*W+c+j])
					mt += float64(t[(r+i)*W+c+j])
				}
			}
			my, mt = my/n, mt/n
			var vy, vt, vyt float64
			for i := range k {
				for j := range k {
					a, b := float64(y[(r+i)*W+c+j])-my, float64(t[(r+i)*W+c+j])-mt
					vy, vt, vyt = vy+a*a, vt+b*b, vyt+a*b
				}
			}
			vy, vt, vyt = vy/(n-1), vt/(n-1), vyt/(n-1)
			sum += (2*my*mt + c1) * (2*vyt + c2) / ((my*my + mt*mt + c1) * (vy + vt + c2))
			count++
		}
	}
	return sum, count
}

// imageLossNet is an ImageLoss on a free input tensor of shape s, with input and target
// filled from seed: the target is the input moved by 0.1 + |N(0, 1)| up or down, so no
// difference is within 0.1 of L1's kink.
func imageLossNet(t *testing.T, s Shape, cfg ImageLossConfig, seed uint64) (*Net, *Tensor, *ImageLoss) {
	t.Helper()
	b := NewBuilder(NewCPU(2), 1)
	x := b.tensor(s, true)
	l := b.ImageLoss(x, cfg)
	net, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 5))
	tgt := make([]float32, s.Len())
	for i := range x.Data {
		x.Data[i] = float32(r.Float64())
		d := 0.1 + math.Abs(r.NormFloat64())
		if r.IntN(2) == 0 {
			d = -d
		}
		tgt[i] = x.Data[i] + float32(d)
	}
	if err := l.SetTarget(tgt); err != nil {
		t.Fatal(err)
	}
	return net, x, l
}

// TestImageLossValue checks the loss against a window-by-window SSIM and a plain mean
// absolute error on two samples of two channels.
func TestImageLossValue(t *testing.T) {
	s := Shape{2, 2, 1, 11, 9}
	cfg := ImageLossConfig{L1: 0.3, SSIM: 0.7, Window: 7, Range: 1}
	net, x, l := imageLossNet(t, s, cfg, 1)
	net.Forward()
	var ssum, abs float64
	var cnt int
	for p := range s.N * s.C {
		y, tg := x.Data[p*99:(p+1)*99], l.target[p*99:(p+1)*99]
		a, c := naiveSSIM(y, tg, s.H, s.W, cfg.Window, cfg.Range)
		ssum += a
		cnt += c
		for i := range y {
			abs += math.Abs(float64(y[i]) - float64(tg[i]))
		}
	}
	wantL1, wantS := abs/float64(s.Len()), ssum/float64(cnt)
	gotL1, gotS := l.Parts()
	// 1e-12: both are float64 sums of the same float32 values in different orders.
	if math.Abs(gotL1-wantL1) > 1e-12 || math.Abs(gotS-wantS) > 1e-12 {
		t.Errorf("L1 %v SSIM %v, window by window %v %v", gotL1, gotS, wantL1, wantS)
	}
	if want := cfg.L1*wantL1 + cfg.SSIM*(1-wantS); math.Abs(l.Value()-want) > 1e-12 {
		t.Errorf("loss %v, want %v", l.Value(), want)
	}
	// Identical images: SSIM 1, L1 0, loss 0.
	if err := l.SetTarget(x.Data); err != nil {
		t.Fatal(err)
	}
	net.Forward()
	if l1, sm := l.Parts(); l1 != 0 || math.Abs(sm-1) > 1e-12 || math.Abs(l.Value()) > 1e-12 {
		t.Errorf("identical images: L1 %v, SSIM %v, loss %v", l1, sm, l.Value())
	}
}

// TestImageLossGradient checks dL/dy against central differences for the L1 term, the
// SSIM term and both, on planes where the window fits once, a few times and many times
// along an axis.
func TestImageLossGradient(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Shape
		cfg  ImageLossConfig
	}{
		{"l1", Shape{2, 1, 1, 6, 7}, ImageLossConfig{L1: 1, Window: 3, Range: 1}},
		{"ssim", Shape{2, 1, 1, 10, 12}, ImageLossConfig{SSIM: 1, Window: 7, Range: 1}},
		{"ssim one window wide", Shape{1, 2, 2, 9, 5}, ImageLossConfig{SSIM: 1, Window: 5, Range: 2}},
		{"l1 + ssim", Shape{2, 1, 1, 8, 8}, ImageLossConfig{L1: 0.16, SSIM: 0.84, Window: 4, Range: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			net, x, l := imageLossNet(t, tc.s, tc.cfg, 2)
			net.Forward()
			net.Backward()
			grad := append([]float32(nil), x.Grad...)
			var top float64
			for _, g := range grad {
				top = max(top, math.Abs(float64(g)))
			}
			r := rand.New(rand.NewPCG(3, 3))
			// Steps of 1e-3 on values in [0, 1]: SSIM is smooth there (its third derivative
			// times h² is far below the tolerance) and L1 has no kink within 0.1 of any
			// value. The differences are formed from float64 losses of float32 inputs, with
			// the step actually taken in float32; 1e-4 of the largest gradient leaves
			// rounding (about 1e-7 relative in the loss over 2e-3) a margin of a hundred.
			const h = 1e-3
			for _, i := range pick(r, len(x.Data), 40) {
				old := x.Data[i]
				x.Data[i] = old + h
				hi := x.Data[i]
				net.Forward()
				up := l.Value()
				x.Data[i] = old - h
				lo := x.Data[i]
				net.Forward()
				down := l.Value()
				x.Data[i] = old
				num := (up - down) / float64(hi-lo)
				if d := math.Abs(num - float64(grad[i])); d > 1e-4*top {
					t.Errorf("dL/dy[%d]: analytic %.8g, numeric %.8g (largest gradient %.3g)", i, grad[i], num, top)
				}
			}
		})
	}
}

// TestImageLossConfigErrors lists loss settings that cannot be built.
func TestImageLossConfigErrors(t *testing.T) {
	for _, cfg := range []ImageLossConfig{
		{L1: 0, SSIM: 0, Window: 7, Range: 1},
		{L1: -1, SSIM: 1, Window: 7, Range: 1},
		{L1: 1, Window: 1, Range: 1},
		{L1: 1, Window: 9, Range: 1}, // larger than the 8×8 plane
		{L1: 1, Window: 7, Range: 0},
		{L1: 1, Window: 7, Range: math.Inf(1)},
		{L1: math.NaN(), Window: 7, Range: 1},
	} {
		b := NewBuilder(NewCPU(1), 1)
		b.ImageLoss(b.Input(Shape{1, 1, 1, 8, 8}), cfg)
		if _, err := b.Build(); err == nil {
			t.Errorf("%+v was accepted", cfg)
		}
	}
	b := NewBuilder(NewCPU(1), 1)
	l := b.ImageLoss(b.Input(Shape{1, 1, 1, 8, 8}), ImageLossConfig{L1: 1, Window: 3, Range: 1})
	if _, err := b.Build(); err != nil {
		t.Fatal(err)
	}
	if err := l.SetTarget(make([]float32, 63)); err == nil {
		t.Error("a target of the wrong size was accepted")
	}
	nan := make([]float32, 64)
	nan[5] = float32(math.NaN())
	if err := l.SetTarget(nan); err == nil {
		t.Error("a NaN target was accepted")
	}
}

// imageLossGolden is testdata/imageloss_golden.json, written by
// testdata/torch_imageloss_golden.py: the PyTorch loss of the bench and its gradient.
type imageLossGolden struct {
	Command string `json:"command"`
	Cases   []struct {
		Name   string          `json:"name"`
		Shape  [4]int          `json:"shape"` // N, C, H, W
		Cfg    ImageLossConfig `json:"cfg"`
		Output []float32       `json:"output"`
		Target []float32       `json:"target"`
		Loss   float64         `json:"loss"`
		Grad   []float64       `json:"grad"`
	} `json:"cases"`
}

// TestImageLossTorch compares the loss and its gradient with PyTorch's (computed in
// float64 on the same float32 images): the PyTorch model of `make bench-plugins-models`
// trains on the same loss as the engine.
func TestImageLossTorch(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "imageloss_golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g imageLossGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) == 0 {
		t.Fatalf("no cases; regenerate with %s", g.Command)
	}
	for _, c := range g.Cases {
		s := Shape{c.Shape[0], c.Shape[1], 1, c.Shape[2], c.Shape[3]}
		bd := NewBuilder(NewCPU(2), 1)
		x := bd.tensor(s, true)
		l := bd.ImageLoss(x, c.Cfg)
		net, err := bd.Build()
		if err != nil {
			t.Fatal(err)
		}
		copy(x.Data, c.Output)
		if err := l.SetTarget(c.Target); err != nil {
			t.Fatal(err)
		}
		net.Forward()
		net.Backward()
		// 1e-9: both sum the same values in float64; the golden keeps 9 digits.
		if d := math.Abs(l.Value() - c.Loss); d > 1e-9 {
			t.Errorf("%s: loss %.12g, PyTorch %.12g", c.Name, l.Value(), c.Loss)
		}
		var top float64
		for _, v := range c.Grad {
			top = max(top, math.Abs(v))
		}
		// 1e-6 of the largest gradient: the engine rounds its gradient to float32
		// (relative 6e-8) and the golden keeps 9 digits.
		for i, v := range c.Grad {
			if d := math.Abs(float64(x.Grad[i]) - v); d > 1e-6*top {
				t.Errorf("%s: gradient %d: %.9g, PyTorch %.9g", c.Name, i, x.Grad[i], v)
			}
		}
	}
}
