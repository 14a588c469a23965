package main

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"amid/plugins/engine"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
)

// multiSpec is a multi-label classification of three findings: whether each of the first
// three anterior edges of the generated volumes (volumeCase) is drawn.
var multiSpec = &taskspec.Spec{Kind: taskspec.Classification, Dims: 3, Metric: "auroc",
	Attributes: []taskspec.Attribute{{Name: "findings", Classes: []string{"L-A1", "Acom", "3rd-A2"}, MultiLabel: true}}}

func multiTask(t testing.TB) protocol.Task {
	b, err := json.Marshal(multiSpec)
	if err != nil {
		t.Fatal(err)
	}
	return protocol.Task{Kind: taskspec.Classification, Dims: 3, Metric: "auroc", Spec: b}
}

// multiCases are n generated volumes whose labels are the findings of multiSpec, read
// from the edges volumeCase drew; case 1's second finding is uncertain (−1).
func multiCases(t testing.TB, n int, seed uint64) []protocol.Case {
	cases := volumeCases(t, n, seed)
	for i, c := range cases {
		a, err := taskspec.ReadAnnotation(c.Label, nil)
		if err != nil {
			t.Fatal(err)
		}
		f := make([]int, 3)
		for k, e := range multiSpec.Attributes[0].Classes {
			f[k] = a.Classes[e]
		}
		if i == 1 {
			f[1] = taskspec.FindingUncertain
		}
		writeLabel(t, c.Label, &taskspec.Annotation{Findings: map[string][]int{"findings": f}})
	}
	return cases
}

// TestMaskedFindingLoss: one sigmoid a finding is a head of two logits whose loss is the
// binary cross-entropy of σ(y₁ − y₀), averaged over each finding's labelled samples and
// then over the findings; an uncertain label (−1) contributes nothing: its logits get no
// gradient, and the loss is that of the other labels alone.
func TestMaskedFindingLoss(t *testing.T) {
	heads := findingHeads(multiSpec.Attributes[0])
	found := []map[string][]int{
		{"findings": {1, 0, 1}},
		{"findings": {0, -1, 1}},
		{"findings": {1, 1, 0}},
	}
	const n, in = 3, 4 // three samples, four features each
	be := engine.NewCPU(1)
	b := engine.NewBuilder(be, 1)
	x := b.Input(engine.Shape{N: n, C: in, D: 1, H: 1, W: 1})
	y := b.Dense(x, 2*len(heads))
	sizes := make([]int, len(heads))
	for i := range sizes {
		sizes[i] = 2
	}
	loss := b.HeadLoss(y, sizes, nil)
	net, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64())
	}
	var labels []int32
	for _, f := range found {
		for _, h := range heads {
			labels = append(labels, h.findingTarget(f))
		}
	}
	if want := []int32{1, 0, 1, 0, -1, 1, 1, 1, 0}; !slices.Equal(labels, want) {
		t.Fatalf("targets %v, want %v", labels, want)
	}
	if err := loss.SetLabels(labels); err != nil {
		t.Fatal(err)
	}
	net.Forward()
	net.Backward()
	C := 2 * len(heads)
	var want float64
	for h := range heads {
		var sum float64
		var used int
		for s := range n {
			tgt := labels[s*len(heads)+h]
			if tgt < 0 {
				continue
			}
			d := float64(y.Data[s*C+2*h+1] - y.Data[s*C+2*h])
			p := sigmoid(d)
			if tgt == 1 {
				sum -= math.Log(p)
			} else {
				sum -= math.Log(1 - p)
			}
			used++
			// the softmax's probability of class 1 is the finding's sigmoid
			if got := float64(loss.Prob()[s*C+2*h+1]); math.Abs(got-p) > 1e-6 {
				t.Errorf("sample %d finding %d: softmax %v, sigmoid %v", s, h, got, p)
			}
			// d loss / d y₁ = (σ − t) / (labelled samples · findings)
			g := (p - float64(tgt)) / float64(used0(labels, h, len(heads))) / float64(len(heads))
			if got := float64(y.Grad[s*C+2*h+1]); math.Abs(got-g) > 1e-6 {
				t.Errorf("sample %d finding %d: gradient %v, want %v", s, h, got, g)
			}
		}
		want += sum / float64(used)
	}
	want /= float64(len(heads))
	// float32 logits, float64 sums: 1e-6 is well above their rounding
	if math.Abs(loss.Value()-want) > 1e-6 {
		t.Errorf("loss %v, want the masked binary cross-entropy %v", loss.Value(), want)
	}
	if g := y.Grad[1*C+2*1 : 1*C+2*1+2]; g[0] != 0 || g[1] != 0 {
		t.Errorf("the uncertain label's logits have the gradient %v, want none", g)
	}
	// the balanced weights count only the labelled cases: finding Acom has one positive
	// and one negative labelled, n / (2 · 1) = 1 each
	if w := findingWeights(heads[1], found); !slices.Equal(w, []float64{1, 1}) {
		t.Errorf("weights of Acom %v, want [1 1]", w)
	}
}

