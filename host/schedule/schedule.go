// Package schedule decides how a run spends its budget: which lanes train next, to which
// step, for how long and where; which lanes stop and why; when exploration ends and how
// the final model is made. It is arithmetic over the plan, the budget, the step costs
// observed so far and the validation curves, with no plugin, file or clock of its own, so
// that it is tested with a simulated executor and recorded learning curves ([Sim]).
//
// # Successive halving from checkpoints
//
// Exploration trains every lane on the first fold for a short first round (rung 0), then
// keeps the better 1/Eta of the lanes (by the validation score taken at the end of their
// last round) and continues them from their checkpoints, with their optimizer state, their
// learning-rate schedule over the planned total and their data order going on, for a round
// Eta times as long, and so on until one lane is left: successive halving (ASHA's rungs
// without its asynchrony; nnU-Net's planner has no such search, Hyperband is this with
// several brackets). Each rung spends the same share of the exploration time, so a lane at
// rung k has trained about Eta^k times as long as one at rung 0.
//
//   - A lane whose validation curve has flattened (it gained less than [Flat] of its
//     score's span over its last round) is not promoted; its time goes back to the lanes still running and, once no
//     lane is left to explore, to the final model.
//   - No lane trains fewer steps than the minimum in its first round ([Lane.MinSteps], from
//     recorded learning curves: [Curves.MinSteps]); a lane whose minimum does not fit the
//     first round's share is not admitted ([Admit]), and the schedule says why.
//   - Lanes run side by side on several places ([Place]) when the executor has them; a
//     lane-fold goes back to a place with the worker split and device it started on, which
//     are part of its compute identity.
//
// # The final model
//
// Exploration has a share of the usable time ([ExploreShare]); the rest, and what
// exploration gave back, goes to the final model, made by the rule [Final] applies and
// the run records ([FinalRule]): when the winner's validation curve has flattened and
// every fold of the winner can be trained to the winner's step count in the time left,
// the fold models are ensembled and judged out of fold (as nnU-Net does); otherwise the
// winner continues on every training case from its best checkpoint (the round of fold 0
// that scored best on validation) until the reserve, its learning rate annealed to zero at
// the end. A user may ask for either instead ([Forced]).
//
// The reserve is the time the final prediction, verification and export take, measured
// from the validation predictions once there are some ([Reserve]), so that a run ends
// between 95 % and 100 % of its budget.
package schedule

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"amid/host/finite"
)

// Defaults of a [Config].
const (
	// Eta is the halving factor: the better 1/Eta of the lanes go on, for rounds Eta times
	// as long.
	Eta = 2
	// ExploreShare is the part of the usable time exploration may use; the rest is the
	// final model's.
	ExploreShare = 0.5
	// Flat is the share of its validation score's span ([Lane.Span]) a lane must gain
	// over a round for its curve not to have flattened: a hundredth, for the Dice a change
	// smaller than the spread of scores between seeds measured by make bench-quality. Flat,
	// the minimum steps of curves.json and FoldLimit's slack were measured on the same
	// task (bench-quality's t1-tissue slabs) whose improvement make bench-quality reports:
	// that report shows they work where they were tuned, not that they carry over to other
	// tasks.
	Flat = 0.01
	// FinalOptimism is how many more steps than the time left holds at the observed pace
	// the all-data model is planned for.
	FinalOptimism = 1.1
	// LimitSlack multiplies a round's expected time into its time limit: the limit is a
	// guard for a lane slower than measured, and the step (Until) ends a round.
	LimitSlack = 1.5
)

// Place is where one lane-fold trains at a time.
type Place struct {
	Name    string `json:"name"`
	Device  string `json:"device"`
	Workers int    `json:"workers"`
	// Memory is what a lane may use there in bytes; 0: unknown (anything fits).
	Memory int64 `json:"memory,omitempty"`
}

// fits reports whether lane l may train on p: its memory fits, and a lane that has
// trained already goes back to the same device and worker split.
func (p Place) fits(l *Lane) bool {
	if p.Memory > 0 && l.Memory > p.Memory {
		return false
	}
	if l.Device != "" && (l.Device != p.Device || l.Workers != p.Workers) {
		return false
	}
	return true
}

// Point is one validation score of a lane: after Step steps, Seconds of training.
type Point struct {
	Step    int     `json:"step"`
	Score   float64 `json:"score"`
	Seconds float64 `json:"seconds,omitempty"`
	// Undefined: the round's validation metric had no value (host/evaluate's
	// Score.Undefined: a correlation of one case, or of predictions that are one value).
	// It is no evidence either way: Score is 0 and counts in no ranking, gain or choice.
	Undefined bool `json:"undefined,omitempty"`
}

// MarshalJSON writes the point's score as null when it is undefined.
func (p Point) MarshalJSON() ([]byte, error) {
	type plain Point
	return json.Marshal(struct {
		plain
		Score *float64 `json:"score"`
	}{plain(p), finite.Maybe(p.Score, p.Undefined)})
}

