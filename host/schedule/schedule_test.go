package schedule

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// saturating is a learning curve a·(1 − e^(−s/tau)) sampled every 50 steps to 4000: the
// shape the recorded curves have (curves.json), with the plateau and the speed as
// parameters so that a test knows which lane must win.
func saturating(lane string, a, tau float64) Curve {
	c := Curve{Task: "sim", Lane: lane}
	for s := 50; s <= 4000; s += 50 {
		c.Points = append(c.Points, Point{Step: s, Score: a * (1 - math.Exp(-float64(s)/tau))})
	}
	return c
}

// world is a simulated run: lanes with their curves and true step costs.
type world struct {
	sim   *Sim
	lanes []*Lane
	// explored is the clock when exploration ended.
	explored time.Duration
	// hold, when set, is the explorer's Hold (budgetRun).
	hold func(capped *Lane, left time.Duration) time.Duration
	// secure, when set, is the explorer's Secure (budgetRun).
	secure func(ctx context.Context, capped *Lane, left time.Duration) (bool, error)
}

func newWorld(overhead float64, spec ...struct {
	id         string
	a, tau     float64
	cost, plan float64 // true and planned seconds per step
	min        int
}) *world {
	w := &world{sim: &Sim{Curves: map[string]Curve{}, Cost: map[string]float64{}, Overhead: overhead}}
	for _, s := range spec {
		w.sim.Curves[s.id] = saturating(s.id, s.a, s.tau)
		w.sim.Cost[s.id] = s.cost
		w.lanes = append(w.lanes, &Lane{ID: s.id, StepSeconds: s.plan, Overhead: overhead, MinSteps: s.min})
	}
	return w
}

type laneSpec = struct {
	id         string
	a, tau     float64
	cost, plan float64
	min        int
}

// run simulates host/run's sequence: admit, explore until its share is spent, then the
// final model until the reserve, then the final phases (which take final seconds).
func (w *world) run(t *testing.T, budget time.Duration, places []Place, final time.Duration) (Round, Decision, []string) {
	t.Helper()
	reserve := time.Duration(1.25 * float64(final))
	usable := budget - reserve
	explore := time.Duration(ExploreShare * float64(usable))
	lanes, out := Admit(w.lanes, explore, len(places), Eta)
	p := &Plan{Config: Config{Places: places}, Lanes: lanes}
	e := &Explorer{Plan: p, Spent: w.sim.Now, End: explore}
	rd, err := e.Run(context.Background(), w.sim)
	if err != nil {
		t.Fatal(err)
	}
	if !rd.Done || rd.Winner == "" {
		t.Fatalf("exploration ended without a winner: %+v", rd)
	}
	win := p.lane(rd.Winner)
	w.explored = w.sim.Now()
	left := budget - reserve - w.explored
	d := Final(win, left, 5)
	if d.Mode == FinalAllData {
		j := Pack([]Job{{Lane: win.ID, From: win.Steps, Until: d.Until, Limit: d.Limit}}, places, w.lanes)[0]
		if _, err := w.sim.Train(context.Background(), j); err != nil {
			t.Fatal(err)
		}
	}
	w.sim.Advance(final)
	return rd, d, out
}

