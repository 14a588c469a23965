package schedule

import (
	"strings"
	"testing"
	"time"
)

// TestForced checks the final model the user asks for against the rule's: a winner at
// step 100 making a step a second (overhead 5 s) with 300 s left over 2 folds.
func TestForced(t *testing.T) {
	w := &Lane{ID: "w", Steps: 100, StepSeconds: 1, Overhead: 5}
	// Ensemble: (300 + 100·1 − 2·5) / (2·1) = 195 steps a fold.
	if d := Forced(w, 300*time.Second, 2, FinalEnsemble, 0); d.Mode != FinalEnsemble || d.Until != 195 || !strings.Contains(d.Why, "asked for") {
		t.Errorf("ensemble: %+v", d)
	}
	// With no time, every fold still trains to the winner's step count.
	if d := Forced(w, 0, 2, FinalEnsemble, 0); d.Mode != FinalEnsemble || d.Until != 100 {
		t.Errorf("ensemble without time: %+v", d)
	}
	// One fold: no ensemble; the rule's decision stands, saying why.
	if d := Forced(w, 300*time.Second, 1, FinalEnsemble, 0); d.Mode == FinalEnsemble || !strings.Contains(d.Why, "two folds or more") {
		t.Errorf("ensemble of one fold: %+v", d)
	}
	// All data: FinalOptimism × (300 − 5) / 1 = 324 more steps; under fixed steps, those.
	if d := Forced(w, 300*time.Second, 2, FinalAllData, 0); d.Mode != FinalAllData || d.Until != 100+324 {
		t.Errorf("all data: %+v", d)
	}
	if d := Forced(w, 300*time.Second, 2, FinalAllData, 7); d.Until != 107 {
		t.Errorf("all data under fixed steps: %+v", d)
	}
	if d := Forced(w, -time.Minute, 2, FinalAllData, 0); d.Until != 101 || d.Limit != 0 {
		t.Errorf("all data past the reserve: %+v", d)
	}
}
