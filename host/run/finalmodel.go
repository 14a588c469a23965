package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/folds"
	"amid/host/predict"
	"amid/host/schedule"
)

// exploit makes the final model from exploration's winner by the rule of the plan
// (schedule.FinalRule): the winner's fold models ensembled when every fold can be trained
// in the time left, otherwise the winner continued on every training case from its best
// checkpoint until the reserve. The choice and why go into run.json, the log and the
// audit log; a final model that cannot be made leaves the winner's fold model as the
// submitted one, and says why.
func (r *Runner) exploit(ctx context.Context) error {
	if r.st.From != nil {
		return r.continueFrom(ctx)
	}
	w := r.st.lane(r.st.Winner)
	if w == nil {
		return fmt.Errorf("exploration recorded no winner")
	}
	if f := r.st.Final; f != nil && (f.Checkpoint != "" || f.Error != "" || f.Mode == schedule.FinalEnsemble && len(r.st.Union) > 0) {
		return nil // made before a resume
	}
	if r.st.Final == nil {
		d, members := r.finalDecision(w)
		r.st.Final = &FinalModel{Mode: d.Mode, Lane: w.ID, Rule: schedule.FinalRule, Why: d.Why, Until: int64(d.Until), Members: members}
		r.logf("final model: %s", d.Why)
		if err := r.record(audit.RoleHost, "final.planned", nil, nil, map[string]any{"mode": d.Mode, "lane": w.ID, "rule": schedule.FinalRule, "why": d.Why, "until": d.Until}); err != nil {
			return err
		}
		if err := r.save(); err != nil {
			return err
		}
	}
	var err error
	switch r.st.Final.Mode {
	case schedule.FinalFold:
		return nil
	case schedule.FinalEnsemble:
		err = r.trainFolds(ctx, w)
	default:
		err = r.trainAllData(ctx, w)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		r.st.Final.Error = err.Error()
		note := fmt.Sprintf("the final model (%s) could not be made: %v; the winner's fold-0 model is submitted", r.st.Final.Mode, err)
		r.logf("%s", note)
		r.st.Notes = append(r.st.Notes, note)
		r.st.Union = nil
		return r.record(audit.RoleHost, "final.failed", nil, nil, map[string]any{"mode": r.st.Final.Mode, "reason": err.Error()})
	}
	return nil
}