// TestHalving: four lanes, the one with the highest plateau wins (it leads from its
// first round on: halving cannot see a late bloomer, which is why rounds grow Eta-fold); every lane's
// first round reaches its minimum; a promoted lane continues from the step it reached
// (never from scratch); lanes left behind say why.
func TestHalving(t *testing.T) {
	w := newWorld(3,
		laneSpec{"fast-low", 0.55, 150, 0.2, 0.2, 100},
		laneSpec{"high", 0.85, 250, 0.2, 0.2, 100},
		laneSpec{"mid", 0.70, 400, 0.2, 0.2, 100},
		laneSpec{"poor", 0.30, 300, 0.2, 0.2, 100},
	)
	budget := 10 * time.Minute
	rd, d, out := w.run(t, budget, []Place{{Name: "cpu", Device: "cpu", Workers: 2}}, 20*time.Second)
	if len(out) > 0 {
		t.Fatalf("lanes not admitted: %v", out)
	}
	if rd.Winner != "high" {
		t.Errorf("winner %s, want high: %s", rd.Winner, rd.Why)
	}
	reached := map[string]int{}
	for _, r := range w.sim.Runs {
		if r.From != reached[r.Lane] {
			t.Errorf("lane %s's round started at step %d, it had reached %d", r.Lane, r.From, reached[r.Lane])
		}
		if r.From == 0 && r.To < 100 {
			t.Errorf("lane %s's first round made %d steps, under its minimum 100", r.Lane, r.To)
		}
		reached[r.Lane] = r.To
	}
	for _, l := range w.lanes {
		if l.ID != rd.Winner && !strings.Contains(l.Stopped, "not promoted") && !strings.Contains(l.Stopped, "flattened") {
			t.Errorf("lane %s stopped for %q", l.ID, l.Stopped)
		}
	}
	if d.Mode != FinalAllData {
		t.Errorf("final %s (%s), want all data: five folds do not fit ten minutes", d.Mode, d.Why)
	}
	if f := w.sim.Now().Seconds() / budget.Seconds(); f < 0.95 || f > 1 {
		t.Errorf("the run ended at %.1f%% of its budget, want 95–100%%", 100*f)
	}
}

// TestFlatGivesTimeBack: eight lanes; after the first round three of the four promoted
// lanes have reached their plateau, so after the second they are stopped as flattened
// rather than trained a third round, and exploration ends well before its share: the
// final model gets the time back.
func TestFlatGivesTimeBack(t *testing.T) {
	specs := []laneSpec{{"best", 0.9, 200, 0.1, 0.1, 50}}
	for _, id := range []string{"flat1", "flat2", "flat3"} {
		specs = append(specs, laneSpec{id, 0.6, 5, 0.1, 0.1, 50})
	}
	for _, id := range []string{"poor1", "poor2", "poor3", "poor4"} {
		specs = append(specs, laneSpec{id, 0.2, 5, 0.1, 0.1, 50})
	}
	w := newWorld(2, specs...)
	budget, final := 10*time.Minute, 10*time.Second
	rd, _, _ := w.run(t, budget, []Place{{Name: "cpu", Device: "cpu", Workers: 2}}, final)
	ended := w.explored
	if rd.Winner != "best" {
		t.Errorf("winner %s: %s", rd.Winner, rd.Why)
	}
	for _, l := range w.lanes[1:4] {
		if !strings.Contains(l.Stopped, "flattened") {
			t.Errorf("lane %s stopped for %q, want its curve flattened", l.ID, l.Stopped)
		}
	}
	share := time.Duration(ExploreShare * float64(budget-time.Duration(1.25*float64(final))))
	if ended > 3*share/4 {
		t.Errorf("exploration ended at %v, its share is %v: the flattened lanes gave nothing back", ended, share)
	}
}

// TestTwoPlaces: with two places, the first round runs two lanes side by side (its wall
// time is about half), no place runs two rounds at once, and a lane goes back to the
// worker split and device it started on.
func TestTwoPlaces(t *testing.T) {
	places := []Place{{Name: "cpu", Device: "cpu", Workers: 8}, {Name: "gpu", Device: "vulkan:0", Workers: 1}}
	w := newWorld(2,
		laneSpec{"a", 0.80, 300, 0.1, 0.1, 50},
		laneSpec{"b", 0.70, 300, 0.1, 0.1, 50},
		laneSpec{"c", 0.60, 300, 0.1, 0.1, 50},
		laneSpec{"d", 0.50, 300, 0.1, 0.1, 50},
	)
	w.run(t, 10*time.Minute, places, 10*time.Second)
	where := map[string]string{}
	busy := map[string][][2]time.Duration{}
	for _, r := range w.sim.Runs {
		if r.From == 0 {
			where[r.Lane] = r.Place
		} else if r.To > r.From && where[r.Lane] != r.Place {
			t.Errorf("lane %s started on %s and continued on %s", r.Lane, where[r.Lane], r.Place)
		}
		for _, b := range busy[r.Place] {
			if r.Start < b[1] && b[0] < r.End {
				t.Errorf("place %s ran two rounds at once: %v and %v", r.Place, b, [2]time.Duration{r.Start, r.End})
			}
		}
		busy[r.Place] = append(busy[r.Place], [2]time.Duration{r.Start, r.End})
	}
	if len(busy) != 2 {
		t.Errorf("the lanes ran on %d places, want both", len(busy))
	}
}

