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
			{Name: "other", Candidates: []protocol.Candidate{{Name: "prior", Config: []byte(`{}`)}}},
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
	// 40 s left at 30 s a lane on one slot: one lane.
	got, _ = Rules{}.Plan(context.Background(), input(1.2, 40*time.Second))
	if len(got) != 1 {
		t.Errorf("%d lanes for 40 s, want 1", len(got))
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