// defined is the lane's curve without its undefined points.
func (l *Lane) defined() []Point {
	var out []Point
	for _, p := range l.Curve {
		if !p.Undefined {
			out = append(out, p)
		}
	}
	return out
}

// Lane is a lane as the schedule sees it.
type Lane struct {
	ID string `json:"id"`
	// StepSeconds is the time of a training step: the plan's estimate until the lane has
	// trained, then what was observed.
	StepSeconds float64 `json:"step_seconds"`
	// Overhead is the time a round takes besides its steps (starting the plugin, loading
	// the data, the validation prediction); the observed one once the lane has trained.
	Overhead float64 `json:"overhead_seconds"`
	// Validation is the part of Overhead the round's validation took (predicting the
	// validation cases and scoring them), which a model on all the data does not do.
	Validation float64 `json:"validation_seconds,omitempty"`
	// Outside is how long the lane's last round that its time limit ended ran past that
	// limit, its validation left out: what the plugin's clock does not count (its start,
	// the step under way, saving the checkpoint); 0 until a limit has ended a round.
	Outside float64 `json:"outside_seconds,omitempty"`
	// Span is the width of the range its validation score moves over (host/evaluate's
	// Span: 1 for the Dice, 3 for the IQA score); 0 when it has none (PSNR).
	Span float64 `json:"span,omitempty"`
	// MinSteps is the fewest steps the lane trains in its first round.
	MinSteps int `json:"min_steps"`
	// Memory is what a training step needs (bytes), 0: unknown.
	Memory int64 `json:"memory,omitempty"`
	// Steps is the step the lane has reached; Curve its validation scores, one per round.
	Steps int     `json:"steps"`
	Curve []Point `json:"curve,omitempty"`
	// Device and Workers are where it first trained ("" before): it stays there.
	Device  string `json:"device,omitempty"`
	Workers int    `json:"workers,omitempty"`
	// Stopped, when not empty, says why the lane trains no more (failed, flattened, not
	// promoted, not admitted).
	Stopped string `json:"stopped,omitempty"`
	// Rung is the number of rounds the lane has finished.
	Rung int `json:"rung"`
	// MaxSteps is the most steps the lane can train, 0 when it has no cap: a prior lane
	// counts its training labels in one step, and no step after that changes it. No round
	// and no final model is planned past it.
	MaxSteps int `json:"max_steps,omitempty"`
	// Made is how many folds of the lane's fold ensemble, fold 0 among them, were trained
	// to its cap before exploration ended: a capped leader's folds train while its
	// challenger explores ([Explorer.Secure]). 0 or 1: fold 0 alone.
	Made int `json:"folds_made,omitempty"`
}

// Capped reports whether the lane has trained every step it can ([Lane.MaxSteps]).
func (l *Lane) Capped() bool { return l.MaxSteps > 0 && l.Steps >= l.MaxSteps }

// room is n steps more, or fewer when the lane's cap comes first (never below 0).
func (l *Lane) room(n int) int {
	if l.MaxSteps > 0 {
		n = min(n, l.MaxSteps-l.Steps)
	}
	return max(n, 0)
}

// Score is the lane's last validation score (NaN before any).
func (l *Lane) Score() float64 {
	d := l.defined()
	if len(d) == 0 {
		return math.NaN()
	}
	return d[len(d)-1].Score
}

// ScoreText is the lane's latest validation score as a sentence shows it: "0.8123", or
// "undefined" when no round of it had one.
func (l *Lane) ScoreText() string {
	if s := l.Score(); !math.IsNaN(s) {
		return fmt.Sprintf("%.4f", s)
	}
	return "undefined"
}

// Best is the lane's best validation score and its point (NaN before any).
func (l *Lane) Best() Point {
	b := Point{Score: math.NaN()}
	for _, p := range l.defined() {
		if math.IsNaN(b.Score) || p.Score > b.Score {
			b = p
		}
	}
	return b
}

// flattened says whether the lane's last round gained less than its flat gain, and by
// how much.
func (l *Lane) flattened() (bool, float64) {
	n := len(l.Curve)
	d := l.defined()
	if n < 2 || l.Curve[n-1].Undefined || len(d) < 2 {
		return false, 0 // a round without a value shows nothing, flat or rising
	}
	gain := d[len(d)-1].Score - d[len(d)-2].Score
	return gain < l.flatGain(), gain
}

// flatGain is the gain under which the lane's curve has flattened: Flat of its score's
// span, or, for a score with no bounded range (Span 0: PSNR's decibels, or a state from
// before the span was kept), Flat of its last score's size and at least Flat.
func (l *Lane) flatGain() float64 {
	if l.Span > 0 {
		return Flat * l.Span
	}
	size := 1.0
	if s := l.Score(); !math.IsNaN(s) {
		size = max(math.Abs(s), 1)
	}
	return Flat * size
}

