package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Rules is the offline rule-based planner. Before any result it takes every plugin's own
// candidates (each plugin plans from the fingerprint with its own rules, nnU-Net's for
// segmentation), orders them by rules on the fingerprint, and keeps as many as the budget
// allows; with results it keeps the lanes that finished, best first, for the scheduler's
// next round.
type Rules struct {
	// MaxLanes bounds the lanes of the first round; 0 means 2 per slot, at least 2.
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
			l := Lane{Name: p.Name + "/" + c.Name, Plugin: p.Name, Config: json.RawMessage(c.Config), Rationale: c.Rationale,
				Device: c.Device, DeviceBytes: c.DeviceBytes}
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
		keep = max(2, 2*max(in.Slots, 1))
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
	return out, nil
}

// rule ranks a candidate (lower first) and says why, from the fingerprint: thick-slice
// volumes favour 2D lanes, near-isotropic ones 3D; prior lanes, which cost nothing, go
// first so that every run has a baseline.
func rule(in Input, fp fpView, name string, i int) (int, string) {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "prior"):
		return -10, "a prior lane costs no training and is the baseline learned lanes must beat"
	case in.Kind == "segmentation" && in.Dims == 3 && fp.Anisotropy > 3 && strings.HasPrefix(n, "2d"):
		return i - 5, fmt.Sprintf("anisotropy %.1f > 3 favours in-plane 2D", fp.Anisotropy)
	case in.Kind == "segmentation" && in.Dims == 3 && fp.Anisotropy <= 3 && strings.HasPrefix(n, "3d"):
		return i - 5, fmt.Sprintf("anisotropy %.1f ≤ 3 favours 3D context", fp.Anisotropy)
	}
	return i, ""
}

// refine keeps the lanes that finished with a score, best first.
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
	return out
}
