package planner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"amid/plugins/protocol"
)

// Rules is the offline rule-based planner. Before any result it takes every plugin's own
// candidates (each plugin plans from the fingerprint with its own rules, nnU-Net's for
// segmentation, sized to the first round's share), orders them by rules on the
// fingerprint, and keeps as many as the budget allows. With results it keeps the lanes
// that finished, best first, and reads the best lane's validation: where foreground
// classes are confused with each other or one class lags far behind, it adds lanes that
// give the network the context it lacks ([contextLanes]), and nnU-Net's cascade to full
// resolution when a 3d_lowres lane earned it and exploration has time for it ([Cascade]),
// saying why.
type Rules struct {
	// MaxLanes bounds the lanes of the first round, exactly; 0 means 2 per slot, at least 4 (two
	// rounds of successive halving).
	MaxLanes int
	// MinLaneTime is the least time a lane is worth training; the first round keeps no
	// more lanes than Remaining / MinLaneTime × Slots. 0 means 30 s.
	MinLaneTime float64
}

// ErrNoLane means no plugin offered a candidate.
var ErrNoLane = errors.New("no plugin offered a lane for this task")

type fpView struct {
	Anisotropy  float64 `json:"anisotropy"`
	MedianShape [3]int  `json:"median_shape"`
}

// Plan implements Planner.
func (r Rules) Plan(_ context.Context, in Input) ([]Lane, error) {
	if len(in.Results) > 0 {
		return r.refine(in), nil
	}
	var fp fpView
	if len(in.Fingerprint) > 0 {
		if err := json.Unmarshal(in.Fingerprint, &fp); err != nil {
			return nil, fmt.Errorf("rules planner: fingerprint: %w", err)
		}
	}
	type ranked struct {
		lane Lane
		rank int
	}
	var all []ranked
	for _, p := range in.Plugins {
		for i, c := range p.Candidates {
			l := Lane{Name: p.Name + "/" + c.Name, Plugin: p.Name, Config: json.RawMessage(c.Config), Rationale: c.Rationale}
			l.MaxSteps = int(c.MaxSteps)
			rank, why := rule(in, fp, c.Name, i)
			if why != "" {
				l.Rationale = strings.TrimSpace(l.Rationale + "; rules: " + why)
			}
			all = append(all, ranked{l, rank})
		}
	}
	if len(all) == 0 {
		return nil, ErrNoLane
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].rank < all[j].rank })
	keep := r.MaxLanes
	if keep <= 0 {
		keep = max(4, 2*max(in.Slots, 1))
	}
	minLane := r.MinLaneTime
	if minLane <= 0 {
		minLane = 30
	}
	if in.Remaining > 0 {
		fit := int(math.Floor(in.Remaining.Seconds() / minLane * float64(max(in.Slots, 1))))
		keep = min(keep, max(fit, 1))
	}
	out := make([]Lane, 0, min(keep, len(all)))
	for _, a := range all[:min(keep, len(all))] {
		out = append(out, a.lane)
	}
	if learned := slices.IndexFunc(all, func(a ranked) bool { return a.lane.MaxSteps == 0 }); learned >= keep && r.MaxLanes <= 0 {
		// Every lane the budget kept has a cap (a prior's one step, a forest's trees),
		// which bounds its time: the first lane that can use the time a run has is added,
		// and learns while they cannot (amid/host/schedule's challenger of a capped
		// leader). A bound the caller set (MaxLanes) holds as it is.
		l := all[learned].lane
		l.Rationale = strings.TrimSpace(l.Rationale + "; rules: the budget allows " + fmt.Sprint(keep) + " lane(s), every one with a cap on its steps that bounds its time, so a lane that can use a run's time is added")
		out = append(out, l)
	}
	return out, nil
}

