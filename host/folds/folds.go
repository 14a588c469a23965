// Package folds splits a task's training cases into cross-validation folds at the patient
// level, and locks them: the split is made once, before any training, hashed, written to
// the run folder and recorded in the audit log; every lane of the run reads the same file.
//
// Patients are shuffled with a seeded PCG generator and dealt largest-first, so folds stay
// balanced when patients have several cases. A stratified split ([LockStratified]) is given
// each case's classes (a classification case's class per attribute, a detection case's box
// classes): it deals the patients class by class, the class held by the fewest patients
// first, each patient onto the fold with the fewest patients of that class, so that every
// class with at least as many patients as folds is in every fold. The patients of a rarer
// class go together onto the folds that already hold the most classes, and the folds are
// then numbered from the one lacking the fewest classes: fold 0, on which exploration
// judges every lane, holds every class whenever one fold can. Patients without a class are
// dealt last onto the fold with the fewest cases; with no classes at all the split is the
// unstratified one of [Lock].
//
// A fold whose cases lack a class that the training cases hold cannot be trusted to rank
// models (a one-class fold gives a majority-class model a perfect balanced accuracy);
// [Folds.Gaps] names such folds and the classes they lack, for the run to log, record and
// keep out of its choice. The test split never enters: folds hold training cases only.
package folds

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"

	"amid/assets/fileio"
	"amid/host/task"
)

// ErrFolds marks a split that cannot be made or a folds file that does not hold.
var ErrFolds = errors.New("folds")

// Folds is a locked split.
type Folds struct {
	K    int   `json:"k"`
	Seed int64 `json:"seed"`
	// Assign maps each training case id to its fold, 0 to K-1.
	Assign map[string]int `json:"assign"`
	// Patients maps each case id to its patient.
	Patients map[string]string `json:"patients"`
	// Classes maps each case id to the classes it holds, sorted, when the split was
	// stratified; nil otherwise.
	Classes map[string][]string `json:"classes,omitempty"`
	// Parent, when set, is the hash of the locked folds these extend ([Extend]): every
	// case of the parent keeps its fold.
	Parent string `json:"parent,omitempty"`
	// Hash is the sha256 of the canonical text of K, Seed and the assignment (and the
	// classes, when there are any; and the parent's hash, when there is one).
	Hash string `json:"hash"`
}

// Gap is a fold whose cases lack classes that the training cases hold.
type Gap struct {
	Fold    int      `json:"fold"`
	Missing []string `json:"missing"`
}

func (g Gap) String() string {
	return fmt.Sprintf("fold %d lacks %s", g.Fold, strings.Join(g.Missing, ", "))
}

// Lock splits cases into k folds (fewer when there are fewer patients) with seed, without
// regard to their classes.
func Lock(cases []task.Case, k int, seed int64) (*Folds, error) {
	return LockStratified(cases, nil, k, seed)
}

