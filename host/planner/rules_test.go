package planner

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"amid/plugins/protocol"
)

func input(anisotropy float64, remaining time.Duration) Input {
	fp, _ := json.Marshal(map[string]any{"anisotropy": anisotropy})
	return Input{Kind: "segmentation", Dims: 3, Fingerprint: fp, Slots: 1, Remaining: remaining, HigherIsBetter: true,
		Plugins: []Plugin{
			{Name: "segmentation", Candidates: []protocol.Candidate{{Name: "2d", Config: []byte(`{}`)}, {Name: "3d_fullres", Config: []byte(`{}`)}}},
			{Name: "other", Candidates: []protocol.Candidate{{Name: "prior", Config: []byte(`{}`), MaxSteps: 1}}},
		}}
}

func names(ls []Lane) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return out
}

func TestRulesOrder(t *testing.T) {
	// Thick slices (anisotropy 5 > 3): 2D first after the prior.
	got, err := Rules{MaxLanes: 3}.Plan(context.Background(), input(5, 0))
	if err != nil {
		t.Fatal(err)
	}
	if n := names(got); len(n) != 3 || n[0] != "other/prior" || n[1] != "segmentation/2d" {
		t.Errorf("anisotropic order %v", n)
	}
	// Near-isotropic: 3D first after the prior.
	got, _ = Rules{MaxLanes: 3}.Plan(context.Background(), input(1.2, 0))
	if n := names(got); n[1] != "segmentation/3d_fullres" {
		t.Errorf("isotropic order %v", n)
	}
	// 40 s left at 30 s a lane on one slot: one lane, and the first without a cap beside
	// the prior (TestRulesPriorNotAlone).
	got, _ = Rules{}.Plan(context.Background(), input(1.2, 40*time.Second))
	if len(got) != 2 {
		t.Errorf("%d lanes for 40 s, want the prior and one more", len(got))
	}
	if _, err := (Rules{}).Plan(context.Background(), Input{}); !errors.Is(err, ErrNoLane) {
		t.Errorf("no candidates: %v", err)
	}
}

func TestRulesRefine(t *testing.T) {
	in := input(1, 0)
	in.Results = []Result{
		{Lane: "a", Score: 0.5, Status: "done", Folds: 1},
		{Lane: "b", Score: 0.7, Status: "done", Folds: 2},
		{Lane: "c", Score: math.NaN(), Status: "failed"},
	}
	got, err := Rules{}.Plan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if n := names(got); len(n) != 2 || n[0] != "b" || n[1] != "a" {
		t.Errorf("refined %v, want [b a]", n)
	}
}

// TestRulesContext: when the best lane confuses two foreground classes, the refinement
// adds the best lane with coordinate channels and the plugin's untrained context lane,
// each saying what it fixes; with clean per-class scores it adds nothing.
func TestRulesContext(t *testing.T) {
	in := input(1, 0)
	in.Plugins[0].Schema = json.RawMessage(`{"properties":{"coords":{"type":"boolean"},"slices":{"maximum":15}}}`)
	in.Plugins[0].Candidates = append(in.Plugins[0].Candidates, protocol.Candidate{Name: "3d_lowres", Config: []byte(`{"lane":"3d_fullres","low":1}`), Rationale: "half resolution"})
	in.Results = []Result{{Lane: "segmentation/2d", Plugin: "segmentation", Config: []byte(`{"lane":"2d"}`), Score: 0.4, Status: "done", Folds: 1,
		Extra: map[string]float64{"dice_1": 0.8, "dice_2": 0.3, "confusion_2_1": 0.35}}}
	got, err := Rules{}.Plan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if n := names(got); len(n) != 3 || n[1] != "segmentation/2d+coords" || n[2] != "segmentation/3d_lowres" {
		t.Fatalf("refined %v", n)
	}
	if !strings.Contains(got[1].Rationale, "35% of class 2's voxels are predicted as class 1") || !strings.Contains(string(got[1].Config), `"coords":true`) || got[1].Base != "segmentation/2d" {
		t.Errorf("coords lane: %+v", got[1])
	}
	in.Results[0].Extra = map[string]float64{"dice_1": 0.8, "dice_2": 0.7}
	if got, _ := (Rules{}).Plan(context.Background(), in); len(got) != 1 {
		t.Errorf("clean scores: refined %v", names(got))
	}
}

