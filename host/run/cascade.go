package run

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"amid/assets/fileio"
	"amid/host/folds"
	"amid/host/schedule"
)

// A cascade lane (amid/host/planner.Cascade) names in its configuration the 3d_lowres
// checkpoint whose segmentation its network takes as input: the low-resolution lane's best
// round on fold 0. A fold ensemble of the cascade cannot give every fold that network, which
// was trained on the other folds' validation cases: fold k's cascade takes the 3d_lowres
// lane trained on fold k's own training cases (as nnU-Net's cascade takes its fold's
// 3d_lowres model), trained here, before it, to the step of that fold-0 checkpoint.

// cascadeRef is a cascade configuration's "cascade" field.
type cascadeRef struct {
	Checkpoint string `json:"checkpoint"`
	SHA256     string `json:"sha256"`
}

// cascadeOf is the low-resolution checkpoint configuration cfg names, nil when it names
// none (not a cascade).
func cascadeOf(cfg json.RawMessage) *cascadeRef {
	var c struct {
		Cascade *cascadeRef `json:"cascade"`
	}
	if json.Unmarshal(cfg, &c) != nil || c.Cascade == nil || c.Cascade.SHA256 == "" {
		return nil
	}
	return c.Cascade
}

// withCascade is configuration cfg naming the low-resolution checkpoint ref.
func withCascade(cfg json.RawMessage, ref cascadeRef) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(cfg, &m); err != nil {
		return nil, err
	}
	m["cascade"], _ = json.Marshal(ref)
	return json.Marshal(m)
}

// lowresOf is the lane whose fold-0 round made the low-resolution checkpoint that the
// cascade lane w's configuration names, and that round; nil when w is no cascade.
func (s *State) lowresOf(w *LaneState) (*LaneState, Round, error) {
	ref := cascadeOf(w.Config)
	if ref == nil {
		return nil, Round{}, nil
	}
	for _, l := range s.Lanes {
		for _, rd := range l.Folds[0].Rounds {
			if l != w && rd.SHA256 == ref.SHA256 {
				return l, rd, nil
			}
		}
	}
	return nil, Round{}, fmt.Errorf("the low-resolution checkpoint %s that cascade %s builds on is no round of this run's lanes", ref.Checkpoint, w.ID)
}

// lowresCost is the time the low-resolution lane low takes to train to rd's step on every
// fold but the first (folds in all), at the pace it trained at.
func lowresCost(low *LaneState, rd Round, folds int) time.Duration {
	per := float64(rd.Steps)*max(low.Schedule.StepSeconds, 1e-6) + low.Schedule.Overhead
	return time.Duration(float64(max(folds-1, 0)) * per * float64(time.Second))
}

// foldLowres is the configuration of fold k of the cascade w of configuration cfg: fold 0
// keeps the low-resolution checkpoint it names (trained on fold 0's training cases); fold
// k > 0 names the low-resolution lane low trained on fold k's training cases to rd's step,
// trained now unless the run holds it already. The low-resolution fold is recorded as
// fold k of low.
func (r *Runner) foldLowres(ctx context.Context, w, low *LaneState, rd Round, fl *folds.Folds, k int, cfg json.RawMessage) (json.RawMessage, error) {
	if k == 0 {
		return cfg, nil
	}
	f := low.Folds[k]
	if f.Status != FoldDone || f.SHA256 == "" {
		train, val, err := fl.Split(r.data.Train, k)
		if err != nil {
			return nil, err
		}
		work := r.path("lanes", low.ID, fmt.Sprintf("f%d", k), "final")
		resume := ""
		if fileio.Within(work, f.LastCheckpoint) {
			resume = f.LastCheckpoint
		}
		low.Folds[k] = FoldState{Status: FoldTraining, LastCheckpoint: resume, Steps: f.Steps}
		if err := r.save(); err != nil {
			return nil, err
		}
		from := int64(0)
		if resume != "" {
			from = f.Steps
		}
		expected := time.Duration((float64(rd.Steps-from)*max(low.Schedule.StepSeconds, 1e-6) + low.Schedule.Overhead) * float64(time.Second))
		limit := max(min(time.Duration(schedule.LimitSlack*float64(expected)), r.usable()), 0)
		out, err := r.trainOne(ctx, trainSpec{
			lane: low, fold: k, audit: fmt.Sprintf("%s.f%d", low.ID, k), work: work, cfg: low.Config, train: train, val: val,
			resume: resume, until: rd.Steps, limit: limit, place: r.placeOf(low), seed: r.st.Seed + int64(k),
		})
		if err != nil {
			low.Folds[k] = FoldState{Status: FoldFailed, Error: err.Error()}
			return nil, fmt.Errorf("the low-resolution network of fold %d of %s: %w", k, w.ID, err)
		}
		f = FoldState{Status: FoldDone, Checkpoint: out.res.Checkpoint, SHA256: out.res.SHA256, Steps: out.res.Steps,
			Score: out.score.Value, Extra: out.score.Extra, Undefined: out.score.Undefined, PerCase: out.score.PerCase, Took: out.took, Compute: out.res.Compute, Lacks: fl.Lacks(k)}
		low.Folds[k] = f
		r.logf("lane %s fold %d (the low-resolution network of %s's fold %d): validation %s after %d steps, trained on %s%s",
			low.ID, k, w.ID, k, out.score, out.res.Steps, trainedOn(out.res.Compute), lacksText(f.Lacks))
		if err := r.save(); err != nil {
			return nil, err
		}
	}
	return withCascade(cfg, cascadeRef{Checkpoint: f.Checkpoint, SHA256: f.SHA256})
}
