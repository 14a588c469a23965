package schedule

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The scale of issue 19: twenty challenges, four lanes each, five folds, and a Slurm
// cluster of fifty nodes, simulated. Every run is host/run's sequence (admit, explore on
// fold 0 by rounds, the final model by FinalRule, the final phases), driven through the
// real Explorer; the runs share one pool of nodes, in the fake time of a synctest bubble.
const (
	scaleChallenges = 20
	scaleLanes      = 4
	scaleFolds      = 5
	scaleNodes      = 50
	// scaleJobs is the lane-folds a run sends to the cluster at once: host/slurm's
	// DefaultJobs (AMID_SLURM_JOBS unset).
	scaleJobs = 4
	// scaleBudget is each challenge's budget, scaleFinal the time its final phases take on
	// the host (prediction of the test set, verification, export), reserved with a
	// quarter more as host/run's reserve does.
	scaleBudget = 30 * time.Minute
	scaleFinal  = time.Minute
	// scaleOverhead is what a round costs besides its steps (starting the plugin, loading
	// the data, the validation prediction), as TestRecordedCurves simulates it.
	scaleOverhead = 4
	// scaleSteps is the first round's steps of the fixed-step runs (amid run --steps 200):
	// a little over the recorded curves' minimum (120 steps, curves.json).
	scaleSteps = 200
	// scaleSeed makes the challenges.
	scaleSeed = 19
)

// scaleLane is a lane of a simulated challenge: its learning curve, the true seconds of
// its step and the plan's estimate of them, and the minimum the host takes from the
// recorded curves.
type scaleLane struct {
	id         string
	curve      Curve
	cost, plan float64
	min        int
}

// scaleChallengesFrom makes n challenges of four lanes from the recorded curves (2D, 2.5D,
// 3D low-res, and a fourth, "3d_fullres": the 3D low-res curve learning half as fast at
// three times its step cost, as a full-resolution 3D lane would), each varied by a seeded
// challenge: its step times × 1–8 (images larger than the recording's slabs), its curves'
// step axis × 2^(−2…2) (tasks that learn faster or slower), its scores × 0.7–1.3 (capped
// at 0.99), and each lane's step time × 0.8–1.25 more, which the plan estimates within
// ±30 %.
func scaleChallengesFrom(c *Curves, n int, seed uint64) ([][]scaleLane, error) {
	base := map[string]Curve{}
	var ids []string
	for _, cv := range c.Curves {
		if _, ok := base[cv.Lane]; !ok && cv.Kind == "segmentation" {
			base[cv.Lane] = cv
			ids = append(ids, cv.Lane)
		}
	}
	low, ok := base["3d_lowres"]
	if !ok || len(ids) != scaleLanes-1 {
		return nil, fmt.Errorf("the recorded curves have lanes %v; the scale test wants 2d, 2.5d and 3d_lowres", ids)
	}
	full := vary(low, 2, 1)
	full.Lane, full.StepSeconds = "3d_fullres", 3*low.StepSeconds
	base[full.Lane] = full
	ids = append(ids, full.Lane)
	rng := rand.New(rand.NewPCG(seed, 0))
	out := make([][]scaleLane, n)
	for i := range out {
		slow := 1 + 7*rng.Float64()
		stretch := math.Exp2(2 - 4*rng.Float64())
		scale := 0.7 + 0.6*rng.Float64()
		for _, id := range ids {
			least, _ := c.MinSteps("segmentation", id)
			cost := base[id].StepSeconds * slow * (0.8 + 0.45*rng.Float64())
			out[i] = append(out[i], scaleLane{id: id, curve: vary(base[id], stretch, scale), cost: cost, plan: cost * (0.7 + 0.6*rng.Float64()), min: least})
		}
	}
	return out, nil
}

// vary is cv with its steps × stretch and its scores × scale (at most 0.99).
func vary(cv Curve, stretch, scale float64) Curve {
	out := cv
	out.Points = nil
	for _, p := range cv.Points {
		out.Points = append(out.Points, Point{Step: max(int(float64(p.Step)*stretch), 1), Score: min(p.Score*scale, 0.99)})
	}
	return out
}

