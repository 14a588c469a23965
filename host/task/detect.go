package task

import (
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// ErrAmbiguous means a folder matches several task definitions equally well.
var ErrAmbiguous = errors.New("the folder matches several tasks")

// Detect finds which of the candidate task definitions (YAML by id) a prepared data folder
// belongs to, as for a ReX-MLE prepared/public folder: the definition's train and test
// patterns must find cases there with every label, and when the folder holds
// sample_submission.csv its header must be the definition's submission columns. Among the
// matches, the one that finds the most cases wins; a tie is ErrAmbiguous, naming them.
func Detect(dir string, candidates map[string][]byte) (string, *Task, error) {
	header := sampleHeader(filepath.Join(dir, "sample_submission.csv"))
	type match struct {
		id    string
		t     *Task
		cases int
	}
	var found []match
	ids := make([]string, 0, len(candidates))
	for id := range candidates {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		t, err := Parse(candidates[id])
		if err != nil {
			return "", nil, fmt.Errorf("built-in task %s: %w", id, err)
		}
		if header != nil && !slices.Equal(header, t.Submission.Columns) {
			continue
		}
		d, err := t.Resolve(dir)
		if err != nil || len(d.Test) == 0 {
			continue
		}
		found = append(found, match{id, t, len(d.Train) + len(d.Test)})
	}
	if len(found) == 0 {
		return "", nil, fmt.Errorf("%s matches none of the %d known tasks (no task's train and test files with labels are there)", dir, len(candidates))
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].cases > found[j].cases })
	var tied []string
	for _, m := range found {
		if m.cases == found[0].cases {
			tied = append(tied, m.id)
		}
	}
	if len(tied) > 1 {
		return "", nil, fmt.Errorf("%w: %s fits %s; name one", ErrAmbiguous, dir, strings.Join(tied, ", "))
	}
	return found[0].id, found[0].t, nil
}

// sampleHeader is the header of a sample submission, nil when there is none.
func sampleHeader(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	h, err := csv.NewReader(f).Read()
	if err != nil {
		return nil
	}
	if len(h) > 0 {
		h[0] = strings.TrimPrefix(h[0], "\ufeff")
	}
	return h
}
