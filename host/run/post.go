package run

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/evaluate"
	"amid/host/planner"
	"amid/host/schedule"
	"amid/host/task"
	"amid/plugins/protocol/schema"
)

// postOptions are the values of the "postprocess" property of a plugin's configuration
// schema, when it has one with an enum.
func postOptions(schema json.RawMessage) []string {
	var s struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	return s.Properties["postprocess"].Enum
}

// postChoices are a plugin's post-processing options (postOptions) and its compiled
// configuration schema, which says which of them a lane's configuration allows (the
// segmentation plugin's "smooth" is its forest lane's only).
type postChoices struct {
	opts   []string
	schema *schema.Schema
}

// postPlugins are the post-processing choices of the plan's plugins that offer two or
// more, by plugin, read from planner-input.json once it exists (nil before).
func (r *Runner) postPlugins() map[string]postChoices {
	if r.postOpts == nil {
		var in planner.Input
		if err := fileio.ReadJSON(r.path("planner-input.json"), &in); err != nil {
			return nil // no plan yet: no lane either
		}
		r.postOpts = map[string]postChoices{}
		for _, p := range in.Plugins {
			opts := postOptions(p.Schema)
			if len(opts) < 2 {
				continue
			}
			// The plan checked every lane against this schema: one that does not
			// compile now offers no choice rather than failing the final phases.
			if s, err := schema.Compile(p.Schema); err == nil {
				r.postOpts[p.Name] = postChoices{opts: opts, schema: s}
			}
		}
	}
	return r.postOpts
}