// LockStratified splits cases into k folds (fewer when there are fewer patients) with
// seed, stratified by classes, which maps a case id to the classes the case holds (a case
// it does not name holds none). All cases of a patient stay in one fold.
func LockStratified(cases []task.Case, classes map[string][]string, k int, seed int64) (*Folds, error) {
	byPatient := map[string][]string{}
	held := map[string]map[string]bool{} // patient: classes
	for _, c := range cases {
		byPatient[c.Patient] = append(byPatient[c.Patient], c.ID)
		if held[c.Patient] == nil {
			held[c.Patient] = map[string]bool{}
		}
		for _, cl := range classes[c.ID] {
			held[c.Patient][cl] = true
		}
	}
	if len(byPatient) < 2 {
		return nil, fmt.Errorf("%w: the %d training case(s) come from %d patient(s), and validation needs 2 or more, one to train on and one to validate on: add training cases of another patient", ErrFolds, len(cases), len(byPatient))
	}
	k = min(k, len(byPatient))
	if k < 2 {
		return nil, fmt.Errorf("%w: %d folds; at least 2 are needed", ErrFolds, k)
	}
	patients := make([]string, 0, len(byPatient))
	for p := range byPatient {
		patients = append(patients, p)
	}
	sort.Strings(patients)
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	r.Shuffle(len(patients), func(i, j int) { patients[i], patients[j] = patients[j], patients[i] })
	sort.SliceStable(patients, func(i, j int) bool { return len(byPatient[patients[i]]) > len(byPatient[patients[j]]) })

	// The classes, the one held by the fewest patients first.
	holders := map[string]int{}
	for _, p := range patients {
		for cl := range held[p] {
			holders[cl]++
		}
	}
	order := make([]string, 0, len(holders))
	for cl := range holders {
		order = append(order, cl)
	}
	sort.Slice(order, func(i, j int) bool {
		if holders[order[i]] != holders[order[j]] {
			return holders[order[i]] < holders[order[j]]
		}
		return order[i] < order[j]
	})

	fold := map[string]int{} // patient: fold
	size := make([]int, k)   // cases per fold
	has := make([]map[string]int, k)
	for i := range has {
		has[i] = map[string]int{} // class: patients holding it
	}
	deal := func(p string, i int) {
		fold[p] = i
		size[i] += len(byPatient[p])
		for cl := range held[p] {
			has[i][cl]++
		}
	}
	// open says whether fold i may take the next patient: every fold, unless the patients
	// left are no more than the empty folds, which must each get one (gathering a rare
	// class in one fold put both patients of a 2-patient task in fold 0, and fold 0's
	// model had no training case).
	open := func(i int) bool {
		empty := 0
		for _, n := range size {
			if n == 0 {
				empty++
			}
		}
		return size[i] == 0 || len(patients)-len(fold) > empty
	}
	pick := func(before func(i, best int) bool) int {
		best := -1
		for i := range k {
			if open(i) && (best < 0 || before(i, best)) {
				best = i
			}
		}
		return best
	}
	for _, cl := range order {
		rare := holders[cl] < k // it cannot be in every fold
		for _, p := range patients {
			if _, done := fold[p]; done || !held[p][cl] {
				continue
			}
			deal(p, pick(func(i, best int) bool {
				return better(has[i][cl], has[best][cl], rare, len(has[i]), len(has[best]), size[i], size[best])
			}))
		}
	}
	for _, p := range patients {
		if _, done := fold[p]; done {
			continue
		}
		deal(p, pick(func(i, best int) bool { return size[i] < size[best] }))
	}

	// Number the folds from the one lacking the fewest classes.
	lacking := make([]int, k)
	for i := range k {
		lacking[i] = len(holders) - len(has[i])
	}
	byGap := make([]int, k) // new number: old number
	for i := range byGap {
		byGap[i] = i
	}
	sort.SliceStable(byGap, func(a, b int) bool { return lacking[byGap[a]] < lacking[byGap[b]] })
	renumber := make([]int, k)
	for n, old := range byGap {
		renumber[old] = n
	}

	f := &Folds{K: k, Seed: seed, Assign: map[string]int{}, Patients: map[string]string{}}
	if len(holders) > 0 {
		f.Classes = map[string][]string{}
	}
	for _, c := range cases {
		f.Assign[c.ID] = renumber[fold[c.Patient]]
		f.Patients[c.ID] = c.Patient
		if cl := classes[c.ID]; f.Classes != nil && len(cl) > 0 {
			s := slices.Clone(cl)
			sort.Strings(s)
			f.Classes[c.ID] = slices.Compact(s)
		}
	}
	f.Hash = f.hash()
	return f, nil
}

// Extend returns parent's folds with cases added: a case the parent holds keeps its fold
// (its patient must not have changed), a new case of a patient the parent holds joins
// that patient's fold, and each new patient is dealt, in the seeded order [Lock] deals
// them, onto the fold with the fewest patients (the lowest-numbered first). classes, as
// for [LockStratified], gives the new cases' classes when the parent was stratified. The
// result names the parent's hash and is hashed with it.
func Extend(parent *Folds, cases []task.Case, classes map[string][]string) (*Folds, error) {
	f := &Folds{K: parent.K, Seed: parent.Seed, Assign: maps.Clone(parent.Assign), Patients: maps.Clone(parent.Patients),
		Classes: maps.Clone(parent.Classes), Parent: parent.Hash}
	patientFold := map[string]int{}
	perFold := make([]int, f.K) // patients per fold
	for id, k := range parent.Assign {
		p := parent.Patients[id]
		if _, seen := patientFold[p]; !seen {
			perFold[k]++
		}
		patientFold[p] = k
	}
	var fresh []string // new patients
	newCases := map[string][]task.Case{}
	for _, c := range cases {
		if _, ok := parent.Assign[c.ID]; ok {
			if parent.Patients[c.ID] != c.Patient {
				return nil, fmt.Errorf("%w: case %s was patient %s's when the folds were locked and is %s's now", ErrFolds, c.ID, parent.Patients[c.ID], c.Patient)
			}
			continue
		}
		if _, ok := patientFold[c.Patient]; !ok && newCases[c.Patient] == nil {
			fresh = append(fresh, c.Patient)
		}
		newCases[c.Patient] = append(newCases[c.Patient], c)
	}
	sort.Strings(fresh)
	r := rand.New(rand.NewPCG(uint64(f.Seed), 0x5eed))
	r.Shuffle(len(fresh), func(i, j int) { fresh[i], fresh[j] = fresh[j], fresh[i] })
	for _, p := range fresh {
		best := 0
		for k := range f.K {
			if perFold[k] < perFold[best] {
				best = k
			}
		}
		patientFold[p] = best
		perFold[best]++
	}
	for p, cs := range newCases {
		for _, c := range cs {
			f.Assign[c.ID], f.Patients[c.ID] = patientFold[p], p
			if cl := classes[c.ID]; f.Classes != nil && len(cl) > 0 {
				s := slices.Clone(cl)
				sort.Strings(s)
				f.Classes[c.ID] = slices.Compact(s)
			}
		}
	}
	f.Hash = f.hash()
	return f, nil
}

