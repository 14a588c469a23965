package run

import (
	"math"
	"strings"
	"testing"

	"amid/host/evaluate"
	"amid/host/export"
	"amid/host/schedule"
	"amid/host/task"
)

// clinicalLane is a lane judged by a clinical metric: fold 0 validated with AUROC 0.9062
// (interval 0.8 – 0.98) at threshold 0.7, fold 1 with 0.75 (0.6 – 0.85) at 0.5, fold 2
// undefined (no positives). The numbers are made up; only where they go is checked.
func clinicalLane() *LaneState {
	return &LaneState{ID: "cnn", Folds: map[int]FoldState{
		0: {Status: FoldDone, Score: 0.90625, Extra: map[string]float64{evaluate.CILow: 0.8, evaluate.CIHigh: 0.98, evaluate.ThresholdKey + "finding": 0.7}},
		1: {Status: FoldDone, Score: 0.75, Extra: map[string]float64{evaluate.CILow: 0.6, evaluate.CIHigh: 0.85, evaluate.ThresholdKey + "finding": 0.5}},
		2: {Status: FoldDone, Undefined: "no positive case among the 3"},
	}}
}

// TestClinicalCardInterval: the card gives a clinical metric the bootstrap interval its
// validation computed (one fold's), none over several folds, and shows a metric better
// lower as itself.
func TestClinicalCardInterval(t *testing.T) {
	l := clinicalLane()
	delete(l.Folds, 1)
	s := export.Score("validation (out of fold)", "auroc", 0.90625, nil)
	sizes := map[int]int{0: 6, 1: 5, 2: 3} // validation cases per fold
	foldInterval(&s, l, sizes)
	if s.Low != 0.8 || s.High != 0.98 || s.Cases != 6 || !strings.Contains(s.Interval, "1000 resamples") {
		t.Errorf("one fold: %+v", s)
	}
	s = export.Score("validation (out of fold)", "auroc", 0.828125, nil)
	foldInterval(&s, clinicalLane(), sizes)
	if s.Low != s.Value || s.High != s.Value || s.Cases != 11 || !strings.Contains(s.Interval, "none over the 2 folds") {
		t.Errorf("two folds: %+v", s)
	}
	if !strings.Contains(export.RenderCard(&export.Card{Scores: []export.CardScore{s}}), "| validation (out of fold) | auroc | 0.8281 | none | 11 |") {
		t.Error("the card's table does not show the score without an interval")
	}
	// Brier 0.14375 (interval 0.1 – 0.2), ranked as its negation.
	b := export.CardScore{Set: "test", Metric: "neg_brier", Value: -0.14375, Low: -0.2, High: -0.1}
	if got := lowerShown(b, "brier"); got.Metric != "brier (lower is better)" || got.Value != 0.14375 || got.Low != 0.1 || got.High != 0.2 {
		t.Errorf("lowerShown: %+v", got)
	}
	if got := lowerShown(b, "auroc"); got.Metric != b.Metric || got.Value != b.Value || got.Low != b.Low {
		t.Errorf("lowerShown changed a metric better higher: %+v", got)
	}
	extra := map[string]float64{evaluate.CILow: 1, evaluate.CIHigh: 2, "sensitivity_finding": 0.5}
	if w := withoutInterval(extra); len(w) != 1 || len(extra) != 3 {
		t.Errorf("withoutInterval: %v (of %v)", w, extra)
	}
}

// TestClinicalReportIntervals: the report lists each fold's interval and threshold, and
// the test score's interval.
func TestClinicalReportIntervals(t *testing.T) {
	st := &State{ID: "r", Chosen: "cnn", Lanes: []*LaneState{clinicalLane()},
		TestScore: &Grade{Valid: true, Primary: "auroc", Score: 0.8, Metrics: map[string]float64{evaluate.CILow: 0.7, evaluate.CIHigh: 0.9}}}
	rep := Report(st)
	for _, want := range []string{
		"fold 0 0.9062 (0.8000 – 0.9800), threshold finding 0.7; fold 1 0.7500 (0.6000 – 0.8500), threshold finding 0.5.",
		"auroc = 0.8000 (0.7000 – 0.9000: 95 % percentile bootstrap over the cases (1000 resamples, a fixed seed))",
	} {
		if !strings.Contains(rep, want) {
			t.Errorf("the report lacks %q:\n%s", want, rep)
		}
	}
}

// TestClinicalTestThresholds: the test set is scored at the threshold the chosen model's
// validation chose: the chosen fold's, or the median over the folds for a model trained
// on all the data.
func TestClinicalTestThresholds(t *testing.T) {
	r := &Runner{st: &State{Chosen: "cnn", ChosenFold: 1, Lanes: []*LaneState{clinicalLane()}}}
	if th := r.thresholds(); th["finding"] != 0.5 || len(th) != 1 {
		t.Errorf("chosen fold 1: %v, want finding 0.5", th)
	}
	r.st.Final = &FinalModel{Mode: schedule.FinalAllData, Checkpoint: "all.ckpt"}
	// The folds with a value chose 0.7 and 0.5: their median is 0.6.
	if th := r.thresholds(); math.Abs(th["finding"]-0.6) > 1e-15 {
		t.Errorf("all data: %v, want finding 0.6", th)
	}
	r.task = &task.Task{Metric: task.Metric{Name: "brier"}}
	if got := r.scoreName(); got != "neg_brier" {
		t.Errorf("the score of a Brier task is called %q, want neg_brier", got)
	}
	r.st.Lanes[0].Folds = map[int]FoldState{0: {Status: FoldDone, Score: 0.9}}
	if th := r.thresholds(); th != nil {
		t.Errorf("a metric without an operating point: %v, want none", th)
	}
}
