package evaluate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"amid/plugins/metrics"
	"amid/plugins/taskspec"
)

// binarySpec is a classification of one two-class attribute judged by metric.
func binarySpec(metric string) *taskspec.Spec {
	return &taskspec.Spec{Kind: taskspec.Classification, Dims: 2, Metric: metric,
		Attributes: []taskspec.Attribute{{Name: "finding", Classes: []string{"absent", "present"}}}}
}

// clinicalPairs writes one label and one prediction per case: truth y, the prediction's
// probability p of class 1 and its class (p ≥ 0.5).
func clinicalPairs(t *testing.T, y []int, p []float64) []Pair {
	t.Helper()
	dir := t.TempDir()
	var pairs []Pair
	for i := range y {
		id := fmt.Sprintf("c%d", i)
		pp, gp := filepath.Join(dir, id+"p.json"), filepath.Join(dir, id+"g.json")
		cls := 0
		if p[i] >= 0.5 {
			cls = 1
		}
		writeAnn(t, pp, &taskspec.Annotation{Classes: map[string]int{"finding": cls}, Probs: map[string][]float64{"finding": {1 - p[i], p[i]}}})
		writeAnn(t, gp, &taskspec.Annotation{Classes: map[string]int{"finding": y[i]}})
		pairs = append(pairs, Pair{ID: id, Pred: pp, Label: gp})
	}
	return pairs
}

// The validation cases of these tests: 4 positives scoring 0.9, 0.8, 0.7, 0.4 and 4
// negatives scoring 0.6, 0.4, 0.3, 0.2.
var (
	valY = []int{1, 1, 1, 0, 0, 0, 1, 0}
	valP = []float64{0.9, 0.8, 0.4, 0.4, 0.3, 0.2, 0.7, 0.6}
)

// TestClinicalAUROC: a task whose metric is auroc is validated with it, from the
// predictions' probabilities, with its bootstrap interval.
func TestClinicalAUROC(t *testing.T) {
	s, err := Evaluate(context.Background(), binarySpec("auroc"), clinicalPairs(t, valY, valP))
	if err != nil {
		t.Fatal(err)
	}
	// Of the 16 positive–negative pairs, 0.9, 0.8 and 0.7 outrank all 4 negatives (12);
	// 0.4 outranks 0.3 and 0.2 and ties 0.4 (2.5): 14.5 / 16.
	if s.Metric != "auroc" || s.Undefined != "" || math.Abs(s.Value-14.5/16) > 1e-15 {
		t.Fatalf("%v, want auroc 0.90625", s)
	}
	lo, hi := s.Extra["ci95_low"], s.Extra["ci95_high"]
	if !(lo <= s.Value && s.Value <= hi && lo < hi) {
		t.Errorf("interval [%v, %v] does not hold %v", lo, hi, s.Value)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Error(err)
	}
}

// TestClinicalUndefinedFold: a fold without positives has no AUROC: the score says why,
// and is not 0.5 (issue #31).
func TestClinicalUndefinedFold(t *testing.T) {
	s, err := Evaluate(context.Background(), binarySpec("auroc"), clinicalPairs(t, []int{0, 0, 0}, []float64{0.2, 0.7, 0.4}))
	if err != nil {
		t.Fatal(err)
	}
	if s.Undefined == "" || s.Value != 0 {
		t.Fatalf("%v: want undefined", s)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Error(err)
	}
}

// TestClinicalBrierLowerBetter: the Brier score is better lower, so the primary score is
// its negation and Extra holds the score itself.
func TestClinicalBrierLowerBetter(t *testing.T) {
	s, err := Evaluate(context.Background(), binarySpec("brier"), clinicalPairs(t, valY, valP))
	if err != nil {
		t.Fatal(err)
	}
	// Squared errors 0.01, 0.04, 0.36, 0.16, 0.09, 0.04, 0.09, 0.36: sum 1.15, over 8.
	want := 1.15 / 8
	if s.Metric != "neg_brier" || math.Abs(s.Value+want) > 1e-15 || math.Abs(s.Extra["brier"]-want) > 1e-15 {
		t.Fatalf("%v (brier %v), want neg_brier %v", s, s.Extra["brier"], -want)
	}
	if lo, hi := s.Extra["ci95_low"], s.Extra["ci95_high"]; !(lo <= s.Value && s.Value <= hi && hi <= 0) {
		t.Errorf("interval [%v, %v] of a negated Brier score around %v", lo, hi, s.Value)
	}
	if !LowerBetter("brier") || !LowerBetter("ECE") || LowerBetter("auroc") || LowerBetter("dice") {
		t.Error("LowerBetter: brier and ece are better lower, auroc and dice higher")
	}
}