// TestRulesCascade: after a round in which the 3d_lowres lane scored within CascadeMargin
// of the best lane, the rules add the cascade on its best round's checkpoint when its
// minimum steps fit half of what exploration has left, and say why not when they do not,
// or when the 3d_lowres lane lags.
func TestRulesCascade(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	in := input(1, 20*time.Minute)
	in.Metric = "dice"
	in.Plugins[0].Schema = json.RawMessage(`{"properties":{"lane":{"enum":["2d","3d_fullres","3d_lowres","3d_cascade_fullres"]}}}`)
	in.Plugins[0].Candidates[1] = protocol.Candidate{Name: "3d_fullres", Config: []byte(`{"lane":"3d_fullres","patch":[32,64,64]}`), StepSeconds: 0.5}
	in.MinSteps = map[string]int{"": 100}
	in.Results = []Result{
		{Lane: "segmentation/2d", Plugin: "segmentation", Config: []byte(`{"lane":"2d"}`), Score: 0.62, Status: "done", Folds: 1},
		{Lane: "segmentation/3d_lowres", Plugin: "segmentation", Config: []byte(`{"lane":"3d_lowres"}`), Score: 0.60, Status: "done", Folds: 1,
			Checkpoint: "/run/lanes/low/f0/r0/final.ckpt", SHA256: sum},
	}
	// 100 steps at 0.5 s (the plugin's estimate) = 50 s ≤ half of 10 minutes.
	in.Explore = 10 * time.Minute
	l, why := Cascade(in)
	if l == nil {
		t.Fatalf("no cascade: %s", why)
	}
	var cfg struct {
		Lane    string         `json:"lane"`
		Patch   []int          `json:"patch"`
		Cascade map[string]any `json:"cascade"`
	}
	if err := json.Unmarshal(l.Config, &cfg); err != nil {
		t.Fatal(err)
	}
	if l.Name != "segmentation/3d_cascade_fullres" || cfg.Lane != "3d_cascade_fullres" || len(cfg.Patch) != 3 ||
		cfg.Cascade["checkpoint"] != "/run/lanes/low/f0/r0/final.ckpt" || cfg.Cascade["sha256"] != sum || l.Base != "" {
		t.Errorf("cascade lane %s %s base %q", l.Name, l.Config, l.Base)
	}
	for _, s := range []string{"within 0.05 of the best lane's 0.6200", "minimum of 100 steps at 0.5 s a step (the plugin's calibrated estimate) takes about 50s"} {
		if !strings.Contains(l.Rationale, s) {
			t.Errorf("rationale %q lacks %q", l.Rationale, s)
		}
	}
	got, err := Rules{}.Plan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if n := names(got); n[len(n)-1] != "segmentation/3d_cascade_fullres" {
		t.Errorf("refined %v, want the cascade last", n)
	}

	// The 3d_fullres lane trained at 4 s a step: 400 s > half of 10 minutes.
	in.Results = append(in.Results, Result{Lane: "segmentation/3d_fullres", Plugin: "segmentation", Config: in.Plugins[0].Candidates[1].Config, Score: 0.5, Status: "done", Folds: 1, StepSeconds: 4})
	if l, why := Cascade(in); l != nil || !strings.Contains(why, "minimum of 100 steps at 4 s a step (seen when segmentation/3d_fullres trained) takes about 6m40s; exploration has 10m0s left") {
		t.Errorf("cascade %v, why %q; want none, for its 6m40s", l, why)
	}
	// With 20 minutes left it fits, with the observed step time and the lane it changes.
	in.Explore = 20 * time.Minute
	if l, why := Cascade(in); l == nil || l.Base != "segmentation/3d_fullres" || !strings.Contains(l.Rationale, "seen when segmentation/3d_fullres trained") {
		t.Errorf("cascade %+v, why %q", l, why)
	}
	// A 3d_lowres lane 0.12 behind the best is not worth refining.
	in.Results[1].Score = 0.50
	if l, why := Cascade(in); l != nil || !strings.Contains(why, "more than 0.05 behind the best lane's 0.6200") {
		t.Errorf("cascade %v, why %q", l, why)
	}
	// A cascade already trained, or no 3d_lowres lane: nothing to say.
	in.Results[1].Score = 0.61
	in.Results = append(in.Results, Result{Lane: "segmentation/3d_cascade_fullres", Plugin: "segmentation", Config: []byte(`{"lane":"3d_cascade_fullres"}`), Score: 0.7, Status: "done"})
	if l, why := Cascade(in); l != nil || why != "" {
		t.Errorf("a second cascade: %v, %q", l, why)
	}
	if l, why := Cascade(input(1, time.Hour)); l != nil || why != "" {
		t.Errorf("no 3d_lowres lane: %v, %q", l, why)
	}
}

// TestRulesForestEarly: the segmentation plugin's forest, listed last, ranks right after
// the prior, before the networks the fingerprint favours, so that a budget of two lanes
// keeps it.
func TestRulesForestEarly(t *testing.T) {
	in := input(1.2, 0)
	in.Plugins[0].Candidates = append(in.Plugins[0].Candidates, protocol.Candidate{Name: "forest", Config: []byte(`{}`)})
	got, err := Rules{MaxLanes: 2}.Plan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if n := names(got); len(n) != 2 || n[0] != "other/prior" || n[1] != "segmentation/forest" {
		t.Errorf("order %v, want the prior and the forest", n)
	}
}

// TestRulesPriorNotAlone: when the budget allows one lane, the prior (ranked first, as it
// costs nothing) does not take it alone, since its one step cannot use a run's time
// (issue 23: a 3-minute classification run trained only the prior and ended after 42 s):
// the first lane without a cap is added. A prior keeps the cap of one step its candidate
// declares.
func TestRulesPriorNotAlone(t *testing.T) {
	// 40 s left at 30 s a lane (MinLaneTime's default) on one slot: one lane.
	got, err := Rules{}.Plan(context.Background(), input(1.2, 40*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if n := names(got); len(n) != 2 || n[0] != "other/prior" || n[1] != "segmentation/3d_fullres" || got[1].MaxSteps != 0 {
		t.Errorf("one lane: %v, want the prior and segmentation/3d_fullres uncapped", n)
	}
	got, _ = Rules{MaxLanes: 3}.Plan(context.Background(), input(1.2, 0))
	if got[0].Name != "other/prior" || got[0].MaxSteps != 1 {
		t.Errorf("first lane %s with max steps %d, want other/prior capped at 1", got[0].Name, got[0].MaxSteps)
	}
}