// rule ranks a candidate (lower first) and says why, from the fingerprint: thick-slice
// volumes favour 2D lanes, near-isotropic ones 3D; prior lanes, which cost nothing, go
// first so that every run has a baseline, and the segmentation plugin's forest, which
// learns in seconds on any budget, right after them.
func rule(in Input, fp fpView, name string, i int) (int, string) {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "prior"):
		return -10, "a prior lane costs no training and is the baseline learned lanes must beat"
	case in.Kind == "segmentation" && n == laneForest:
		return -8, "a voxel forest learns in seconds whatever the budget, and sees where a voxel lies: the fast lane the networks must beat"
	case in.Kind == "segmentation" && in.Dims == 3 && fp.Anisotropy > 3 && strings.HasPrefix(n, "2d"):
		return i - 5, fmt.Sprintf("anisotropy %.1f > 3 favours in-plane 2D", fp.Anisotropy)
	case in.Kind == "segmentation" && in.Dims == 3 && fp.Anisotropy <= 3 && strings.HasPrefix(n, "3d"):
		return i - 5, fmt.Sprintf("anisotropy %.1f ≤ 3 favours 3D context", fp.Anisotropy)
	}
	return i, ""
}

// refine keeps the lanes that finished with a score, best first, and adds the lanes the
// best one's validation calls for.
func (r Rules) refine(in Input) []Lane {
	res := make([]Result, 0, len(in.Results))
	for _, x := range in.Results {
		if x.Status == "done" && !math.IsNaN(x.Score) {
			res = append(res, x)
		}
	}
	sort.SliceStable(res, func(i, j int) bool {
		if in.HigherIsBetter {
			return res[i].Score > res[j].Score
		}
		return res[i].Score < res[j].Score
	})
	out := make([]Lane, 0, len(res))
	for _, x := range res {
		out = append(out, Lane{Name: x.Lane, Plugin: x.Plugin, Config: x.Config, Rationale: fmt.Sprintf("validation %s %.4f over %d fold(s)", in.Metric, x.Score, x.Folds)})
	}
	if len(res) > 0 {
		out = append(out, contextLanes(in, res[0])...)
	}
	if l, _ := Cascade(in); l != nil {
		out = append(out, *l)
	}
	return out
}

// Lane names of the segmentation plugin's cascade (amid/plugins/segmentation/plan).
const (
	laneFull    = "3d_fullres"
	laneLow     = "3d_lowres"
	laneCascade = "3d_cascade_fullres"
	laneForest  = "forest"
)

// CascadeMargin: a 3d_lowres lane is competitive when its validation score is within
// this of the best lane's (in the metric's units: Dice here). The cascade refines the
// low-resolution segmentation; one far behind the best lane gives it little to refine.
const CascadeMargin = 0.05

// CascadeShare is the share of the exploration time left that the cascade's minimum steps
// may take: its first round shares that time with at least one more round of the lanes
// still explored (the host sizes the round exactly when it adds the lane).
const CascadeShare = 0.5

