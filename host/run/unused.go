package run

import (
	"fmt"
	"strings"
	"time"

	"amid/host/schedule"
)

// unusedShare is the share of its budget a run may leave unused before its reports say
// why: issue 23 asks every run to end within 95–100 % of its budget.
const unusedShare = 0.05

// minorShare is the share of the budget under which a part of the unused time is too
// small to be one of the reasons: half the unused share, so that of the two parts (what
// the final model left, what the final phases did not take) one at least is said.
const minorShare = unusedShare / 2

// budgetUnused says, one sentence, why a run that spent spent of its budget left more
// than unusedShare of it unused; "" when it did not, or before its final model ended
// (State.Ended has no exploit mark). The unused time is what the final model left before
// the reserve kept for the final phases, and what the reserve kept beyond what those
// phases took: each part is said with its cause (the final model's own reason, a lane at
// its cap, exploration ended early because every lane had stopped, and why each did).
func budgetUnused(st *State, spent time.Duration) string {
	b := st.Budget
	left := b - spent
	exploit, ok := st.Ended[PhaseExploit]
	if b <= 0 || !ok || left <= share(b, unusedShare) {
		return ""
	}
	r := precision(b)
	var parts []string
	if before := b - exploit - st.Kept; before > share(b, minorShare) {
		why := fmt.Sprintf("the final model ended with %v left before the %v kept for the final phases", before.Round(r), st.Kept.Round(r))
		if s := st.finalStopped(); s != "" {
			why += ": " + s
		}
		parts = append(parts, why)
		if s := st.exploreStopped(); s != "" {
			parts = append(parts, s)
		}
	}
	if took := spent - exploit; st.Kept-took > share(b, minorShare) {
		parts = append(parts, fmt.Sprintf("the final phases (the test predictions, their checks and the package) took %v of the %v kept for them", took.Round(r), st.Kept.Round(r)))
	}
	return fmt.Sprintf("%v of the %v budget (%.1f %%) was not used: %s.", left.Round(r), b, 100*left.Seconds()/b.Seconds(), strings.Join(parts, "; "))
}

// precision is the rounding of the durations said of a budget b: a second, or a tenth of
// one under two minutes (a 6 s test run's parts are tenths).
func precision(b time.Duration) time.Duration {
	if b < 2*time.Minute {
		return 100 * time.Millisecond
	}
	return time.Second
}

// share is the part f of the budget b.
func share(b time.Duration, f float64) time.Duration { return time.Duration(f * float64(b)) }

// finalStopped says why the final model ended where it did: the final model's rule as it
// applied (a lane at its cap, its fold model submitted), or the step the model on all the
// data reached; "" with no final model.
func (s *State) finalStopped() string {
	fm := s.Final
	if fm == nil {
		return ""
	}
	if fm.Error != "" {
		return "it could not be made (" + oneLine(fm.Error) + ")"
	}
	if fm.Mode != schedule.FinalAllData {
		return fm.Why
	}
	if l := s.lane(fm.Lane); l != nil && l.Schedule.MaxSteps > 0 && fm.Steps >= int64(l.Schedule.MaxSteps) {
		return fmt.Sprintf("on all the data, %s reached its cap of %d step(s), which more steps would not change", fm.Lane, l.Schedule.MaxSteps)
	}
	if fm.Steps < fm.Until {
		return fmt.Sprintf("on all the data, %s stopped at step %d of its planned %d, at its time limit (which keeps a margin for the plugin's start and a step)", fm.Lane, fm.Steps, fm.Until)
	}
	return fmt.Sprintf("on all the data, %s reached its planned step %d, and another start did not fit the time left", fm.Lane, fm.Steps)
}

// exploreStopped says, when exploration ended before its share of the budget was spent,
// when and why: every lane had stopped, each for its reason ("" otherwise).
func (s *State) exploreStopped() string {
	end, ok := s.Ended[PhaseExplore]
	if !ok || s.ExploreEnd-end <= share(s.Budget, minorShare) {
		return ""
	}
	r := precision(s.Budget)
	var why []string
	for _, l := range s.Lanes {
		if l.Schedule.Stopped != "" {
			why = append(why, l.ID+": "+l.Schedule.Stopped)
		}
	}
	out := fmt.Sprintf("exploration ended at %v, %v before its share of the budget was spent", end.Round(r), (s.ExploreEnd - end).Round(r))
	if len(why) > 0 {
		out += ", every lane having stopped (" + strings.Join(why, "; ") + ")"
	}
	return out
}
