package main

import (
	"context"
	"encoding/json"
	"testing"

	"amid/plugins/protocol"
	"amid/plugins/taskspec"
)

// TestShortLaneHalvesWidths checks that a lane with minutes to train plans a narrower
// network than one with hours.
func TestShortLaneHalvesWidths(t *testing.T) {
	widths := func(laneSeconds float64) []int {
		sp, _ := json.Marshal(taskspec.Spec{Kind: "segmentation", Dims: 2, LaneSeconds: laneSeconds})
		resp, err := seg{}.Plan(context.Background(), &protocol.PlanRequest{Fingerprint: fingerprint(4), Task: protocol.Task{Kind: "segmentation", Dims: 2, Spec: sp}})
		if err != nil {
			t.Fatal(err)
		}
		var c config
		if err := json.Unmarshal(resp.Candidates[0].Config, &c); err != nil {
			t.Fatal(err)
		}
		return c.Widths
	}
	long, short := widths(0), widths(120) // unknown, and two minutes
	if len(long) != len(short) {
		t.Fatalf("stages differ: %v %v", long, short)
	}
	for i := range long {
		if short[i] != max(long[i]/2, 8) {
			t.Errorf("widths for a short lane %v, for a long one %v: want half, at least 8", short, long)
			break
		}
	}
}
