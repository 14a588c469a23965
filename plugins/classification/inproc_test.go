package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"amid/plugins/engine/ckpt"
	"amid/plugins/plugintest"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// TestPlanLanes: a grouped task gets cnn-variant, cnn-attributes, forest and prior, each valid
// against the schema; a fingerprint's small images shrink the grid; no spec is an error.
func TestPlanLanes(t *testing.T) {
	fp := []byte(`{"cases":[{"dims":[20,64,64]},{"dims":[24,64,64]},{"dims":[30,80,80]}]}`)
	r, lanes := plugintest.CheckPlan(t, cls{}, &protocol.PlanRequest{Fingerprint: fp, Task: task(t)}, func(b []byte) error {
		_, err := parseConfig(b, 3)
		return err
	})
	for _, c := range r.Candidates {
		// The median case is 24×64×64: the planned 48³ grid shrinks to 24×48×48.
		if cfg, err := parseConfig(c.Config, 3); err == nil && cfg.Lane == laneCNN && cfg.Grid != [3]int{24, 48, 48} {
			t.Errorf("%s: grid %v, want [24 48 48]", c.Name, cfg.Grid)
		}
	}
	if lanes != "cnn-variant cnn-attributes forest prior" {
		t.Errorf("lanes %q", lanes)
	}
	if _, err := (cls{}).Plan(context.Background(), &protocol.PlanRequest{Task: protocol.Task{Kind: "classification", Dims: 3}}); err == nil {
		t.Error("a task without a spec was planned")
	}
}

// TestResume trains 4 steps, resumes to 8 from the final checkpoint, and predicts with it:
// one Annotation JSON per case naming every attribute.
func TestResume(t *testing.T) {
	cases := volumeCases(t, 3, 4)
	small := func(heads string, steps, report int) []byte {
		return fmt.Appendf(nil, `{"lane":"cnn","grid":[8,8,8],"widths":[2,4],"batch":2,"steps":%d,"steps_per_epoch":2,"report_every":%d,"heads":%q}`, steps, report, heads)
	}
	req := &protocol.TrainRequest{Task: task(t), Config: small("variant", 4, 2), Train: cases, WorkDir: t.TempDir(), Seed: 5}
	res, res2 := plugintest.CheckExtend(t, cls{}.Train, req, small("variant", 8, 1))
	if m, err := ckpt.ReadManifest(res2.Checkpoint); err != nil || m.Step != 8 || m.Epoch != 4 {
		t.Errorf("final checkpoint %+v (%v), want step 8 epoch 4", m, err)
	}
	// Resuming with heads from a different training set is refused.
	req3 := *req
	req3.ResumeFrom = res.Checkpoint
	req3.Config, req3.WorkDir = small("attributes", 8, 1), t.TempDir()
	if _, err := (cls{}).Train(context.Background(), &req3, func(*protocol.Progress) error { return nil }); err == nil || !strings.Contains(err.Error(), "heads") {
		t.Errorf("resume with other heads: %v", err)
	}
	out := t.TempDir()
	pr, err := cls{}.Predict(context.Background(), &protocol.PredictRequest{Task: task(t), Checkpoint: res2.Checkpoint, Cases: cases, OutputDir: out})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := spec(task(t))
	for i, p := range pr.Predictions {
		if p.CaseID != cases[i].ID || p.Files[0] != filepath.Join(out, cases[i].ID+".json") {
			t.Fatalf("prediction %+v", p)
		}
		a, err := taskspec.ReadAnnotation(p.Files[0], s)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Classes) != len(s.Attributes) {
			t.Errorf("case %s: classes %v, want all %d attributes", p.CaseID, a.Classes, len(s.Attributes))
		}
		checkProbs(t, p.CaseID, s, a)
	}
}

// checkProbs checks that a prediction gives every attribute one probability a class,
// summing to 1 (to 1e-9: a float64 sum of a handful of terms), its class among the
// possible ones. (A variant head picks the likeliest variant; an attribute's marginal
// probability may favour another class than the variant's.)
func checkProbs(t *testing.T, id string, s *taskspec.Spec, a *taskspec.Annotation) {
	t.Helper()
	for _, at := range s.Attributes {
		p := a.Probs[at.Name]
		if len(p) != len(at.Classes) {
			t.Errorf("case %s: %s has probabilities %v, want %d", id, at.Name, p, len(at.Classes))
			continue
		}
		sum := 0.0
		for _, v := range p {
			sum += v
		}
		if math.Abs(sum-1) > 1e-9 || p[a.Classes[at.Name]] == 0 {
			t.Errorf("case %s: %s has probabilities %v (sum %v) for class %d", id, at.Name, p, sum, a.Classes[at.Name])
		}
	}
}

// TestResumeSameBatches trains 6 steps in one run, and again resumed from the step-3
// checkpoint: steps 4 to 6 report bit-identical losses.
func TestResumeSameBatches(t *testing.T) {
	req := &protocol.TrainRequest{Task: task(t), Config: tiny("variant", 6, 3, 1), Train: volumeCases(t, 3, 6), WorkDir: t.TempDir(), Seed: 9}
	plugintest.CheckResume(t, cls{}.Train, req)
}