// extendAllData trains the all-data model further when it reached its planned last step
// with time left before the reserve (schedule.Extend), from its final checkpoint to a new
// planned last step; the model it had stands when the extension cannot be made. That
// model is saved and recorded first, so a run stopped during the extension submits it.
//
// Its pace and the cost of a start are those the model on all the data was seen to have
// (stepTime of its took went to its steps): without validation cases its steps ran 2.5
// times as fast as exploration's in app/cli's TestPlainTaskOfEveryKind (classification:
// 0.425 s, then 41 steps and a start in 9 s), so it reached its planned step with 3 s of
// a 25 s budget left.
//
// past is how far the model ran past its own limit: with its start and a step, what the
// extension's limit leaves before the reserve (exploration's rounds, with validation cases
// to load and score, overran more: 0.8–0.9 s against the enhancement model's 0.5 s).
func (r *Runner) extendAllData(ctx context.Context, w *LaneState, steps int, took, stepTime, past time.Duration) error {
	fm := r.st.Final
	pace, start := took, max(w.Schedule.Overhead-w.Schedule.Validation, 0)
	if stepTime > 0 && stepTime < took {
		pace, start = stepTime, (took - stepTime).Seconds()
	}
	more := schedule.Extend(steps, pace, r.usable(), start)
	if m := w.Schedule.MaxSteps; m > 0 {
		more = min(more, m-int(fm.Steps)) // never past the lane's cap
	}
	perStep := time.Duration(float64(pace) / float64(max(steps, 1)))
	limit := r.usable() - max(past, r.st.PluginStart+perStep)
	if limit <= 0 {
		more = 0 // no time for the plugin's clock (a limit of 0 would be none)
	}
	if more <= 0 {
		if left := r.usable(); left > 0 {
			r.logf("the final model reached its planned step %d with %v left before the reserve: too little to train on (a start takes about %v)", fm.Steps, left.Round(10*time.Millisecond), time.Duration(start*float64(time.Second)).Round(10*time.Millisecond))
		}
		return nil
	}
	from, fromSHA := fm.Steps, fm.SHA256
	until := fm.Steps + int64(more)
	cfg, err := withSteps(w.Config, until)
	if err != nil {
		return err
	}
	r.logf("the final model reached its planned step %d with %v left before the reserve: it trains on to step %d at the pace it made (%d steps in %v)", fm.Steps, r.usable().Round(time.Second), until, steps, took.Round(time.Second))
	out, err := r.trainOne(ctx, trainSpec{
		lane: w, fold: -1, audit: w.ID + ".all", work: r.path("lanes", w.ID, "all", "more"), cfg: cfg, train: r.data.Train,
		resume: fm.Checkpoint, until: until, limit: limit, place: r.placeOf(w), seed: r.st.Seed,
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		note := fmt.Sprintf("the final model could not be trained further (%v): the model at step %d stands", err, fm.Steps)
		r.logf("%s", note)
		r.st.Notes = append(r.st.Notes, note)
		return nil
	}
	fm.Checkpoint, fm.SHA256, fm.Steps, fm.Compute, fm.Config = out.res.Checkpoint, out.res.SHA256, out.res.Steps, out.res.Compute, cfg
	fm.Took += out.took
	fm.Why += fmt.Sprintf("; it reached its planned step with time left and trained on to step %d", out.res.Steps)
	fm.Until = until
	r.logf("the final model of %s trained on to step %d (planned %d) in %v", w.ID, fm.Steps, until, out.took.Round(time.Second))
	if err := r.record(audit.RoleHost, "final.extended", map[string]string{"from": fromSHA}, map[string]string{"checkpoint": fm.SHA256},
		map[string]any{"lane": w.ID, "from_step": from, "steps": fm.Steps, "until": until}); err != nil {
		return err
	}
	return r.save()
}

// trainLeft is the time limit of a model on all the data that ends at the reserve: the
// time until it, less what a training takes outside its plugin's clock, which starts once
// the plugin has the request and is checked between steps: the plugin's start, the step
// under way, saving the checkpoint and stopping. Those are counted as w's overhead less its
// validation (which also counts the loading of the data, inside the clock), and at least
// the plugin's start and a step, and at least what a round that its time limit ended ran
// past it (schedule.Lane.Outside). In app/cli's TestPlainTaskOfEveryKind models limited to
// the time until the reserve ran 1 s past it (detection: 10 s for a 9 s limit), and the
// runs past their budget.
func (r *Runner) trainLeft(w *LaneState) time.Duration {
	s := w.Schedule
	// What its rounds took besides their steps, less the validation a model on all the
	// data does not have, or at least a start and a step: a model on all the data ran 1 s
	// past a limit whose round in exploration had run 0.4 s past (classification, 12 s
	// for 11 s).
	outside := max(s.Besides()-s.Validation, r.st.PluginStart.Seconds()+s.StepSeconds)
	return r.usable() - time.Duration(outside*float64(time.Second))
}

// cappedMembers is, for a winner w at its cap whose fold ensemble of folds does not fit
// the time left, the most folds k (2 ≤ k < folds) whose ensemble does, each of its
// members predicting the test set in the reserve, and the decision to train it; 0 when
// none fits or w can still learn. A few fold models are better than one: without it, a
// challenger's round that ran half a second into the time held for a forest's 5-fold
// ensemble left the fold model alone with 74 s unused of a 5-minute budget (make
// bench-quality, inia19-quadrants).
func (r *Runner) cappedMembers(w *LaneState, folds int) (int, schedule.Decision) {
	if !w.Schedule.Capped() {
		return 0, schedule.Decision{}
	}
	for k := folds - 1; k >= 2; k-- {
		d := schedule.Final(&w.Schedule, r.remaining()-r.membersReserve(k), k)
		if d.Mode == schedule.FinalEnsemble {
			d.Why += fmt.Sprintf(" (the time holds %d of the %d folds)", k, folds)
			return k, d
		}
	}
	return 0, schedule.Decision{}
}

// members is how many fold models the ensemble has of a run's folds.
func (f *FinalModel) members(folds int) int {
	if f.Members > 0 {
		return min(f.Members, folds)
	}
	return folds
}

// ensembleFolds is the number of folds an ensemble would have: the run's folds when the
// task's predictions can be combined, else 1 (no ensemble).
func (r *Runner) ensembleFolds() int {
	if predict.Combinable(r.task.Spec()) {
		return r.st.Folds
	}
	return 1
}

// placeOf is the place lane l trained on (its worker split and device), or the first.
func (r *Runner) placeOf(l *LaneState) Place {
	j := schedule.Pack([]schedule.Job{{Lane: l.ID, Expected: time.Second}}, r.exec.Places(), []*schedule.Lane{&l.Schedule})[0]
	if j.Place.Name == "" {
		return r.exec.Places()[0]
	}
	return j.Place
}

// trainAllData continues the winner on every training case (the training and validation
// cases of its folds) from its best checkpoint, with its learning rate annealed to zero at
// the planned last step, within the time left before the reserve.
func (r *Runner) trainAllData(ctx context.Context, w *LaneState) error {
	fm := r.st.Final
	f0 := w.Folds[0]
	from, fromStep := f0.Checkpoint, f0.Steps
	for _, rd := range f0.Rounds {
		if rd.Checkpoint == from {
			fromStep = rd.Steps
		}
	}
	// A lane at its cap (a forest, a prior) learns nothing more from its fold model's
	// checkpoint: it is made again, from scratch to its cap, on every training case.
	capped := w.Schedule.Capped()
	if fm.From == "" && !capped {
		// The planned end counts the steps still to make from the best checkpoint.
		fm.Until = fromStep + (fm.Until - int64(w.Schedule.Steps))
		fm.From, fm.FromStep = from, fromStep
	}
	cfg, err := withSteps(w.Config, fm.Until)
	if err != nil {
		return err
	}
	fm.Config = cfg
	work := r.path("lanes", w.ID, "all")
	resume := fm.From
	if fileio.Within(work, fm.Last) {
		if _, err := os.Stat(fm.Last); err == nil {
			resume = fm.Last // it was under way when the run stopped
		}
	}
	limit := r.trainLeft(w)
	if limit <= 0 {
		return fmt.Errorf("no time is left before the reserve")
	}
	if err := r.save(); err != nil {
		return err
	}
	out, err := r.trainOne(ctx, trainSpec{
		lane: w, fold: -1, audit: w.ID + ".all", work: work, cfg: cfg, train: r.data.Train,
		resume: resume, until: fm.Until, limit: limit, place: r.placeOf(w), seed: r.st.Seed,
	})
	if err != nil {
		return err
	}
	fm.Checkpoint, fm.SHA256, fm.Steps, fm.Compute = out.res.Checkpoint, out.res.SHA256, out.res.Steps, out.res.Compute
	fm.Took += out.took
	r.logf("the final model of %s trained on all %d training cases from step %d to %d (planned %d) in %v", w.ID, len(r.data.Train), fm.FromStep, fm.Steps, fm.Until, out.took.Round(time.Second))
	if err := r.record(audit.RoleHost, "final.made", map[string]string{"from": f0.SHA256}, map[string]string{"checkpoint": fm.SHA256},
		map[string]any{"mode": fm.Mode, "lane": w.ID, "from_step": fm.FromStep, "steps": fm.Steps, "until": fm.Until, "why": fm.Why, "cases": len(r.data.Train)}); err != nil {
		return err
	}
	if err := r.save(); err != nil {
		return err
	}
	if out.res.Steps >= fm.Until && resume == fm.From && !capped {
		// Trained in one go from its start: its pace is measured.
		return r.extendAllData(ctx, w, int(out.res.Steps-fm.FromStep), out.took, out.stepTime, max(out.took-limit, 0))
	}
	return nil
}

// trainFolds trains the winner on every fold to the planned step: fold 0 continues from
// its last round's checkpoint, the others train from scratch, all with the learning rate
// annealed at that step; it scores each fold model on its fold's validation cases and makes
// the ensemble of the fold models (judged by the mean of the out-of-fold scores). A
// cascade's fold k takes the low-resolution network trained on fold k ([Runner.foldLowres]),
// so that no network a fold uses has seen its validation cases.
func (r *Runner) trainFolds(ctx context.Context, w *LaneState) error {
	fl, err := r.folds()
	if err != nil {
		return err
	}
	fm := r.st.Final
	cfg, err := withSteps(w.Config, fm.Until)
	if err != nil {
		return err
	}
	fm.Config = cfg
	place := r.placeOf(w)
	low, lowRound, err := r.st.lowresOf(w)
	if err != nil {
		return err
	}
	n := fm.members(fl.K)
	cfgs := make([]json.RawMessage, n)
	for k := range n {
		cfgs[k] = cfg
		if low != nil {
			// A cascade's fold takes the low-resolution network of its own fold.
			if cfgs[k], err = r.foldLowres(ctx, w, low, lowRound, fl, k, cfg); err != nil {
				return err
			}
		}
		if err := r.trainFold(ctx, w, fl, k, n, fm.Until, cfgs[k], place, r.usable()); err != nil {
			return err
		}
	}
	var members []predict.Member
	for k := range n {
		f := w.Folds[k]
		members = append(members, predict.Member{Lane: fmt.Sprintf("%s.f%d", w.ID, k), PluginConfig: cfgs[k], Checkpoint: f.Checkpoint, SHA256: f.SHA256})
	}
	m, n := w.Mean()
	r.st.Union, r.st.Vote = members, true
	oof := fmt.Sprintf("%.4f", m)
	if n == 0 {
		m, oof = 0, "undefined on every fold ("+w.Undefined()+")"
	}
	fm.OutOfFold = m
	r.logf("the final model is the ensemble of %s's %d fold models: out-of-fold validation %s", w.ID, len(members), oof)
	out := map[string]string{}
	for _, mb := range members {
		out[mb.Lane] = mb.SHA256
	}
	details := map[string]any{"mode": schedule.FinalEnsemble, "lane": w.ID, "out_of_fold": m, "folds": n, "until": fm.Until, "why": fm.Why}
	if low != nil {
		// Each member's low-resolution network, by fold: the one trained on its fold.
		lows := map[string]string{}
		for k, c := range cfgs {
			lows[members[k].Lane] = cascadeOf(c).SHA256
		}
		details["lowres"] = lows
	}
	if err := r.record(audit.RoleHost, "final.made", nil, out, details); err != nil {
		return err
	}
	return r.record(audit.RoleHost, audit.ActionLaneTrained, nil, out, map[string]any{"lane": r.unionLane(), "members": len(members), "score": m, "status": FoldDone})
}

// trainFold trains fold k of the n folds of lane w's fold ensemble to step until with
// configuration cfg on place, within its share of left, the time until the reserve
// (schedule.FoldLimit): fold 0 continues from its last round, the others train from
// scratch, and a fold made before (a resumed run, a capped leader's folds trained in
// exploration) is kept. A fold that fails is recorded failed, fold 0 as it was.
func (r *Runner) trainFold(ctx context.Context, w *LaneState, fl *folds.Folds, k, n int, until int64, cfg json.RawMessage, place Place, left time.Duration) error {
	f := w.Folds[k]
	if f.Status == FoldDone && (k > 0 || f.Steps >= until) {
		return nil
	}
	train, val, err := fl.Split(r.data.Train, k)
	if err != nil {
		return err
	}
	work := r.path("lanes", w.ID, fmt.Sprintf("f%d", k), "final")
	resume := ""
	if k == 0 && len(f.Rounds) > 0 {
		resume = f.Rounds[len(f.Rounds)-1].Checkpoint
	}
	if fileio.Within(work, f.LastCheckpoint) {
		resume = f.LastCheckpoint
	}
	prev := f
	f.Status, f.LastCheckpoint = FoldTraining, resume
	w.Folds[k] = f
	if err := r.save(); err != nil {
		return err
	}
	from := 0
	if resume != "" {
		from = int(f.Steps)
	}
	limit := schedule.FoldLimit(&w.Schedule, k, n, int(until), from, left)
	out, err := r.trainOne(ctx, trainSpec{
		lane: w, fold: k, audit: fmt.Sprintf("%s.f%d", w.ID, k), work: work, cfg: cfg, train: train, val: val,
		resume: resume, until: until, limit: limit, place: place, seed: r.st.Seed + int64(k),
	})
	if err != nil {
		if k == 0 {
			w.Folds[0] = prev
		} else {
			w.Folds[k] = FoldState{Status: FoldFailed, Error: err.Error()}
		}
		return err
	}
	f = w.Folds[k]
	f.Status, f.Checkpoint, f.SHA256, f.Steps, f.Score, f.Extra, f.Undefined, f.PerCase = FoldDone, out.res.Checkpoint, out.res.SHA256, out.res.Steps, out.score.Value, out.score.Extra, out.score.Undefined, out.score.PerCase
	f.Took, f.Compute, f.Lacks = f.Took+out.took, out.res.Compute, fl.Lacks(k)
	w.Folds[k] = f
	r.logf("lane %s fold %d: validation %s after %d steps, trained on %s%s", w.ID, k, out.score, out.res.Steps, trainedOn(out.res.Compute), lacksText(f.Lacks))
	return r.save()
}

// plannedSteps is the planned total of steps of configuration cfg, and whether it has one.
func plannedSteps(cfg json.RawMessage) (int64, bool) {
	var m struct {
		Steps *int64 `json:"steps"`
	}
	if json.Unmarshal(cfg, &m) != nil || m.Steps == nil {
		return 0, false
	}
	return *m.Steps, true
}

// withSteps is the configuration cfg with its planned total of steps set to n, when it
// has a "steps" field (the built-in plugins' configurations do).
func withSteps(cfg json.RawMessage, n int64) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(cfg, &m); err != nil {
		return nil, err
	}
	if _, ok := m["steps"]; !ok {
		return cfg, nil
	}
	m["steps"], _ = json.Marshal(n)
	return json.Marshal(m)
}

