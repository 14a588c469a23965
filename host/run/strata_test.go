package run

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"amid/host/audit"
	"amid/host/folds"
	"amid/host/task"
	"amid/plugins/taskspec"
)

// grades is a 5-class classification task like issue 23's (metric balanced_accuracy).
func grades() *task.Task {
	return &task.Task{ID: "grades", Kind: taskspec.Classification, Dims: 2,
		Attributes: []taskspec.Attribute{{Name: "grade", Classes: []string{"g0", "g1", "g2", "g3", "g4"}}},
		Metric:     task.Metric{Name: "balanced_accuracy"}}
}

// classCases writes, per class index of perPatient (one entry a patient), casesPer
// classification labels into dir and returns the cases and their label files.
func classCases(t *testing.T, dir string, perPatient []int, casesPer int) ([]task.Case, map[string]string) {
	t.Helper()
	var cs []task.Case
	labels := map[string]string{}
	for p, class := range perPatient {
		for j := range casesPer {
			id := fmt.Sprintf("p%02d-%d", p, j)
			b, err := (&taskspec.Annotation{Classes: map[string]int{"grade": class}}).Marshal()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, id+".json")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			cs = append(cs, task.Case{ID: id, Patient: fmt.Sprintf("p%02d", p), Label: path})
			labels[id] = path
		}
	}
	return cs, labels
}