// Config is a run's schedule.
type Config struct {
	// Eta: 0 means the package default.
	Eta int
	// Places where lanes train; at least one.
	Places []Place
	// Steps, when positive, fixes the rounds by step counts rather than by time: every
	// lane's first round trains Steps steps and each later round Eta times as many as the
	// one before, with no time limit, and exploration ends only when one lane is left. Two
	// runs with the same seed then train the same steps wherever and however fast they
	// run (a comparison of executors; the final model still follows the time left).
	Steps int
}

func (c Config) eta() int {
	if c.Eta >= 2 {
		return c.Eta
	}
	return Eta
}

// Job is one round of one lane: continue from step From to step Until (the round's last),
// within Limit, on Place.
type Job struct {
	Lane  string
	Place Place
	From  int
	Until int
	// Expected is the round's expected time, Limit its guard (LimitSlack × Expected).
	Expected time.Duration
	Limit    time.Duration
}

// Round is what runs next.
type Round struct {
	// Rung is the rung the jobs train (0: the first round).
	Rung int
	Jobs []Job
	// Stopped are the lanes this decision stopped, each with its reason (the lane's
	// Stopped is set too).
	Stopped []string
	// Done reports that exploration is over; Winner is then the lane the final model
	// starts from, and Why says why it won.
	Done   bool
	Winner string
	Why    string
	// Leader, when set, is the lane at its cap that leads while the jobs' lane, its
	// challenger, goes on alone ([Explorer.Secure] may make its final model first).
	Leader string
}

// Rounds is how many rounds successive halving takes for n lanes: one per rung until a
// single lane is left, at least one.
func Rounds(n, eta int) int {
	r := 0
	for n > 1 {
		n = (n + eta - 1) / eta
		r++
	}
	return max(r, 1)
}

// FirstShare is the time each of n lanes trains in the first round when exploration may
// use explore on places places: the exploration time over the rounds successive halving
// takes, over the waves of lanes the places run one after another. The planner sizes the
// lanes to it.
func FirstShare(explore time.Duration, n, places, eta int) time.Duration {
	n, places = max(n, 1), max(places, 1)
	waves := (n + places - 1) / places
	return explore / time.Duration(Rounds(n, eta)*waves)
}

// WinnerShare is about how long the lane that wins trains in all when usable is the time
// left for training, explore exploration's share of it, and n lanes start on places: its
// share of every round, and the final model's time.
func WinnerShare(usable, explore time.Duration, n, places, eta int) time.Duration {
	n, places = max(n, 1), max(places, 1)
	rounds := Rounds(n, eta)
	total := usable - explore
	for k := n; ; k = (k + eta - 1) / eta {
		waves := (k + places - 1) / places
		total += explore / time.Duration(rounds*waves)
		if k <= 1 || (k+eta-1)/eta == k {
			break
		}
		if (k+eta-1)/eta == 1 {
			break
		}
	}
	return total
}

// Admit keeps the lanes whose minimum steps fit the first round's share, in order (the
// planner's ranking), as many as fit: a lane whose MinSteps × StepSeconds + Overhead
// exceeds FirstShare of the lanes kept so far is left out, and the sentence says why. When
// none fits (a budget too short for any lane's minimum) the first is kept all the same, and
// a sentence says so.
func Admit(lanes []*Lane, explore time.Duration, places, eta int) (kept []*Lane, out []string) {
	defer func() {
		if len(kept) == 0 && len(lanes) > 0 {
			l := lanes[0]
			l.Stopped = ""
			kept = []*Lane{l}
			out = append(out, fmt.Sprintf("%s is trained all the same, as no lane's minimum fits the budget: it will be judged before its minimum", l.ID))
		}
	}()
	for _, l := range lanes {
		share := FirstShare(explore, len(kept)+1, places, eta)
		need := l.firstRound()
		if need > share {
			why := fmt.Sprintf("%s is not trained: its minimum of %d steps takes about %v at %.3g s a step, more than the %v a lane gets in the first round",
				l.ID, l.MinSteps, need.Round(time.Second), l.StepSeconds, share.Round(time.Second))
			l.Stopped = why
			out = append(out, why)
			continue
		}
		kept = append(kept, l)
	}
	return kept, out
}