// Cascade is the rules' answer, after the first round, to whether nnU-Net's cascade is
// worth its time: when a 3d_lowres lane trained a round with a checkpoint, scored within
// CascadeMargin of the best lane, and the cascade's minimum steps at the 3d_fullres
// lane's step time (observed when that lane trained, else the plugin's calibrated
// estimate) fit CascadeShare of what exploration has left, it is the 3d_fullres
// candidate's configuration as lane 3d_cascade_fullres on the 3d_lowres lane's best
// round's checkpoint, saying why. Otherwise the lane is nil and the string says why the
// cascade is not planned, or is empty when there is nothing to say (no 3d_lowres lane
// trained, a plugin without the cascade, a cascade already planned).
func Cascade(in Input) (*Lane, string) {
	var low *Result
	best := math.NaN()
	for i, x := range in.Results {
		if x.Status != "done" || math.IsNaN(x.Score) {
			continue
		}
		switch lane := configLane(x.Config); {
		case lane == laneCascade:
			return nil, ""
		case lane == laneLow && (low == nil || better(in, x.Score, low.Score)):
			low = &in.Results[i]
		}
		if math.IsNaN(best) || better(in, x.Score, best) {
			best = x.Score
		}
	}
	if low == nil {
		return nil, ""
	}
	var plug *Plugin
	for i := range in.Plugins {
		if in.Plugins[i].Name == low.Plugin && bytes.Contains(in.Plugins[i].Schema, []byte(`"`+laneCascade+`"`)) {
			plug = &in.Plugins[i]
		}
	}
	if plug == nil {
		return nil, ""
	}
	no := "no " + laneCascade + ": "
	gap := best - low.Score
	if !in.HigherIsBetter {
		gap = -gap
	}
	if gap > CascadeMargin {
		return nil, fmt.Sprintf("%s%s validated %s %.4f, more than %.2f behind the best lane's %.4f: too little to refine", no, low.Lane, in.Metric, low.Score, CascadeMargin, best)
	}
	if low.Checkpoint == "" || low.SHA256 == "" {
		return nil, no + low.Lane + " has no checkpoint to cascade from"
	}
	var full *protocol.Candidate
	for i, c := range plug.Candidates {
		if c.Name == laneFull {
			full = &plug.Candidates[i]
		}
	}
	if full == nil {
		return nil, no + "the plugin planned no " + laneFull + " lane, whose network the cascade trains"
	}
	step, from, base := full.StepSeconds, "the plugin's calibrated estimate", ""
	for _, x := range in.Results {
		if x.Plugin == plug.Name && (bytes.Equal(x.Config, full.Config) || x.Lane == plug.Name+"/"+laneFull) && x.StepSeconds > 0 {
			step, from, base = x.StepSeconds, "seen when "+x.Lane+" trained", x.Lane
		}
	}
	steps := max(in.MinSteps[""], 1)
	for _, n := range []string{laneFull, laneCascade} {
		if k, ok := in.MinSteps[n]; ok {
			steps = max(k, 1)
		}
	}
	left := in.Explore
	if left <= 0 {
		left = in.Remaining
	}
	need := time.Duration(float64(steps) * step * float64(time.Second))
	cost := fmt.Sprintf("its minimum of %d steps at %.3g s a step (%s) takes about %v", steps, step, from, need.Round(time.Second))
	if step <= 0 || float64(need) > CascadeShare*float64(left) {
		return nil, fmt.Sprintf("%s%s; exploration has %v left, and the cascade may take at most %.0f%% of it", no, cost, left.Round(time.Second), 100*CascadeShare)
	}
	var cfg map[string]json.RawMessage
	if json.Unmarshal(full.Config, &cfg) != nil {
		return nil, no + "the " + laneFull + " configuration is not a JSON object"
	}
	cfg["lane"], _ = json.Marshal(laneCascade)
	cfg["cascade"], _ = json.Marshal(map[string]string{"checkpoint": low.Checkpoint, "sha256": low.SHA256})
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, no + err.Error()
	}
	return &Lane{Name: plug.Name + "/" + laneCascade, Plugin: plug.Name, Config: b, Base: base, Device: full.Device,
		Rationale: fmt.Sprintf("rules after the first round: %s validated %s %.4f, within %.2f of the best lane's %.4f; the cascade to full resolution (nnU-Net's %s) trains the %s network with %s's segmentation (its best round's checkpoint) as input, refining it where the low resolution blurs; %s, within %.0f%% of the %v exploration has left",
			low.Lane, in.Metric, low.Score, CascadeMargin, best, laneCascade, laneFull, low.Lane, cost, 100*CascadeShare, left.Round(time.Second))}, ""
}

// better reports whether score a beats b in the input's metric.
func better(in Input, a, b float64) bool {
	if in.HigherIsBetter {
		return a > b
	}
	return a < b
}

// configLane is the "lane" field of a configuration, "" when it has none.
func configLane(cfg json.RawMessage) string {
	var c struct {
		Lane string `json:"lane"`
	}
	_ = json.Unmarshal(cfg, &c)
	return c.Lane
}

// Thresholds of the refinement, on the best lane's validation.
const (
	// ConfusedShare: foreground classes are confused when this share of one's voxels is
	// predicted as the other (a fifth: more than boundary disagreement between touching
	// structures, which a few voxels' shift explains).
	ConfusedShare = 0.2
	// LagBehind: a class lags when its Dice is this far below the best class's.
	LagBehind = 0.4
	// MaxRefined is the most lanes one refinement adds.
	MaxRefined = 2
)