// scaleExecutor is where a campaign's runs train: nodes shared by every run, places each
// run has (the lane-folds it trains at once), and whether the runs go one after another
// (a workstation) or all at once (a cluster).
type scaleExecutor struct {
	name       string
	nodes      int
	places     []Place
	oneAtATime bool
	// unreported: the executor does not say how long a job waited for its node, and the
	// wait counts as the round's overhead (host/run's trainer today, which measures a
	// round from its submission).
	unreported bool
}

func slurmPlaces(n int) []Place {
	var out []Place
	for i := range n {
		out = append(out, Place{Name: fmt.Sprintf("slurm%d", i), Device: "cpu", Workers: 4})
	}
	return out
}

// simJob is one job the pool ran: a round of a lane-fold of a run, from its submission to
// its end on the campaign's clock.
type simJob struct {
	Run  int
	Lane string
	// Fold is the fold (0 in exploration), or -1: the final model on every training case.
	Fold int
	// Round is the lane-fold's round: the rounds it had finished when it started.
	Round int
	// Decision numbers the run's exploration decisions (1, 2, ...); 0 in the final model.
	Decision           int
	Place              string
	Node               int
	Submit, Start, End time.Duration
	// Waited is the wait for a node the executor reported (Start − Submit, or 0 when
	// unreported).
	Waited   time.Duration
	From, To int
}

// pool is a simulated cluster: nodes shared by several runs, in the fake time of a
// synctest bubble. A job waits for a free node in one first-come-first-served queue (the
// jobs submitted at the same instant in the order of their run, place and lane, so that a
// campaign is the same every time), then trains its steps: it sleeps their time.
type pool struct {
	nodes      int
	unreported bool
	begin      time.Time
	msgs       chan poolMsg
	done       chan struct{}

	mu   sync.Mutex
	jobs []simJob
}

// poolMsg asks for a node (grant set: it receives the node) or frees one.
type poolMsg struct {
	key     string
	grant   chan int
	release int
}

func newPool(nodes int, unreported bool) *pool {
	p := &pool{nodes: nodes, unreported: unreported, begin: time.Now(), msgs: make(chan poolMsg), done: make(chan struct{})}
	go p.dispatch()
	return p
}

func (p *pool) now() time.Duration { return time.Since(p.begin) }

// dispatch grants nodes: at each instant it takes every message of that instant (until
// every other goroutine of the bubble waits), frees the nodes released, queues the
// requests in key order behind those still waiting, and grants the lowest free nodes to
// the queue's head.
func (p *pool) dispatch() {
	free := make([]int, p.nodes)
	for i := range free {
		free[i] = i
	}
	var queue []poolMsg
	for {
		var batch []poolMsg
		select {
		case m := <-p.msgs:
			batch = append(batch, m)
		case <-p.done:
			return
		}
		for {
			synctest.Wait()
			n := len(batch)
		drain:
			for {
				select {
				case m := <-p.msgs:
					batch = append(batch, m)
				default:
					break drain
				}
			}
			if len(batch) == n {
				break
			}
		}
		var asks []poolMsg
		for _, m := range batch {
			if m.grant == nil {
				free = append(free, m.release)
			} else {
				asks = append(asks, m)
			}
		}
		slices.SortFunc(asks, func(a, b poolMsg) int { return cmp.Compare(a.key, b.key) })
		queue = append(queue, asks...)
		slices.Sort(free)
		for len(queue) > 0 && len(free) > 0 {
			queue[0].grant <- free[0]
			queue, free = queue[1:], free[1:]
		}
	}
}