// firstRound is the time the lane's minimum first round takes.
func (l *Lane) firstRound() time.Duration {
	return seconds(float64(l.MinSteps)*l.StepSeconds + l.Overhead)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Plan is the state of exploration the schedule decides from.
type Plan struct {
	Config
	Lanes []*Lane
	// Explore is the exploration time left: its share of the usable time less what it has
	// spent, and never more than Left.
	Explore time.Duration
	// Left, when positive, is the time until the reserve: no round's limit reaches past it
	// ([Explorer.Left] sets it before each decision). 0: exploration's share is the only
	// bound.
	Left time.Duration
	// Hold, when set, is the time the final model of a lane at its cap needs of the time
	// left before the reserve (its fold ensemble, or as many of its folds as fit), 0 when
	// none fits ([Explorer.Hold] sets it).
	Hold func(capped *Lane, left time.Duration) time.Duration
	// Held is the time kept before the reserve for a capped leader's final model while its
	// challenger goes on (Hold's); 0 when none is (or none fits).
	Held time.Duration
}

// active are the lanes not stopped.
func (p *Plan) active() []*Lane {
	var out []*Lane
	for _, l := range p.Lanes {
		if l.Stopped == "" {
			out = append(out, l)
		}
	}
	return out
}

// Next decides the next round: the first round of lanes that have none, else the
// promotion of the better 1/Eta of the lanes at the highest rung, else the end of
// exploration.
func (p *Plan) Next() Round {
	var rd Round
	// A lane at its cap trains no more: it stays in the ranking for the winner, and the
	// time of its rounds goes to the lanes that can still learn.
	for _, l := range p.active() {
		if l.Capped() {
			l.Stopped = fmt.Sprintf("it has trained its cap of %d step(s); more steps would not change it", l.MaxSteps)
			rd.Stopped = append(rd.Stopped, l.ID+": "+l.Stopped)
		}
	}
	act := p.active()
	var fresh []*Lane
	for _, l := range act {
		if l.Rung == 0 {
			fresh = append(fresh, l)
		}
	}
	if len(fresh) > 0 {
		r := p.round(fresh, len(act))
		r.Stopped = append(rd.Stopped, r.Stopped...)
		return r
	}
	// Flattened lanes stop: their time goes back to the others.
	for _, l := range act {
		if flat, gain := l.flattened(); flat && len(act) > 1 {
			d := l.defined()
			l.Stopped = fmt.Sprintf("its validation curve flattened: %+.4f over its last round (steps %d to %d), under %.2g", gain, d[len(d)-2].Step, l.Steps, l.flatGain())
			rd.Stopped = append(rd.Stopped, l.ID+": "+l.Stopped)
		}
	}
	act = p.active()
	if len(act) > 1 {
		rung := 0
		for _, l := range act {
			rung = max(rung, l.Rung)
		}
		// Lanes behind the highest rung (added after the first round) catch up first.
		var behind []*Lane
		for _, l := range act {
			if l.Rung < rung {
				behind = append(behind, l)
			}
		}
		if len(behind) > 0 {
			r := p.round(behind, len(act))
			r.Stopped = append(rd.Stopped, r.Stopped...)
			return r
		}
		rankByScore(act)
		keep := (len(act) + p.eta() - 1) / p.eta()
		for _, l := range act[keep:] {
			l.Stopped = fmt.Sprintf("not promoted after %d round(s): validation %s, outside the better 1/%d (%s %s)", l.Rung, l.ScoreText(), p.eta(), act[keep-1].ID, act[keep-1].ScoreText())
			rd.Stopped = append(rd.Stopped, l.ID+": "+l.Stopped)
		}
		act = act[:keep]
		if len(act) > 1 {
			r := p.round(act, len(act))
			r.Stopped = append(rd.Stopped, r.Stopped...)
			return r
		}
	}
	best := p.best()
	// A lane at its cap that leads cannot use the time exploration has left: the last
	// lane that can still learn goes on alone while a round of it fits, judged on the same
	// validation cases, and wins if it overtakes. Its curve may flatten: the time is
	// nobody else's (make bench-quality's inia19-quadrants: a 2.5d U-Net dipped by 0.09
	// over a round of 700 steps, and a quarter of the budget went unused).
	if len(act) == 1 && best != nil && best.Capped() && act[0] != best {
		c := act[0]
		if p.Left > 0 {
			// The challenger's rounds, limits included, may use the time until the reserve
			// but what the leader's final model needs, exploration's share spent or not.
			// (Decided before the lanes that stop in this decision had stopped, the
			// challenger of make bench-quality's 5-minute inia19-quadrants run had no
			// time, and a quarter of the budget went unused.)
			p.Held = 0
			if p.Hold != nil {
				p.Held = p.Hold(best, p.Left)
			}
			p.Explore = max(p.Left-p.Held, 0)
		}
		// A round whose limited steps would be shorter than what it takes besides them
		// (its start, checkpoint and validation) is not started: it would gain little, and
		// a misjudged overhead runs into the time held for the leader. (app/cli's
		// TestPlainTaskOfEveryKind: a challenger's round limited to 0.1 s took 1 s, its
		// leader's fold ensemble no longer fit, and the run ended 0.3 s past its budget.)
		if p.Explore >= 2*seconds(c.Besides()) {
			r := p.round(act, 1)
			r.Stopped = append(rd.Stopped, r.Stopped...)
			r.Leader = best.ID
			return r
		}
		until := "the reserve"
		if p.Held > 0 {
			until = "the time its leader's final model needs"
		}
		behind := fmt.Sprintf("%.4f behind", best.Best().Score-c.Score())
		if math.IsNaN(c.Score()) {
			behind = "its validation undefined, behind"
		}
		c.Stopped = fmt.Sprintf("no round of it fits the %v left before %s (a round takes %.1fs besides its steps), %s %s at its cap", p.Explore.Round(time.Second), until, c.Besides(), behind, best.ID)
		rd.Stopped = append(rd.Stopped, c.ID+": "+c.Stopped)
	}
	// Exploration is over: the best score of any lane that trained wins, a lane at its cap
	// too.
	rd.Done = true
	if best == nil {
		// No lane's validation had a value: the first that trained is taken, and the
		// reason says that no score chose it.
		for _, l := range p.Lanes {
			if len(l.Curve) > 0 {
				rd.Winner = l.ID
				rd.Why = fmt.Sprintf("no lane's validation score has a value (every round's metric was undefined): %s, the first lane that trained, is taken", l.ID)
				return rd
			}
		}
	}
	if best != nil {
		rd.Winner = best.ID
		b := best.Best()
		rd.Why = fmt.Sprintf("%s has the best validation score, %.4f at step %d", best.ID, b.Score, b.Step)
		if best.Capped() {
			rd.Why += fmt.Sprintf(" (at its cap of %d step(s))", best.MaxSteps)
		}
	}
	return rd
}

// rankByScore sorts lanes by their latest validation score, best first. A lane whose
// rounds had no value (undefined) is no evidence either way: it ranks at the median of
// the others' scores, neither the worst nor the best, until a round of it has one.
func rankByScore(lanes []*Lane) {
	var scores []float64
	for _, l := range lanes {
		if s := l.Score(); !math.IsNaN(s) {
			scores = append(scores, s)
		}
	}
	mid := 0.0
	if n := len(scores); n > 0 {
		sort.Float64s(scores)
		mid = (scores[(n-1)/2] + scores[n/2]) / 2
	}
	key := func(l *Lane) float64 {
		if s := l.Score(); !math.IsNaN(s) {
			return s
		}
		return mid
	}
	sort.SliceStable(lanes, func(i, j int) bool { return key(lanes[i]) > key(lanes[j]) })
}

// best is the lane with the best validation score of those that trained, nil before any;
// of equal scores, one that can still train (a lane at its cap leads only when it is
// better).
func (p *Plan) best() *Lane {
	var best *Lane
	for _, l := range p.Lanes {
		if math.IsNaN(l.Best().Score) {
			continue // not trained, or no round with a value
		}
		if best == nil || l.Best().Score > best.Best().Score || l.Best().Score == best.Best().Score && best.Capped() && !l.Capped() {
			best = l
		}
	}
	return best
}

// round is the next round of lanes (n lanes still explored): each gets the exploration
// time left over the rounds still to come, over the waves its places run, at least its
// minimum in a first round, and is packed onto the places.
func (p *Plan) round(lanes []*Lane, n int) Round {
	places := max(len(p.Places), 1)
	waves := (len(lanes) + places - 1) / places
	per := p.Explore / time.Duration(Rounds(n, p.eta())*waves)
	rd := Round{Rung: lanes[0].Rung}
	for _, l := range lanes {
		if l.StepSeconds <= 0 && p.Steps == 0 {
			// A step's time is unknown (a plugin that does not say, before the lane has
			// trained): the round is its share of time, its steps what fits.
			until := math.MaxInt32
			if l.MaxSteps > 0 {
				until = l.MaxSteps
			}
			if per <= 0 {
				// No time is left for it (exploration's share was spent before a first
				// round: a run resumed past its budget, a slow start): a limit of 0 is no
				// limit, and the round would train every step its configuration plans
				// (an enhancement lane resumed after a kill trained 12 minutes of a 6 s
				// budget). It trains its minimal first round, which its step ends.
				until = min(until, l.Steps+max(l.MinSteps, 1))
			}
			rd.Jobs = append(rd.Jobs, Job{Lane: l.ID, From: l.Steps, Until: until, Expected: per, Limit: per})
			continue
		}
		train := per.Seconds() - l.Overhead
		steps := int(train / l.StepSeconds)
		if l.Rung == 0 {
			steps = max(steps, l.MinSteps)
		}
		steps = max(steps, 1)
		if p.Steps > 0 {
			steps = p.Steps * pow(p.eta(), l.Rung)
		}
		steps = max(l.room(steps), 1)
		exp := seconds(float64(steps)*l.StepSeconds + l.Overhead)
		limit := time.Duration(LimitSlack * float64(exp))
		if p.Steps > 0 {
			limit = 0 // the step ends the round
		}
		rd.Jobs = append(rd.Jobs, Job{Lane: l.ID, From: l.Steps, Until: l.Steps + steps, Expected: exp, Limit: limit})
	}
	rd.Jobs = p.bound(Pack(rd.Jobs, p.Places, p.Lanes))
	return rd
}

// bound shortens the time limits of jobs so that none reaches past the reserve (Left):
// the jobs of a place run one after another, so each may use what is left after the
// expected times of the jobs before it, less what its round takes besides its steps (the
// validation that follows its training, and what its lane was seen to run past a limit
// or to take besides its steps: [Lane.Besides]). A job that would start at or past the
// reserve keeps its own limit: the explorer plans one only when no lane has trained yet and one
// must ([Explorer]). Under fixed step counts the step ends a round and nothing is bounded.
func (p *Plan) bound(jobs []Job) []Job {
	if p.Left <= 0 || p.Steps > 0 {
		return jobs
	}
	before := map[string]time.Duration{}
	for i, j := range jobs {
		// What a round takes besides its limited steps comes out of its time too. A
		// challenger's last round planned with its validation alone ran 0.2–0.55 s into
		// the time its capped leader's fold ensemble needed, which a 25 s run then lacked
		// (app/cli's TestPlainTaskOfEveryKind).
		l := p.lane(j.Lane)
		left := p.Left - p.Held - before[j.Place.Name] - seconds(l.Besides())
		if left > 0 && (j.Limit <= 0 || j.Limit > left) {
			jobs[i].Limit = left
			jobs[i].Expected = min(j.Expected, left)
		}
		before[j.Place.Name] += jobs[i].Expected
	}
	return jobs
}

// Besides is what a round of l takes, in seconds, besides the steps its time limit
// bounds: what it was seen to run past a limit, with its validation, or what its rounds
// took besides their steps (the plugin's start, loading the cases, the checkpoint and the
// validation), whichever is more, and a step: a limit ends a round at the end of the step
// it falls in. (app/cli's TestPlainTaskOfEveryKind: a classification network's model on
// all the data, limited to its time less what its round had run past (0.45 s), ran
// 0.43 s past, and the run 18 ms past its budget; its steps took 0.27 s.)
func (l *Lane) Besides() float64 {
	return max(l.Validation+l.Outside, l.Overhead) + l.StepSeconds
}

// pow is b to the power e (e ≥ 0).
func pow(b, e int) int {
	n := 1
	for range e {
		n *= b
	}
	return n
}

// Pack assigns each job a place: longest first, each to the place that frees first among
// those the lane fits (its memory, and the device and worker split it started on), as in
// LPT scheduling. Jobs that fit no place keep the zero Place.
func Pack(jobs []Job, places []Place, lanes []*Lane) []Job {
	byID := map[string]*Lane{}
	for _, l := range lanes {
		byID[l.ID] = l
	}
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return jobs[order[a]].Expected > jobs[order[b]].Expected })
	free := make([]time.Duration, len(places))
	out := slices.Clone(jobs)
	for _, i := range order {
		l := byID[jobs[i].Lane]
		best := -1
		for k, pl := range places {
			if l != nil && !pl.fits(l) {
				continue
			}
			if best < 0 || free[k] < free[best] {
				best = k
			}
		}
		if best < 0 {
			continue
		}
		out[i].Place = places[best]
		free[best] += jobs[i].Expected
	}
	return out
}

