package run

import (
	"testing"
	"time"

	"amid/plugins/protocol"
)

// TestTimedLeavesOutTheFirst checks what a validation's time sets: the run's time per case
// is the slowest seen (the reserve before a lane has won), a lane's the slowest of its
// validations but its first (the reserve once it has: its first reads its cases cold), or
// its first while it has one.
func TestTimedLeavesOutTheFirst(t *testing.T) {
	forest := &LaneState{ID: "forest"}
	r := &Runner{st: &State{PluginStart: 100 * time.Millisecond}}
	for _, c := range []struct {
		took      time.Duration
		n         int
		lane, run time.Duration
	}{
		{2100 * time.Millisecond, 4, 500 * time.Millisecond, 500 * time.Millisecond}, // 0.5 s a case once the start is taken off: the first
		{500 * time.Millisecond, 4, 100 * time.Millisecond, 500 * time.Millisecond},  // 0.1 s a case
		// A fold of one case carries the model's load alone: 0.3 s.
		{400 * time.Millisecond, 1, 300 * time.Millisecond, 500 * time.Millisecond},
		{300 * time.Millisecond, 2, 300 * time.Millisecond, 500 * time.Millisecond}, // 0.1 s a case
	} {
		r.timed(forest, c.took, c.n)
		if forest.PredictPerCase != c.lane || r.st.PredictPerCase != c.run {
			t.Errorf("after %v for %d case(s): lane %v a case, run %v; want %v and %v", c.took, c.n, forest.PredictPerCase, r.st.PredictPerCase, c.lane, c.run)
		}
	}
}

// TestCapETA checks the ETA a job's progress shows: the plugin's, cut to the time left
// before the job's limit, 0 once the limit has passed, and the plugin's own without one.
func TestCapETA(t *testing.T) {
	p := &protocol.Progress{Step: 5, ETA: 10 * time.Hour}
	for _, tc := range []struct {
		limit, elapsed, want time.Duration
	}{
		{time.Minute, 20 * time.Second, 40 * time.Second},
		{time.Minute, 90 * time.Second, 0},
		{0, 90 * time.Second, 10 * time.Hour},
		{20 * time.Hour, time.Hour, 10 * time.Hour},
	} {
		if got := capETA(p, tc.limit, tc.elapsed); got.ETA != tc.want || got.Step != 5 {
			t.Errorf("limit %v, %v spent: ETA %v, want %v", tc.limit, tc.elapsed, got.ETA, tc.want)
		}
	}
	if p.ETA != 10*time.Hour {
		t.Errorf("the plugin's progress was changed: ETA %v", p.ETA)
	}
}
