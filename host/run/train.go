package run

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/evaluate"
	"amid/host/finite"
	"amid/host/predict"
	"amid/host/schedule"
	"amid/host/task"
	"amid/plugins/compute"
	"amid/plugins/protocol"
)

// finalReserve is the part of the budget kept for the final prediction, verification and
// export until a prediction has been timed (then amid/host/schedule.Reserve sizes it).
const finalReserve = 0.15

// exportRate is the pace, in bytes a second, at which the reserve counts the export
// copying, hashing and zipping the package's checkpoints and plugin binary: a fifth of the
// 100 MB/s the 2-core machine deflates at, for a busy disk. The package's other files (the
// task, the plan, the audit log) are a few hundred kilobytes.
const exportRate = 20e6

// exportTime is what the reserve keeps for the export: starting the plugin once (for its
// version), and the models' checkpoints and the plugin binary at exportRate. Main's fixed
// 5 s was a fifth of a 25 s budget, while the plain runs of every kind (app/cli's
// TestPlainTaskOfEveryKind) exported in under a second; the time it takes is logged
// ("package written ... in"). The binary was not counted until a plain IQA run overran
// its 25 s budget by 12 ms: its export took 810 ms, most of it the 26.5 MB plugin, where
// the reserve had counted the plugin's start and a checkpoint of a few megabytes.
func (r *Runner) exportTime(models int) time.Duration {
	var size int64
	for _, l := range r.st.Lanes {
		if f, ok := l.Folds[0]; ok && f.Checkpoint != "" {
			if fi, err := os.Stat(f.Checkpoint); err == nil {
				size = max(size, fi.Size())
			}
		}
	}
	bytes := int64(max(models, 1))*size + r.st.PluginBytes
	return r.st.PluginStart + time.Duration(float64(bytes)/exportRate*float64(time.Second))
}

// usable is the time lanes may still train, leaving the final reserve.
func (r *Runner) usable() time.Duration {
	return r.remaining() - r.reserve(r.models())
}

// models is how many models make the test predictions: the fold ensemble's members once
// the final model is the ensemble, else one.
func (r *Runner) models() int {
	if f := r.st.Final; f != nil && f.Mode == schedule.FinalEnsemble {
		return f.members(r.st.Folds)
	}
	return 1
}

// reserve is the time kept for the final phases: 15 % of the budget until a validation
// prediction has been timed, then what the final phases' predictions are expected to take
// (the test set twice by each of models models, for the submission and its reproduction,
// and the chosen fold's validation cases once per post-processing option the lanes'
// plugins offer, each prediction starting the plugin once) with a quarter more, and the
// export ([Runner.exportTime]).
func (r *Runner) reserve(models int) time.Duration {
	return r.reserveFor(r.finalLane(), models)
}

// reserveFor is the reserve when lane's models (any lane's, the slowest, for "") make
// the final predictions.
func (r *Runner) reserveFor(lane string, models int) time.Duration {
	return r.reserveWith(lane, models, r.postOptionCount())
}

// membersReserve is the reserve of a fold ensemble of k models of the final lane, less the
// post-processing options: choosePostprocess tries them only in the time its models'
// predictions leave (whileFits), so they never cost the ensemble a member. (make
// bench-quality's 5-minute inia19-bands, once the forest offered smooth: the reserve for
// five options on fold 0's validation cases held 4 of the forest's 5 folds, test Dice
// 0.5840 where its 5 folds had scored 0.6242, and smooth then gained 0.003 at 10 minutes.)
func (r *Runner) membersReserve(k int) time.Duration {
	return r.reserveWith(r.finalLane(), k, 0)
}

// reserveWith is reserveFor with options post-processing options to try.
func (r *Runner) reserveWith(lane string, models, options int) time.Duration {
	fallback := time.Duration(finalReserve * float64(r.st.Budget))
	per := r.perCaseOf(lane)
	if per <= 0 {
		return fallback
	}
	nval := len(r.data.Train) / max(r.st.Folds, 2)
	return schedule.Reserve(per, r.st.PluginStart, len(r.data.Test), nval, options, models, fallback) + r.exportTime(models)
}