// Makespan is the wall time of jobs packed onto places: the longest sum of expected times
// on one place.
func Makespan(jobs []Job) time.Duration {
	per := map[string]time.Duration{}
	var m time.Duration
	for _, j := range jobs {
		per[j.Place.Name] += j.Expected
		m = max(m, per[j.Place.Name])
	}
	return m
}

// Observe records a finished round of lane l: the step reached, the validation score, the
// round's wall time and the seconds its steps took (0 when not measured: then the wall
// time less the overhead counts).
func (l *Lane) Observe(steps int, score float64, took, stepTime time.Duration, place Place) {
	done := steps - l.Steps
	if done > 0 {
		per := stepTime.Seconds() / float64(done)
		if stepTime <= 0 {
			per = max(took.Seconds()-l.Overhead, 0) / float64(done)
		}
		if per > 0 {
			l.StepSeconds = per
			l.Overhead = max(took.Seconds()-per*float64(done), 0)
		}
	}
	l.Steps = steps
	prev := 0.0
	if n := len(l.Curve); n > 0 {
		prev = l.Curve[n-1].Seconds
	}
	l.Curve = append(l.Curve, Point{Step: steps, Score: score, Seconds: prev + took.Seconds()})
	l.Rung++
	if l.Device == "" {
		l.Device, l.Workers = place.Device, place.Workers
	}
}

