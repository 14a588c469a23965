package run

import (
	"strings"
	"testing"
	"time"

	"amid/host/schedule"
	"amid/host/task"
)

// TestCappedMembers: a winner at its cap whose 5-fold ensemble does not fit the time left
// trains the most folds that do, and the reserve then keeps their predictions alone.
func TestCappedMembers(t *testing.T) {
	// 20 training and 10 test cases, 0.5 s a predicted case and 0.2 s a plugin start, no
	// post-processing options and no checkpoint to export: schedule.Reserve keeps
	// 1.25 × (2k × 10 × 0.5 + 2k × 0.2) = 13k s for k models, and the export 0.2 s.
	var train, test []task.Case
	for range 20 {
		train = append(train, task.Case{})
	}
	for range 10 {
		test = append(test, task.Case{})
	}
	// A fold of the forest at its cap of 64 steps: 64 × 0.1 + 1 = 7.4 s. k folds need
	// (k−1) × 7.4 + 13k + 0.2 s: 33.6 (k = 2), 54.0 (3), 74.4 (4), 94.8 (5).
	capped := &LaneState{ID: "forest", Schedule: schedule.Lane{ID: "forest", MaxSteps: 64, Steps: 64, StepSeconds: 0.1, Overhead: 1}}
	learning := &LaneState{ID: "2d", Schedule: schedule.Lane{ID: "2d", Steps: 64, StepSeconds: 0.1, Overhead: 1}}
	at := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		lane      *LaneState
		remaining time.Duration
		want      int
	}{
		{capped, 60 * time.Second, 3},
		{capped, 80 * time.Second, 4},
		{capped, 30 * time.Second, 0}, // not even 2 folds
		{learning, 80 * time.Second, 0},
	} {
		r := &Runner{
			st:       &State{Budget: 100 * time.Second, Folds: 5, PredictPerCase: 500 * time.Millisecond, PluginStart: 200 * time.Millisecond},
			data:     &task.Dataset{Train: train, Test: test},
			task:     grades(),
			env:      Env{Now: func() time.Time { return at }},
			began:    at,
			spent0:   100*time.Second - c.remaining,
			postOpts: map[string]int{},
		}
		k, d := r.cappedMembers(c.lane, 5)
		if k != c.want {
			t.Errorf("%s with %v left: %d members, want %d (%s)", c.lane.ID, c.remaining, k, c.want, d.Why)
			continue
		}
		if k == 0 {
			continue
		}
		if d.Mode != schedule.FinalEnsemble || d.Until != 64 || !strings.Contains(d.Why, "holds 3 of the 5 folds") && k == 3 {
			t.Errorf("decision %+v", d)
		}
		r.st.Final = &FinalModel{Mode: d.Mode, Members: k}
		if got := r.models(); got != k {
			t.Errorf("%d models predict the test set, want the %d members", got, k)
		}
	}
}