// finalLane is the lane whose models make the final predictions once one has won (its
// fold ensemble's members too), "" before, or when two lanes' models do (a union).
// (make bench-quality's 5-minute inia19-bands: the forest's fold ensemble, kept as a
// union of its folds, was sized by a U-Net's validation, 2.3 s a case where its own took
// 1.3 s: 1m43s were kept for final phases that took 48 s, and no post-processing option
// was tried.)
func (r *Runner) finalLane() string {
	if len(r.st.Union) > 0 && !(r.st.Vote && r.st.Final != nil && r.st.Final.Lane == r.st.Winner) {
		return ""
	}
	return r.st.Winner
}

// perCaseOf is the time lane's predictions take per case: its own latest validation's
// once one was timed, else the slowest lane's. (make bench-quality's 5-minute
// inia19-bands: a forest that predicts a case in about a second won, and the reserve
// sized by a 2.5D U-Net's validation kept 77 s for final phases that took 25 s.)
func (r *Runner) perCaseOf(lane string) time.Duration {
	if l := r.st.lane(lane); l != nil && l.PredictPerCase > 0 {
		return l.PredictPerCase
	}
	if lane == "" && r.st.Winner == "" {
		return r.contendersPerCase()
	}
	return r.st.PredictPerCase
}

// contendersPerCase is, while no lane has won, the slowest time per case of the lanes
// that may still win: those still explored, those at their cap, and the best so far; a
// lane stopped below the best cannot (exploration's winner is the best score of any
// lane). Any of them not yet timed: the slowest of every lane. (make bench-quality's
// 10-minute inia19-bands: a 3d_lowres lane stopped after its first round sized the
// reserve while the forest and a 2D U-Net explored on, and the run spent 80 % of its
// budget, the final phases starting with 2m57s left where 1m19s was kept.)
func (r *Runner) contendersPerCase() time.Duration {
	var best *LaneState
	for _, l := range r.st.Lanes {
		if s := l.Schedule.Best().Score; !math.IsNaN(s) && (best == nil || s > best.Schedule.Best().Score) {
			best = l
		}
	}
	var per time.Duration
	for _, l := range r.st.Lanes {
		if l != best && l.Schedule.Stopped != "" && !l.Schedule.Capped() {
			continue
		}
		if l.PredictPerCase <= 0 {
			return r.st.PredictPerCase
		}
		per = max(per, l.PredictPerCase)
	}
	if per == 0 {
		return r.st.PredictPerCase
	}
	return per
}

// postOptionCount is the number of post-processing options the final phase tries: the
// most that any of the run's lanes allows (laneOptions), 0 when none offers a choice
// (choosePostprocess tries two or more; only segmentation's plugin offers any).
func (r *Runner) postOptionCount() int {
	n := 0
	for _, l := range r.st.Lanes {
		n = max(n, len(r.laneOptions(l)))
	}
	return n
}

// explore trains the lanes on fold 0 in rounds of successive halving (amid/host/schedule)
// until one is left, the winner, within exploration's share of the usable time. After
// the first round the planner is shown the results and may add lanes, which train a
// first round before the next promotion.
func (r *Runner) explore(ctx context.Context) error {
	if r.st.From != nil {
		return nil // one lane, already trained: the package's
	}
	if r.st.ExploreEnd == 0 {
		r.st.ExploreEnd = r.spent() + time.Duration(schedule.ExploreShare*float64(r.usable()))
		r.logf("exploration may train until %v of the %v budget is spent; the rest goes to the final model", r.st.ExploreEnd.Round(time.Second), r.st.Budget)
	}
	p := &schedule.Plan{Config: schedule.Config{Places: r.exec.Places(), Steps: r.st.Steps}}
	for _, l := range r.st.Lanes {
		p.Lanes = append(p.Lanes, &l.Schedule)
	}
	// A round's time limit starts when its plugin has started: the start comes out of the
	// time until the reserve.
	left := func() time.Duration { return r.usable() - r.st.PluginStart }
	// A lane at its cap that leads keeps the time of its fold ensemble, or of as many of
	// its folds as fit (cappedMembers), and of their predictions; where its models are not
	// combined across folds, the time to make it again on all the data (schedule.Final);
	// its challenger may use the rest, and all of it once none of that fits: the fold
	// model alone needs no time.
	hold := func(l *schedule.Lane, left time.Duration) time.Duration {
		if r.ensembleFolds() <= 1 {
			if h := schedule.CappedEnsemble(l, 1); h <= left {
				return h
			}
			return 0
		}
		_, h := r.cappedFit(l, left)
		return h
	}
	e := &schedule.Explorer{Plan: p, Spent: r.spent, End: r.st.ExploreEnd, Left: left, Hold: hold, Secure: r.secure, Decided: r.decided,
		After: func(rd schedule.Round) error { return r.afterRound(ctx, p) }}
	rd, err := e.Run(ctx, trainer{r})
	if err != nil {
		return err
	}
	if rd.Winner == "" {
		return errors.New("every lane failed on the first fold; see the lanes' errors in run.json")
	}
	r.st.Winner, r.st.WinnerWhy = rd.Winner, rd.Why
	r.logf("exploration chose %s: %s", rd.Winner, rd.Why)
	return r.record(audit.RoleHost, "explore.done", nil, nil, map[string]any{"winner": rd.Winner, "why": rd.Why, "rounds": len(r.st.Rounds)})
}

