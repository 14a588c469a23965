package schedule

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// Outcome is what a job's round gave: the step reached, the validation score taken at its
// end, its wall time and the time its steps took (0: not measured).
type Outcome struct {
	Steps    int
	Score    float64
	Took     time.Duration
	StepTime time.Duration
	// Waited is the part of Took the job waited for its place before it started (a
	// cluster's queue; 0 here). The run's clock counts it; the lane's overhead and its
	// training time do not, or a busy cluster would make every later round and the final
	// model plan fewer steps than fit.
	Waited time.Duration
	// Validated is the part of Took the validation after the round took.
	Validated time.Duration
	// Undefined: the validation metric had no value on the fold's cases (Score is 0):
	// the round is no evidence either way ([Point.Undefined]).
	Undefined bool
}

// Trainer carries out a job's round: host/run's is an executor training a lane-fold and
// the host's metric scoring it; tests use [Sim].
type Trainer interface {
	Train(ctx context.Context, j Job) (Outcome, error)
}

// Explorer runs successive halving on a trainer.
type Explorer struct {
	Plan *Plan
	// Spent is the run's clock: the budget spent so far.
	Spent func() time.Duration
	// End is the mark of the clock at which exploration's share is spent.
	End time.Duration
	// Left, when set, is the time until the reserve, which may grow once predictions are
	// timed: exploration ends there even before End, and no round's limit reaches past it.
	Left func() time.Duration
	// Hold, when set, is the time the final model of a lane at its cap needs of the time
	// left before the reserve (its fold ensemble, or as many of its folds as fit), 0 when
	// none fits. While such a lane leads and a lane that can still learn goes on alone
	// ([Plan.Next]), exploration may run past End until Hold before the reserve: the
	// time the capped lane cannot use goes to its challenger, all of it once the capped
	// lane's final model no longer fits.
	Hold func(capped *Lane, left time.Duration) time.Duration
	// Secure, when set, may make the final model of a capped lane that leads while its
	// challenger goes on alone, before the challenger's next round, with left the time
	// until the reserve: it reports whether it trained anything (host/run trains the
	// lane's other folds and sets [Lane.Made]), and exploration then decides again. The
	// time is then measured rather than held by an estimate: Hold sized a forest's fold
	// ensemble by its first round, which read cold data (12 s a fold where its folds took
	// 1.1–1.3 s), or its challenger's last rounds overran into it and the ensemble held 4
	// of its 5 folds (make bench-quality's ct-dose-iqa and inia19-bands at 5 minutes).
	// Its error ends exploration.
	Secure func(ctx context.Context, capped *Lane, left time.Duration) (bool, error)
	// Decided, when set, is called with each decision before its round trains (to record
	// which lanes train and which stopped, and why), and with the last, Done, one.
	Decided func(Round) error
	// After, when set, is called after each round has trained (to save the run's state, or
	// to add the lanes a planner proposes from the results: appended to Plan.Lanes, they
	// train a first round before the next promotion). Its error ends exploration.
	After func(Round) error
}

// Run trains rounds until exploration is over and returns the last decision (Done, with
// the winner). A job that fails stops its lane with the error; ctx's error ends Run.
func (e *Explorer) Run(ctx context.Context, t Trainer) (Round, error) {
	var stopped []string // by a decision taken again after Secure
	for {
		if err := ctx.Err(); err != nil {
			return Round{}, err
		}
		e.Plan.Explore = max(e.End-e.Spent(), 0)
		e.Plan.Hold, e.Plan.Held = e.Hold, 0
		if e.Left != nil {
			left := e.Left()
			e.Plan.Explore = min(e.Plan.Explore, max(left, 0))
			// Past the reserve, outOfTime ends exploration, or trains the one first round a
			// run cannot do without, with its own limit. A capped leader's challenger may
			// go on past End ([Plan.Next]).
			e.Plan.Left = max(left, 0)
		}
		rd := e.Plan.Next()
		if !rd.Done && e.Plan.Explore <= 0 && e.Plan.Steps == 0 {
			rd = e.outOfTime(rd)
		}
		rd.Stopped, stopped = append(stopped, rd.Stopped...), nil
		if !rd.Done && rd.Leader != "" && e.Secure != nil && e.Plan.Steps == 0 {
			made, err := e.Secure(ctx, e.Plan.lane(rd.Leader), e.Plan.Left)
			if err != nil {
				return rd, err
			}
			if made {
				stopped = rd.Stopped
				continue
			}
		}
		if e.Decided != nil {
			if err := e.Decided(rd); err != nil {
				return rd, err
			}
		}
		if rd.Done {
			return rd, nil
		}
		if err := e.round(ctx, t, &rd); err != nil {
			return rd, err
		}
	}
}

