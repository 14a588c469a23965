package taskspec

import (
	"errors"
	"math"
	"strings"
	"testing"

	"amid/plugins/metrics"
)

var chest = &Spec{Kind: Classification, Dims: 2, Metric: "auroc",
	Attributes: []Attribute{{Name: "findings", Classes: []string{"Effusion", "Infiltration"}, MultiLabel: true}}}

// TestMultiLabelSpec: a multi-label attribute is a classification's only attribute, in no
// group, scored by auroc; one finding is enough.
func TestMultiLabelSpec(t *testing.T) {
	if err := chest.Check(); err != nil {
		t.Fatal(err)
	}
	one := Spec{Kind: Classification, Dims: 2, Metric: "auroc", Attributes: []Attribute{{Name: "f", Classes: []string{"Effusion"}, MultiLabel: true}}}
	if err := one.Check(); err != nil {
		t.Errorf("one finding: %v", err)
	}
	ml := Attribute{Name: "f", Classes: []string{"a", "b"}, MultiLabel: true}
	for _, s := range []Spec{
		{Kind: Detection, Dims: 2, Attributes: []Attribute{ml}},
		{Kind: Classification, Dims: 2, Metric: "auroc", Attributes: []Attribute{ml, {Name: "view", Classes: []string{"AP", "PA"}}}},
		{Kind: Classification, Dims: 2, Metric: "f1_macro", Attributes: []Attribute{ml}},
		{Kind: Classification, Dims: 2, Metric: "auroc", Attributes: []Attribute{{Name: "f", Classes: []string{"a", "b"}, MultiLabel: true, Group: "g"}}},
		{Kind: Classification, Dims: 2, Metric: "auroc", Attributes: []Attribute{{Name: "f", MultiLabel: true}}},
	} {
		if err := s.Check(); !errors.Is(err, ErrSpec) {
			t.Errorf("%+v: %v, want ErrSpec", s, err)
		}
	}
}

// TestFindingsAnnotation: findings of 1, 0 and −1, one a finding of a multi-label
// attribute; a class for it, a value outside, or a wrong count is refused.
func TestFindingsAnnotation(t *testing.T) {
	if _, err := DecodeAnnotation([]byte(`{"findings":{"findings":[1,-1]},"probs":{"findings":[0.75,0.25]}}`), chest); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{
		`{"findings":{"findings":[1,2]}}`,
		`{"findings":{"findings":[1]}}`,
		`{"findings":{"other":[1,0]}}`,
		`{"classes":{"findings":1}}`,
		`{"probs":{"findings":[0.5,1.5]}}`,
	} {
		if _, err := DecodeAnnotation([]byte(b), chest); !errors.Is(err, ErrAnnotation) {
			t.Errorf("%s: %v, want ErrAnnotation", b, err)
		}
	}
}

// TestFindingsAUROC: without uncertain labels it is metrics.MeanAUROC's; an uncertain
// label leaves its case out of its finding alone.
func TestFindingsAUROC(t *testing.T) {
	truth := [][]int{{1, 0}, {0, 1}, {1, 1}, {0, 0}}
	prob := [][]float64{{0.9, 0.2}, {0.1, 0.8}, {0.6, 0.3}, {0.7, 0.4}}
	b := [][]bool{{true, false}, {false, true}, {true, true}, {false, false}}
	m, per, why := FindingsAUROC(truth, prob)
	wm, wper, wwhy := metrics.MeanAUROC(b, prob)
	if m != wm || why != wwhy || len(per) != len(wper) || per[0] != wper[0] || per[1] != wper[1] {
		t.Errorf("%v %v %q, want MeanAUROC's %v %v %q", m, per, why, wm, wper, wwhy)
	}
	truth[3][1] = FindingUncertain
	m, per, _ = FindingsAUROC(truth, prob)
	// Infiltration without case 4: positives 0.8, 0.3 against the negative 0.2: 1.
	x, _ := metrics.AUROC([]bool{true, false, true, false}, []float64{0.9, 0.1, 0.6, 0.7})
	if per[1].Value != 1 || math.Abs(m-(x+1)/2) > 1e-12 {
		t.Errorf("with an uncertain label: %v %v, want Infiltration 1 and mean %v", m, per, (x+1)/2)
	}
	if _, _, why := FindingsAUROC([][]int{{-1, 1}}, [][]float64{{0.5, 0.5}}); why == "" {
		t.Error("one case: an AUROC")
	}
}

// FuzzFindingsAnnotation: any bytes decode to an annotation whose findings are 1, 0 or −1,
// one a finding, or to one error line; never a panic.
func FuzzFindingsAnnotation(f *testing.F) {
	f.Add([]byte(`{"findings":{"findings":[1,-1]},"probs":{"findings":[0.75,0.25]}}`))
	f.Add([]byte(`{"findings":{"findings":[1,2,3]}}`))
	f.Add([]byte(`{"findings":{"findings":null}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAnnotation(b, chest)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		for name, fs := range a.Findings {
			if name != "findings" || len(fs) != 2 {
				t.Fatalf("findings %v", a.Findings)
			}
			for _, v := range fs {
				if v < -1 || v > 1 {
					t.Fatalf("finding value %d", v)
				}
			}
		}
	})
}
