package schedule

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Sim is a simulated executor for testing a schedule without plugin processes: each lane
// follows a recorded learning curve, its steps take its true step time (which the plan's
// estimate may miss), each round costs an overhead more, and each place keeps its own
// clock. It implements [Trainer]; Now is the run's clock.
type Sim struct {
	Curves   map[string]Curve   // by lane id
	Cost     map[string]float64 // the true seconds of a step, by lane id
	Overhead float64            // seconds a round costs besides its steps
	// Cap is the most steps a lane's plugin trains, by lane id (a prior's one): asked for
	// more, it stops there, as the classification plugin's prior lane does.
	Cap map[string]int
	// Late is what a round takes after its last step that its time limit does not count
	// (the plugin writes its checkpoint and exits): a round that its limit ends runs that
	// far past it (0.2–0.55 s in app/cli's TestPlainTaskOfEveryKind).
	Late time.Duration
	// Drift is how much slower each round of a lane makes its steps than its round
	// before (a machine that grows busier): 0.05, 5 % a round. The plan's pace, observed
	// in the round before, then falls short, and a time limit ends the round.
	Drift float64

	mu    sync.Mutex
	base  time.Duration
	clock map[string]time.Duration
	// Runs are the rounds trained, in the order they started on each place.
	Runs []SimRun
}

// SimRun is one simulated round: a lane on a place from Start to End of the run's clock.
type SimRun struct {
	Lane       string
	Place      string
	Start, End time.Duration
	From, To   int
}

// Now is the run's clock: the latest of the places' clocks, to which every place is
// brought (a round ends when its last job does).
func (s *Sim) Now() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.base
	for _, c := range s.clock {
		m = max(m, c)
	}
	s.base = m
	for k := range s.clock {
		s.clock[k] = m
	}
	return m
}

// Advance adds d to the run's clock (time spent outside training: the final phases).
func (s *Sim) Advance(d time.Duration) {
	now := s.Now()
	s.mu.Lock()
	s.base = now + d
	s.mu.Unlock()
}

// Train implements Trainer: the steps that fit the job's limit, at the lane's true cost.
func (s *Sim) Train(ctx context.Context, j Job) (Outcome, error) {
	if err := ctx.Err(); err != nil {
		return Outcome{}, err
	}
	cv, ok := s.Curves[j.Lane]
	if !ok {
		return Outcome{}, fmt.Errorf("no curve for lane %s", j.Lane)
	}
	cost := s.Cost[j.Lane]
	s.mu.Lock()
	for _, r := range s.Runs {
		if r.Lane == j.Lane {
			cost *= 1 + s.Drift
		}
	}
	s.mu.Unlock()
	steps := j.Until - j.From
	if c := s.Cap[j.Lane]; c > 0 {
		steps = max(min(steps, c-j.From), 0)
	}
	if fit := int((j.Limit.Seconds() - s.Overhead) / cost); j.Limit > 0 && fit < steps {
		steps = max(fit, 0) // the time limit ends the round first
	}
	took := seconds(float64(steps)*cost+s.Overhead) + s.Late
	s.mu.Lock()
	if s.clock == nil {
		s.clock = map[string]time.Duration{}
	}
	start := max(s.clock[j.Place.Name], s.base)
	s.clock[j.Place.Name] = start + took
	s.Runs = append(s.Runs, SimRun{Lane: j.Lane, Place: j.Place.Name, Start: start, End: start + took, From: j.From, To: j.From + steps})
	s.mu.Unlock()
	return Outcome{Steps: j.From + steps, Score: cv.At(j.From + steps), Took: took, StepTime: seconds(float64(steps) * cost)}, nil
}
