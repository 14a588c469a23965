package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"amid/host/audit"
	"amid/host/evaluate"
	"amid/host/task"
	"amid/plugins/protocol"
)

// Shares of the budget.
const (
	// finalReserve is the part of the whole budget kept for the final prediction,
	// verification and export.
	finalReserve = 0.15
	// exploreShare is the part of what is left after preparation that exploration uses.
	exploreShare = 0.5
	// minFoldTime is the shortest training worth starting.
	minFoldTime = 5 * time.Second
)

func protoCases(cs []task.Case, labels map[string]string) []protocol.Case {
	out := make([]protocol.Case, len(cs))
	for i, c := range cs {
		out[i] = protocol.Case{ID: c.ID, Images: c.Images}
		if labels != nil {
			out[i].Label = labels[c.ID]
		}
	}
	return out
}

// usable is the time lanes may still train, leaving the final reserve.
func (r *Runner) usable() time.Duration {
	return r.remaining() - r.reserve()
}

// reserve is the time kept for the final phases: 15 % of the budget, or, once a
// validation prediction has been timed, what the final phases' predictions are expected
// to take (the test set twice, for the submission and its reproduction, and the chosen
// fold's validation cases once per post-processing option, counted as four), if more.
func (r *Runner) reserve() time.Duration {
	res := time.Duration(finalReserve * float64(r.st.Budget))
	if r.st.PredictPerCase > 0 {
		n := 2*len(r.data.Test) + 4*len(r.data.Train)/max(r.st.Folds, 2)
		res = max(res, time.Duration(n)*r.st.PredictPerCase)
	}
	return res
}

// explore trains every lane on fold 0.
func (r *Runner) explore(ctx context.Context) error {
	todo := 0
	for _, l := range r.st.Lanes {
		if l.Folds[0].Status != FoldDone && l.Folds[0].Status != FoldFailed {
			todo++
		}
	}
	share := time.Duration(exploreShare * float64(r.usable()))
	for _, l := range r.st.Lanes {
		if f := l.Folds[0]; f.Status == FoldDone || f.Status == FoldFailed {
			continue
		}
		limit := share / time.Duration(max(todo, 1))
		if limit < minFoldTime {
			limit = minFoldTime
		}
		if err := r.trainFold(ctx, l, 0, limit); err != nil {
			return err
		}
		todo--
	}
	for _, l := range r.st.Lanes {
		if l.Folds[0].Status == FoldDone {
			return nil
		}
	}
	return errors.New("every lane failed on the first fold; see the lanes' errors in run.json")
}

// ranked returns the lanes with a finished fold, best mean first.
func (r *Runner) ranked() []*LaneState {
	var out []*LaneState
	for _, l := range r.st.Lanes {
		if _, n := l.Mean(); n > 0 {
			out = append(out, l)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, _ := out[i].Mean()
		b, _ := out[j].Mean()
		return a > b
	})
	return out
}

// exploit trains the better half of the lanes (at most Finalists) on the other folds, fold
// by fold, while the budget allows a fold as long as the first one took.
func (r *Runner) exploit(ctx context.Context) error {
	fl, err := r.folds()
	if err != nil {
		return err
	}
	ranked := r.ranked()
	keep := min(max((len(ranked)+1)/2, 1), r.st.Finalists)
	finalists := ranked[:min(keep, len(ranked))]
	for k := 1; k < fl.K; k++ {
		for _, l := range finalists {
			if f := l.Folds[k]; f.Status == FoldDone || f.Status == FoldFailed {
				continue
			}
			first := l.Folds[0].Took
			left := r.usable()
			if left < max(first, minFoldTime) {
				r.logf("exploitation stops at fold %d: %v left, a fold takes about %v", k, left.Round(time.Second), first.Round(time.Second))
				return nil
			}
			if err := r.trainFold(ctx, l, k, max(first, minFoldTime)); err != nil {
				return err
			}
		}
	}
	return nil
}

