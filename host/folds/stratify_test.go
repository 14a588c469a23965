package folds

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"amid/host/task"
)

// classed is a classification dataset: perClass[i] patients of class "c<i>", each with
// casesPer cases of that class, patients numbered across classes.
func classed(perClass []int, casesPer int) ([]task.Case, map[string][]string) {
	var cs []task.Case
	cls := map[string][]string{}
	p := 0
	for c, n := range perClass {
		for range n {
			for j := range casesPer {
				id := fmt.Sprintf("p%03d-%d", p, j)
				cs = append(cs, task.Case{ID: id, Patient: fmt.Sprintf("p%03d", p)})
				cls[id] = []string{fmt.Sprintf("c%d", c)}
			}
			p++
		}
	}
	return cs, cls
}

// missing is, per fold, the classes of cls that none of the fold's cases holds, worked out
// from the assignment alone (not through Gaps).
func missing(f *Folds, cls map[string][]string) map[int][]string {
	all := map[string]bool{}
	in := make([]map[string]bool, f.K)
	for i := range in {
		in[i] = map[string]bool{}
	}
	for id, cs := range cls {
		for _, c := range cs {
			all[c] = true
			in[f.Assign[id]][c] = true
		}
	}
	out := map[int][]string{}
	for i := range f.K {
		for c := range all {
			if !in[i][c] {
				out[i] = append(out[i], c)
			}
		}
		slices.Sort(out[i])
	}
	for i := range f.K {
		if len(out[i]) == 0 {
			delete(out, i)
		}
	}
	return out
}

// patientsTogether fails t when a patient's cases are in two folds.
func patientsTogether(t *testing.T, f *Folds, cs []task.Case) {
	t.Helper()
	fold := map[string]int{}
	for _, c := range cs {
		k, ok := f.Assign[c.ID]
		if !ok {
			t.Fatalf("case %s has no fold", c.ID)
		}
		if p, seen := fold[c.Patient]; seen && p != k {
			t.Errorf("patient %s is in folds %d and %d", c.Patient, p, k)
		}
		fold[c.Patient] = k
	}
}

// Issue 23: five classes, five patients each with two cases (so that every class can be in
// every one of 5 folds), split with the run's default 5 folds and seed 42 (run.Options).
// The unstratified split leaves folds without classes; the stratified one may not.
func TestStratifiedFoldsHoldEveryClass(t *testing.T) {
	cs, cls := classed([]int{5, 5, 5, 5, 5}, 2)
	old, err := Lock(cs, 5, 42)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing(old, cls)) == 0 {
		t.Fatal("the unstratified split holds every class in every fold: this dataset no longer shows issue 23")
	}
	f, err := LockStratified(cs, cls, 5, 42)
	if err != nil {
		t.Fatal(err)
	}
	patientsTogether(t, f, cs)
	if m := missing(f, cls); len(m) > 0 {
		t.Errorf("the stratified split leaves folds without classes: %v", m)
	}
	if g := f.Gaps(); g != nil {
		t.Errorf("gaps %v in a split that holds every class in every fold", g)
	}
	size := make([]int, f.K)
	for _, k := range f.Assign {
		size[k]++
	}
	for k, n := range size {
		// 5 patients of each class over 5 folds: one patient of each class, 2 cases each.
		if n != 5*2 {
			t.Errorf("fold %d has %d cases; want 10 (sizes %v)", k, n, size)
		}
	}
}

// Issue 23's run: 5 classes very unequally held (a majority class and rare ones), patients
// with 1 to 3 cases. Every class with at least 5 patients must be in every fold, and fold 0
// (where exploration judges the lanes) must hold every class.
func TestStratifiedUnequalClasses(t *testing.T) {
	var cs []task.Case
	cls := map[string][]string{}
	perClass := []int{20, 9, 6, 3, 2} // patients per class: one above k, two below it
	p := 0
	for c, n := range perClass {
		for range n {
			for j := range 1 + p%3 {
				id := fmt.Sprintf("p%03d-%d", p, j)
				cs = append(cs, task.Case{ID: id, Patient: fmt.Sprintf("p%03d", p)})
				cls[id] = []string{fmt.Sprintf("c%d", c)}
			}
			p++
		}
	}
	for _, seed := range []int64{1, 2, 3, 42} {
		f, err := LockStratified(cs, cls, 5, seed)
		if err != nil {
			t.Fatal(err)
		}
		patientsTogether(t, f, cs)
		m := missing(f, cls)
		if len(m[0]) > 0 {
			t.Errorf("seed %d: fold 0 lacks %v", seed, m[0])
		}
		for k, lack := range m {
			for _, c := range lack {
				if c != "c3" && c != "c4" { // the classes with fewer patients than folds
					t.Errorf("seed %d: fold %d lacks %s, which has enough patients for every fold", seed, k, c)
				}
			}
		}
		if !reflect.DeepEqual(gapMap(f.Gaps()), m) {
			t.Errorf("seed %d: Gaps %v, want %v", seed, f.Gaps(), m)
		}
	}
}