// TestAdmit: a lane whose minimum does not fit the first round is not trained, and the
// sentence says how long its minimum takes against the share.
func TestAdmit(t *testing.T) {
	lanes := []*Lane{
		{ID: "2d", StepSeconds: 0.2, MinSteps: 300, Overhead: 5},
		{ID: "3d_fullres", StepSeconds: 4, MinSteps: 300, Overhead: 5},
		{ID: "2.5d", StepSeconds: 0.3, MinSteps: 300, Overhead: 5},
	}
	kept, out := Admit(lanes, 5*time.Minute, 1, Eta)
	if len(kept) != 2 || kept[0].ID != "2d" || kept[1].ID != "2.5d" {
		t.Fatalf("kept %v", kept)
	}
	if len(out) != 1 || !strings.Contains(out[0], "3d_fullres") || !strings.Contains(out[0], "300 steps") {
		t.Errorf("why: %v", out)
	}
}

// TestFinalRule: with a flattened curve and time for every fold the fold ensemble is
// chosen; with a curve still rising, or too little time, all data.
func TestFinalRule(t *testing.T) {
	flat := []Point{{Step: 500, Score: 0.8}, {Step: 1000, Score: 0.805}}
	w := &Lane{ID: "2d", Steps: 1000, StepSeconds: 0.1, Overhead: 5, Curve: flat}
	if d := Final(w, 10*time.Minute, 5); d.Mode != FinalEnsemble {
		t.Errorf("4 folds × 105 s in 10 min: %s (%s)", d.Mode, d.Why)
	}
	w.Curve = []Point{{Step: 500, Score: 0.7}, {Step: 1000, Score: 0.8}}
	if d := Final(w, 10*time.Minute, 5); d.Mode != FinalAllData || !strings.Contains(d.Why, "still rises") {
		t.Errorf("a rising curve: %s (%s)", d.Mode, d.Why)
	}
	w.Curve = flat
	d := Final(w, 5*time.Minute, 5)
	if d.Mode != FinalAllData || d.Until != 1000+3245 {
		t.Errorf("5 min: %s to step %d (%s), want all data to step 4245 (1.1 × (300 − 5) / 0.1 more)", d.Mode, d.Until, d.Why)
	}
}

// TestMissedEstimate: a lane planned at half its true step time still trains its minimum
// in the first round, and later rounds use the observed cost, so the run still ends
// within its budget.
func TestMissedEstimate(t *testing.T) {
	w := newWorld(3,
		laneSpec{"a", 0.8, 300, 0.4, 0.2, 100},
		laneSpec{"b", 0.7, 300, 0.2, 0.2, 100},
	)
	budget := 8 * time.Minute
	w.run(t, budget, []Place{{Name: "cpu", Device: "cpu", Workers: 2}}, 15*time.Second)
	if got := w.lanes[0].StepSeconds; math.Abs(got-0.4) > 1e-6 {
		t.Errorf("observed step time %.3f, want the true 0.4", got)
	}
	for _, r := range w.sim.Runs {
		if r.From == 0 && r.To < 100 {
			t.Errorf("lane %s's first round made %d steps, under its minimum", r.Lane, r.To)
		}
	}
	if f := w.sim.Now().Seconds() / budget.Seconds(); f < 0.95 || f > 1 {
		t.Errorf("the run ended at %.1f%% of its budget", 100*f)
	}
}

