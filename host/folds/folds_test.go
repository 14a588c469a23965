package folds

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/host/task"
)

func cases(n, perPatient int) []task.Case {
	var cs []task.Case
	for i := range n {
		cs = append(cs, task.Case{ID: fmt.Sprintf("c%03d", i), Patient: fmt.Sprintf("p%03d", i/perPatient)})
	}
	return cs
}

func TestPatientsStayTogetherAndFoldsBalance(t *testing.T) {
	cs := cases(23, 2) // 12 patients, one with a single case
	f, err := Lock(cs, 5, 42)
	if err != nil {
		t.Fatal(err)
	}
	fold := map[string]int{}
	size := make([]int, f.K)
	for _, c := range cs {
		k := f.Assign[c.ID]
		if p, ok := fold[c.Patient]; ok && p != k {
			t.Errorf("patient %s is in folds %d and %d", c.Patient, p, k)
		}
		fold[c.Patient] = k
		size[k]++
	}
	for _, s := range size {
		// 23 cases in 5 folds with patients of 2: sizes differ by at most one patient.
		if s < 4 || s > 6 {
			t.Errorf("fold sizes %v are unbalanced", size)
		}
	}
	total := 0
	for i := range f.K {
		tr, va, err := f.Split(cs, i)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr)+len(va) != len(cs) {
			t.Errorf("fold %d: %d + %d cases of %d", i, len(tr), len(va), len(cs))
		}
		total += len(va)
	}
	if total != len(cs) {
		t.Errorf("validation folds cover %d of %d cases", total, len(cs))
	}
}

func TestDeterministicAndSeeded(t *testing.T) {
	cs := cases(20, 1)
	a, _ := Lock(cs, 5, 1)
	b, _ := Lock(cs, 5, 1)
	c, _ := Lock(cs, 5, 2)
	if a.Hash != b.Hash {
		t.Error("the same seed gave different folds")
	}
	if a.Hash == c.Hash {
		t.Error("different seeds gave the same folds")
	}
}

func TestFewPatients(t *testing.T) {
	if _, err := Lock(cases(4, 4), 5, 1); err == nil {
		t.Error("one patient was split into folds")
	}
	f, err := Lock(cases(3, 1), 5, 1)
	if err != nil || f.K != 3 {
		t.Errorf("3 patients: k = %v, err %v; want 3 folds", f, err)
	}
}

func TestSaveLoadDetectsTampering(t *testing.T) {
	cs := cases(10, 1)
	f, _ := Lock(cs, 5, 7)
	p := filepath.Join(t.TempDir(), "folds.json")
	if err := f.Save(p); err != nil {
		t.Fatal(err)
	}
	g, err := Load(p)
	if err != nil || g.Hash != f.Hash {
		t.Fatalf("reload: %v", err)
	}
	b, _ := os.ReadFile(p)
	k := f.Assign["c000"]
	s := strings.Replace(string(b), fmt.Sprintf(`"c000": %d`, k), fmt.Sprintf(`"c000": %d`, (k+1)%f.K), 1)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "changed") {
		t.Errorf("a moved case was not caught: %v", err)
	}
	if _, _, err := f.Split(append(cs, task.Case{ID: "new"}), 0); err == nil {
		t.Error("a case added after locking was not caught")
	}
}

// Extended folds keep every locked case where it was, put a new case of a known patient
// with that patient, deal new patients onto the folds with the fewest patients, and are
// hashed with the parent's hash: a file that drops it no longer loads.
func TestExtend(t *testing.T) {
	cs := cases(10, 1) // 10 patients in 5 folds: 2 each
	parent, err := Lock(cs, 5, 7)
	if err != nil {
		t.Fatal(err)
	}
	added := []task.Case{
		{ID: "c100", Patient: "p003"}, // a new case of a known patient
		{ID: "c101", Patient: "q001"}, {ID: "c102", Patient: "q002"}, {ID: "c103", Patient: "q002"},
	}
	f, err := Extend(parent, append(cs, added...), nil)
	if err != nil {
		t.Fatal(err)
	}
	for id, k := range parent.Assign {
		if f.Assign[id] != k {
			t.Errorf("locked case %s moved from fold %d to %d", id, k, f.Assign[id])
		}
	}
	if f.Assign["c100"] != parent.Assign["c003"] {
		t.Errorf("c100 of patient p003 is in fold %d, its patient's other case in %d", f.Assign["c100"], parent.Assign["c003"])
	}
	if f.Assign["c102"] != f.Assign["c103"] || f.Assign["c101"] == f.Assign["c102"] {
		t.Errorf("the new patients' folds: q001 %d, q002 %d and %d; want q002 together and apart from q001 (every fold held 2 patients)",
			f.Assign["c101"], f.Assign["c102"], f.Assign["c103"])
	}
	again, _ := Extend(parent, append(cs, added...), nil)
	if f.Parent != parent.Hash || f.Hash == parent.Hash || again.Hash != f.Hash {
		t.Fatalf("hashes: parent %s, extended %s naming %s, again %s", parent.Hash, f.Hash, f.Parent, again.Hash)
	}
	p := filepath.Join(t.TempDir(), "folds.json")
	if err := f.Save(p); err != nil {
		t.Fatal(err)
	}
	if g, err := Load(p); err != nil || g.Parent != parent.Hash {
		t.Fatalf("reload: %v", err)
	}
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), parent.Hash, strings.Repeat("0", 64), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil {
		t.Error("folds whose parent was changed loaded")
	}
	if _, err := Extend(parent, []task.Case{{ID: "c000", Patient: "other"}}, nil); err == nil {
		t.Error("a locked case that changed patient was accepted")
	}
}