// run trains job j of lane l of run r on a node: it waits for one, trains the steps that
// fit the job's time limit (which, as a plugin's, counts from its start on the node) at
// the lane's true cost plus the round's overhead, and returns what host/run's trainer
// would: the wall time from submission to the end, the part of it the job waited for a
// node (unless unreported) and the time the steps took.
func (p *pool) run(r int, l scaleLane, j Job, fold, round, decision int) Outcome {
	g := make(chan int, 1)
	submit := p.now()
	p.msgs <- poolMsg{key: fmt.Sprintf("%02d %s %s %d", r, j.Place.Name, j.Lane, fold), grant: g}
	node := <-g
	start := p.now()
	steps := j.Until - j.From
	if fit := int((j.Limit.Seconds() - scaleOverhead) / l.cost); j.Limit > 0 && fit < steps {
		steps = max(fit, 0)
	}
	time.Sleep(seconds(float64(steps)*l.cost + scaleOverhead))
	p.msgs <- poolMsg{release: node}
	end := p.now()
	waited := start - submit
	if p.unreported {
		waited = 0
	}
	p.mu.Lock()
	p.jobs = append(p.jobs, simJob{Run: r, Lane: j.Lane, Fold: fold, Round: round, Decision: decision, Place: j.Place.Name, Node: node,
		Submit: submit, Start: start, End: end, Waited: waited, From: j.From, To: j.From + steps})
	p.mu.Unlock()
	return Outcome{Steps: j.From + steps, Score: l.curve.At(j.From + steps), Took: end - submit, StepTime: seconds(float64(steps) * l.cost), Waited: waited}
}

// scaleRun is what a simulated run recorded.
type scaleRun struct {
	Challenge int
	Steps     int
	Lanes     []*Lane
	Winner    string
	Final     Decision
	// FinalFrom is the step the final model started from on every training case.
	FinalFrom int
	// Start, Explored and End are marks of the campaign's clock: the run's start, the end
	// of its exploration, the end of its final phases.
	Start, Explored, End time.Duration
	Err                  error
}

// Spent is what the run recorded as spent: its clock at its end.
func (r *scaleRun) Spent() time.Duration { return r.End - r.Start }

// explorer is a run's Trainer: its exploration's jobs on the pool, on fold 0.
type explorer struct {
	pool     *pool
	run      int
	lanes    map[string]scaleLane
	plan     *Plan
	decision int
}

func (e *explorer) Train(_ context.Context, j Job) (Outcome, error) {
	return e.pool.run(e.run, e.lanes[j.Lane], j, 0, e.plan.lane(j.Lane).Rung, e.decision), nil
}

// simulateRun is host/run's sequence for challenge i on the pool: admit (time shares
// only), explore on fold 0, the final model by Final (the fold ensemble trains fold 0 on
// from its last round and the others from scratch, one after another on the winner's
// place, each within LimitSlack × its share of the time left; the all-data model goes on
// from the winner's best round until the reserve), then the final phases.
func simulateRun(ctx context.Context, p *pool, i int, lanes []scaleLane, places []Place, steps int) *scaleRun {
	r := &scaleRun{Challenge: i, Steps: steps, Start: p.now()}
	begin := time.Now()
	spent := func() time.Duration { return time.Since(begin) }
	reserve := time.Duration(1.25 * float64(scaleFinal))
	usable := scaleBudget - reserve
	explore := time.Duration(ExploreShare * float64(usable))
	byID := map[string]scaleLane{}
	for _, l := range lanes {
		byID[l.id] = l
		r.Lanes = append(r.Lanes, &Lane{ID: l.id, StepSeconds: l.plan, Overhead: scaleOverhead, MinSteps: l.min})
	}
	if steps == 0 {
		Admit(r.Lanes, explore, len(places), Eta)
	}
	plan := &Plan{Config: Config{Places: places, Steps: steps}, Lanes: r.Lanes}
	tr := &explorer{pool: p, run: i, lanes: byID, plan: plan}
	e := &Explorer{Plan: plan, Spent: spent, End: explore, Decided: func(rd Round) error {
		if len(rd.Jobs) > 0 {
			tr.decision++
		}
		return nil
	}}
	rd, err := e.Run(ctx, tr)
	if err == nil && rd.Winner == "" {
		err = fmt.Errorf("exploration ended without a winner: %+v", rd)
	}
	if err != nil {
		r.Err = err
		return r
	}
	r.Winner, r.Explored = rd.Winner, p.now()
	w := plan.lane(rd.Winner)
	r.Final = Final(w, scaleBudget-reserve-spent(), scaleFolds)
	place := Pack([]Job{{Lane: w.ID, Expected: time.Second}}, places, plan.Lanes)[0].Place
	switch r.Final.Mode {
	case FinalEnsemble:
		for k := range scaleFolds {
			from, round := 0, 0
			if k == 0 {
				from, round = w.Steps, w.Rung
			}
			limit := time.Duration(LimitSlack * float64(scaleBudget-reserve-spent()) / float64(scaleFolds-k))
			p.run(i, byID[w.ID], Job{Lane: w.ID, Place: place, From: from, Until: r.Final.Until, Limit: limit}, k, round, 0)
		}
	case FinalAllData:
		b := w.Best()
		r.FinalFrom = b.Step
		until := b.Step + r.Final.Until - w.Steps
		p.run(i, byID[w.ID], Job{Lane: w.ID, Place: place, From: b.Step, Until: until, Limit: scaleBudget - reserve - spent()}, -1, 0, 0)
	}
	time.Sleep(scaleFinal)
	r.End = p.now()
	return r
}