// foldsRunner is a runner of tk in a fresh run folder with its audit log open, logging
// into log.
func foldsRunner(t *testing.T, tk *task.Task, labels map[string]string, log *[]string) *Runner {
	t.Helper()
	dir := t.TempDir()
	lg, err := audit.Open(filepath.Join(dir, "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lg.Close() })
	// 5 folds and seed 42: the run's defaults (Options).
	r := &Runner{dir: dir, st: &State{Folds: 5, Seed: 42, Phase: PhasePrepare}, task: tk, labels: labels, audit: lg}
	r.env.Events = func(e Event) { *log = append(*log, e.Message) }
	return r
}

func TestCaseClasses(t *testing.T) {
	cs, labels := classCases(t, t.TempDir(), []int{3, 0}, 1)
	got, err := caseClasses(grades().Spec(), cs, labels)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"p00-0": {"grade=g3"}, "p01-0": {"grade=g0"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("classes %v, want %v", got, want)
	}
	seg := &task.Task{Kind: taskspec.Segmentation}
	if got, err := caseClasses(seg.Spec(), cs, labels); got != nil || err != nil {
		t.Errorf("segmentation: %v, %v; want no classes", got, err)
	}
}

// Issue 23: five grades, each held by 5 patients of 2 cases, locked as a run locks them:
// the split is stratified, so that every fold holds every grade, and the record says so.
func TestRunLocksStratifiedFolds(t *testing.T) {
	var perPatient []int
	for c := range 5 {
		for range 5 {
			perPatient = append(perPatient, c)
		}
	}
	cs, labels := classCases(t, t.TempDir(), perPatient, 2)
	var log []string
	r := foldsRunner(t, grades(), labels, &log)
	if err := r.lockFolds(cs, idsHash(nil), 25); err != nil {
		t.Fatal(err)
	}
	fl, err := r.folds()
	if err != nil {
		t.Fatal(err)
	}
	if fl.Classes == nil || fl.Gaps() != nil {
		t.Errorf("folds not stratified: classes %v, gaps %v", fl.Classes, fl.Gaps())
	}
	es := entries(t, r)
	var d map[string]any
	if err := json.Unmarshal(es[len(es)-1].Details, &d); err != nil {
		t.Fatal(err)
	}
	if es[len(es)-1].Action != audit.ActionFoldsLocked || d["stratified"] != true || d["gaps"] != nil {
		t.Errorf("folds.locked entry %s %s", es[len(es)-1].Action, es[len(es)-1].Details)
	}
	if !strings.Contains(strings.Join(log, "\n"), "stratified by class") {
		t.Errorf("log %q", log)
	}
}

// A grade held by 2 patients cannot be in 5 folds: the log and the folds.locked record name
// the 3 folds without it and the grade.
func TestRunReportsFoldsLackingClasses(t *testing.T) {
	perPatient := []int{0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2} // grade g2: 2 patients
	cs, labels := classCases(t, t.TempDir(), perPatient, 1)
	var log []string
	tk := grades()
	tk.Attributes[0].Classes = tk.Attributes[0].Classes[:3]
	r := foldsRunner(t, tk, labels, &log)
	if err := r.lockFolds(cs, idsHash(nil), len(perPatient)); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(log, "\n")
	for _, k := range []int{2, 3, 4} {
		if !strings.Contains(text, fmt.Sprintf("warning: fold %d lacks grade=g2", k)) {
			t.Errorf("the log does not name fold %d and grade g2:\n%s", k, text)
		}
	}
	es := entries(t, r)
	var d struct {
		Gaps []folds.Gap `json:"gaps"`
	}
	if err := json.Unmarshal(es[len(es)-1].Details, &d); err != nil {
		t.Fatal(err)
	}
	want := []folds.Gap{{Fold: 2, Missing: []string{"grade=g2"}}, {Fold: 3, Missing: []string{"grade=g2"}}, {Fold: 4, Missing: []string{"grade=g2"}}}
	if !reflect.DeepEqual(d.Gaps, want) {
		t.Errorf("recorded gaps %v, want %v", d.Gaps, want)
	}
}

// Issue 23's failure at the choice: a majority-class lane scores 1/5 balanced accuracy on a
// fold holding all 5 classes (recall 1 on one class, 0 on four) and 1 on a fold of its one
// class; a real model 0.6 and 0.55. The one-class fold's score must not make the majority
// lane win, nor choose a lane's fold model.
func TestFoldLackingClassesDoesNotWin(t *testing.T) {
	lacks := []string{"grade=g1", "grade=g2", "grade=g3", "grade=g4"}
	lane := func(id string, f0, f1 float64) *LaneState {
		return &LaneState{ID: id, Folds: map[int]FoldState{
			0: {Status: FoldDone, Score: f0},
			1: {Status: FoldDone, Score: f1, Lacks: lacks},
		}}
	}
	majority, model := lane("majority", 0.2, 1), lane("model", 0.6, 0.55)
	r := &Runner{st: &State{Lanes: []*LaneState{majority, model}}, task: grades()}
	best, fold, err := r.choose()
	if err != nil {
		t.Fatal(err)
	}
	if best != model || fold != 0 {
		t.Errorf("chose %s fold %d; want model fold 0 (why: %q)", best.ID, fold, r.st.Why)
	}
	if m, n := majority.Mean(); m != 0.2 || n != 1 {
		t.Errorf("majority mean %v over %d folds; want 0.2 over fold 0 alone", m, n)
	}
	if !strings.Contains(strings.Join(r.st.Why, "\n"), "fold 1's validation cases lack grade=g1") {
		t.Errorf("why does not say fold 1 was not trusted: %q", r.st.Why)
	}
	if got := majority.FoldTexts(false); got[1] != "f1 1.0000 (lacks grade=g1, grade=g2, grade=g3, grade=g4)" {
		t.Errorf("fold texts %q", got)
	}
	// The fold model: the best score among the folds that hold every class.
	one := lane("one", 0.6, 0.9)
	r = &Runner{st: &State{Lanes: []*LaneState{one}}, task: grades()}
	if _, fold, err := r.choose(); err != nil || fold != 0 {
		t.Errorf("chose fold %d (%v); want fold 0, the one holding every class", fold, err)
	}
	// With no fold holding every class, the folds that were scored still count.
	only := &LaneState{ID: "only", Folds: map[int]FoldState{1: {Status: FoldDone, Score: 0.7, Lacks: lacks}}}
	if m, n := only.Mean(); m != 0.7 || n != 1 {
		t.Errorf("mean %v over %d folds; want 0.7 over its one fold", m, n)
	}
}

// entries are the runner's audit entries, checked as a chain.
func entries(t *testing.T, r *Runner) []audit.Entry {
	t.Helper()
	es, err := r.audit.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if err := audit.Verify(es); err != nil {
		t.Fatal(err)
	}
	return es
}