func gapMap(gs []Gap) map[int][]string {
	m := map[int][]string{}
	for _, g := range gs {
		m[g.Fold] = g.Missing
	}
	return m
}

// A class with 2 patients cannot be in 5 folds: the report names the 3 folds without it,
// numbered last, and the class.
func TestImpossibleStratificationIsReported(t *testing.T) {
	cs, cls := classed([]int{5, 5, 2}, 1)
	f, err := LockStratified(cs, cls, 5, 42)
	if err != nil {
		t.Fatal(err)
	}
	want := []Gap{{Fold: 2, Missing: []string{"c2"}}, {Fold: 3, Missing: []string{"c2"}}, {Fold: 4, Missing: []string{"c2"}}}
	if g := f.Gaps(); !reflect.DeepEqual(g, want) {
		t.Errorf("gaps %v, want %v", g, want)
	}
	if s := want[0].String(); s != "fold 2 lacks c2" {
		t.Errorf("gap text %q", s)
	}
	if m := missing(f, cls); !reflect.DeepEqual(m, gapMap(want)) {
		t.Errorf("the assignment lacks %v; Gaps says %v", m, want)
	}
}

// Two rare classes of one patient each go into the same fold, which becomes fold 0.
func TestRareClassesGather(t *testing.T) {
	cs, cls := classed([]int{6, 6, 1, 1}, 1)
	for _, seed := range []int64{1, 42} {
		f, err := LockStratified(cs, cls, 3, seed)
		if err != nil {
			t.Fatal(err)
		}
		if m := f.Lacks(0); m != nil {
			t.Errorf("seed %d: fold 0 lacks %v", seed, m)
		}
		for k := 1; k < f.K; k++ {
			if m := f.Lacks(k); !reflect.DeepEqual(m, []string{"c2", "c3"}) {
				t.Errorf("seed %d: fold %d lacks %v, want [c2 c3]", seed, k, m)
			}
		}
	}
}

// TestNoEmptyFold: every fold gets a patient, however rare the classes. Issue 32's sweep:
// a plain classification task of 2 training patients, each holding classes the other does
// not, gathered both in fold 0 (its rare classes), and fold 0's model had no training case
// ("classification train: no training cases") in every lane.
func TestNoEmptyFold(t *testing.T) {
	for _, c := range []struct {
		patients, k int
	}{{2, 2}, {3, 3}, {4, 3}, {5, 5}} {
		var cs []task.Case
		cls := map[string][]string{}
		for p := range c.patients {
			id := fmt.Sprintf("p%d", p)
			cs = append(cs, task.Case{ID: id, Patient: id})
			// A class every patient holds, and one each holds alone: all rare.
			cls[id] = []string{"common", "only-" + id}
		}
		f, err := LockStratified(cs, cls, c.k, 1)
		if err != nil {
			t.Fatal(err)
		}
		for i := range f.K {
			train, val, err := f.Split(cs, i)
			if err != nil || len(train) == 0 || len(val) == 0 {
				t.Errorf("%d patients in %d folds: fold %d trains on %d and validates on %d cases (%v)", c.patients, c.k, i, len(train), len(val), err)
			}
		}
	}
}

// Without classes the split is the one Lock made before stratification: the hash was
// printed by TestPatientsStayTogetherAndFoldsBalance's data (cases(23, 2), 5 folds, seed
// 42) at commit f3bdd9c.
func TestUnstratifiedSplitUnchanged(t *testing.T) {
	const want = "724734d46350de65b87835be80759154237c264ab9e548d1acfa275b1b077f6d"
	for _, cls := range []map[string][]string{nil, {}} {
		f, err := LockStratified(cases(23, 2), cls, 5, 42)
		if err != nil {
			t.Fatal(err)
		}
		if f.Hash != want || f.Classes != nil {
			t.Errorf("classes %v: hash %s, classes %v; want %s and none", cls, f.Hash, f.Classes, want)
		}
	}
}

func TestStratifiedDeterministicSavedAndLocked(t *testing.T) {
	cs, cls := classed([]int{7, 5, 4}, 2)
	a, _ := LockStratified(cs, cls, 5, 1)
	b, _ := LockStratified(cs, cls, 5, 1)
	c, _ := LockStratified(cs, cls, 5, 2)
	if a.Hash != b.Hash || !reflect.DeepEqual(a.Assign, b.Assign) {
		t.Error("the same seed gave different folds")
	}
	if a.Hash == c.Hash {
		t.Error("different seeds gave the same folds")
	}
	p := filepath.Join(t.TempDir(), "folds.json")
	if err := a.Save(p); err != nil {
		t.Fatal(err)
	}
	g, err := Load(p)
	if err != nil || g.Hash != a.Hash || !reflect.DeepEqual(g.Gaps(), a.Gaps()) || !reflect.DeepEqual(g.Classes, a.Classes) {
		t.Fatalf("reload: %v", err)
	}
	raw, _ := os.ReadFile(p)
	s := strings.Replace(string(raw), `"c1"`, `"c0"`, 1)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "changed") {
		t.Errorf("a changed class was not caught: %v", err)
	}
}