// used0 is how many samples label head h.
func used0(labels []int32, h, heads int) int {
	n := 0
	for i := h; i < len(labels); i += heads {
		if labels[i] >= 0 {
			n++
		}
	}
	return n
}

// TestMultiLabelTrain: the cnn and prior lanes train on findings, validate with the mean
// AUROC over findings, and predict one probability a finding with the findings at 0.5.
func TestMultiLabelTrain(t *testing.T) {
	cases := multiCases(t, 6, 3)
	for _, cfg := range [][]byte{tiny("attributes", 4, 2, 2), []byte(`{"lane":"prior"}`)} {
		res, err := cls{}.Train(context.Background(), &protocol.TrainRequest{Task: multiTask(t), Config: cfg, Train: cases, Validation: cases, WorkDir: t.TempDir(), Seed: 1},
			func(*protocol.Progress) error { return nil })
		if err != nil {
			t.Fatalf("%s: %v", cfg, err)
		}
		if _, ok := res.Validation["auroc"]; !ok {
			t.Errorf("%s: validation %v has no auroc", cfg, res.Validation)
		}
		out := t.TempDir()
		if _, err := (cls{}).Predict(context.Background(), &protocol.PredictRequest{Task: multiTask(t), Checkpoint: res.Checkpoint, Cases: cases, OutputDir: out}); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			a, err := taskspec.ReadAnnotation(filepath.Join(out, c.ID+".json"), multiSpec)
			if err != nil {
				t.Fatal(err)
			}
			p, f := a.Probs["findings"], a.Findings["findings"]
			if len(p) != 3 || len(f) != 3 || len(a.Classes) != 0 {
				t.Fatalf("%s: case %s: %+v", cfg, c.ID, a)
			}
			for k := range p {
				if p[k] < 0 || p[k] > 1 || (f[k] == 1) != (p[k] >= 0.5) {
					t.Errorf("%s: case %s: probabilities %v, findings %v", cfg, c.ID, p, f)
				}
			}
		}
	}
	// The prior's probabilities are each finding's share of positives among its labelled
	// cases; its AUROC, one score for every case, is 0.5 for each finding with both.
	res, err := cls{}.Train(context.Background(), &protocol.TrainRequest{Task: multiTask(t), Config: []byte(`{"lane":"prior"}`), Train: cases, Validation: cases, WorkDir: t.TempDir()},
		func(*protocol.Progress) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := res.Validation["auroc"]; ok && v != 0.5 {
		t.Errorf("prior auroc %v, want 0.5", v)
	}
}

// TestScoreFindings: the plugin's validation of findings is metrics.MeanAUROC's mean on
// a case without uncertain labels, each finding's under its name, and a finding without
// negatives left out.
func TestScoreFindings(t *testing.T) {
	a := taskspec.Attribute{Name: "f", Classes: []string{"x", "y", "z"}, MultiLabel: true}
	truth := []map[string][]int{{"f": {1, 0, 1}}, {"f": {0, 1, 1}}, {"f": {1, 1, 1}}, {"f": {0, 0, 1}}}
	prob := [][]float64{{0.9, 0.2, 0.5}, {0.1, 0.8, 0.5}, {0.6, 0.3, 0.5}, {0.7, 0.1, 0.5}}
	got := scoreFindings(a, truth, prob)
	// x: positives 0.9, 0.6 against negatives 0.1, 0.7: 3 of 4 pairs ranked right, 0.75;
	// y: positives 0.8, 0.3 against 0.2, 0.1: all 4, 1; z has no negative: left out.
	want := map[string]float64{"auroc": 0.875, "auroc/x": 0.75, "auroc/y": 1}
	if len(got) != len(want) {
		t.Fatalf("scores %v, want %v", got, want)
	}
	for k, v := range want {
		if math.Abs(got[k]-v) > 1e-12 {
			t.Errorf("%s %v, want %v", k, got[k], v)
		}
	}
}

// TestMultiLabelPlan: a multi-label task gets the cnn lane of one sigmoid a finding and the
// prior, and no variant lane (a multi-label attribute is in no group).
func TestMultiLabelPlan(t *testing.T) {
	r, err := cls{}.Plan(context.Background(), &protocol.PlanRequest{Task: multiTask(t)})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range r.Candidates {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{"cnn-attributes", "prior"}) || !strings.Contains(r.Candidates[0].Rationale, "one sigmoid per finding") {
		t.Errorf("lanes %v: %+v", names, r.Candidates)
	}
}
