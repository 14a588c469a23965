package run

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"amid/host/task"
	"amid/plugins/taskspec"
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

// TestFindingStrata: a multi-label case's classes for the folds are the findings it
// holds (an uncertain or absent finding none), so that stratified folds spread each
// finding's positives.
func TestFindingStrata(t *testing.T) {
	spec := &taskspec.Spec{Kind: taskspec.Classification, Dims: 2, Metric: "auroc",
		Attributes: []taskspec.Attribute{{Name: "findings", Classes: []string{"CT", "MR", "US"}, MultiLabel: true}}}
	dir := t.TempDir()
	labels := map[string]string{}
	var cases []task.Case
	for id, f := range map[string][]int{"a": {1, -1, 1}, "b": {0, 0, 0}} {
		p := filepath.Join(dir, id+".json")
		b, err := (&taskspec.Annotation{Findings: map[string][]int{"findings": f}}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		labels[id] = p
		cases = append(cases, task.Case{ID: id})
	}
	got, err := caseClasses(spec, cases, labels)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got["a"], []string{"findings=CT", "findings=US"}) || len(got["b"]) != 0 {
		t.Errorf("classes %v", got)
	}
}
