package run

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"amid/host/audit"
	"amid/host/planner"
	"amid/host/schedule"
	"amid/plugins/sdk"
)

// laneOf is a configuration's "lane" field.
func laneOf(cfg json.RawMessage) string {
	var c struct {
		Lane string `json:"lane"`
	}
	_ = json.Unmarshal(cfg, &c)
	return c.Lane
}

// cascadeLanes plans the segmentation plugin's 3d_lowres lane first and, after the first
// round, the cascade to full resolution on that lane's checkpoint, configured as
// planner.Cascade configures it (without its margin and time checks, which the demo's
// short budget would fail).
type cascadeLanes struct{}

func (cascadeLanes) Plan(ctx context.Context, in planner.Input) ([]planner.Lane, error) {
	if len(in.Results) == 0 {
		lanes, err := planner.Rules{}.Plan(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, l := range lanes {
			if laneOf(l.Config) == "3d_lowres" {
				return []planner.Lane{l}, nil
			}
		}
		return nil, fmt.Errorf("the rules planned no 3d_lowres lane")
	}
	low := in.Results[0]
	if low.Status != "done" || low.SHA256 == "" {
		return nil, fmt.Errorf("the 3d_lowres lane did not train: %s", low.Reason)
	}
	for _, p := range in.Plugins {
		for _, c := range p.Candidates {
			if c.Name != "3d_fullres" {
				continue
			}
			var cfg map[string]json.RawMessage
			if err := json.Unmarshal(c.Config, &cfg); err != nil {
				return nil, err
			}
			cfg["lane"], _ = json.Marshal("3d_cascade_fullres")
			cfg["cascade"], _ = json.Marshal(cascadeRef{Checkpoint: low.Checkpoint, SHA256: low.SHA256})
			b, err := json.Marshal(cfg)
			if err != nil {
				return nil, err
			}
			return []planner.Lane{{Name: p.Name + "/3d_cascade_fullres", Plugin: p.Name, Config: b, Device: c.Device, Rationale: "the cascade on the 3d_lowres lane"}}, nil
		}
	}
	return nil, fmt.Errorf("the plugin planned no 3d_fullres candidate")
}

// TestFinalCascadeFoldsOwnLowres makes the fold ensemble of a cascade through real plugin
// processes and checks, from what the run recorded (the folds, the members' configurations
// and the lane.trained entries of the audit log, each with the hash of its training
// cases), that no network a fold uses saw one of that fold's validation cases: neither the
// fold's full-resolution model nor the low-resolution network it was configured with, nor
// any checkpoint either continued from.
func TestFinalCascadeFoldsOwnLowres(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the demo's 3d_lowres lane and its cascade on two folds")
	}
	// 90 s: the 45 s of TestFinalFoldEnsemble's one lane, twice, for the two lanes.
	r, entries, log := finalRunWith(t, schedule.FinalEnsemble, 90*time.Second, cascadeLanes{})
	st := r.State()
	fm := st.Final
	w := st.lane(st.Winner)
	if w == nil || laneOf(w.Config) != "3d_cascade_fullres" {
		t.Fatalf("exploration chose %q, not the cascade: the test checks nothing\n%s", st.Winner, log)
	}
	if fm == nil || fm.Mode != schedule.FinalEnsemble || len(st.Union) != 2 {
		t.Fatalf("final model %+v with %d members, want the fold ensemble of 2 folds asked for\n%s", fm, len(st.Union), log)
	}
	fl, err := r.folds()
	if err != nil {
		t.Fatal(err)
	}
	// The case sets a network may have trained on, by the hash the audit log records.
	sets := map[string][]string{idsHash(caseIDs(r.data.Train)): caseIDs(r.data.Train)}
	vals := make([][]string, fl.K)
	for k := range fl.K {
		train, val, err := fl.Split(r.data.Train, k)
		if err != nil {
			t.Fatal(err)
		}
		sets[idsHash(caseIDs(train))] = caseIDs(train)
		vals[k] = caseIDs(val)
	}
	// trainedBy is the lane.trained entry that made the checkpoint of SHA-256 sum.
	trainedBy := func(sum string) *audit.Entry {
		for i, e := range entries {
			if e.Action == audit.ActionLaneTrained && e.Outputs["checkpoint"] == sum {
				return &entries[i]
			}
		}
		return nil
	}
	// seen checks that the network of checkpoint sum, and every checkpoint it continued
	// from, trained on none of fold k's validation cases.
	seen := func(k int, what, sum string) {
		for sum != "" {
			e := trainedBy(sum)
			if e == nil {
				t.Errorf("fold %d: %s %s has no lane.trained entry", k, what, sum)
				return
			}
			cases, ok := sets[e.Inputs["train_ids"]]
			if !ok {
				t.Errorf("fold %d: %s (%s) trained on a set of cases that is no fold's", k, what, details(t, *e)["lane"])
			}
			for _, v := range vals[k] {
				if slices.Contains(cases, v) {
					t.Errorf("fold %d: validation case %s was a training case of %s (%s)", k, v, what, details(t, *e)["lane"])
				}
			}
			sum = ""
			if from, _ := details(t, *e)["resumed_from"].(string); from != "" {
				if sum, err = sdk.FileSHA256(from); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	lows := map[string]bool{}
	for k, m := range st.Union {
		seen(k, "the full-resolution model "+m.Lane, m.SHA256)
		ref := cascadeOf(m.PluginConfig)
		if ref == nil {
			t.Fatalf("member %s names no low-resolution network", m.Lane)
		}
		seen(k, "its low-resolution network", ref.SHA256)
		lows[ref.SHA256] = true
	}
	if len(lows) != fl.K {
		t.Errorf("%d folds share %d low-resolution networks", fl.K, len(lows))
	}
	if !strings.Contains(fm.Why, "low-resolution network trained on that fold's own training cases") {
		t.Errorf("the final model's plan does not say why the low-resolution lane trains on every fold: %s", fm.Why)
	}
	made := find(t, entries, "final.made", w.ID)
	if len(made) != 1 || details(t, made[0])["lowres"] == nil {
		t.Errorf("final.made entries %v, want one naming each member's low-resolution network", made)
	}
}