// laneOptions are the post-processing options lane l's plugin allows for its
// configuration, in the schema's order; nil when fewer than two (nothing to choose).
func (r *Runner) laneOptions(l *LaneState) []string {
	pc, ok := r.postPlugins()[l.Plugin]
	if !ok {
		return nil
	}
	var out []string
	for _, o := range pc.opts {
		if cfg, err := withOption(l.Config, "postprocess", o); err == nil && pc.schema.Check(cfg) == nil {
			out = append(out, o)
		}
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// withOption is the JSON object cfg with key set to value.
func withOption(cfg json.RawMessage, key, value string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(cfg, &m); err != nil {
		return nil, err
	}
	v, _ := json.Marshal(value)
	m[key] = v
	return json.Marshal(m)
}

// postNeed is what one more post-processing option on val cases and the test
// predictions after it take, at per a case: the reserve of one option.
func (r *Runner) postNeed(per time.Duration, val int) time.Duration {
	return schedule.Reserve(per, r.st.PluginStart, len(r.data.Test), val, 1, r.models(), 0) + r.exportTime(r.models())
}

// whileFits calls try on each post-processing option in turn (each predicts val
// validation cases once more and scores them) while it and the test set's predictions
// after it still fit the budget, timed by the option before it (before the first, by the
// slowest validation). The reserve counts every option, but it is an estimate: a late
// start or a slow machine drops the last options rather than the budget. (app/cli's
// TestPlainTaskOfEveryKind: 4 options on 4 validation cases took 2 s of final phases
// that took 3.4 s, where 2.97 s had been kept, and the run ended 0.3 s past its budget.)
func (r *Runner) whileFits(opts []string, val int, try func(o string) error) error {
	per := r.perCaseOf(r.finalLane())
	for i, o := range opts {
		if need := r.postNeed(per, val); per > 0 && r.remaining() < need {
			r.logf("post-processing %s is not tried: %v of the budget left, and %s and the test predictions need about %v", strings.Join(opts[i:], ", "), max(r.remaining(), 0).Round(10*time.Millisecond), o, need.Round(10*time.Millisecond))
			return nil
		}
		began := r.now()
		if err := try(o); err != nil {
			return err
		}
		per = r.perCase(r.now().Sub(began), val)
	}
	return nil
}

// choosePostprocess tries each post-processing option the lane's plugin offers on the
// validation cases of the folds postFolds gives (each with its own fold's model), scores
// each with the host's metric over all those cases, and keeps the best in the lane's
// configuration (the first option on a tie, which for the built-in plugins is none). The
// test set plays no part.
func (r *Runner) choosePostprocess(ctx context.Context, l *LaneState, k int) error {
	opts := r.laneOptions(l)
	if opts == nil {
		return nil
	}
	folds, val, err := r.postFolds(l, k, len(opts))
	if err != nil {
		return err
	}
	n := 0
	for _, v := range val {
		n += len(v)
	}
	scores := map[string]float64{}
	best, bestScore := "", 0.0
	err = r.whileFits(opts, n, func(o string) error {
		cfg, err := withOption(l.Config, "postprocess", o)
		if err != nil {
			return err
		}
		pairs := make([]evaluate.Pair, 0, n)
		for i, kk := range folds {
			out := r.path("lanes", l.ID, fmt.Sprintf("f%d", kk), "post-"+o)
			preds, err := r.predict(ctx, l.Plugin, cfg, l.Folds[kk].Checkpoint, val[i], out)
			if err != nil {
				r.logf("post-processing %s could not be tried: %v", o, err)
				return nil
			}
			for _, c := range val[i] {
				pairs = append(pairs, evaluate.Pair{ID: c.ID, Pred: preds.Files[c.ID][0], Label: r.labels[c.ID]})
			}
		}
		s, err := evaluate.Evaluate(ctx, r.task.Spec(), pairs)
		if err != nil {
			return err
		}
		scores[o] = s.Value
		if best == "" || s.Value > bestScore {
			best, bestScore = o, s.Value
		}
		return nil
	})
	if err != nil {
		return err
	}
	if best == "" {
		return nil
	}
	cfg, err := withOption(l.Config, "postprocess", best)
	if err != nil {
		return err
	}
	l.Config = cfg
	names := make([]string, 0, len(scores))
	for o := range scores {
		names = append(names, o)
	}
	sort.Strings(names)
	var parts []string
	for _, o := range names {
		parts = append(parts, fmt.Sprintf("%s %.4f", o, scores[o]))
	}
	on := fmt.Sprintf("fold %d's validation cases", folds[0])
	if len(folds) > 1 {
		on = fmt.Sprintf("the validation cases of folds %s, each predicted by its own fold's model (%d cases)", joinInts(folds), n)
	}
	why := fmt.Sprintf("post-processing %s chosen on %s (%s)", best, on, strings.Join(parts, ", "))
	r.st.Why = append(r.st.Why, why)
	r.logf("%s", why)
	return r.record(audit.RoleHost, "postprocess.chosen", nil, nil, map[string]any{"lane": l.ID, "fold": folds[0], "folds": folds, "chosen": best, "scores": scores})
}

// postFolds are the folds whose validation cases choosePostprocess tries the options on,
// with those cases: every fold of l with a model when each of the options on all their
// cases (a plugin start a fold) and the test predictions after them fit what is left of
// the budget, else the one among them with the most validation cases (k, the fold of the
// best score, on a tie). One fold's cases are few, and the fold of the best validation
// score can be the one where the options differ least (make bench-quality's 10-minute
// inia19-bands: every option scored 1.0000 on fold 4's one case, and none was kept, where
// fold 0 held two; the forest's five folds had been made).
func (r *Runner) postFolds(l *LaneState, k, options int) ([]int, [][]task.Case, error) {
	fl, err := r.folds()
	if err != nil {
		return nil, nil, err
	}
	var folds []int
	var val [][]task.Case
	n := 0
	for kk := range fl.K {
		if f, ok := l.Folds[kk]; ok && f.Status == FoldDone && f.Checkpoint != "" {
			_, v, err := fl.Split(r.data.Train, kk)
			if err != nil {
				return nil, nil, err
			}
			folds, val, n = append(folds, kk), append(val, v), n+len(v)
		}
	}
	if per := r.perCaseOf(r.finalLane()); len(folds) > 1 && per > 0 {
		extra := time.Duration(1.25 * float64(time.Duration(options*(len(folds)-1))*r.st.PluginStart))
		if r.remaining() >= schedule.Reserve(per, r.st.PluginStart, len(r.data.Test), n, options, r.models(), 0)+extra+r.exportTime(r.models()) {
			return folds, val, nil
		}
	}
	most := -1
	for i, kk := range folds {
		if most < 0 || len(val[i]) > len(val[most]) || len(val[i]) == len(val[most]) && kk == k {
			most = i
		}
	}
	if most >= 0 {
		return folds[most : most+1], val[most : most+1], nil
	}
	_, v, err := fl.Split(r.data.Train, k)
	if err != nil {
		return nil, nil, err
	}
	return []int{k}, [][]task.Case{v}, nil
}

// joinInts is ks as "0, 1, 2".
func joinInts(ks []int) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = strconv.Itoa(k)
	}
	return strings.Join(s, ", ")
}