// scaleResult is a simulated campaign: every run and every job.
type scaleResult struct {
	Name  string
	Nodes int
	Runs  []*scaleRun
	Jobs  []simJob
}

// simulate runs the challenges on ex, in fixed-step rounds when steps > 0, in a synctest
// bubble: its clock is fake, so hours of campaign take milliseconds.
func simulate(t *testing.T, ex scaleExecutor, challenges [][]scaleLane, steps int) *scaleResult {
	res := &scaleResult{Name: ex.name, Nodes: ex.nodes}
	synctest.Test(t, func(t *testing.T) {
		p := newPool(ex.nodes, ex.unreported)
		defer close(p.done)
		res.Runs = make([]*scaleRun, len(challenges))
		one := func(i int) {
			res.Runs[i] = simulateRun(t.Context(), p, i, challenges[i], ex.places, steps)
		}
		if ex.oneAtATime {
			for i := range challenges {
				one(i)
			}
		} else {
			var wg sync.WaitGroup
			for i := range challenges {
				wg.Go(func() { one(i) })
			}
			wg.Wait()
		}
		res.Jobs = p.jobs
	})
	return res
}

// checkScale lists what is wrong with a campaign:
//   - a node or a run's place that ran two jobs at once, or a node that does not exist;
//   - a lane-fold round (run, lane, fold, round) started twice, a lane-fold that trained two
//     rounds at once, or a round that did not go on from the step the one before reached;
//   - a lane whose training time the schedule recorded (its curve's seconds) is not the
//     time its jobs took from submission to end, less the waits for a node reported;
//   - a run whose recorded spending is not its rounds' wall time, its final model's jobs
//     and its final phases; that ended past its budget, or, where the schedule promises
//     it (a final model was made, or fixed-step exploration ended before the reserve),
//     under 95 % of it (listed apart: short);
//   - a fold ensemble with a fold missing or short of its planned step; an all-data model
//     that did not start from the winner's best round.
func checkScale(res *scaleResult) (bad, short []string) {
	badf := func(f string, a ...any) { bad = append(bad, fmt.Sprintf(res.Name+": "+f, a...)) }
	overlap := func(what string, byKey map[string][]simJob, span func(simJob) (time.Duration, time.Duration)) {
		for k, js := range byKey {
			slices.SortFunc(js, func(a, b simJob) int { x, _ := span(a); y, _ := span(b); return cmp.Compare(x, y) })
			for i := 1; i < len(js); i++ {
				s, _ := span(js[i])
				if _, e := span(js[i-1]); s < e {
					badf("%s %s ran two jobs at once: %s and %s", what, k, jobText(js[i-1]), jobText(js[i]))
				}
			}
		}
	}
	nodes, places, laneFolds := map[string][]simJob{}, map[string][]simJob{}, map[string][]simJob{}
	rounds := map[string]int{}
	for _, j := range res.Jobs {
		if j.Node < 0 || j.Node >= res.Nodes {
			badf("%s ran on node %d of %d", jobText(j), j.Node, res.Nodes)
		}
		nodes[fmt.Sprint(j.Node)] = append(nodes[fmt.Sprint(j.Node)], j)
		places[fmt.Sprintf("%d/%s", j.Run, j.Place)] = append(places[fmt.Sprintf("%d/%s", j.Run, j.Place)], j)
		lf := fmt.Sprintf("run %d %s fold %d", j.Run, j.Lane, j.Fold)
		laneFolds[lf] = append(laneFolds[lf], j)
		if rounds[fmt.Sprintf("%s round %d", lf, j.Round)]++; rounds[fmt.Sprintf("%s round %d", lf, j.Round)] == 2 {
			badf("%s round %d started twice", lf, j.Round)
		}
	}
	overlap("node", nodes, func(j simJob) (time.Duration, time.Duration) { return j.Start, j.End })
	overlap("place", places, func(j simJob) (time.Duration, time.Duration) { return j.Submit, j.End })
	overlap("lane-fold", laneFolds, func(j simJob) (time.Duration, time.Duration) { return j.Submit, j.End })
	for k, js := range laneFolds {
		for i := 1; i < len(js); i++ {
			if js[i].From != js[i-1].To && js[i].Fold >= 0 {
				badf("%s: a round started at step %d, the one before reached %d", k, js[i].From, js[i-1].To)
			}
		}
	}
	for i, r := range res.Runs {
		if r == nil || r.Err != nil {
			badf("run %d: %v", i, r)
			continue
		}
		var mine []simJob
		for _, j := range res.Jobs {
			if j.Run == i {
				mine = append(mine, j)
			}
		}
		// Each lane's training time as the schedule recorded it.
		for _, l := range r.Lanes {
			var took time.Duration
			for _, j := range mine {
				if j.Lane == l.ID && j.Decision > 0 {
					took += j.End - j.Submit - j.Waited
				}
			}
			rec := 0.0
			if len(l.Curve) > 0 {
				rec = l.Curve[len(l.Curve)-1].Seconds
			}
			if d := rec - took.Seconds(); d > 1e-3 || d < -1e-3 {
				badf("run %d lane %s: the schedule recorded %.3f s of training, its jobs took %.3f s", i, l.ID, rec, took.Seconds())
			}
		}
		// The run's spending: its rounds one after another, then the final model, then the
		// final phases.
		var sum time.Duration
		span := map[int][2]time.Duration{}
		for _, j := range mine {
			if j.Decision == 0 {
				sum += j.End - j.Submit
				continue
			}
			s, ok := span[j.Decision]
			if !ok {
				s = [2]time.Duration{j.Submit, j.End}
			}
			span[j.Decision] = [2]time.Duration{min(s[0], j.Submit), max(s[1], j.End)}
		}
		for _, s := range span {
			sum += s[1] - s[0]
		}
		if sum += scaleFinal; sum != r.Spent() {
			badf("run %d spent %v, its rounds, final model and final phases %v", i, r.Spent(), sum)
		}
		f := r.Spent().Seconds() / scaleBudget.Seconds()
		if promised(r) && f > 1 {
			badf("run %d ended at %.1f%% of its budget", i, 100*f)
		}
		if promised(r) && r.Final.Mode != FinalFold && f < 0.95 {
			short = append(short, fmt.Sprintf("%s: run %d ended at %.1f%% of its budget (%s)", res.Name, i, 100*f, r.Final.Why))
		}
		switch r.Final.Mode {
		case FinalEnsemble:
			for k := range scaleFolds {
				n := 0
				for _, j := range mine {
					if j.Decision == 0 && j.Fold == k && j.Lane == r.Winner {
						n++
						if j.To != r.Final.Until {
							badf("run %d: fold %d of the ensemble reached step %d, planned %d", i, k, j.To, r.Final.Until)
						}
					}
				}
				if n != 1 {
					badf("run %d: fold %d of the ensemble trained %d times", i, k, n)
				}
			}
		case FinalAllData:
			n := 0
			for _, j := range mine {
				if j.Decision == 0 && j.Fold == -1 {
					n++
					if j.Lane != r.Winner || j.From != r.FinalFrom {
						badf("run %d: the all-data model is %s from step %d, want %s from %d", i, j.Lane, j.From, r.Winner, r.FinalFrom)
					}
				}
			}
			if n != 1 {
				badf("run %d: the all-data model trained %d times", i, n)
			}
		}
	}
	slices.Sort(bad)
	return bad, short
}

