package run

import (
	"strings"
	"testing"
	"time"

	"amid/host/schedule"
)

// TestBudgetUnused: a run that left more than 5 % of its budget says why, each part with
// its cause; one that used 95 % or more, or has not ended its final model, says nothing.
// The times are those of a one-minute run whose lanes stopped early: exploration ended at
// 10 s of the 40 s it could take, the winner at its cap of 3 steps, its fold ensemble
// made by 20 s, 10 s kept for the final phases, which took 5 s.
func TestBudgetUnused(t *testing.T) {
	capped := &LaneState{ID: "forest", Schedule: schedule.Lane{ID: "forest", MaxSteps: 3, Steps: 3, Stopped: "it has trained its cap of 3 step(s); more steps would not change it"}}
	flat := &LaneState{ID: "2d", Schedule: schedule.Lane{ID: "2d", Steps: 200, Stopped: "its validation curve flattened: +0.0001 over its last round (steps 100 to 200), under 0.002"}}
	st := func() *State {
		return &State{
			Budget: time.Minute, Spent: 25 * time.Second, Phase: PhaseDone, ExploreEnd: 40 * time.Second, Kept: 10 * time.Second,
			Ended: map[string]time.Duration{PhasePrepare: time.Second, PhasePlan: 2 * time.Second, PhaseExplore: 10 * time.Second, PhaseExploit: 20 * time.Second},
			Lanes: []*LaneState{capped, flat},
			Final: &FinalModel{Mode: schedule.FinalEnsemble, Lane: "forest", Why: "forest has trained its cap of 3 step(s), which more steps would not change: the other 4 fold(s) train to it in the 30s left, and the 5 fold models are ensembled"},
		}
	}

	s := st()
	got := budgetUnused(s, s.Spent)
	for _, want := range []string{
		"35s of the 1m0s budget (58.3 %) was not used",
		"the final model ended with 30s left before the 10s kept for the final phases: forest has trained its cap of 3 step(s)",
		"exploration ended at 10s, 30s before its share of the budget was spent, every lane having stopped (forest: it has trained its cap of 3 step(s); more steps would not change it; 2d: its validation curve flattened",
		"the final phases (the test predictions, their checks and the package) took 5s of the 10s kept for them",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("budgetUnused does not say %q:\n%s", want, got)
		}
	}
	if rep := Report(s); !strings.Contains(rep, "## Why the budget was not all used\n\n35s of the 1m0s budget") {
		t.Errorf("the report does not say why the budget was not all used:\n%s", rep)
	}

	// The model on all the data at its lane's cap says so; the final phases that took what
	// was kept are not a reason.
	s = st()
	s.Final = &FinalModel{Mode: schedule.FinalAllData, Lane: "forest", Steps: 3, Until: 3}
	s.Spent = 29 * time.Second
	got = budgetUnused(s, s.Spent)
	if !strings.Contains(got, "on all the data, forest reached its cap of 3 step(s)") || strings.Contains(got, "final phases (the test") {
		t.Errorf("the model on all the data at its cap:\n%s", got)
	}

	// The model on all the data stopped by its time limit, or at its planned step.
	s.Final = &FinalModel{Mode: schedule.FinalAllData, Lane: "2d", Steps: 35, Until: 38}
	if got = budgetUnused(s, s.Spent); !strings.Contains(got, "on all the data, 2d stopped at step 35 of its planned 38, at its time limit") {
		t.Errorf("the model on all the data at its time limit:\n%s", got)
	}
	s.Final.Steps = 38
	if got = budgetUnused(s, s.Spent); !strings.Contains(got, "on all the data, 2d reached its planned step 38, and another start did not fit") {
		t.Errorf("the model on all the data at its planned step:\n%s", got)
	}

	// Only the reserve, too large by more than 5 % of the budget: the final phases alone.
	s = st()
	s.Ended[PhaseExploit], s.Kept, s.Spent = 40*time.Second, 20*time.Second, 50*time.Second
	got = budgetUnused(s, s.Spent)
	if !strings.HasPrefix(got, "10s of the 1m0s budget (16.7 %) was not used: the final phases (the test predictions, their checks and the package) took 10s of the 20s kept for them.") {
		t.Errorf("a reserve too large:\n%s", got)
	}

	for name, s := range map[string]*State{
		"95 % used":           {Budget: time.Minute, Spent: 57 * time.Second, Ended: map[string]time.Duration{PhaseExploit: 40 * time.Second}},
		"past the budget":     {Budget: time.Minute, Spent: 61 * time.Second, Ended: map[string]time.Duration{PhaseExploit: 40 * time.Second}},
		"no final model yet":  {Budget: time.Minute, Spent: 20 * time.Second, Ended: map[string]time.Duration{PhaseExplore: 20 * time.Second}},
		"a state without one": {Budget: time.Minute, Spent: 20 * time.Second},
	} {
		if got := budgetUnused(s, s.Spent); got != "" {
			t.Errorf("%s: %q, want nothing", name, got)
		}
	}
}