// outOfTime is the decision instead of rd once exploration's time is spent: the best lane
// so far goes on to the final model; when none has trained yet, the planner's first trains
// its minimal first round.
func (e *Explorer) outOfTime(rd Round) Round {
	var best *Lane
	for _, l := range e.Plan.active() {
		if len(l.Curve) > 0 && (best == nil || l.Best().Score > best.Best().Score || math.IsNaN(best.Best().Score)) {
			best = l
		}
	}
	var stopped []string
	if best == nil && len(rd.Jobs) > 0 {
		first := rd.Jobs[0]
		for _, l := range e.Plan.active() {
			if l.ID != first.Lane {
				l.Stopped = "exploration's time ran out before its first round"
				stopped = append(stopped, l.ID+": "+l.Stopped)
			}
		}
		rd.Jobs, rd.Stopped = rd.Jobs[:1], append(stopped, rd.Stopped...)
		return rd
	}
	for _, l := range e.Plan.active() {
		if l != best {
			l.Stopped = "exploration's time ran out"
			stopped = append(stopped, l.ID+": "+l.Stopped)
		}
	}
	end := e.Plan.Next()
	end.Stopped = append(append(rd.Stopped, stopped...), end.Stopped...)
	return end
}

// round trains rd's jobs, records what they gave (a failed job stops its lane) and calls
// After.
func (e *Explorer) round(ctx context.Context, t Trainer, rd *Round) error {
	outs, errs := e.run(ctx, t, rd.Jobs)
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, j := range rd.Jobs {
		l := e.Plan.lane(j.Lane)
		if errs[i] != nil {
			l.Stopped = "failed: " + errs[i].Error()
			rd.Stopped = append(rd.Stopped, l.ID+": "+l.Stopped)
			continue
		}
		o := outs[i]
		l.Observe(o.Steps, o.Score, o.Took-o.Waited, o.StepTime, j.Place)
		if o.Undefined {
			l.Curve[len(l.Curve)-1].Score, l.Curve[len(l.Curve)-1].Undefined = 0, true
		}
		l.Validation = o.Validated.Seconds()
		if j.Limit > 0 && o.Steps < j.Until {
			// The time limit ended the round.
			l.Outside = max(o.Took-o.Waited-o.Validated-j.Limit, 0).Seconds()
		}
	}
	if e.After != nil {
		return e.After(*rd)
	}
	return nil
}

func (p *Plan) lane(id string) *Lane {
	for _, l := range p.Lanes {
		if l.ID == id {
			return l
		}
	}
	panic(fmt.Sprintf("schedule: job for unknown lane %q", id))
}

// run trains jobs, those of one place one after another and the places side by side.
func (e *Explorer) run(ctx context.Context, t Trainer, jobs []Job) ([]Outcome, []error) {
	outs, errs := make([]Outcome, len(jobs)), make([]error, len(jobs))
	byPlace := map[string][]int{}
	var names []string
	for i, j := range jobs {
		if _, ok := byPlace[j.Place.Name]; !ok {
			names = append(names, j.Place.Name)
		}
		byPlace[j.Place.Name] = append(byPlace[j.Place.Name], i)
	}
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Add(1)
		go func(idx []int) {
			defer wg.Done()
			for _, i := range idx {
				if ctx.Err() != nil {
					errs[i] = ctx.Err()
					continue
				}
				outs[i], errs[i] = t.Train(ctx, jobs[i])
			}
		}(byPlace[n])
	}
	wg.Wait()
	return outs, errs
}