// finalDecision is how the winner w's final model is made, and how many fold models of a
// capped winner make it (0: not such an ensemble).
func (r *Runner) finalDecision(w *LaneState) (schedule.Decision, int) {
	// The time until the reserve an ensemble would keep (its members predict the test
	// set; the post-processing options take what is left: membersReserve): the all-data
	// model's limit is taken again when it starts.
	left, folds := r.remaining()-r.membersReserve(r.ensembleFolds()), r.ensembleFolds()
	// A cascade's ensemble trains its low-resolution lane on every other fold too
	// (cascade.go): that time is not the cascade's.
	low, lowRound, err := r.st.lowresOf(w)
	if err != nil {
		// No fold but the first has a low-resolution network the cascade may take.
		folds = 1
	}
	lowTime := time.Duration(0)
	if low != nil && folds > 1 {
		lowTime = lowresCost(low, lowRound, folds)
	}
	d := schedule.Final(&w.Schedule, left-lowTime, folds)
	if d.Mode != schedule.FinalEnsemble && lowTime == 0 {
		// The model on all the data predicts the test set alone: it has the time an
		// ensemble's members would have predicted in. (make bench-quality's 5-minute
		// mr-rician-denoise: with 2m40s left, the reserve for five members' predictions,
		// 3m21s, left no time and the fold model was submitted, 57 % of the budget spent,
		// where one model's predictions needed 40 s.)
		if one := schedule.Final(&w.Schedule, r.remaining()-r.reserve(1), folds); one.Mode == schedule.FinalAllData {
			d = one
		}
	}
	if d.Mode != schedule.FinalEnsemble && lowTime > 0 {
		// The model on all the data trains the cascade alone, in all the time left.
		d = schedule.Final(&w.Schedule, left, 1)
		d.Why += fmt.Sprintf("; a fold ensemble of the cascade would first train %s on the other %d folds (about %v)", low.ID, folds-1, lowTime.Round(time.Second))
	}
	members := 0
	if d.Mode == schedule.FinalFold && lowTime == 0 {
		if k, dk := r.cappedMembers(w, folds); k > 0 {
			d, members = dk, k
		}
	}
	switch want := r.st.FinalChoice; want {
	case schedule.FinalEnsemble:
		d = schedule.Forced(&w.Schedule, left-lowTime, folds, want, r.st.Steps)
	case schedule.FinalAllData:
		d = schedule.Forced(&w.Schedule, left, folds, want, r.st.Steps)
	}
	if err != nil {
		d.Why += fmt.Sprintf("; no fold ensemble: %v", err)
	}
	if d.Mode == schedule.FinalEnsemble && low != nil {
		d.Why += fmt.Sprintf("; each fold's cascade takes the low-resolution network trained on that fold's own training cases, so %s trains to step %d on the other %d folds first (about %v, set aside from the time left)", low.ID, lowRound.Steps, folds-1, lowTime.Round(time.Second))
	}
	if d.Mode != schedule.FinalEnsemble {
		members = 0
	}
	return d, members
}
