package run

import (
	"context"
	"fmt"

	"amid/host/audit"
	"amid/host/evaluate"
	"amid/host/predict"
)

// tryUnion compares, on fold 0's validation cases, the chosen lane with the union of it
// and the next best lane of the same plugin (both trained on fold 0's training cases), and
// keeps the union when it scores higher. The test set plays no part.
func (r *Runner) tryUnion(ctx context.Context, best *LaneState) error {
	if !predict.Unionable(r.task.Spec()) || best.Folds[0].Status != FoldDone {
		return nil
	}
	var other *LaneState
	for _, l := range r.ranked() {
		if l != best && l.Plugin == best.Plugin && l.Folds[0].Status == FoldDone {
			other = l
			break
		}
	}
	if other == nil {
		return nil
	}
	fl, err := r.folds()
	if err != nil {
		return err
	}
	_, val, err := fl.Split(r.data.Train, 0)
	if err != nil {
		return err
	}
	entry, err := r.env.Catalog.Find(best.Plugin)
	if err != nil {
		return err
	}
	members := []predict.Member{
		{Lane: best.ID, PluginConfig: best.Config, Checkpoint: best.Folds[0].Checkpoint, SHA256: best.Folds[0].SHA256},
		{Lane: other.ID, PluginConfig: other.Config, Checkpoint: other.Folds[0].Checkpoint, SHA256: other.Folds[0].SHA256},
	}
	hval, err := r.handed.Cases(val)
	if err != nil {
		return err
	}
	preds, err := r.predictor(entry).Union(ctx, members, false, hval, r.path("lanes", "union", "f0", "val"))
	if err != nil {
		r.logf("the union of %s and %s could not be scored: %v", best.ID, other.ID, err)
		return nil
	}
	pairs := make([]evaluate.Pair, 0, len(val))
	for _, c := range val {
		pairs = append(pairs, evaluate.Pair{ID: c.ID, Pred: preds.Files[c.ID][0], Label: r.labels[c.ID]})
	}
	s, err := evaluate.Evaluate(ctx, r.task.Spec(), pairs)
	if err != nil {
		return err
	}
	single := best.Folds[0].Score
	why := fmt.Sprintf("the union of %s and %s scores %.4f on fold 0's validation cases against %.4f for %s alone", best.ID, other.ID, s.Value, single, best.ID)
	if s.Undefined != "" || best.Folds[0].Undefined != "" {
		why = fmt.Sprintf("no score compares the union of %s and %s with %s alone: the validation is undefined (%s)", best.ID, other.ID, best.ID, firstNonEmpty(s.Undefined, best.Folds[0].Undefined))
	}
	if s.Value <= single || s.Undefined != "" || best.Folds[0].Undefined != "" {
		r.st.Why = append(r.st.Why, why+": the single lane is kept")
		r.logf("%s: the single lane is kept", why)
		return nil
	}
	r.st.Union, r.st.ChosenFold = members, 0
	r.st.Why = append(r.st.Why, why+": the union is chosen")
	r.logf("%s: the union is chosen", why)
	out := map[string]string{}
	for _, m := range members {
		out[m.Lane] = m.SHA256
	}
	return r.record(audit.RoleHost, audit.ActionLaneTrained, nil, out, map[string]any{"lane": r.unionLane(), "members": []string{best.ID, other.ID}, "fold": 0, "score": s.Value, "status": FoldDone})
}

// unionLane names the union, or the fold ensemble, in the audit log and the package.
func (r *Runner) unionLane() string {
	if r.st.Vote && len(r.st.Union) > 0 {
		return "ensemble:" + r.st.Final.Lane
	}
	name := "union"
	for _, m := range r.st.Union {
		name += ":" + m.Lane
	}
	return name + ".f0"
}