// better reports whether a fold with n patients of the class being dealt, held classes
// and size cases takes the next patient of that class before one with bn, bheld and bsize:
// the fewest patients of the class first; for a rare class (fewer patients than folds)
// then the fold holding the most classes, so that rare classes gather in one fold; then
// the fewest cases.
func better(n, bn int, rare bool, held, bheld, size, bsize int) bool {
	if n != bn {
		return n < bn
	}
	if rare && held != bheld {
		return held > bheld
	}
	return size < bsize
}

// Gaps are the folds whose cases lack classes that the training cases hold, in fold order,
// each with the classes it lacks, sorted; nil when every fold holds every class or the
// split was not stratified.
func (f *Folds) Gaps() []Gap {
	var gaps []Gap
	for i := range f.K {
		if m := f.Lacks(i); len(m) > 0 {
			gaps = append(gaps, Gap{Fold: i, Missing: m})
		}
	}
	return gaps
}

// Lacks is the classes, sorted, that the training cases hold and fold i's cases do not.
func (f *Folds) Lacks(i int) []string {
	all, in := map[string]bool{}, map[string]bool{}
	for id, cls := range f.Classes {
		for _, cl := range cls {
			all[cl] = true
			if f.Assign[id] == i {
				in[cl] = true
			}
		}
	}
	var m []string
	for cl := range all {
		if !in[cl] {
			m = append(m, cl)
		}
	}
	sort.Strings(m)
	return m
}

// hash is the sha256 of "k seed\n" followed by "id\tfold\tpatient\n" per case in id order;
// a stratified split's lines carry a fourth field, the case's classes as a JSON array;
// extended folds end with "parent HASH\n".
func (f *Folds) hash() string {
	ids := make([]string, 0, len(f.Assign))
	for id := range f.Assign {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "%d %d\n", f.K, f.Seed)
	for _, id := range ids {
		fmt.Fprintf(&b, "%s\t%d\t%s", id, f.Assign[id], f.Patients[id])
		if f.Classes != nil {
			cls, _ := json.Marshal(f.Classes[id])
			fmt.Fprintf(&b, "\t%s", cls)
		}
		b.WriteByte('\n')
	}
	if f.Parent != "" {
		fmt.Fprintf(&b, "parent %s\n", f.Parent)
	}
	s := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(s[:])
}

// Split returns fold i's training and validation cases from cases (in their order). A
// case the folds do not know is an error: the data changed after the folds were locked.
func (f *Folds) Split(cases []task.Case, i int) (train, val []task.Case, err error) {
	if i < 0 || i >= f.K {
		return nil, nil, fmt.Errorf("%w: fold %d of %d", ErrFolds, i, f.K)
	}
	for _, c := range cases {
		k, ok := f.Assign[c.ID]
		if !ok {
			return nil, nil, fmt.Errorf("%w: case %s is not in the locked folds; the training data changed after they were locked", ErrFolds, c.ID)
		}
		if k == i {
			val = append(val, c)
		} else {
			train = append(train, c)
		}
	}
	return train, val, nil
}

// Save writes the folds to path as JSON, atomically and durably.
func (f *Folds) Save(path string) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return fileio.Write(path, append(b, '\n'))
}

// Load reads folds written by Save and checks their hash.
func Load(path string) (*Folds, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f Folds
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrFolds, err)
	}
	if f.K < 2 || f.Hash != f.hash() {
		return nil, fmt.Errorf("%s: %w: the assignment does not match its hash %s; the file was changed after the folds were locked", path, ErrFolds, f.Hash)
	}
	for id, k := range f.Assign {
		if k < 0 || k >= f.K {
			return nil, fmt.Errorf("%s: %w: case %s is in fold %d of %d", path, ErrFolds, id, k, f.K)
		}
	}
	for id := range f.Classes {
		if _, ok := f.Assign[id]; !ok {
			return nil, fmt.Errorf("%s: %w: case %s has classes but no fold", path, ErrFolds, id)
		}
	}
	return &f, nil
}