// promised reports whether the schedule promises that run r ends within its budget: always
// with time shares; with fixed steps, when exploration ended before the reserve (it trains
// its steps however long they take).
func promised(r *scaleRun) bool {
	return r.Steps == 0 || r.Explored-r.Start <= scaleBudget-time.Duration(1.25*float64(scaleFinal))
}

func jobText(j simJob) string {
	return fmt.Sprintf("run %d %s fold %d round %d on %s node %d (%v–%v)", j.Run, j.Lane, j.Fold, j.Round, j.Place, j.Node, j.Start, j.End)
}

// scaleRow is a campaign's figures: its wall time (from the first run's start to the last
// one's end), the node time its jobs used and their wait for a node, the steps its lanes
// trained in all, the final models made (none: exploration left no time for one), and
// the final models' mean step (0 for none).
func scaleRow(res *scaleResult) string {
	var wall, busy, wait time.Duration
	steps, ens, all, fold, finalSteps := 0, 0, 0, 0, 0
	for _, r := range res.Runs {
		wall = max(wall, r.End)
		switch r.Final.Mode {
		case FinalEnsemble:
			ens++
			finalSteps += r.Final.Until
		case FinalAllData:
			all++
		default:
			fold++
		}
	}
	for _, j := range res.Jobs {
		busy += j.End - j.Start
		wait += j.Start - j.Submit
		steps += j.To - j.From
		if j.Fold == -1 {
			finalSteps += j.To
		}
	}
	return fmt.Sprintf("%-28s wall %6.2f h  node time %6.2f h  queue wait %5.2f h  %7d steps  final models: %2d ensembles %2d all-data %2d none, %5d steps (mean)",
		res.Name, wall.Hours(), busy.Hours(), wait.Hours(), steps, ens, all, fold, finalSteps/max(len(res.Runs), 1))
}