// trainFold trains lane l on fold k within limit, predicts the fold's validation cases
// and scores them with the host's metric.
func (r *Runner) trainFold(ctx context.Context, l *LaneState, k int, limit time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fl, err := r.folds()
	if err != nil {
		return err
	}
	train, val, err := fl.Split(r.data.Train, k)
	if err != nil {
		return err
	}
	entry, err := r.env.Catalog.Find(l.Plugin)
	if err != nil {
		return err
	}
	pt, err := r.protoTask()
	if err != nil {
		return err
	}
	work := r.path("lanes", l.ID, fmt.Sprintf("f%d", k))
	laneID := fmt.Sprintf("%s.f%d", l.ID, k)
	resume := ""
	if prev := l.Folds[k]; prev.Status == FoldTraining && prev.LastCheckpoint != "" {
		if _, err := os.Stat(prev.LastCheckpoint); err == nil {
			resume = prev.LastCheckpoint
			r.logf("lane %s fold %d resumes from %s", l.ID, k, resume)
		}
	}
	l.Folds[k] = FoldState{Status: FoldTraining, LastCheckpoint: resume}
	if err := r.save(); err != nil {
		return err
	}
	r.emit(Event{Phase: r.st.Phase, Lane: l.ID, Fold: k, Message: fmt.Sprintf("training lane %s on fold %d for at most %v", l.ID, k, limit.Round(time.Second))})
	began := r.now()
	place := r.exec.Places()[0]
	rec, err := r.exec.Train(ctx, &TrainJob{RunID: r.st.ID, ID: laneID, Entry: entry, Request: protocol.TrainRequest{
		Task: pt, Config: l.Config, Train: protoCases(train, r.labels), Validation: protoCases(val, r.labels),
		WorkDir: work, ResumeFrom: resume, Seed: r.st.Seed + int64(k), TimeLimit: limit,
	}}, place, func(p *protocol.Progress) {
		// The plugin's ETA counts every configured step; the time limit ends it sooner.
		if left := limit - r.now().Sub(began); left >= 0 && p.ETA > left {
			q := *p
			q.ETA = left
			p = &q
		}
		r.emit(Event{Phase: r.st.Phase, Lane: l.ID, Fold: k, Progress: p, Message: p.Message})
		if p.Checkpoint != "" && p.Checkpoint != l.Folds[k].LastCheckpoint {
			// Recorded at once, so that a run killed now resumes the fold from it.
			f := l.Folds[k]
			f.LastCheckpoint = p.Checkpoint
			l.Folds[k] = f
			if err := r.save(); err != nil {
				r.logf("run state: %v", err)
			}
		}
	})
	took := r.now().Sub(began)
	if ctx.Err() != nil {
		return ctx.Err() // the fold stays "training": Resume continues it
	}
	if err != nil {
		l.Folds[k] = FoldState{Status: FoldFailed, Error: err.Error(), Took: took}
		r.logf("lane %s failed on fold %d: %v", l.ID, k, err)
		if aerr := r.record(audit.PluginRole(l.Plugin), "lane.failed", nil, nil, map[string]any{"lane": laneID, "fold": k, "reason": err.Error()}); aerr != nil {
			return aerr
		}
		return r.save()
	}
	fs := FoldState{Status: FoldDone, Checkpoint: rec.Checkpoint, SHA256: rec.SHA256, Steps: rec.Steps, Took: took, Compute: rec.Compute}
	score, perr := r.validate(ctx, l, k, entry.Name, rec.Checkpoint, val)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if perr != nil {
		fs.Status, fs.Error = FoldFailed, "validation: "+perr.Error()
		r.logf("lane %s fold %d: %s", l.ID, k, fs.Error)
	} else {
		fs.Score, fs.Extra = score.Value, score.Extra
		r.logf("lane %s fold %d: validation %s %.4f on %d cases after %d steps (%v)", l.ID, k, score.Metric, score.Value, score.Cases, rec.Steps, took.Round(time.Second))
	}
	l.Folds[k] = fs
	ids := make([]string, len(train))
	for i, c := range train {
		ids[i] = c.ID
	}
	vids := make([]string, len(val))
	for i, c := range val {
		vids[i] = c.ID
	}
	if err := r.record(audit.PluginRole(l.Plugin), audit.ActionLaneTrained,
		map[string]string{"plugin": entry.SHA256, "train_ids": idsHash(ids), "validation_ids": idsHash(vids)},
		map[string]string{"checkpoint": rec.SHA256},
		map[string]any{"lane": laneID, "fold": k, "steps": rec.Steps, "score": fs.Score, "status": fs.Status, "test_cases_used": 0, "compute": rec.Compute}); err != nil {
		return err
	}
	return r.save()
}

// validate predicts the validation cases of fold k and scores them.
func (r *Runner) validate(ctx context.Context, l *LaneState, k int, plugin, ckpt string, val []task.Case) (*evaluate.Score, error) {
	out := r.path("lanes", l.ID, fmt.Sprintf("f%d", k), "val")
	began := r.now()
	preds, err := r.predict(ctx, plugin, l.Config, ckpt, val, out)
	if err != nil {
		return nil, err
	}
	if len(val) > 0 {
		// The slowest lane's time per case sets the final phases' reserve.
		r.st.PredictPerCase = max(r.st.PredictPerCase, r.now().Sub(began)/time.Duration(len(val)))
	}
	pairs := make([]evaluate.Pair, 0, len(val))
	for _, c := range val {
		files := preds.Files[c.ID]
		if len(files) == 0 {
			return nil, fmt.Errorf("plugin %s wrote no prediction for validation case %s", plugin, c.ID)
		}
		pairs = append(pairs, evaluate.Pair{ID: c.ID, Pred: files[0], Label: r.labels[c.ID]})
	}
	return evaluate.Evaluate(ctx, r.task.Spec(), pairs)
}

// predict runs the plugin's Predict on cases into a fresh folder out and returns the files
// per case.
func (r *Runner) predict(ctx context.Context, plugin string, cfg []byte, ckpt string, cases []task.Case, out string) (*Predicted, error) {
	entry, err := r.env.Catalog.Find(plugin)
	if err != nil {
		return nil, err
	}
	return r.exec.Predict(ctx, &PredictJob{Entry: entry, Task: r.task, Config: cfg, Checkpoint: ckpt, Cases: cases, Out: out})
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