// cappedFit is the most folds k ≥ 2 of capped lane l's fold ensemble that fit left, the
// time until the reserve, with the time they need there: the folds not yet made, trained
// to its cap, and the predictions of its k models rather than one (ensembleBeyond); 0 and
// 0 when none fits.
func (r *Runner) cappedFit(l *schedule.Lane, left time.Duration) (int, time.Duration) {
	for k := r.ensembleFolds(); k >= 2; k-- {
		if h := schedule.CappedEnsemble(l, k) + r.ensembleBeyond(l.ID, k); h <= left {
			return k, h
		}
	}
	return 0, 0
}

// ensembleBeyond is what the final phases of lane's ensemble of k models need more than
// those of one of its models, held on top of exploration's reserve (sized for one model
// of the slowest lane that may still win). Holding only what the ensemble needs beyond
// that reserve was tried: a challenger's round that then ran 0.6 s past its limit left
// the forest's two made folds too little time to predict, and its fold model was
// submitted (app/cli's TestPlainTaskOfEveryKind).
func (r *Runner) ensembleBeyond(lane string, k int) time.Duration {
	return r.reserveFor(lane, k) - r.reserveFor(lane, 1)
}

// secure trains the folds of capped lane l's fold ensemble that fit left, the time until
// the reserve, and are not yet made, while l leads and its challenger goes on alone
// (schedule.Explorer's Secure): the challenger then has what is left, measured, where
// the time held for them was an estimate from l's first round. It reports whether a fold
// was made. A lane whose models are not combined across folds, or a cascade (its folds
// take low-resolution networks of their own), keeps the hold.
func (r *Runner) secure(ctx context.Context, l *schedule.Lane, left time.Duration) (bool, error) {
	w := r.st.lane(l.ID)
	if w == nil || r.ensembleFolds() <= 1 {
		return false, nil
	}
	if low, _, err := r.st.lowresOf(w); err != nil || low != nil {
		return false, nil
	}
	k, _ := r.cappedFit(l, left)
	if k <= max(l.Made, 1) {
		return false, nil
	}
	fl, err := r.folds()
	if err != nil {
		return false, err
	}
	cfg, err := withSteps(w.Config, int64(l.MaxSteps))
	if err != nil {
		return false, err
	}
	from := max(l.Made, 1)
	which := fmt.Sprintf("its fold %d trains", from)
	if k-1 > from {
		which = fmt.Sprintf("its folds %d to %d train", from, k-1)
	}
	r.logf("lane %s leads at its cap of %d step(s) while its challenger goes on: %s now (about %v), so the time its fold ensemble takes is measured, and what is left before the reserve is the challenger's", l.ID, l.MaxSteps, which, schedule.CappedEnsemble(l, k).Round(time.Second))
	for f := from; f < k; f++ {
		if w.Folds[f].Status == FoldFailed {
			break // tried before: the final model tries it again, if its time holds it
		}
		// Its limit, like the explorer's rounds', counts from the plugin's start, and
		// leaves the predictions of k models rather than one.
		left := r.usable() - r.st.PluginStart - r.ensembleBeyond(l.ID, k)
		if err := r.trainFold(ctx, w, fl, f, k, int64(l.MaxSteps), cfg, r.placeOf(w), left); err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			r.logf("lane %s fold %d could not be trained now (%v): its final model takes the folds made", l.ID, f, err)
			break
		}
		l.Made = f + 1
		if err := r.save(); err != nil {
			return false, err
		}
	}
	return l.Made > from, nil
}