// TestScaleSimulated: twenty challenges, four lanes and five folds each, on a cluster of
// fifty nodes shared by the twenty runs at once (each run sending four lane-folds at a
// time, as host/slurm does by default) and on a workstation that runs them one after
// another with two places and with one; each exploring by time shares (amid run) and by
// fixed steps (amid run --steps 200). Every campaign is checked (checkScale: the budget
// accounting, no lane-fold round started twice or on two places at once, no place or node
// with two jobs at once, every fold of every ensemble trained, every run within its
// budget), and the checks are shown to catch a double start, a node given twice, a lane's
// time miscounted and a missing fold. The figures are printed: simulated, with the
// recorded curves' step costs. A last campaign shows what a queue's wait does when the
// executor does not report it (Outcome.Waited): it is logged, not asserted.
func TestScaleSimulated(t *testing.T) {
	curves, err := Recorded()
	if err != nil {
		t.Fatal(err)
	}
	challenges, err := scaleChallengesFrom(curves, scaleChallenges, scaleSeed)
	if err != nil {
		t.Fatal(err)
	}
	slurm := scaleExecutor{name: "Slurm, 50 nodes", nodes: scaleNodes, places: slurmPlaces(scaleJobs)}
	executors := []scaleExecutor{
		slurm,
		{name: "local, 2 places", nodes: 2, places: []Place{{Name: "cpu0", Device: "cpu", Workers: 4}, {Name: "cpu1", Device: "cpu", Workers: 4}}, oneAtATime: true},
		{name: "local, 1 place", nodes: 1, places: []Place{{Name: "cpu", Device: "cpu", Workers: 8}}, oneAtATime: true},
	}
	var all []*scaleResult
	ensembles := 0
	winners := map[int][]string{}
	for _, steps := range []int{0, scaleSteps} {
		for _, ex := range executors {
			ex.name += ", " + modeName(steps)
			res := simulate(t, ex, challenges, steps)
			bad, short := checkScale(res)
			for _, b := range append(bad, short...) {
				t.Error(b)
			}
			if len(res.Jobs) < scaleChallenges*scaleLanes {
				t.Errorf("%s: %d jobs, fewer than one per lane", ex.name, len(res.Jobs))
			}
			for i, r := range res.Runs {
				if r.Final.Mode == FinalEnsemble {
					ensembles++
				}
				if steps > 0 {
					winners[i] = append(winners[i], r.Winner)
				}
			}
			t.Log(scaleRow(res))
			all = append(all, res)
		}
	}
	if ensembles == 0 {
		t.Error("no run made a fold ensemble: the ensembles' checks checked nothing")
	}
	// Fixed steps train the same rounds wherever they run: the same winners.
	for i, w := range winners {
		if len(slices.Compact(slices.Clone(w))) != 1 {
			t.Errorf("challenge %d with fixed steps: winners %v on %d executors", i, w, len(executors))
		}
	}
	unreported := slurm
	unreported.name += ", " + modeName(0) + ", wait unreported"
	unreported.unreported = true
	res := simulate(t, unreported, challenges, 0)
	bad, short := checkScale(res)
	for _, b := range bad {
		t.Error(b)
	}
	t.Logf("%s; %d runs under 95 %% of their budget:", scaleRow(res), len(short))
	for _, s := range short {
		t.Log("  " + s)
	}
	t.Run("checks catch faults", func(t *testing.T) { checksCatch(t, all) })
}