// Reserve is the time kept for the final phases: predicting the test set twice (the
// submission and its reproduction) with each of models models (a fold ensemble's members)
// and the chosen fold's validation cases once per post-processing option, at perCase
// each, plus the fixed cost of starting the plugin for each of those predictions, with a
// quarter more for safety; before any prediction was timed, fallback.
func Reserve(perCase, perStart time.Duration, test, val, options, models int, fallback time.Duration) time.Duration {
	if perCase <= 0 {
		return fallback
	}
	models = max(models, 1)
	cases := 2*models*test + options*val
	starts := 2*models + options
	return time.Duration(1.25 * float64(time.Duration(cases)*perCase+time.Duration(starts)*perStart))
}

// BeforeReserve says how much time is left before the reserve ("the 40s left before the
// reserve") or, when none is, how far the run went past it ("exploration ran 3m6s past
// the reserve"): never a negative duration.
func BeforeReserve(left time.Duration) string {
	if left.Round(time.Second) == 0 {
		return "no time left before the reserve"
	}
	if left < 0 {
		return fmt.Sprintf("exploration ran %v past the reserve", (-left).Round(time.Second))
	}
	return fmt.Sprintf("the %v left before the reserve", left.Round(time.Second))
}

// Final modes.
const (
	FinalAllData  = "all-data"
	FinalEnsemble = "fold-ensemble"
	// FinalFold: no time is left for a final model; the winner's fold model is submitted.
	FinalFold = "fold-model"
)

