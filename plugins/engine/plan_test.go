package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// inferCase is a network built twice, for training and ForInference, with the tensors to
// fill and the outputs to compare.
type inferCase struct {
	name  string
	build func(opts ...Option) (net *Net, inputs, outputs []Output, err error)
}

func inferCases() []inferCase {
	k3 := [3]int{1, 3, 3}
	return []inferCase{
		{"2D U-Net, deep supervision, position planes", func(opts ...Option) (*Net, []Output, []Output, error) {
			cfg := UNetConfig{In: 2, Classes: 3, Widths: []int{8, 16, 32, 32}, Convs: 2, Slope: 0.01, DeepSupervision: true, Position: 2}
			u, err := BuildUNet(NewCPU(2), cfg, 2, [3]int{1, 32, 24}, 7, opts...)
			if err != nil {
				return nil, nil, nil, err
			}
			return u.Net, []Output{u.Input, u.Position}, []Output{u.Loss, u.Logits, u.Aux[0]}, nil
		}},
		{"3D U-Net, max-pool, batch norm", func(opts ...Option) (*Net, []Output, []Output, error) {
			cfg := UNetConfig{In: 1, Classes: 2, Widths: []int{4, 8, 16}, Convs: 2, MaxPool: true, Norm: Batch, Slope: 0.01}
			u, err := BuildUNet(NewCPU(2), cfg, 2, [3]int{12, 16, 8}, 7, opts...)
			if err != nil {
				return nil, nil, nil, err
			}
			return u.Net, []Output{u.Input}, []Output{u.Loss, u.Logits}, nil
		}},
		{"2D residual U-Net", func(opts ...Option) (*Net, []Output, []Output, error) {
			cfg := UNetConfig{In: 1, Classes: 1, Widths: []int{8, 16}, Convs: 2, Slope: 0.01}
			u, err := BuildResUNet(NewCPU(2), cfg, 2, [3]int{1, 16, 16}, 7, ImageLossConfig{L1: 0.16, SSIM: 0.84, Window: 7, Range: 1}, opts...)
			if err != nil {
				return nil, nil, nil, err
			}
			return u.Net, []Output{u.Input}, []Output{u.Output}, nil
		}},
		{"U-Net with a side input and a hidden head, no loss", func(opts ...Option) (*Net, []Output, []Output, error) {
			cfg := UNetConfig{In: 1, Classes: 4, Widths: []int{8, 16}, Convs: 1, Slope: 0.01, Kernels: [][3]int{k3, k3}}
			u, err := BuildUNetHead(NewCPU(2), cfg, Head{Hidden: 8, Side: 2}, 3, [3]int{1, 16, 20}, 7, nil, opts...)
			if err != nil {
				return nil, nil, nil, err
			}
			return u.Net, []Output{u.Input, u.Side}, []Output{u.Logits}, nil
		}},
	}
}

