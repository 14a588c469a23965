package engine

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// torchGolden is testdata/unet_golden.json, written by testdata/torch_golden.py with
// PyTorch 1.13 (the command is recorded in the file).
type torchGolden struct {
	Command string `json:"command"`
	Cases   []struct {
		Name        string      `json:"name"`
		Cin         int         `json:"cin"`
		Classes     int         `json:"classes"`
		Widths      []int       `json:"widths"`
		Kernels     [][3]int    `json:"kernels"`
		Pools       [][3]int    `json:"pools"`
		MaxPool     bool        `json:"maxpool"`
		Norm        string      `json:"norm"`
		Batch       int         `json:"batch"`
		Patch       [3]int      `json:"patch"`
		Input       []float32   `json:"input"`
		Labels      []int32     `json:"labels"`
		ParamShapes [][]int     `json:"param_shapes"`
		Params      [][]float32 `json:"params"`
		Logits      []float32   `json:"logits"`
		Loss        float64     `json:"loss"`
		Grads       [][]float32 `json:"grads"`
		AfterAdamW  [][]float32 `json:"after_adamw"`
		LR          float64     `json:"lr"`
		WeightDecay float64     `json:"weight_decay"`
	} `json:"cases"`
}

// maxAbs is the largest magnitude in s.
func maxAbs(s []float32) float64 {
	var m float64
	for _, v := range s {
		m = max(m, math.Abs(float64(v)))
	}
	return m
}

// Tolerances against PyTorch. Both sides compute in float32 but sum in different orders;
// the differences measured were about 5e-7 of the largest logit and at most 2.5e-4
// of a parameter's largest gradient. Biases in front of instance norm have no effect, so their
// true gradient is 0 and both sides return rounding noise: gradients are compared relative
// to the largest gradient of their parameter (and at least 1e-4 of the network's largest).
const (
	goldenLogitTol = 1e-5
	goldenLossTol  = 1e-6
	goldenGradTol  = 1e-3
)

func TestTorchGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/unet_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g torchGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) == 0 {
		t.Fatal("no cases in the golden file")
	}
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			cfg := UNetConfig{In: c.Cin, Classes: c.Classes, Widths: c.Widths, Kernels: c.Kernels,
				Pools: c.Pools, Convs: 2, MaxPool: c.MaxPool, Slope: 0.01}
			if c.Norm == "batch" {
				cfg.Norm = Batch
			}
			be := NewCPU(2)
			u, err := BuildUNet(be, cfg, c.Batch, c.Patch, 1)
			if err != nil {
				t.Fatal(err)
			}
			ps := u.Params()
			if len(ps) != len(c.Params) {
				t.Fatalf("%d parameters, PyTorch has %d", len(ps), len(c.Params))
			}
			for i, p := range ps {
				if len(p.Data) != len(c.Params[i]) {
					t.Fatalf("%s: %d values (shape %v), PyTorch %d (shape %v)", p.Name, len(p.Data), p.Shape, len(c.Params[i]), c.ParamShapes[i])
				}
				copy(p.Data, c.Params[i])
			}
			copy(u.Input.Data, c.Input)
			if err := u.Loss.SetLabels(c.Labels); err != nil {
				t.Fatal(err)
			}
			u.Forward()
			u.Backward()
			lm := maxAbs(c.Logits)
			for i, v := range u.Logits.Data {
				if d := math.Abs(float64(v - c.Logits[i])); d > goldenLogitTol*lm {
					t.Fatalf("logit %d: %g, PyTorch %g", i, v, c.Logits[i])
				}
			}
			if d := math.Abs(u.Loss.Value() - c.Loss); d > goldenLossTol*c.Loss {
				t.Errorf("loss %.9g, PyTorch %.9g", u.Loss.Value(), c.Loss)
			}
			var gmax float64
			for _, gr := range c.Grads {
				gmax = max(gmax, maxAbs(gr))
			}
			for i, p := range ps {
				scale := max(maxAbs(c.Grads[i]), goldenGradTol*gmax)
				for j, v := range p.Grad {
					if d := math.Abs(float64(v - c.Grads[i][j])); d > goldenGradTol*scale {
						t.Fatalf("%s gradient [%d]: %g, PyTorch %g (largest %g)", p.Name, j, v, c.Grads[i][j], scale)
					}
				}
			}
			// One AdamW step. Where the gradient is rounding noise its sign, and so the step
			// of ±lr, is arbitrary: skip parameters whose gradient is noise (below 1e-4 of the
			// network's largest: the biases in front of a norm) and elements below 1e-2 of
			// their parameter's largest.
			opt := NewAdamW(be, ps, c.LR, c.WeightDecay)
			opt.Step()
			for i, p := range ps {
				gm := maxAbs(c.Grads[i])
				if gm < 1e-4*gmax {
					continue
				}
				for j, v := range p.Data {
					if math.Abs(float64(c.Grads[i][j])) < 1e-2*gm {
						continue
					}
					// The step is lr·m̂/(√v̂+ε) = ±lr on the first step; 1e-3·lr covers the
					// gradients' differences relative to their size.
					if d := math.Abs(float64(v - c.AfterAdamW[i][j])); d > 1e-3*c.LR+1e-6 {
						t.Fatalf("%s after AdamW [%d]: %g, PyTorch %g", p.Name, j, v, c.AfterAdamW[i][j])
					}
				}
			}
		})
	}
}