// TestPack: longest first onto the place that frees first; a lane too big for a place's
// memory goes elsewhere.
func TestPack(t *testing.T) {
	places := []Place{{Name: "small", Memory: 1 << 30}, {Name: "big", Memory: 8 << 30}}
	lanes := []*Lane{{ID: "a", Memory: 4 << 30}, {ID: "b"}, {ID: "c"}}
	jobs := Pack([]Job{{Lane: "a", Expected: 10 * time.Second}, {Lane: "b", Expected: 8 * time.Second}, {Lane: "c", Expected: 3 * time.Second}}, places, lanes)
	if jobs[0].Place.Name != "big" || jobs[1].Place.Name != "small" || jobs[2].Place.Name != "small" {
		t.Errorf("packed %v", jobs)
	}
	if m := Makespan(jobs); m != 11*time.Second {
		t.Errorf("makespan %v, want 11 s (8 + 3 on small)", m)
	}
}

// TestNoTimeLeft: when planning took exploration's whole share, the planner's first lane
// still trains its minimal first round and wins; the others say why they did not train.
func TestNoTimeLeft(t *testing.T) {
	w := newWorld(2, laneSpec{"a", 0.8, 300, 0.1, 0.1, 50}, laneSpec{"b", 0.9, 300, 0.1, 0.1, 50})
	w.sim.Advance(time.Minute)
	p := &Plan{Config: Config{Places: []Place{{Name: "cpu"}}}, Lanes: w.lanes}
	rd, err := (&Explorer{Plan: p, Spent: w.sim.Now, End: 30 * time.Second}).Run(context.Background(), w.sim)
	if err != nil {
		t.Fatal(err)
	}
	if rd.Winner != "a" || w.lanes[0].Steps != 50 || !strings.Contains(w.lanes[1].Stopped, "before its first round") {
		t.Errorf("winner %q, a at step %d, b stopped for %q", rd.Winner, w.lanes[0].Steps, w.lanes[1].Stopped)
	}
}

// TestNoTimeLeftUnknownStepTime: when exploration's whole share is spent before a lane
// whose step time is unknown has trained (a run resumed past its budget), its first round
// is its minimum, which its step ends, not a round without a limit: before, the round's
// limit was its share of no time, 0, and an enhancement lane resumed after a kill trained
// the 10 000 steps of its configuration.
func TestNoTimeLeftUnknownStepTime(t *testing.T) {
	w := newWorld(2, laneSpec{"a", 0.8, 300, 0.1, 0, 3}, laneSpec{"b", 0.9, 300, 0.1, 0, 3})
	w.sim.Advance(time.Minute)
	p := &Plan{Config: Config{Places: []Place{{Name: "cpu"}}}, Lanes: w.lanes}
	rd, err := (&Explorer{Plan: p, Spent: w.sim.Now, End: 30 * time.Second}).Run(context.Background(), w.sim)
	if err != nil {
		t.Fatal(err)
	}
	if rd.Winner != "a" || len(w.sim.Runs) != 1 || w.sim.Runs[0].To != 3 {
		t.Errorf("winner %q, rounds %+v; want a alone, to its minimum of 3 steps", rd.Winner, w.sim.Runs)
	}
}

