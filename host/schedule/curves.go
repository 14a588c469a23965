package schedule

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"sort"
)

// Curve is a recorded learning curve: a lane's validation score against its steps, on one
// task with one seed.
type Curve struct {
	Task string `json:"task"`
	// Kind is the task's kind (segmentation, ...): a minimum holds for lanes of that kind.
	Kind string `json:"kind"`
	Lane string `json:"lane"`
	Seed int64  `json:"seed"`
	// Batch and StepSeconds say what a step was, on the machine that recorded it.
	Batch       int     `json:"batch,omitempty"`
	StepSeconds float64 `json:"step_seconds,omitempty"`
	Points      []Point `json:"points"`
}

// Curves are the learning curves make bench-quality records (-record), with what recorded
// them.
type Curves struct {
	Recorded string  `json:"recorded"`
	Curves   []Curve `json:"curves"`
}

// LearnedFraction is the part of its best validation score a curve must have reached at
// the minimum step count: a lane judged earlier is judged before it has learned half of
// what it learns in the recorded run, when lanes are still ranked by how fast they start
// rather than by what they reach.
const LearnedFraction = 0.5

//go:embed curves.json
var recorded []byte

// Recorded are the curves committed with this package (curves.json, written by
// make bench-quality -record). They were recorded on bench-quality's own tasks (the
// t1-tissue slabs), the ones whose improvement make bench-quality reports: the minimum
// steps drawn from them are tuned there, not checked on held-out tasks.
func Recorded() (*Curves, error) { return ParseCurves(recorded) }

// ParseCurves reads curves as curves.json holds them.
func ParseCurves(b []byte) (*Curves, error) {
	var c Curves
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("learning curves: %w", err)
	}
	for _, cv := range c.Curves {
		if len(cv.Points) == 0 {
			return nil, fmt.Errorf("learning curves: %s %s seed %d has no points", cv.Task, cv.Lane, cv.Seed)
		}
	}
	return &c, nil
}

// Reached is the first step at which the curve reached frac of its best score, and that
// best; the first point when the best is not positive.
func (c Curve) Reached(frac float64) (int, float64) {
	best := math.Inf(-1)
	for _, p := range c.Points {
		best = max(best, p.Score)
	}
	for _, p := range c.Points {
		if p.Score >= frac*best {
			return p.Step, best
		}
	}
	return c.Points[len(c.Points)-1].Step, best
}

// MinSteps is the minimum step count of a lane of a task of kind: the most steps any
// recorded curve of that lane (of every lane of the kind when none was recorded for it)
// took to reach LearnedFraction of its best score; 1 when nothing of the kind was
// recorded. The sentence says which curve set it.
func (c *Curves) MinSteps(kind, lane string) (int, string) {
	var use, all []Curve
	for _, cv := range c.Curves {
		if cv.Kind != kind {
			continue
		}
		all = append(all, cv)
		if cv.Lane == lane {
			use = append(use, cv)
		}
	}
	scope := "lane " + lane
	if len(use) == 0 {
		use, scope = all, "every "+kind+" lane"
		if lane != "" {
			scope += " (none recorded for " + lane + ")"
		}
	}
	if len(use) == 0 {
		return 1, "1 step: no learning curve of the task kind " + kind + " is recorded"
	}
	n, why := 0, ""
	for _, cv := range use {
		s, best := cv.Reached(LearnedFraction)
		if s > n {
			n = s
			why = fmt.Sprintf("%d steps: the most any recorded curve of %s took to reach %.0f%% of its best validation score (%s, %s, seed %d: %.3f)",
				s, scope, 100*LearnedFraction, cv.Task, cv.Lane, cv.Seed, best)
		}
	}
	return max(n, 1), why
}

// MinStepsFor is MinSteps of every lane recorded for kind, and of any other lane under "".
func (c *Curves) MinStepsFor(kind string) map[string]int {
	out := map[string]int{}
	out[""], _ = c.MinSteps(kind, "")
	for _, cv := range c.Curves {
		if cv.Kind == kind {
			out[cv.Lane], _ = c.MinSteps(kind, cv.Lane)
		}
	}
	return out
}

// Table prints the curves as rows: task, lane, seed, then the score at each step.
func (c *Curves) Table() []string {
	out := make([]string, 0, len(c.Curves))
	cs := append([]Curve(nil), c.Curves...)
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].Task != cs[j].Task {
			return cs[i].Task < cs[j].Task
		}
		if cs[i].Lane != cs[j].Lane {
			return cs[i].Lane < cs[j].Lane
		}
		return cs[i].Seed < cs[j].Seed
	})
	for _, cv := range cs {
		row := fmt.Sprintf("%-12s %-14s seed %d:", cv.Task, cv.Lane, cv.Seed)
		for _, p := range cv.Points {
			row += fmt.Sprintf(" %d:%.3f", p.Step, p.Score)
		}
		out = append(out, row)
	}
	return out
}

// At is the curve's score at step s, linear between its points and flat beyond them (a
// simulated lane's validation score).
func (c Curve) At(s int) float64 {
	ps := c.Points
	if s <= ps[0].Step {
		return ps[0].Score * float64(s) / float64(max(ps[0].Step, 1))
	}
	for i := 1; i < len(ps); i++ {
		if s <= ps[i].Step {
			f := float64(s-ps[i-1].Step) / float64(ps[i].Step-ps[i-1].Step)
			return ps[i-1].Score + f*(ps[i].Score-ps[i-1].Score)
		}
	}
	return ps[len(ps)-1].Score
}
