// Package grade scores a ReX-MLE submission exactly as the challenge's own grader does and
// ranks it against the challenge leaderboard. AMID's verifier never trusts a number a
// plugin reports: it runs the grader here on the submission folder and the private answers.
//
// A Grader reads a submission folder (submission.csv plus the prediction files it names,
// paths relative to the folder) and an answers folder (the layout ReX-MLE's prepare.py
// writes to prepared/private: test_labels.csv plus ground-truth files). Each challenge id
// of ReX-MLE (reference rexmle.md §4) has one Grader, registered in the file named after the
// id. A submission that breaks the contract is not an error: the Result is invalid and
// lists every rule it breaks. An error means the grading itself could not run (answers
// missing, context cancelled).
//
// Ranking follows rexmle.md §3: each leaderboard metric is ranked with pandas
// rank(method='min') in its direction among the leaderboard rows plus the submission;
// mean_position is the mean of the submission's positions; percentile = 1 − (mean_position −
// 1)/N over the N leaderboard rows; medals compare mean_position with leaderboard rows 1, 2, 3
// and the row at index N/2.
package grade

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Options change how a grader scores.
type Options struct {
	// Official applies the official challenge's rules where they differ from ReX-MLE's
	// grader (e.g. PUMA track 2 nuclei F1 averages each class over all images). Ranking
	// still uses the ReX leaderboard.
	Official bool
}

// Grader scores one challenge.
type Grader interface {
	// Grade scores submissionDir against answersDir. A broken submission yields a Result
	// with Valid false and every broken rule in Errors, and a nil error.
	Grade(ctx context.Context, submissionDir, answersDir string, opt Options) (*Result, error)
}

// GraderFunc adapts a function to Grader.
type GraderFunc func(ctx context.Context, submissionDir, answersDir string, opt Options) (*Result, error)

// Grade calls f.
func (f GraderFunc) Grade(ctx context.Context, submissionDir, answersDir string, opt Options) (*Result, error) {
	return f(ctx, submissionDir, answersDir, opt)
}

// ChallengeIDs are the 20 ReX-MLE challenges (rexmle.md §4).
var ChallengeIDs = []string{
	"isles22", "neurips-cellseg", "panther-task1", "panther-task2",
	"puma-track1-task1", "puma-track2-task1", "puma-track1-task2", "puma-track2-task2",
	"seg_a", "topbrain-track1", "topbrain-track2",
	"topcow-track1-task1", "topcow-track2-task1", "topcow-track1-task2", "topcow-track2-task2",
	"topcow-track1-task3", "topcow-track2-task3",
	"dentex", "ldct-iqa", "usenhance",
}

// Errors of the registry.
var (
	ErrUnknownChallenge = errors.New("unknown challenge")
	ErrNoGrader         = errors.New("no grader for this challenge yet")
)

var (
	registryMu sync.RWMutex
	registry   = map[string]Grader{}
)

// Register installs g as the grader of challenge id. It panics on an id outside
// ChallengeIDs or a second registration, both programmer mistakes.
func Register(id string, g Grader) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if !known(id) {
		panic(fmt.Sprintf("grade: Register of unknown challenge %q", id))
	}
	if _, dup := registry[id]; dup {
		panic(fmt.Sprintf("grade: Register called twice for %q", id))
	}
	registry[id] = g
}

func known(id string) bool {
	for _, c := range ChallengeIDs {
		if c == id {
			return true
		}
	}
	return false
}

// Lookup returns the grader of challenge id.
func Lookup(id string) (Grader, error) {
	if !known(id) {
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknownChallenge, id, ChallengeIDs)
	}
	registryMu.RLock()
	defer registryMu.RUnlock()
	g, ok := registry[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoGrader, id)
	}
	return g, nil
}

// Registered lists the challenge ids that have a grader, sorted.
func Registered() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	ids := make([]string, 0, len(registry))
	for id := range registry {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Grade looks up the grader of challenge id and runs it.
func Grade(ctx context.Context, id, submissionDir, answersDir string, opt Options) (*Result, error) {
	g, err := Lookup(id)
	if err != nil {
		return nil, err
	}
	return g.Grade(ctx, submissionDir, answersDir, opt)
}
