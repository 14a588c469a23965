package evaluate

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"amid/plugins/metrics"
	"amid/plugins/taskspec"
)

// multiSpec is a multi-label classification of three findings (NIH ChestX-ray14 names).
var multiSpec = &taskspec.Spec{Kind: taskspec.Classification, Dims: 2, Metric: "auroc",
	Attributes: []taskspec.Attribute{{Name: "findings", Classes: []string{"Effusion", "Infiltration", "Nodule"}, MultiLabel: true}}}

// The committed case: six cases' findings (Nodule present in every one, so it has no
// AUROC) and the probabilities predicted for them, with ties within and across classes.
var (
	mlTruth = [][]int{{1, 0, 1}, {0, 1, 1}, {1, 1, 1}, {0, 0, 1}, {1, 0, 1}, {0, 1, 1}}
	mlProb  = [][]float64{{0.9, 0.2, 0.5}, {0.1, 0.8, 0.5}, {0.6, 0.3, 0.4}, {0.6, 0.1, 0.9}, {0.4, 0.3, 0.5}, {0.2, 0.7, 0.6}}
)

func multiPairs(t *testing.T, truth [][]int, prob [][]float64) []Pair {
	t.Helper()
	dir := t.TempDir()
	var pairs []Pair
	for i := range truth {
		id := fmt.Sprintf("c%d", i)
		pp, gp := filepath.Join(dir, id+"p.json"), filepath.Join(dir, id+"g.json")
		f := make([]int, len(prob[i]))
		for k, v := range prob[i] {
			if v >= 0.5 {
				f[k] = 1
			}
		}
		writeAnn(t, pp, &taskspec.Annotation{Findings: map[string][]int{"findings": f}, Probs: map[string][]float64{"findings": prob[i]}})
		writeAnn(t, gp, &taskspec.Annotation{Findings: map[string][]int{"findings": truth[i]}})
		pairs = append(pairs, Pair{ID: id, Pred: pp, Label: gp})
	}
	return pairs
}

// column is finding k of every case: whether it is present, and its probability; an
// uncertain label's case is left out.
func column(truth [][]int, prob [][]float64, k int) ([]bool, []float64) {
	var y []bool
	var s []float64
	for i := range truth {
		if truth[i][k] != taskspec.FindingUncertain {
			y, s = append(y, truth[i][k] == 1), append(s, prob[i][k])
		}
	}
	return y, s
}

// TestMultiLabelAUROC: a multi-label task is scored by the mean AUROC over its findings,
// which equals the mean of each finding's metrics.AUROC (to 1e-12: one division apart), each
// kept as auroc_<finding>; the finding without negatives is left out and named; with an
// uncertain label, that case is left out of its finding alone.
func TestMultiLabelAUROC(t *testing.T) {
	s, err := Evaluate(context.Background(), multiSpec, multiPairs(t, mlTruth, mlProb))
	if err != nil {
		t.Fatal(err)
	}
	e, _ := metrics.AUROC(column(mlTruth, mlProb, 0))
	i, _ := metrics.AUROC(column(mlTruth, mlProb, 1))
	if _, why := metrics.AUROC(column(mlTruth, mlProb, 2)); why == "" {
		t.Fatal("Nodule has an AUROC; the case means it to have none")
	}
	if s.Metric != "auroc" || math.Abs(s.Value-(e+i)/2) > 1e-12 || s.Extra["auroc_Effusion"] != e || s.Extra["auroc_Infiltration"] != i {
		t.Errorf("score %+v, want auroc %v (Effusion %v, Infiltration %v)", s, (e+i)/2, e, i)
	}
	if _, ok := s.Extra["auroc_Nodule"]; ok || len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "finding Nodule has no AUROC") {
		t.Errorf("notes %v, extra %v: want Nodule left out and named", s.Notes, s.Extra)
	}
	if _, _, ok := Interval(s.Extra); !ok {
		t.Errorf("no bootstrap interval in %v", s.Extra)
	}
	// By hand: Effusion's positives 0.9, 0.6, 0.4 against negatives 0.1, 0.6, 0.2 win 7 of
	// 9 pairs and tie 1 (0.6, 0.6): (7 + 0.5) / 9.
	if want := 7.5 / 9; math.Abs(e-want) > 1e-12 {
		t.Errorf("Effusion %v, want %v", e, want)
	}
	unc := [][]int{{1, 0, 1}, {0, -1, 1}, {1, 1, 1}, {0, 0, 1}, {1, 0, 1}, {0, 1, 1}}
	s, err = Evaluate(context.Background(), multiSpec, multiPairs(t, unc, mlProb))
	if err != nil {
		t.Fatal(err)
	}
	i2, _ := metrics.AUROC(column(unc, mlProb, 1))
	if math.Abs(s.Value-(e+i2)/2) > 1e-12 || s.Extra["auroc_Infiltration"] != i2 {
		t.Errorf("with an uncertain label: %+v, want Infiltration %v", s, i2)
	}
	// No finding with an AUROC: undefined, saying why.
	one := [][]int{{1, 1, 1}, {1, 1, 1}}
	s, err = Evaluate(context.Background(), multiSpec, multiPairs(t, one, mlProb[:2]))
	if err != nil || s.Undefined == "" {
		t.Errorf("every finding present: %+v %v, want undefined", s, err)
	}
}
