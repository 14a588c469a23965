package schedule

import (
	"fmt"
	"time"
)

// Forced is the final model the user asked for (mode FinalEnsemble or FinalAllData) in
// place of what Final chose for the winner w, with left the time until the reserve and
// folds the folds an ensemble would have. An ensemble trains every fold to the steps the
// time holds at the winner's pace, and at least to the winner's step count, which may
// overrun the reserve; it needs two folds or more (predictions that can be combined), and
// without them the rule's decision stands. The all-data model continues from the winner's
// step for the steps the time holds, at least one; under fixed step counts (steps > 0)
// for steps more, so that the model it makes does not depend on the machine's speed.
func Forced(w *Lane, left time.Duration, folds int, mode string, steps int) Decision {
	c, o := max(w.StepSeconds, 1e-6), w.Overhead
	switch mode {
	case FinalEnsemble:
		if folds < 2 {
			d := Final(w, left, folds)
			d.Why += "; the fold ensemble asked for needs predictions that can be combined over two folds or more"
			return d
		}
		n := max(ensembleSteps(w, left, folds), w.Steps, 1)
		if w.MaxSteps > 0 {
			n = max(min(n, w.MaxSteps), w.Steps)
		}
		per := seconds(float64(n)*c + o)
		return Decision{Mode: FinalEnsemble, Until: n, Limit: time.Duration(LimitSlack * float64(per)),
			Why: fmt.Sprintf("the fold ensemble was asked for: every fold of %s to step %d (at least its %d): fold 0 continues, the other %d train, and the %d fold models are ensembled", w.ID, n, w.Steps, folds-1, folds)}
	case FinalAllData:
		more := max(int(FinalOptimism*(left.Seconds()-o)/c), 1)
		if steps > 0 {
			more = steps
		}
		if more = w.room(more); more < 1 {
			d := Final(w, left, folds)
			d.Why += "; the model on all the data asked for would make no step"
			return d
		}
		return Decision{Mode: FinalAllData, Until: w.Steps + more, Limit: max(left, 0),
			Why: fmt.Sprintf("a model on all the data was asked for: %s continues on every training case from step %d for %d more steps", w.ID, w.Steps, more)}
	}
	return Final(w, left, folds)
}
