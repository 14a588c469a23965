package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/plugins/engine/ckpt"
	"amid/plugins/plugintest"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// TestPlanLanes: the forest, first and in one step, and three networks, valid against the
// schema, accepted by parseConfig.
func TestPlanLanes(t *testing.T) {
	r, lanes := plugintest.CheckPlan(t, iqa{}, &protocol.PlanRequest{Fingerprint: []byte(`{"cases":[{"dims":[1,512,512]}]}`), Task: task(t)}, func(b []byte) error {
		_, err := parseConfig(b, 2)
		return err
	})
	if lanes != "forest cnn cnn-rank cnn-rank-5fold" {
		t.Errorf("lanes %q", lanes)
	}
	for _, c := range r.Candidates {
		if want := map[bool]int64{true: 1}[c.Name == laneForest]; c.MaxSteps != want {
			t.Errorf("%s: at most %d steps, want %d", c.Name, c.MaxSteps, want)
		}
	}
	if _, err := (iqa{}).Plan(context.Background(), &protocol.PlanRequest{Task: protocol.Task{Kind: "classification", Dims: 2}}); err == nil {
		t.Error("a classification task was planned")
	}
}

// TestResumeFolds trains 2 folds of 4 steps, cancels nothing, then resumes a second run
// from the epoch checkpoint written inside fold 2 (step 6) and checks that it continues at
// step 7 and predicts scores on the grid when snapping is on.
func TestResumeFolds(t *testing.T) {
	cases := sliceCases(t, 4, 4)
	cfg := tiny(4, 2, 1, `,"folds":2,"snap":"on"`)
	req := &protocol.TrainRequest{Task: task(t), Config: cfg, Train: cases, WorkDir: t.TempDir(), Seed: 5}
	var cks []string
	res, err := iqa{}.Train(context.Background(), req, func(p *protocol.Progress) error {
		if p.Checkpoint != "" {
			cks = append(cks, p.Checkpoint)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Epochs of 2 steps in folds of 4: checkpoints at steps 2 (fold 1) and 6 (fold 2).
	if len(cks) != 2 || res.Steps != 8 {
		t.Fatalf("checkpoints %v, result %+v", cks, res)
	}
	if m, err := ckpt.ReadManifest(cks[1]); err != nil || m.Step != 6 {
		t.Fatalf("second epoch checkpoint %+v (%v), want step 6", m, err)
	}
	req2 := *req
	req2.ResumeFrom, req2.WorkDir = cks[1], t.TempDir()
	var first int64
	res2, err := iqa{}.Train(context.Background(), &req2, func(p *protocol.Progress) error {
		if first == 0 {
			first = p.Step
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if first != 7 || res2.Steps != 8 {
		t.Errorf("resumed at step %d, ended at %d; want 7 and 8", first, res2.Steps)
	}
	// The first fold, trained before the resume, still predicts its held-out cases: the
	// out-of-fold score is the uninterrupted run's.
	if a, b := res.Validation["oof/score"], res2.Validation["oof/score"]; a != b || !(a > 0) {
		t.Errorf("out-of-fold score %v after resuming, %v uninterrupted", b, a)
	}
	out := t.TempDir()
	pr, err := iqa{}.Predict(context.Background(), &protocol.PredictRequest{Checkpoint: res2.Checkpoint, Cases: cases, OutputDir: out})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := spec(task(t))
	for i, p := range pr.Predictions {
		if p.Files[0] != filepath.Join(out, cases[i].ID+".json") {
			t.Fatalf("prediction %+v", p)
		}
		a, err := taskspec.ReadAnnotation(p.Files[0], s)
		if err != nil {
			t.Fatal(err)
		}
		// On the 0.2 grid within 1e-9 (the grid points are sums of float64 steps).
		if v := *a.Score; v < 0 || v > 4 || math.Abs(v*5-math.Round(v*5)) > 1e-9 {
			t.Errorf("case %s: score %v is not on the 0–4 grid of 0.2", p.CaseID, v)
		}
	}
}

// TestSnapOnWithoutValidation trains one fold with "snap":"on" and no validation cases,
// where nothing chooses: the predictions still lie on the score grid.
func TestSnapOnWithoutValidation(t *testing.T) {
	cases := sliceCases(t, 3, 4)
	res, err := iqa{}.Train(context.Background(), &protocol.TrainRequest{Task: task(t), Config: tiny(2, 2, 1, `,"folds":1,"snap":"on"`), Train: cases, WorkDir: t.TempDir(), Seed: 5},
		func(*protocol.Progress) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	pr, err := iqa{}.Predict(context.Background(), &protocol.PredictRequest{Checkpoint: res.Checkpoint, Cases: cases, OutputDir: out})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := spec(task(t))
	for _, p := range pr.Predictions {
		a, err := taskspec.ReadAnnotation(p.Files[0], s)
		if err != nil {
			t.Fatal(err)
		}
		// On the 0.2 grid within 1e-9, as in TestResumeFolds.
		if v := *a.Score; math.Abs(v*5-math.Round(v*5)) > 1e-9 {
			t.Errorf("case %s: score %v is not on the grid of 0.2", p.CaseID, v)
		}
	}
}

// TestResumeSameBatches trains 2 folds of 4 steps in one run, and again resumed from the
// step-2 checkpoint of the first fold: steps 3 to 8 report bit-identical losses.
func TestResumeSameBatches(t *testing.T) {
	req := &protocol.TrainRequest{Task: task(t), Config: tiny(4, 2, 1, `,"folds":2`), Train: sliceCases(t, 4, 6), WorkDir: t.TempDir(), Seed: 9}
	plugintest.CheckResume(t, iqa{}.Train, req)
}

// TestRounds trains 2 folds of 4 steps in one run, and in two rounds split inside the
// first fold (after step 2) and at the folds' boundary (after step 4): the first round
// stops there and the second reports the uninterrupted run's losses bit for bit.
func TestRounds(t *testing.T) {
	for _, until := range []int64{2, 4} {
		t.Run(fmt.Sprint(until), func(t *testing.T) {
			req := &protocol.TrainRequest{Task: task(t), Config: tiny(4, 2, 1, `,"folds":2`), Train: sliceCases(t, 4, 6), WorkDir: t.TempDir(), Seed: 9}
			plugintest.CheckRounds(t, iqa{}.Train, req, until)
		})
	}
}

// TestBadInput: each broken input is refused with an error naming the case and the
// problem.
func TestBadInput(t *testing.T) {
	three := protocol.Task{Kind: taskspec.IQA, Dims: 3, Spec: ldctSpec(t, 3)}
	for _, tc := range []struct {
		name, want string
		edit       func(t *testing.T, c *protocol.Case)
		tk         *protocol.Task
		cfg        []byte
	}{
		{name: "missing label", want: "has no label file", edit: func(_ *testing.T, c *protocol.Case) { c.Label = "" }},
		{name: "no score", want: "has no score", edit: func(t *testing.T, c *protocol.Case) { writeLabel(t, c.Label, &taskspec.Annotation{}) }},
		{name: "score NaN", want: "invalid annotation", edit: func(t *testing.T, c *protocol.Case) {
			if err := os.WriteFile(c.Label, []byte(`{"score": NaN}`), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "score outside the range", want: "outside the task's range", edit: func(t *testing.T, c *protocol.Case) {
			v := 4.5
			writeLabel(t, c.Label, &taskspec.Annotation{Score: &v})
		}},
		{name: "NaN pixel", want: "has value NaN", edit: func(t *testing.T, c *protocol.Case) {
			v, err := imageio.Read(c.Images[0])
			if err != nil {
				t.Fatal(err)
			}
			v.SetIndex(5, math.NaN())
			if err := imageio.Write(c.Images[0], v); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "1-slice volume in a 3D task", want: "1 slice, a 3D task needs a volume", tk: &three, cfg: []byte(`{"lane":"cnn","grid":[4,8,8],"widths":[4],"batch":2,"steps":1}`)},
		{name: "volume in a 2D task", want: "a 2D task takes single-slice images", edit: func(t *testing.T, c *protocol.Case) {
			v, err := volume.New(volume.Float32, [4]int{8, 8, 3, 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := imageio.Write(filepath.Join(filepath.Dir(c.Label), "vol.nii.gz"), v); err != nil {
				t.Fatal(err)
			}
			c.Images = []string{filepath.Join(filepath.Dir(c.Label), "vol.nii.gz")}
		}},
		{name: "rank loss with batch 1", want: "batch 1 is too small", cfg: []byte(`{"lane":"cnn","grid":[1,8,8],"widths":[4],"batch":1,"steps":1,"loss":{"rank":1}}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cases := sliceCases(t, 2, 6)
			if tc.edit != nil {
				tc.edit(t, &cases[1])
			}
			tk, cfg := task(t), tiny(2, 2, 1, "")
			if tc.tk != nil {
				tk = *tc.tk
			}
			if tc.cfg != nil {
				cfg = tc.cfg
			}
			_, err := iqa{}.Train(context.Background(), &protocol.TrainRequest{Task: tk, Config: cfg, Train: cases, WorkDir: t.TempDir(), Seed: 1},
				func(*protocol.Progress) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if tc.edit != nil && !strings.Contains(err.Error(), cases[1].ID) {
				t.Errorf("error %v does not name case %s", err, cases[1].ID)
			}
		})
	}
}