func modeName(steps int) string {
	if steps > 0 {
		return fmt.Sprintf("--steps %d", steps)
	}
	return "time shares"
}

// checksCatch shows that checkScale fails a campaign with a lane-fold round started
// twice, a node given to two jobs at once, a lane's time miscounted, or an ensemble's fold
// missing: each fault is injected into the first campaign that has something to inject it
// into.
func checksCatch(t *testing.T, results []*scaleResult) {
	faults := []struct {
		name, want string
		inject     func(r *scaleResult) bool
	}{
		{"a double start", "started twice", func(r *scaleResult) bool {
			j := r.Jobs[0]
			j.Place, j.Node = "elsewhere", (j.Node+1)%r.Nodes
			r.Jobs = append(r.Jobs, j)
			return true
		}},
		{"a node given twice", "node", func(r *scaleResult) bool {
			for i, a := range r.Jobs {
				for _, b := range r.Jobs {
					if a.Node != b.Node && a.Start < b.End && b.Start < a.End {
						r.Jobs[i].Node = b.Node
						return true
					}
				}
			}
			return false
		}},
		{"a lane's time miscounted", "recorded", func(r *scaleResult) bool {
			for i, j := range r.Jobs {
				if j.Decision > 0 {
					r.Jobs[i].Waited += time.Second
					return true
				}
			}
			return false
		}},
		{"a missing fold", "ensemble", func(r *scaleResult) bool {
			for i, j := range r.Jobs {
				if j.Decision == 0 && j.Fold > 0 {
					r.Jobs = slices.Delete(r.Jobs, i, i+1)
					return true
				}
			}
			return false
		}},
	}
	for _, f := range faults {
		injected := false
		for _, res := range results {
			if bad, short := checkScale(res); len(bad)+len(short) > 0 {
				t.Fatalf("%s fails its checks already: %v %v", res.Name, bad, short)
			}
			r := *res
			r.Jobs = slices.Clone(res.Jobs)
			if !f.inject(&r) {
				continue
			}
			injected = true
			bad, _ := checkScale(&r)
			if !slices.ContainsFunc(bad, func(s string) bool { return strings.Contains(s, f.want) }) {
				t.Errorf("%s in %s was not caught: %v", f.name, r.Name, bad)
			}
			break
		}
		if !injected {
			t.Errorf("%s: no campaign has anything to inject it into", f.name)
		}
	}
}