// contextLanes proposes, from the best lane's per-class scores and confusions, lanes that
// give the network more context: position as input (coordinate channels) where classes
// that look alike lie in different places, more neighbouring slices for a 2.5D lane, and
// the plugin's own context lanes (2.5D, a low-resolution 3D lane) not trained yet. Each
// says what it fixes.
func contextLanes(in Input, best Result) []Lane {
	why := diagnose(best.Extra)
	if why == "" {
		return nil
	}
	var plug *Plugin
	for i := range in.Plugins {
		if in.Plugins[i].Name == best.Plugin {
			plug = &in.Plugins[i]
		}
	}
	if plug == nil {
		return nil
	}
	var cfg map[string]json.RawMessage
	if json.Unmarshal(best.Config, &cfg) != nil {
		return nil
	}
	props := schemaProps(plug.Schema)
	var out []Lane
	add := func(name string, c map[string]json.RawMessage, fix string) {
		b, err := json.Marshal(c)
		if err != nil || len(out) >= MaxRefined {
			return
		}
		out = append(out, Lane{Name: name, Plugin: best.Plugin, Config: b, Base: best.Lane,
			Rationale: fmt.Sprintf("rules after the first round: in %s %s; %s", best.Lane, why, fix)})
	}
	if _, ok := props["coords"]; ok && string(cfg["coords"]) != "true" {
		c := clone(cfg)
		c["coords"] = json.RawMessage("true")
		add(best.Lane+"+coords", c, "position as input (coordinate channels) tells apart structures that look alike but lie in different places")
	}
	if p, ok := props["slices"]; ok && string(cfg["lane"]) == `"2.5d"` {
		var n int
		_ = json.Unmarshal(cfg["slices"], &n)
		if n += 4; p.Maximum == 0 || float64(n) <= p.Maximum {
			c := clone(cfg)
			c["slices"], _ = json.Marshal(n)
			add(fmt.Sprintf("%s+%dslices", best.Lane, n), c, fmt.Sprintf("%d neighbouring slices give more context along the slice axis", n))
		}
	}
	for _, c := range plug.Candidates {
		n := strings.ToLower(c.Name)
		if !strings.Contains(n, "lowres") && !strings.Contains(n, "2.5d") {
			continue
		}
		trained := false
		for _, r := range in.Results {
			trained = trained || bytes.Equal(r.Config, c.Config) || r.Lane == plug.Name+"/"+c.Name
		}
		if !trained {
			var m map[string]json.RawMessage
			if json.Unmarshal(c.Config, &m) == nil {
				add(plug.Name+"/"+c.Name, m, c.Name+" sees more context at its own price: "+c.Rationale)
			}
		}
	}
	return out
}

// diagnose says what the validation figures of a lane show that more context could fix:
// the worst confusion between foreground classes over ConfusedShare, or a class whose Dice
// lags LagBehind behind the best class's; "" when neither.
func diagnose(extra map[string]float64) string {
	worst, pair := 0.0, ""
	dice := map[string]float64{}
	for k, v := range extra {
		if strings.HasPrefix(k, "confusion_") && v > worst {
			worst, pair = v, strings.TrimPrefix(k, "confusion_")
		}
		if strings.HasPrefix(k, "dice_") {
			dice[strings.TrimPrefix(k, "dice_")] = v
		}
	}
	if worst >= ConfusedShare {
		ab := strings.SplitN(pair, "_", 2)
		return fmt.Sprintf("%.0f%% of class %s's voxels are predicted as class %s", 100*worst, ab[0], ab[1])
	}
	hi, lo, loName := 0.0, 1.0, ""
	for k, v := range dice {
		hi = max(hi, v)
		if v < lo || v == lo && k < loName {
			lo, loName = v, k
		}
	}
	if len(dice) > 1 && hi-lo >= LagBehind {
		return fmt.Sprintf("class %s's Dice %.2f lags %.2f behind the best class's", loName, lo, hi-lo)
	}
	return ""
}

type schemaProp struct {
	Maximum float64 `json:"maximum"`
}

// schemaProps are the properties of a configuration's JSON schema.
func schemaProps(schema json.RawMessage) map[string]schemaProp {
	var s struct {
		Properties map[string]schemaProp `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	return s.Properties
}

func clone(m map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