// TestClinicalThresholdKeptForTest: the operating point is chosen on the validation cases
// (Youden's J) and the test set is scored at that threshold, not at its own.
func TestClinicalThresholdKeptForTest(t *testing.T) {
	spec := binarySpec("sensitivity_at_youden")
	val, err := Evaluate(context.Background(), spec, clinicalPairs(t, valY, valP))
	if err != nil {
		t.Fatal(err)
	}
	// J = TPR − FPR at the thresholds 0.9 … 0.2: 0.25, 0.5, 0.75, 0.5, 0.5, 0.25, 0: the
	// threshold 0.7 finds 3 of 4 positives and flags no negative.
	if val.Extra[ThresholdKey+"finding"] != 0.7 || val.Value != 0.75 || val.Extra["specificity_finding"] != 1 {
		t.Fatalf("validation %v, extra %v: want threshold 0.7, sensitivity 0.75, specificity 1", val, val.Extra)
	}
	// Test cases: positives 0.65 and 0.95, negatives 0.1 and 0.8. At 0.7: one positive of
	// two found, one negative of two flagged. Youden's J on these cases alone would pick
	// 0.95 (specificity 1).
	test := clinicalPairs(t, []int{1, 1, 0, 0}, []float64{0.65, 0.95, 0.1, 0.8})
	ts, err := EvaluateWith(context.Background(), spec, test, Options{Thresholds: Thresholds(val.Extra)})
	if err != nil {
		t.Fatal(err)
	}
	if ts.Value != 0.5 || ts.Extra["specificity_finding"] != 0.5 || ts.Extra[ThresholdKey+"finding"] != 0.7 {
		t.Errorf("test %v, extra %v: want sensitivity 0.5 and specificity 0.5 at the validation's 0.7", ts, ts.Extra)
	}
	own, _ := Evaluate(context.Background(), spec, test)
	if own.Extra["specificity_finding"] != 1 {
		t.Errorf("the test cases' own Youden threshold gives specificity %v, want 1", own.Extra["specificity_finding"])
	}
	// An inverted ranking (every positive below every negative): no threshold beats
	// calling every case negative (J = 0 there, below 0 elsewhere), kept as the largest
	// float, which JSON holds and no probability reaches.
	inv, err := Evaluate(context.Background(), spec, clinicalPairs(t, []int{1, 1, 0, 0}, []float64{0.1, 0.2, 0.8, 0.9}))
	if err != nil || inv.Extra[ThresholdKey+"finding"] != math.MaxFloat64 || inv.Value != 0 || inv.Undefined != "" {
		t.Errorf("inverted: %v, %v, extra %v: want sensitivity 0 above every score", inv, err, inv.Extra)
	}
	if _, err := json.Marshal(inv); err != nil {
		t.Error(err)
	}
	// A target sensitivity of 1: the highest threshold finding every positive is 0.4.
	val, err = Evaluate(context.Background(), binarySpec("specificity_at_sensitivity_1"), clinicalPairs(t, valY, valP))
	if err != nil || val.Extra[ThresholdKey+"finding"] != 0.4 || val.Value != 0.5 {
		t.Errorf("%v, %v, extra %v: want threshold 0.4, specificity 2/4", val, err, val.Extra)
	}
}

// TestClinicalOrdinalAndF1: quadratic kappa and macro F1 of a graded attribute equal the
// metrics' own values (which the metrics' tests compare with scikit-learn).
func TestClinicalOrdinalAndF1(t *testing.T) {
	spec := &taskspec.Spec{Kind: taskspec.Classification, Dims: 2,
		Attributes: []taskspec.Attribute{{Name: "grade", Classes: []string{"0", "1", "2", "3", "4"}}}}
	truth, pred := []int{0, 1, 2, 3, 4, 2, 1, 0}, []int{0, 2, 2, 3, 3, 1, 1, 0}
	dir := t.TempDir()
	var pairs []Pair
	for i := range truth {
		pp, gp := filepath.Join(dir, fmt.Sprint(i, "p.json")), filepath.Join(dir, fmt.Sprint(i, "g.json"))
		writeAnn(t, pp, &taskspec.Annotation{Classes: map[string]int{"grade": pred[i]}})
		writeAnn(t, gp, &taskspec.Annotation{Classes: map[string]int{"grade": truth[i]}})
		pairs = append(pairs, Pair{ID: fmt.Sprint(i), Pred: pp, Label: gp})
	}
	for name, want := range map[string]func() (float64, string){
		"kappa_quadratic": func() (float64, string) { return metrics.QuadraticKappa(truth, pred, 5) },
		"f1_macro":        func() (float64, string) { return metrics.MacroF1(truth, pred) },
	} {
		spec.Metric = name
		s, err := Evaluate(context.Background(), spec, pairs)
		w, _ := want()
		if err != nil || s.Value != w || s.Metric != name {
			t.Errorf("%s: %v, %v; want %v", name, s, err, w)
		}
	}
	// AUROC of five grades: each grade's one-vs-rest AUROC from the one-hot scores of the
	// predicted grades (no probabilities written), their mean the value.
	spec.Metric = "auroc"
	s, err := Evaluate(context.Background(), spec, pairs)
	if err != nil || s.Metric != "auroc" {
		t.Fatalf("auroc: %v, %v", s, err)
	}
	var sum float64
	for g := range 5 {
		v, ok := s.Extra[fmt.Sprint("auroc_", g)]
		if !ok {
			t.Fatalf("extra %v lacks grade %d's AUROC", s.Extra, g)
		}
		sum += v
	}
	if math.Abs(s.Value-sum/5) > 1e-15 {
		t.Errorf("auroc %v, the mean of the grades' is %v", s.Value, sum/5)
	}
	// Sensitivity needs two classes.
	spec.Metric = "sensitivity_at_youden"
	if _, err := Evaluate(context.Background(), spec, pairs); !errors.Is(err, ErrEval) {
		t.Errorf("sensitivity of a five-class attribute: %v, want ErrEval", err)
	}
	spec.Metric = "specificity_at_sensitivity_high"
	if _, err := Evaluate(context.Background(), spec, pairs); !errors.Is(err, ErrEval) {
		t.Errorf("a target sensitivity that is no number: %v, want ErrEval", err)
	}
}
