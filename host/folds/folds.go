// Package folds splits a task's training cases into cross-validation folds at the patient
// level, and locks them: the split is made once, before any training, hashed, written to
// the run folder and recorded in the audit log; every lane of the run reads the same file.
//
// Patients are shuffled with a seeded PCG generator and dealt to folds largest-first onto
// the fold with the fewest cases, so folds stay balanced when patients have several cases.
// The test split never enters: folds hold training cases only.
package folds

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"

	"amid/host/task"
	"amid/viewer/fileio"
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
	// Hash is the sha256 of the canonical text of K, Seed and the assignment.
	Hash string `json:"hash"`
}

// Lock splits cases into k folds (fewer when there are fewer patients) with seed.
func Lock(cases []task.Case, k int, seed int64) (*Folds, error) {
	byPatient := map[string][]string{}
	for _, c := range cases {
		byPatient[c.Patient] = append(byPatient[c.Patient], c.ID)
	}
	if len(byPatient) < 2 {
		return nil, fmt.Errorf("%w: %d patients; cross-validation needs at least 2", ErrFolds, len(byPatient))
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
	f := &Folds{K: k, Seed: seed, Assign: map[string]int{}, Patients: map[string]string{}}
	size := make([]int, k)
	for _, p := range patients {
		best := 0
		for i := range k {
			if size[i] < size[best] {
				best = i
			}
		}
		for _, id := range byPatient[p] {
			f.Assign[id] = best
			f.Patients[id] = p
		}
		size[best] += len(byPatient[p])
	}
	f.Hash = f.hash()
	return f, nil
}

// hash is the sha256 of "k seed\n" followed by "id\tfold\tpatient\n" per case in id order.
func (f *Folds) hash() string {
	ids := make([]string, 0, len(f.Assign))
	for id := range f.Assign {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "%d %d\n", f.K, f.Seed)
	for _, id := range ids {
		fmt.Fprintf(&b, "%s\t%d\t%s\n", id, f.Assign[id], f.Patients[id])
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
	return &f, nil
}