// decided records a decision of exploration (which lanes train next, which stopped and
// why) in the log, run.json and the audit log.
func (r *Runner) decided(rd schedule.Round) error {
	lg := RoundLog{Rung: rd.Rung, Stopped: rd.Stopped, Spent: r.spent()}
	for _, j := range rd.Jobs {
		lg.Jobs = append(lg.Jobs, fmt.Sprintf("%s: steps %d → %d on %s", j.Lane, j.From, j.Until, j.Place.Name))
	}
	for _, s := range rd.Stopped {
		r.logf("lane %s", s)
	}
	if len(lg.Jobs) == 0 && len(lg.Stopped) == 0 {
		return nil
	}
	r.st.Rounds = append(r.st.Rounds, lg)
	if err := r.record(audit.RoleHost, "schedule.round", nil, nil, map[string]any{"rung": lg.Rung, "jobs": lg.Jobs, "stopped": lg.Stopped}); err != nil {
		return err
	}
	return r.save()
}

// afterRound saves the state after a round and, once the first round is over, asks the
// planner to refine the lanes.
func (r *Runner) afterRound(ctx context.Context, p *schedule.Plan) error {
	if err := r.save(); err != nil {
		return err
	}
	if r.st.Refined {
		return nil
	}
	for _, l := range p.Lanes {
		if l.Stopped == "" && l.Rung == 0 {
			return nil // the first round is not over
		}
	}
	r.st.Refined = true
	added, err := r.refine(ctx)
	if err != nil {
		return err
	}
	for _, l := range added {
		p.Lanes = append(p.Lanes, &l.Schedule)
	}
	return r.save()
}

// trainer trains the schedule's jobs: each a round of a lane on fold 0.
type trainer struct{ r *Runner }

// Train implements schedule.Trainer.
func (t trainer) Train(ctx context.Context, j schedule.Job) (schedule.Outcome, error) {
	return t.r.trainRound(ctx, t.r.st.lane(j.Lane), j)
}

