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
