package run

import (
	"os"
	"path/filepath"
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

// TestExportTimeCountsThePlugin checks what the reserve keeps for the export: the plugin's
// start, and each model's checkpoint and the plugin binary at exportRate. (A plain IQA run
// of app/cli's TestPlainTaskOfEveryKind overran its 25 s budget by 12 ms when the binary,
// 26.5 MB, was not counted: its export took 810 ms.)
func TestExportTimeCountsThePlugin(t *testing.T) {
	ckpt := filepath.Join(t.TempDir(), "final.ckpt")
	if err := os.WriteFile(ckpt, make([]byte, 2_000_000), 0o644); err != nil {
		t.Fatal(err)
	}
	lane := &LaneState{ID: "cnn", Folds: map[int]FoldState{0: {Checkpoint: ckpt}}}
	r := &Runner{st: &State{PluginStart: 100 * time.Millisecond, PluginBytes: 26_500_000, Lanes: []*LaneState{lane}}}
	for _, c := range []struct {
		models int
		want   time.Duration
	}{
		{1, 100*time.Millisecond + 1425*time.Millisecond}, // (2 + 26.5) MB at 20 MB/s
		{3, 100*time.Millisecond + 1625*time.Millisecond}, // (3 × 2 + 26.5) MB
	} {
		if got := r.exportTime(c.models); got != c.want {
			t.Errorf("exportTime(%d) = %v, want %v", c.models, got, c.want)
		}
	}
}