// TestRecordedCurves: the committed curves parse, give every planned segmentation lane a
// minimum, and a simulated 10-minute run over them (lanes at the step times the recording
// measured) ends within 95–100 % of its budget with every first round at its minimum.
func TestRecordedCurves(t *testing.T) {
	c, err := Recorded()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Curves) == 0 {
		t.Fatal("no recorded curve: make bench-quality RECORD=1")
	}
	w := &world{sim: &Sim{Curves: map[string]Curve{}, Cost: map[string]float64{}, Overhead: 4}}
	for _, cv := range c.Curves {
		if _, dup := w.sim.Curves[cv.Lane]; dup {
			continue
		}
		n, why := c.MinSteps(cv.Kind, cv.Lane)
		if n < 1 || why == "" {
			t.Errorf("%s: minimum %d (%s)", cv.Lane, n, why)
		}
		w.sim.Curves[cv.Lane], w.sim.Cost[cv.Lane] = cv, cv.StepSeconds
		w.lanes = append(w.lanes, &Lane{ID: cv.Lane, StepSeconds: cv.StepSeconds, Overhead: 4, MinSteps: n})
	}
	budget := 10 * time.Minute
	rd, _, out := w.run(t, budget, []Place{{Name: "cpu", Device: "cpu", Workers: 2}}, 30*time.Second)
	t.Logf("winner %s (%s); not admitted %v", rd.Winner, rd.Why, out)
	minOf := map[string]int{}
	for _, l := range w.lanes {
		minOf[l.ID] = l.MinSteps
	}
	for _, r := range w.sim.Runs {
		if r.From == 0 && r.To < minOf[r.Lane] {
			t.Errorf("lane %s's first round made %d steps, under its minimum %d", r.Lane, r.To, minOf[r.Lane])
		}
	}
	if f := w.sim.Now().Seconds() / budget.Seconds(); f < 0.95 || f > 1 {
		t.Errorf("the run ended at %.1f%% of its budget", 100*f)
	}
}

// TestUnknownStepTime: a lane whose plugin gave no step time trains its first round for its
// share of time (the time limit ends it), then at the pace it was seen to train.
func TestUnknownStepTime(t *testing.T) {
	w := newWorld(2, laneSpec{"a", 0.8, 300, 0.1, 0, 1}, laneSpec{"b", 0.7, 300, 0.1, 0.1, 1})
	w.run(t, 5*time.Minute, []Place{{Name: "cpu"}}, 10*time.Second)
	first := w.sim.Runs[0]
	if first.Lane != "a" || first.To < 100 || math.Abs(w.lanes[0].StepSeconds-0.1) > 1e-9 {
		t.Errorf("lane a's first round: %+v; step time then %.3g", first, w.lanes[0].StepSeconds)
	}
}

// TestFixedSteps: with Config.Steps every round trains its fixed steps (Steps, then Eta
// times as many) whatever the time and whether a step's time is known, with no time
// limit, and exploration runs until one lane is left even past its time.
func TestFixedSteps(t *testing.T) {
	w := newWorld(2, laneSpec{"a", 0.8, 300, 0.1, 0, 1}, laneSpec{"b", 0.7, 300, 0.1, 0.1, 1}, laneSpec{"c", 0.6, 300, 0.1, 0.1, 1})
	p := &Plan{Config: Config{Places: []Place{{Name: "cpu"}}, Steps: 40}, Lanes: w.lanes}
	// A second of exploration: far less than the rounds take.
	rd, err := (&Explorer{Plan: p, Spent: w.sim.Now, End: time.Second}).Run(context.Background(), fixed{w.sim, t})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range w.sim.Runs {
		got = append(got, fmt.Sprintf("%s %d-%d", r.Lane, r.From, r.To))
	}
	slices.Sort(got) // the order the jobs of a round start in is the packing's
	// Three lanes: a first round of 40 steps each, then the better two (a, b) 80 more, then
	// a alone is left.
	want := []string{"a 0-40", "a 40-120", "b 0-40", "b 40-120", "c 0-40"}
	if rd.Winner != "a" || strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("winner %q, rounds %v; want a, %v", rd.Winner, got, want)
	}
}

// fixed is a Trainer that fails its test when a job has a time limit.
type fixed struct {
	*Sim
	t *testing.T
}

func (f fixed) Train(ctx context.Context, j Job) (Outcome, error) {
	if j.Limit != 0 {
		f.t.Errorf("job %+v has a time limit", j)
	}
	return f.Sim.Train(ctx, j)
}

