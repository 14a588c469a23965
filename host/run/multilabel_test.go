package run

import (
	"strings"
	"testing"
)

// TestReportFindingAUROCs: the report lists each finding's AUROC on each validated fold of
// the chosen lane, "none" where a fold has no AUROC for it; a lane whose folds keep none
// adds no line.
func TestReportFindingAUROCs(t *testing.T) {
	lane := &LaneState{ID: "cnn-attributes", Folds: map[int]FoldState{
		0: {Status: FoldDone, Score: 0.75, Extra: map[string]float64{"auroc_CT": 0.5, "auroc_MR": 1}},
		1: {Status: FoldDone, Score: 0.625, Extra: map[string]float64{"auroc_MR": 0.625, "ci95_low": 0.5}},
		2: {Status: FoldFailed},
	}}
	st := &State{ID: "r", Chosen: "cnn-attributes", Lanes: []*LaneState{lane}}
	want := "AUROC of each class or finding of cnn-attributes (none: the fold has no positive or no negative of it, and its mean leaves it out): CT (fold 0 0.5000, fold 1 none); MR (fold 0 1.0000, fold 1 0.6250)."
	if rep := Report(st); !strings.Contains(rep, want) {
		t.Errorf("the report lacks %q:\n%s", want, rep)
	}
	if got := classAUROCs(&LaneState{ID: "x", Folds: map[int]FoldState{0: {Status: FoldDone, Extra: map[string]float64{"CT": 1}}}}); got != "" {
		t.Errorf("a lane without AUROCs: %q", got)
	}
}
