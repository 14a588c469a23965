package run

import (
	"testing"
	"time"

	"amid/plugins/protocol"
)

// TestTimedKeepsTheLatest checks what a validation's time sets: the run's time per case
// is the slowest seen (the reserve before a lane has won), a lane's its latest (the
// reserve once it has: its first validations, cold and beside other lanes' training, are
// the slowest).
func TestTimedKeepsTheLatest(t *testing.T) {
	forest := &LaneState{ID: "forest"}
	r := &Runner{st: &State{PluginStart: 100 * time.Millisecond}}
	r.timed(forest, 2100*time.Millisecond, 4) // 0.5 s a case once the start is taken off
	r.timed(forest, 500*time.Millisecond, 4)  // 0.1 s a case
	if forest.PredictPerCase != 100*time.Millisecond || r.st.PredictPerCase != 500*time.Millisecond {
		t.Errorf("lane %v a case, run %v; want the latest 100ms and the slowest 500ms", forest.PredictPerCase, r.st.PredictPerCase)
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