// TestPriorPredicts: the prior lane's prediction is the most frequent variant of each
// group, here set by hand on four cases.
func TestPriorPredicts(t *testing.T) {
	cases := volumeCases(t, 4, 5)
	variants := []map[string]int{
		{"L-A1": 1, "Acom": 1, "3rd-A2": 0, "R-A1": 1, "L-Pcom": 0, "L-P1": 1, "R-P1": 1, "R-Pcom": 0},
		{"L-A1": 1, "Acom": 1, "3rd-A2": 0, "R-A1": 1, "L-Pcom": 1, "L-P1": 1, "R-P1": 1, "R-Pcom": 1},
		{"L-A1": 1, "Acom": 0, "3rd-A2": 0, "R-A1": 1, "L-Pcom": 1, "L-P1": 1, "R-P1": 1, "R-Pcom": 1},
		{"L-A1": 0, "Acom": 1, "3rd-A2": 0, "R-A1": 1, "L-Pcom": 0, "L-P1": 1, "R-P1": 1, "R-Pcom": 0},
	}
	for i, v := range variants {
		writeLabel(t, cases[i].Label, &taskspec.Annotation{Classes: v})
	}
	res, err := cls{}.Train(context.Background(), &protocol.TrainRequest{Task: task(t), Config: []byte(`{"lane":"prior"}`), Train: cases, Validation: cases, WorkDir: t.TempDir()},
		func(*protocol.Progress) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	// Anterior 1_1_0_1 occurs twice, the others once: predicted for all four, it is right
	// on 2 of 3 variants' cases → recalls 1, 0, 0: balanced accuracy 1/3. Posterior: a tie
	// of 0_1_1_0 and 1_1_1_1 (twice each), broken towards the smaller key 0_1_1_0: 1/2.
	if got := res.Validation["balanced_accuracy/anterior"]; got != 1.0/3 {
		t.Errorf("anterior %v, want 1/3", got)
	}
	if got := res.Validation["balanced_accuracy/posterior"]; got != 0.5 {
		t.Errorf("posterior %v, want 1/2", got)
	}
	out := t.TempDir()
	if _, err := (cls{}).Predict(context.Background(), &protocol.PredictRequest{Checkpoint: res.Checkpoint, Cases: cases[:1], OutputDir: out}); err != nil {
		t.Fatal(err)
	}
	a, err := taskspec.ReadAnnotation(filepath.Join(out, cases[0].ID+".json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := variants[0]
	for k, v := range want {
		if a.Classes[k] != v {
			t.Errorf("prior %s = %d, want %d", k, a.Classes[k], v)
		}
	}
	// The prior's probabilities are the labels' shares: Acom is 1 in 3 of the 4 cases.
	if p := a.Probs["Acom"]; !slices.Equal(p, []float64{0.25, 0.75}) {
		t.Errorf("prior probabilities of Acom %v, want [0.25 0.75]", p)
	}
}

// TestBadInput: each broken input is refused with an error naming the case and the
// problem.
func TestBadInput(t *testing.T) {
	cfg := tiny("variant", 2, 2, 1)
	for _, tc := range []struct {
		name, want string
		edit       func(t *testing.T, c *protocol.Case)
		tk         func(t *testing.T) protocol.Task
	}{
		{name: "missing label", want: "has no label file", edit: func(_ *testing.T, c *protocol.Case) { c.Label = "" }},
		{name: "unreadable label", want: "no such file", edit: func(_ *testing.T, c *protocol.Case) { c.Label += ".gone" }},
		{name: "class outside the attribute", want: "outside the task's attributes", edit: func(t *testing.T, c *protocol.Case) {
			writeLabel(t, c.Label, &taskspec.Annotation{Classes: map[string]int{"L-A1": 2}})
		}},
		{name: "unknown attribute", want: "outside the task's attributes", edit: func(t *testing.T, c *protocol.Case) {
			writeLabel(t, c.Label, &taskspec.Annotation{Classes: map[string]int{"Basilar": 1}})
		}},
		{name: "attribute missing", want: `no class for attribute "R-Pcom"`, edit: func(t *testing.T, c *protocol.Case) {
			a, err := taskspec.ReadAnnotation(c.Label, nil)
			if err != nil {
				t.Fatal(err)
			}
			delete(a.Classes, "R-Pcom")
			writeLabel(t, c.Label, a)
		}},
		{name: "not JSON", want: "invalid annotation", edit: func(t *testing.T, c *protocol.Case) {
			if err := os.WriteFile(c.Label, []byte("anterior: {}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "1-slice volume", want: "1 slice, a 3D task needs a volume", edit: func(t *testing.T, c *protocol.Case) {
			v, err := volume.New(volume.Float32, [4]int{side, side, 1, 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := imageio.Write(c.Images[0], v); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "no spec", want: "no spec", tk: func(*testing.T) protocol.Task { return protocol.Task{Kind: "classification", Dims: 3} }},
		{name: "spec without attributes", want: "at least one attribute", tk: func(*testing.T) protocol.Task {
			return protocol.Task{Kind: "classification", Dims: 3, Spec: []byte(`{"kind":"classification","dims":3}`)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cases := volumeCases(t, 2, 6)
			if tc.edit != nil {
				tc.edit(t, &cases[1])
			}
			tk := task(t)
			if tc.tk != nil {
				tk = tc.tk(t)
			}
			_, err := cls{}.Train(context.Background(), &protocol.TrainRequest{Task: tk, Config: cfg, Train: cases, WorkDir: t.TempDir(), Seed: 1},
				func(*protocol.Progress) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if tc.edit != nil && !strings.Contains(err.Error(), cases[1].ID) {
				t.Errorf("error %v does not name case %s", err, cases[1].ID)
			}
			if strings.Contains(tc.name, "class") && !errors.Is(err, taskspec.ErrAnnotation) {
				t.Errorf("error %v does not wrap ErrAnnotation", err)
			}
		})
	}
}