// TestInferenceMatchesTraining: a network built ForInference computes, bit for bit, what
// the same network built for training computes in inference mode, on every output, on a
// second input and on the first again (a buffer taken over by a later activation must be
// written before it is read, each pass), in much less memory; it cannot train.
func TestInferenceMatchesTraining(t *testing.T) {
	for _, tc := range inferCases() {
		t.Run(tc.name, func(t *testing.T) {
			train, tin, tout, err := tc.build()
			if err != nil {
				t.Fatal(err)
			}
			inf, iin, iout, err := tc.build(ForInference)
			if err != nil {
				t.Fatal(err)
			}
			// The same random parameters on both (a residual U-Net's head starts at zero,
			// which would make its output its input).
			r := rand.New(rand.NewPCG(3, 4))
			for i, p := range train.Params() {
				for j := range p.Data {
					p.Data[j] = float32(0.3 * r.NormFloat64())
				}
				copy(inf.Params()[i].Data, p.Data)
			}
			train.SetTraining(false)
			fill := func(seed uint64) {
				r := rand.New(rand.NewPCG(seed, 5))
				for i, o := range tin {
					v, w := o.Values(), iin[i].Values()
					for j := range v {
						v[j] = float32(r.NormFloat64())
					}
					copy(w, v)
				}
			}
			check := func(pass string) {
				t.Helper()
				train.Forward()
				inf.Forward()
				for i, o := range tout {
					want, got := o.Values(), iout[i].Values()
					if !slices.Equal(want, got) {
						t.Fatalf("%s: output %d differs: %v… for training, %v… for inference", pass, i, want[:4], got[:4])
					}
					if slices.ContainsFunc(got, func(v float32) bool { return math.IsNaN(float64(v)) }) {
						t.Fatalf("%s: output %d holds NaN", pass, i)
					}
				}
			}
			fill(1)
			check("first input")
			fill(2)
			check("second input")
			fill(1)
			check("first input again")
			// The activations (and gradients) alone, beside the workspace, the parameters and
			// the losses' buffers, which both keep.
			ta, ia := activationBytes(train), activationBytes(inf)
			t.Logf("activations: %d bytes for training, %d for inference (%.2f×); in all %d and %d bytes (%.2f×)", ta, ia, float64(ia)/float64(ta),
				train.Bytes(), inf.Bytes(), float64(inf.Bytes())/float64(train.Bytes()))
			// Half of the training network's activation memory is its gradients; the
			// planned values take less again.
			if ia >= ta/2 || inf.Bytes() >= train.Bytes() {
				t.Errorf("the inference network's activations take %d bytes, the training one's %d: want under half", ia, ta)
			}
			if _, err := NewTrainer(inf, NewAdam(inf.Backend(), inf.Params(), 1e-3), TrainOptions{}); err == nil || !strings.Contains(err.Error(), "built for inference") {
				t.Errorf("a trainer of an inference network: %v", err)
			}
			func() {
				defer func() {
					if recover() == nil {
						t.Error("Backward on an inference network did not panic")
					}
				}()
				inf.Backward()
			}()
		})
	}
}

// TestPlanBuffersReuses: on a chain of layers, an activation's buffer is taken again once
// its reader has run, never by its reader's output; a concatenation's parts keep theirs
// until the concatenation is read; outputs and inputs keep theirs.
func TestPlanBuffersReuses(t *testing.T) {
	one, k3, p1 := [3]int{1, 1, 1}, [3]int{1, 3, 3}, [3]int{0, 1, 1}
	b := NewBuilder(NewCPU(1), 1, ForInference)
	x := b.Input(Shape{1, 4, 1, 8, 8})
	a := b.Conv(x, 4, k3, one, p1, false)                                                             // layer 0
	c := b.Conv(a, 4, k3, one, p1, false)                                                             // 1: a's last reader
	d := b.Conv(c, 4, k3, one, p1, false)                                                             // 2: may take a's buffer
	e := b.Conv(d, 4, one, one, [3]int{}, false)                                                      // 3: may take c's
	cat := b.Concat(b.Conv(e, 4, one, one, [3]int{}, false), b.Conv(e, 4, one, one, [3]int{}, false)) // 4, 5
	out := b.Conv(cat, 2, one, one, [3]int{}, false)                                                  // 6
	if _, err := b.Build(); err != nil {
		t.Fatal(err)
	}
	same := func(p, q *Tensor) bool { return &p.Data[0] == &q.Data[0] }
	for _, tc := range []struct {
		name string
		p, q *Tensor
		want bool
	}{
		{"a layer's input and output", a, c, false},
		{"an activation after its reader", a, d, true},
		{"the next one", c, e, true},
		{"the input", x, d, false},
		{"the concatenation's parts while it lives", cat, d, false},
		{"the output and its input", out, cat, false},
		{"the output and an activation read before it", out, d, true},
	} {
		if got := same(tc.p, tc.q); got != tc.want {
			t.Errorf("%s: shared %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, p := range []*Tensor{a, c, d, e, cat, out} {
		if same(p, x) {
			t.Errorf("tensor %v shares the input's buffer", p.Shape)
		}
	}
}

// activationBytes is the memory of a network's distinct activation and gradient buffers.
func activationBytes(n *Net) int64 {
	seen := map[*float32]bool{}
	var bytes int64
	for _, t := range n.tensors {
		for _, buf := range [][]float32{t.Data, t.Grad} {
			if len(buf) > 0 && !seen[&buf[:1][0]] {
				seen[&buf[:1][0]] = true
				bytes += 4 * int64(cap(buf))
			}
		}
	}
	return bytes
}