// Decision is how the final model is made and why.
type Decision struct {
	Mode string
	// Until is the planned total step of the all-data model: its learning rate anneals to
	// zero there; Limit is its time limit.
	Until int
	Limit time.Duration
	Why   string
}

// FinalRule is the rule the run writes in its plan.
const FinalRule = "The final model is the fold ensemble when the winner's validation curve has flattened (more steps no longer pay, more models may) and every fold can be trained to at least the winner's step count in the time left (then fold 0 continues from its checkpoint and the other folds train from scratch, all to the same step, and the folds are judged out of fold, as nnU-Net does); otherwise the winner continues on every training case from its best checkpoint until the reserve, its learning rate annealed to zero at the end: while its curve still rises, more data and steps are what it rewards, and a model on all the data has nothing held out to score it on. A winner at its cap of steps, which more steps would not change, is the ensemble of as many folds as the time left holds, at least two, or its fold model; where its models are not combined across folds, it is made again, to its cap, on every training case when the time left holds it."

// MinExtension is the least time before the reserve for which an all-data model that
// reached its planned last step is trained further ([Extend]). Main's 15 s left a 25 s
// run's last 2–5 s unused (app/cli's TestPlainTaskOfEveryKind: all-data models, with no
// validation cases, made their steps 10–75 % faster than exploration's rounds and ended
// that early); a second holds about two restarts of a plugin, which took 0.3–0.5 s there.
const MinExtension = time.Second

// Extend is how many more steps an all-data model that made steps in took and reached
// its planned last step trains with left before the reserve: what left holds at the pace
// of that training (a long run measures it better than exploration's short rounds, whose
// steps were 20–40 % slower in make bench-quality, so the model was planned too short),
// less a start's overhead; 0 when left is under MinExtension. Its learning rate then
// decays again from where the new planned total puts it to zero at the new last step.
func Extend(steps int, took, left time.Duration, overhead float64) int {
	if steps <= 0 || took <= 0 || left < MinExtension {
		return 0
	}
	pace := took.Seconds() / float64(steps)
	return max(int((left.Seconds()-overhead)/pace), 0)
}

// FoldLimit is the time limit of fold k of a fold ensemble of folds trained to step until,
// the fold starting at step from, with left the time until the reserve: its expected time
// at w's pace with LimitSlack, but never so long that the folds after it lose theirs, nor
// shorter than an equal share of what is left. So the folds never run into the reserve:
// a fold slower than planned stops short of until, at its share. (make bench-quality on
// t1-tissue: 964-step folds planned at 0.0854 s a step took 85.6–95.0 s, and a last fold
// limited to LimitSlack × the time left ran 3 % past the budget.)
func FoldLimit(w *Lane, k, folds, until, from int, left time.Duration) time.Duration {
	c, o := max(w.StepSeconds, 1e-6), w.Overhead
	expected := seconds(float64(max(until-from, 0))*c + o)
	rest := time.Duration(folds-k-1) * seconds(float64(until)*c+o)
	limit := min(time.Duration(LimitSlack*float64(expected)), left-rest)
	return max(limit, left/time.Duration(max(folds-k, 1)), 0)
}

// ensembleSteps is the step every one of folds fold models reaches in the time left at
// w's pace: fold 0 makes n − Steps more, the others n each, each fold costing an overhead.
func ensembleSteps(w *Lane, left time.Duration, folds int) int {
	c, o := max(w.StepSeconds, 1e-6), w.Overhead
	return int((left.Seconds() + float64(w.Steps)*c - float64(folds)*o) / (float64(folds) * c))
}

// CappedEnsemble is the time the final model of lane w, at its cap, takes: for a fold
// ensemble of folds, its folds not yet made ([Lane.Made]; fold 0 has been) trained from
// scratch to the cap, each costing an overhead; for one fold (models not combined across
// folds), the model made again on all the data, one fold's time.
func CappedEnsemble(w *Lane, folds int) time.Duration {
	n := 1
	if folds > 1 {
		n = max(folds-max(w.Made, 1), 0)
	}
	return time.Duration(n) * seconds(float64(w.MaxSteps)*max(w.StepSeconds, 1e-6)+w.Overhead)
}

