package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"amid/host/audit"
	"amid/host/catalog"
	"amid/host/evaluate"
	"amid/host/supervisor"
	"amid/host/task"
	"amid/plugins/taskspec"
	"amid/viewer/fileio"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// Member is one model of a union ensemble: a lane's fold-0 checkpoint and configuration.
type Member struct {
	Lane         string          `json:"lane"`
	PluginConfig json.RawMessage `json:"plugin_config"`
	Checkpoint   string          `json:"checkpoint"` // a path in a run; a file name under model/ in a package
	SHA256       string          `json:"sha256"`
}

// unionable reports whether predictions of the task's kind can be combined: the mean of
// regressed scores (iqa), the mean of enhanced images, the union of binary masks.
func unionable(s *taskspec.Spec) bool {
	switch s.Kind {
	case taskspec.IQA, taskspec.Enhancement:
		return true
	case taskspec.Segmentation:
		return !s.Instances && len(s.Labels) == 2
	}
	return false
}

// combinable reports whether a fold ensemble's predictions of the task's kind can be
// combined: a vote of label maps (segmentation without instances), the mean of scores
// (iqa) or of images (enhancement).
func combinable(s *taskspec.Spec) bool {
	switch s.Kind {
	case taskspec.IQA, taskspec.Enhancement:
		return true
	case taskspec.Segmentation:
		return !s.Instances
	}
	return false
}

// combine writes the members' prediction files of one case combined to out, named as the
// first member's file: the union of binary masks, or with vote each voxel's most frequent
// label (the earliest member's on a tie); the mean of scores and images.
func combine(s *taskspec.Spec, files []string, outDir string, vote bool) (string, error) {
	out := filepath.Join(outDir, filepath.Base(files[0]))
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	if s.Kind == taskspec.IQA {
		var sum float64
		for _, f := range files {
			a, err := taskspec.ReadAnnotation(f, s)
			if err != nil {
				return "", err
			}
			if a.Score == nil {
				return "", fmt.Errorf("%s has no score", f)
			}
			sum += *a.Score
		}
		mean := sum / float64(len(files))
		b, err := (&taskspec.Annotation{Score: &mean}).Marshal()
		if err != nil {
			return "", err
		}
		err = fileio.Write(out, b)
		return out, err
	}
	if vote && s.Kind == taskspec.Segmentation {
		return out, voteLabels(files, out)
	}
	var acc *volume.Volume
	var vals []float64
	for i, f := range files {
		v, err := imageio.Read(f)
		if err != nil {
			return "", err
		}
		if i == 0 {
			acc, vals = v, make([]float64, v.Len())
		} else if v.Dims != acc.Dims {
			return "", fmt.Errorf("%s is %v but %s is %v", f, v.Dims, files[0], acc.Dims)
		}
		for j := range vals {
			x := v.AtIndex(j)
			if s.Kind == taskspec.Segmentation {
				vals[j] = max(vals[j], x) // union of 0 / label masks
			} else {
				vals[j] += x / float64(len(files))
			}
		}
	}
	for j, x := range vals {
		acc.SetIndex(j, x)
	}
	return out, imageio.Write(out, acc)
}

// voteLabels writes to out each voxel's most frequent label among the label maps files,
// the earliest file's label on a tie.
func voteLabels(files []string, out string) error {
	vols := make([]*volume.Volume, len(files))
	for i, f := range files {
		v, err := imageio.Read(f)
		if err != nil {
			return err
		}
		if i > 0 && v.Dims != vols[0].Dims {
			return fmt.Errorf("%s is %v but %s is %v", f, v.Dims, files[0], vols[0].Dims)
		}
		vols[i] = v
	}
	acc := vols[0] // each voxel is written after every member's value of it was read
	count := map[float64]int{}
	for j := range acc.Len() {
		clear(count)
		n := 0
		for _, v := range vols {
			x := v.AtIndex(j)
			count[x]++
			n = max(n, count[x])
		}
		for _, v := range vols {
			if x := v.AtIndex(j); count[x] == n {
				acc.SetIndex(j, x)
				break
			}
		}
	}
	return imageio.Write(out, acc)
}

// predictUnion predicts cases with every member and writes their union (or vote) into out.
// The members run in processes of the same plugin on this machine, so the union's compute
// identity is theirs (the first member's).
func predictUnion(ctx context.Context, entry *catalog.Entry, opts supervisor.Options, t *task.Task, members []Member, vote bool, cases []task.Case, out string) (*Predicted, error) {
	if err := os.RemoveAll(out); err != nil {
		return nil, err
	}
	var all []*Predicted
	for _, m := range members {
		p, err := Predict(ctx, entry, opts, t, m.PluginConfig, m.Checkpoint, cases, filepath.Join(out+".members", m.Lane))
		if err != nil {
			return nil, err
		}
		all = append(all, p)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	res := map[string][]string{}
	for _, c := range cases {
		var files []string
		for _, p := range all {
			files = append(files, p.Files[c.ID][0])
		}
		f, err := combine(t.Spec(), files, out, vote)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.ID, err)
		}
		res[c.ID] = []string{f}
	}
	return &Predicted{Files: res, Compute: all[0].Compute}, os.RemoveAll(out + ".members")
}

// tryUnion compares, on fold 0's validation cases, the chosen lane with the union of it
// and the next best lane of the same plugin (both trained on fold 0's training cases), and
// keeps the union when it scores higher. The test set plays no part.
func (r *Runner) tryUnion(ctx context.Context, best *LaneState) error {
	if !unionable(r.task.Spec()) || best.Folds[0].Status != FoldDone {
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
	members := []Member{
		{Lane: best.ID, PluginConfig: best.Config, Checkpoint: best.Folds[0].Checkpoint, SHA256: best.Folds[0].SHA256},
		{Lane: other.ID, PluginConfig: other.Config, Checkpoint: other.Folds[0].Checkpoint, SHA256: other.Folds[0].SHA256},
	}
	hval, err := r.handed.casesOf(val)
	if err != nil {
		return err
	}
	preds, err := predictUnion(ctx, entry, r.env.Supervisor, r.task, members, false, hval, r.path("lanes", "union", "f0", "val"))
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