// trainRound trains lane l on fold 0 from its last round's checkpoint to step j.Until
// (within j.Limit, on j.Place), scores the round's checkpoint on the fold's validation
// cases with the host's metric, and records the round.
func (r *Runner) trainRound(ctx context.Context, l *LaneState, j schedule.Job) (schedule.Outcome, error) {
	fl, err := r.folds()
	if err != nil {
		return schedule.Outcome{}, err
	}
	train, val, err := fl.Split(r.data.Train, 0)
	if err != nil {
		return schedule.Outcome{}, err
	}
	r.mu.Lock()
	f := l.Folds[0]
	rung := len(f.Rounds)
	work := r.path("lanes", l.ID, "f0", fmt.Sprintf("r%d", rung))
	resume := ""
	if n := len(f.Rounds); n > 0 {
		resume = f.Rounds[n-1].Checkpoint
	}
	if f.Status == FoldTraining && fileio.Within(work, f.LastCheckpoint) {
		resume = f.LastCheckpoint // this round was under way when the run stopped
	}
	f.Status, f.LastCheckpoint = FoldTraining, resume
	l.Folds[0] = f
	err = r.save()
	r.mu.Unlock()
	if err != nil {
		return schedule.Outcome{}, err
	}
	if resume != "" {
		r.logf("lane %s continues from %s", l.ID, resume)
	}
	// A round past the lane's planned total (a challenger of a capped leader, given the
	// final model's time) plans its learning rate over the longer total, as the model on
	// all the data does; the configuration's own total stays for the lane's record.
	cfg := l.Config
	if n, ok := plannedSteps(cfg); ok && int64(j.Until) > n {
		if cfg, err = withSteps(cfg, int64(j.Until)); err != nil {
			return schedule.Outcome{}, fmt.Errorf("lane %s: %w", l.ID, err)
		}
	}
	out, err := r.trainOne(ctx, trainSpec{
		lane: l, fold: 0, audit: l.ID + ".f0", work: work, cfg: cfg, train: train, val: val,
		resume: resume, until: int64(j.Until), limit: j.Limit, place: j.Place, seed: r.st.Seed,
	})
	if ctx.Err() != nil {
		return schedule.Outcome{}, ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f = l.Folds[0]
	if err != nil {
		f.Status, f.Error = FoldFailed, err.Error()
		if len(f.Rounds) > 0 {
			f.Status = FoldDone // its earlier rounds stand
		}
		l.Folds[0] = f
		return schedule.Outcome{}, errors.Join(err, r.save())
	}
	rd := Round{Until: int64(j.Until), Steps: out.res.Steps, Score: out.score.Value, Extra: out.score.Extra, Undefined: out.score.Undefined, PerCase: out.score.PerCase,
		Checkpoint: out.res.Checkpoint, SHA256: out.res.SHA256, Took: out.took, Place: j.Place.Name}
	f.Rounds = append(f.Rounds, rd)
	f.Status, f.Steps, f.Took, f.Compute, f.Error = FoldDone, out.res.Steps, f.Took+out.took, out.res.Compute, ""
	best := f.Rounds[0]
	for _, x := range f.Rounds {
		// The best round with a score, a later one on a tie; of rounds whose scores are
		// all undefined (no evidence), the latest, which trained most.
		if x.Undefined == "" && (best.Undefined != "" || x.Score >= best.Score) || x.Undefined != "" && best.Undefined != "" {
			best = x
		}
	}
	f.Checkpoint, f.SHA256, f.Score, f.Extra, f.Undefined, f.PerCase, f.Lacks = best.Checkpoint, best.SHA256, best.Score, best.Extra, best.Undefined, best.PerCase, fl.Lacks(0)
	l.Folds[0] = f
	r.logf("lane %s round %d: validation %s after %d steps (%v, %.3g s a step), trained on %s", l.ID, rung+1, out.score, out.res.Steps, out.took.Round(time.Second), out.stepTime.Seconds()/float64(max(out.res.Steps-int64(j.From), 1)), trainedOn(out.res.Compute))
	// The round's time counts its validation, which the run's clock counts too: a round
	// planned without it ran past exploration's share and the reserve.
	return schedule.Outcome{Steps: int(out.res.Steps), Score: out.score.Value, Took: out.took + out.validated, StepTime: out.stepTime, Waited: min(out.res.Queued, out.took), Validated: out.validated, Undefined: out.score.Undefined != ""}, r.save()
}

// trainSpec is one training request of a lane.
type trainSpec struct {
	lane       *LaneState
	fold       int    // the fold, or -1 for every training case
	audit      string // the lane name of its lane.trained entry ("<lane>.f0", "<lane>.all")
	work       string
	cfg        []byte
	train, val []task.Case
	resume     string
	until      int64
	limit      time.Duration
	place      Place
	seed       int64
}

// trained is what trainOne gives back: the result, its wall time, the time its steps took
// (from the first progress event after the start to the last), and the host's validation
// score (nil without validation cases).
type trained struct {
	res      *Trained
	took     time.Duration
	stepTime time.Duration
	score    *evaluate.Score
	// validated is the time the validation prediction and its scoring took, after took.
	validated time.Duration
}

// trainOne trains s through the executor, records it in the audit log and scores its
// checkpoint on s.val with the host's metric.
func (r *Runner) trainOne(ctx context.Context, s trainSpec) (*trained, error) {
	entry, err := r.env.Catalog.Find(s.lane.Plugin)
	if err != nil {
		return nil, err
	}
	pt, err := r.protoTask()
	if err != nil {
		return nil, err
	}
	train, err := r.handed.Cases(s.train)
	if err != nil {
		return nil, err
	}
	val, err := r.handed.Cases(s.val)
	if err != nil {
		return nil, err
	}
	labels := r.handed.Labels(r.labels)
	id := s.audit
	bound := ""
	if s.limit > 0 {
		bound = fmt.Sprintf(" for at most %v", s.limit.Round(time.Second))
	}
	target := fmt.Sprintf(" to step %d", s.until)
	if s.until >= math.MaxInt32 {
		// The schedule's "no step bound" (a lane whose step time is not known yet): the
		// time limit ends the round.
		target = ""
	}
	r.emit(Event{Phase: r.st.Phase, Lane: s.lane.ID, Fold: s.fold, Message: fmt.Sprintf("training %s%s%s on %s", id, target, bound, s.place.Name)})
	began := r.now()
	var t0, t1 time.Time
	var s0, s1 int64
	res, err := r.exec.Train(ctx, &TrainJob{RunID: r.st.ID, ID: id, Entry: entry, Request: protocol.TrainRequest{
		Task: pt, Config: s.cfg, Train: predict.Cases(train, labels), Validation: predict.Cases(val, labels),
		WorkDir: s.work, ResumeFrom: s.resume, Seed: s.seed, TimeLimit: s.limit, Until: s.until,
	}, Memory: s.lane.Schedule.Memory}, s.place, func(p *protocol.Progress) {
		now := r.now()
		if p.Losses != nil {
			if t0.IsZero() {
				t0, s0 = now, p.Step
			}
			t1, s1 = now, p.Step
		}
		p = capETA(p, s.limit, now.Sub(began))
		r.emit(Event{Phase: r.st.Phase, Lane: s.lane.ID, Fold: s.fold, Progress: p, Message: p.Message})
		if p.Checkpoint != "" {
			// Recorded at once, so that a run killed now resumes from it.
			r.mu.Lock()
			if s.fold >= 0 {
				f := s.lane.Folds[s.fold]
				f.LastCheckpoint = p.Checkpoint
				s.lane.Folds[s.fold] = f
			} else if r.st.Final != nil {
				r.st.Final.Last = p.Checkpoint
			}
			if err := r.save(); err != nil {
				r.logf("run state: %v", err)
			}
			r.mu.Unlock()
		}
	})
	took := r.now().Sub(began)
	if err == nil && s.limit > 0 && took > s.limit {
		// What the plugin's clock does not count: the schedule leaves it before the
		// reserve (schedule.Lane.Outside, Runner.trainLeft).
		r.logf("%s took %v, %v past its %v limit", id, took.Round(10*time.Millisecond), (took - s.limit).Round(10*time.Millisecond), s.limit.Round(10*time.Millisecond))
	}
	if err != nil {
		if ctx.Err() == nil {
			r.logf("%s failed: %v", id, err)
			r.mu.Lock()
			aerr := r.record(audit.PluginRole(s.lane.Plugin), "lane.failed", nil, nil, map[string]any{"lane": id, "fold": s.fold, "reason": err.Error()})
			r.mu.Unlock()
			if aerr != nil {
				return nil, aerr
			}
		}
		return nil, err
	}
	out := &trained{res: res, took: took}
	if s1 > s0 {
		// Progress events come at step ends: the steps between the first and the last took
		// t1 − t0; the first one's time is counted at the same pace.
		per := t1.Sub(t0) / time.Duration(s1-s0)
		out.stepTime = per * time.Duration(res.Steps-startStep(s))
	}
	ids := func(cs []task.Case) []string {
		out := make([]string, len(cs))
		for i, c := range cs {
			out[i] = c.ID
		}
		return out
	}
	if len(s.val) > 0 {
		if out.score, err = r.validate(ctx, filepath.Join(filepath.Dir(s.work), "val"), s.lane, entry.Name, s.cfg, res.Checkpoint, s.val); err != nil {
			return nil, fmt.Errorf("validation: %w", err)
		}
		out.validated = r.now().Sub(began) - took
	}
	// The validation score as the audit log records it: null when it is undefined, with
	// the reason beside it.
	var score *float64
	undefined := ""
	if out.score != nil {
		score, undefined = finite.Maybe(out.score.Value, out.score.Undefined != ""), out.score.Undefined
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.record(audit.PluginRole(s.lane.Plugin), audit.ActionLaneTrained,
		map[string]string{"plugin": entry.SHA256, "train_ids": idsHash(ids(s.train)), "validation_ids": idsHash(ids(s.val))},
		map[string]string{"checkpoint": res.SHA256},
		map[string]any{"lane": id, "fold": s.fold, "steps": res.Steps, "until": s.until, "score": score, "undefined": undefined, "status": FoldDone, "test_cases_used": 0, "compute": res.Compute, "place": s.place.Name, "resumed_from": s.resume}); err != nil {
		return nil, err
	}
	return out, nil
}

// startStep is the step a request starts from: 0, or its checkpoint's.
func startStep(s trainSpec) int64 {
	if s.resume == "" {
		return 0
	}
	if f, ok := s.lane.Folds[max(s.fold, 0)]; ok {
		for _, rd := range f.Rounds {
			if rd.Checkpoint == s.resume {
				return rd.Steps
			}
		}
		return f.Steps
	}
	return 0
}

// ranked returns the lanes with a finished fold, best mean first, then those whose folds'
// scores are all undefined.
func (r *Runner) ranked() []*LaneState {
	var out, undefined []*LaneState
	for _, l := range r.st.Lanes {
		if _, n := l.Mean(); n > 0 {
			out = append(out, l)
		} else if l.Undefined() != "" {
			undefined = append(undefined, l)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, _ := out[i].Mean()
		b, _ := out[j].Mean()
		return a > b
	})
	// Lanes whose every fold's score is undefined come last, in the plan's order: no
	// score ranks them.
	return append(out, undefined...)
}

// validate predicts the validation cases with a checkpoint of lane l into out and scores
// them.
func (r *Runner) validate(ctx context.Context, out string, l *LaneState, plugin string, cfg []byte, ckpt string, val []task.Case) (*evaluate.Score, error) {
	began := r.now()
	preds, err := r.predict(ctx, plugin, cfg, ckpt, val, out)
	if err != nil {
		return nil, err
	}
	pairs := make([]evaluate.Pair, 0, len(val))
	for _, c := range val {
		files := preds.Files[c.ID]
		if len(files) == 0 {
			return nil, fmt.Errorf("plugin %s wrote no prediction for validation case %s", plugin, c.ID)
		}
		pairs = append(pairs, evaluate.Pair{ID: c.ID, Pred: files[0], Label: r.labels[c.ID]})
	}
	s, err := evaluate.Evaluate(ctx, r.task.Spec(), pairs)
	if err == nil && len(val) > 0 {
		r.timed(l, r.now().Sub(began), len(val))
	}
	return s, err
}

// capETA is progress p with its ETA capped by the job's time limit (0: none), elapsed of
// it spent: the plugin's ETA counts every configured step, and the limit ends it sooner; a
// job past its limit stops at its next step, so its ETA is 0, not the hours its plan has
// left (a degenerate-sweep run showed an ETA of 129260 h once its limit had passed).
func capETA(p *protocol.Progress, limit, elapsed time.Duration) *protocol.Progress {
	if limit <= 0 {
		return p
	}
	if left := max(limit-elapsed, 0); p.ETA > left {
		q := *p
		q.ETA = left
		return &q
	}
	return p
}

// timed records that a validation of n cases by lane l took took, its scoring included
// (the final phases score each post-processing option too). The slowest lane's time per
// case sets the final phases' reserve until a lane has won; then the winner's own slowest
// but its first does: a lane's first validation reads its cases cold (make bench-quality's
// 5-minute ct-dose-iqa kept 43 s for final phases that took 4 s, sized by the forest's
// first validation), and a time per case carries the model's load over the cases of its
// validation, so the latest alone, of a fold of two cases, halved it (the 10-minute
// inia19-bands run kept 33 s for the forest's ensemble, whose final phases took 62 s,
// 3 % past the budget).
func (r *Runner) timed(l *LaneState, took time.Duration, n int) {
	per := r.perCase(took, n)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.PredictPerCase = max(r.st.PredictPerCase, per)
	l.PredictTimes = append(l.PredictTimes, per)
	l.PredictPerCase = per
	if len(l.PredictTimes) > 1 {
		l.PredictPerCase = slices.Max(l.PredictTimes[1:])
	}
}

// perCase is the time a prediction of n cases that took took spent on each, less the
// plugin's start. A prediction faster than the plugin's start counts a microsecond a case:
// 0 would mean that no prediction was timed, and keep the reserve at its fallback (15 % of
// the budget, where the plain classification run's final phases took 7 %).
func (r *Runner) perCase(took time.Duration, n int) time.Duration {
	return max(took-r.st.PluginStart, time.Microsecond) / time.Duration(max(n, 1))
}

// predict runs the plugin's Predict on cases into a fresh folder out and returns the files
// per case.
func (r *Runner) predict(ctx context.Context, plugin string, cfg []byte, ckpt string, cases []task.Case, out string) (*predict.Predicted, error) {
	entry, err := r.env.Catalog.Find(plugin)
	if err != nil {
		return nil, err
	}
	if cases, err = r.handed.Cases(cases); err != nil {
		return nil, err
	}
	return r.exec.Predict(ctx, &PredictJob{Entry: entry, Task: r.task, Config: cfg, Checkpoint: ckpt, Cases: cases, Out: out})
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// trainedOn names the device an identity trained on ("an unknown device" when the plugin
// did not say).
func trainedOn(id compute.Identity) string {
	if id.IsZero() {
		return "an unknown device"
	}
	return id.Device
}