// Final applies FinalRule to the winner w with left the time until the reserve and folds
// the number of folds the task's predictions can be ensembled over (1: none; the winner
// has trained fold 0).
func Final(w *Lane, left time.Duration, folds int) Decision {
	c, o := max(w.StepSeconds, 1e-6), w.Overhead
	if w.Capped() {
		// More steps cannot change it; more models may: every other fold trains to the
		// cap, when the time holds them.
		if folds > 1 && CappedEnsemble(w, folds) <= left {
			per := seconds(float64(w.MaxSteps)*c + o)
			made := min(max(w.Made, 1), folds)
			train := fmt.Sprintf("the other %d fold(s) train to it in the %v left", folds-1, left.Round(time.Second))
			switch {
			case made == folds:
				train = fmt.Sprintf("its other %d fold(s) were trained to it while its challenger explored", folds-1)
			case made > 1:
				train = fmt.Sprintf("%d of its other folds were trained to it while its challenger explored, the other %d train in the %v left", made-1, folds-made, left.Round(time.Second))
			}
			return Decision{Mode: FinalEnsemble, Until: w.MaxSteps, Limit: time.Duration(LimitSlack * float64(per)),
				Why: fmt.Sprintf("%s has trained its cap of %d step(s), which more steps would not change: %s, and the %d fold models are ensembled", w.ID, w.MaxSteps, train, folds)}
		}
		why := fmt.Sprintf("%s has trained its cap of %d step(s), which more steps would not change", w.ID, w.MaxSteps)
		if per := CappedEnsemble(w, 1); folds <= 1 && per <= left {
			// Its models are not combined across folds (a classification's): it is
			// trained again, to its cap, on every training case rather than submitted as
			// the fold model that never saw a fifth of them.
			return Decision{Mode: FinalAllData, Until: w.MaxSteps, Limit: left,
				Why: why + fmt.Sprintf(", and its fold models are not combined: it trains again to its cap on every training case (about %v of the %v left)", per.Round(time.Second), left.Round(time.Second))}
		}
		if folds > 1 && CappedEnsemble(w, folds) == 0 {
			why += fmt.Sprintf(", and the predictions of its %d fold models, made, do not fit the %v left before the reserve", folds, max(left, 0).Round(time.Second))
		} else if folds > 1 {
			why += fmt.Sprintf(", and the %v its other %d folds need does not fit the %v left before the reserve for the predictions of %d models", CappedEnsemble(w, folds).Round(time.Second), folds-min(max(w.Made, 1), folds), max(left, 0).Round(time.Second), folds)
		} else {
			why += ", and no fold ensemble is made"
		}
		return Decision{Mode: FinalFold, Until: w.Steps, Why: why + ": its fold model is submitted"}
	}
	flat, gain := w.flattened()
	if folds > 1 && flat {
		// Every fold to step n: fold 0 makes n − Steps more, the others n each, each fold
		// costing an overhead.
		n := ensembleSteps(w, left, folds)
		if w.MaxSteps > 0 {
			n = min(n, w.MaxSteps)
		}
		if n >= w.Steps && n > 0 {
			per := seconds(float64(n)*c + o)
			return Decision{Mode: FinalEnsemble, Until: n, Limit: time.Duration(LimitSlack * float64(per)),
				Why: fmt.Sprintf("the %v left holds every fold of %s to step %d (at least its %d): fold 0 continues, the other %d train, and the %d fold models are ensembled", left.Round(time.Second), w.ID, n, w.Steps, folds-1, folds)}
		}
	}
	// A tenth more steps than the time holds at the observed pace: a lane that runs faster
	// than it was seen to (the machine less busy) would otherwise stop with time left,
	// while one that runs slower is stopped by its time limit a little before its
	// learning rate reaches zero.
	// The model on all the data has no validation cases: its start costs the overhead
	// less the validation.
	more := w.room(max(int(FinalOptimism*(left.Seconds()-max(o-w.Validation, 0))/c), 0))
	if more < 1 {
		return Decision{Mode: FinalFold, Until: w.Steps, Why: fmt.Sprintf("%s: no step of %s on all the data fits, so its fold model is submitted", BeforeReserve(left), w.ID)}
	}
	why := fmt.Sprintf("%s continues on every training case from step %d for about %d more steps (%s)", w.ID, w.Steps, more, BeforeReserve(left))
	switch {
	case folds > 1 && !flat && len(w.Curve) > 1:
		why += fmt.Sprintf("; its validation curve still rises (%+.4f over its last round), so steps pay more than fold models", gain)
	case folds > 1 && !flat:
		why += "; one validation score cannot show a flattened curve, so steps are what pays"
	case folds > 1:
		why += fmt.Sprintf("; every one of %d folds to step %d would take about %v, more than is left", folds, w.Steps, (time.Duration(folds-1) * seconds(float64(w.Steps)*c+o)).Round(time.Second))
	}
	return Decision{Mode: FinalAllData, Until: w.Steps + more, Limit: left, Why: why}
}