// TestFoldLimit: the folds of an ensemble each get their expected time with LimitSlack
// while the others keep theirs, and however slowly they train they never run past the
// time they were given together: a fold behind the plan gets an equal share of what is
// left.
func TestFoldLimit(t *testing.T) {
	w := &Lane{ID: "2d", Steps: 500, StepSeconds: 0.1, Overhead: 5}
	// Five folds to step 1000 at 0.1 s: fold 0 from step 500 expects 55 s, the others 105 s.
	left := 500 * time.Second
	if got := FoldLimit(w, 0, 5, 1000, 500, 1000*time.Second); got < time.Duration(1.5*55*float64(time.Second)) {
		t.Errorf("fold 0 with time to spare: %v, want at least 1.5 × its 55 s", got)
	}
	// 90 s before the last fold, which expects 105 s: it gets what is left, not 157 s.
	if got := FoldLimit(w, 4, 5, 1000, 0, 90*time.Second); got != 90*time.Second {
		t.Errorf("the last fold with 90 s left: %v, want 90 s", got)
	}
	// Folds that train 30 % slower than planned, each using its whole limit: together they
	// end within the time left.
	for _, slow := range []float64{1, 1.3, 3} {
		spent := time.Duration(0)
		for k := range 5 {
			from := 0
			if k == 0 {
				from = 500
			}
			limit := FoldLimit(w, k, 5, 1000, from, left-spent)
			took := min(time.Duration(slow*float64(seconds(float64(1000-from)*0.1+5))), limit)
			spent += took
		}
		if spent > left {
			t.Errorf("folds %.1f× slower than planned spent %v of %v", slow, spent, left)
		}
	}
}

// TestExtend: an all-data model that made 1756 steps in 244 s (the seed-2 run of make
// bench-quality) with 70 s left trains what 70 s hold at that pace, less a start; under
// MinExtension, or without a measured pace, nothing.
func TestExtend(t *testing.T) {
	if got, want := Extend(1756, 244*time.Second, 70*time.Second, 2), 489; got != want { // (70 − 2) / (244 / 1756) = 489.4
		t.Errorf("70 s left: %d more steps, want %d", got, want)
	}
	for _, c := range []struct {
		steps int
		took  time.Duration
		left  time.Duration
	}{{1756, 244 * time.Second, MinExtension - time.Second}, {0, 244 * time.Second, time.Minute}, {1756, 0, time.Minute}} {
		if got := Extend(c.steps, c.took, c.left, 2); got != 0 {
			t.Errorf("Extend(%d, %v, %v) = %d, want 0", c.steps, c.took, c.left, got)
		}
	}
}

// TestFlatIsRelativeToSpan: the gain under which a curve has flattened is Flat of the
// score's span, not Flat in the score's units. A gain of 0.02 is a fiftieth of the Dice's
// span (still rising) but 0.7 % of the IQA score's 3 (flattened); 0.2 dB on a 30 dB PSNR
// (no span: judged against the score) is under a hundredth of it, 0.5 dB is not.
func TestFlatIsRelativeToSpan(t *testing.T) {
	for _, c := range []struct {
		name        string
		span        float64
		from, to    float64
		wantFlatten bool
	}{
		{"dice", 1, 0.50, 0.52, false},
		{"dice", 1, 0.500, 0.505, true},
		{"iqa", 3, 2.00, 2.02, true},
		{"iqa", 3, 2.00, 2.05, false},
		{"psnr", 0, 30.0, 30.2, true},
		{"psnr", 0, 30.0, 30.5, false},
	} {
		l := &Lane{ID: c.name, Span: c.span, Curve: []Point{{Step: 100, Score: c.from}, {Step: 200, Score: c.to}}}
		if flat, gain := l.flattened(); flat != c.wantFlatten {
			t.Errorf("%s (span %g): gain %+.3f flattened %v, want %v (threshold %.3g)", c.name, c.span, gain, flat, c.wantFlatten, l.flatGain())
		}
	}
}
