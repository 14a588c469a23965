package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/plugins/engine/ckpt"
	"amid/plugins/plugintest"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
)

func nop(*protocol.Progress) error { return nil }

// TestBadInput trains on cases with one broken label each and checks the error names the
// case and says what is wrong.
func TestBadInput(t *testing.T) {
	cases := gen(t, 2, 7, panCase)
	vols := gen(t, 2, 8, volCase)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	with := func(cs []protocol.Case, label string) []protocol.Case {
		out := append([]protocol.Case(nil), cs...)
		out[1].Label = label
		return out
	}
	for _, tc := range []struct {
		name  string
		spec  *taskspec.Spec
		cfg   string
		cases []protocol.Case
		want  []string
	}{
		{"missing label file", boxSpec(), boxesConfig(2, 1, 1), with(cases, filepath.Join(dir, "gone.json")), []string{"case001", "gone.json", "no such file"}},
		{"no label", boxSpec(), boxesConfig(2, 1, 1), with(cases, ""), []string{"case001", "no label file"}},
		{"corrupt JSON", boxSpec(), boxesConfig(2, 1, 1), with(cases, write("corrupt.json", `{"boxes": [{"x": 1,`)), []string{"case001", "corrupt.json", "invalid annotation"}},
		{"box outside the image", boxSpec(), boxesConfig(2, 1, 1), with(cases, write("outside.json",
			`{"boxes":[{"x":250,"y":10,"w":30,"h":20,"score":1,"attrs":{"quadrant":0,"enumeration":0,"diagnosis":0}}]}`)), []string{"case001", "outside.json", "box 0", "outside the 256×128 image"}},
		{"empty annotation list", boxSpec(), boxesConfig(2, 1, 1), with(cases, write("empty.json", `{"boxes":[]}`)), []string{"case001", "empty.json", "no boxes"}},
		{"missing attribute", boxSpec(), boxesConfig(2, 1, 1), with(cases, write("noattr.json", `{"boxes":[{"x":1,"y":1,"w":3,"h":3,"score":1,"attrs":{"quadrant":0}}]}`)), []string{"case001", "lacks attribute enumeration"}},
		{"unknown point class", pointSpec(), pointsConfig(2, 1, 1), with(gen(t, 2, 9, tileCase), write("class.json", `{"points":[{"x":1,"y":1,"class":"mitosis","score":1}]}`)), []string{"case001", "mitosis"}},
		{"3D box outside the volume", box3DSpec(), seg3DConfig(2, 1, 1), with(vols, write("box3d.json", `{"box3d":{"min":[30,0,0],"size":[20,4,4]}}`)), []string{"case001", "box3d.json", "reaches past"}},
		{"no 3D box", box3DSpec(), `{"lane":"box3d_prior"}`, with(vols, write("no3d.json", `{}`)), []string{"case001", "no box3d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := det{}.Train(context.Background(), &protocol.TrainRequest{Task: task(t, tc.spec), Config: []byte(tc.cfg), Train: tc.cases, WorkDir: t.TempDir(), Seed: 1}, nop)
			if !errors.Is(err, ErrInput) {
				t.Fatalf("error %v, want ErrInput", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	// A task without a spec, of another kind, or a lane of another mode.
	req := &protocol.TrainRequest{Task: protocol.Task{Kind: "detection", Dims: 2}, Config: []byte(boxesConfig(2, 1, 1)), Train: cases, WorkDir: t.TempDir()}
	if _, err := (det{}).Train(context.Background(), req, nop); err == nil || !strings.Contains(err.Error(), "without a spec") {
		t.Errorf("no spec: %v", err)
	}
	req.Task = task(t, pointSpec())
	if _, err := (det{}).Train(context.Background(), req, nop); err == nil || !strings.Contains(err.Error(), "does not fit a points task") {
		t.Errorf("centernet lane on a points task: %v", err)
	}
	// Predicting a missing image names the case.
	res, err := det{}.Train(context.Background(), &protocol.TrainRequest{Task: task(t, box3DSpec()), Config: []byte(`{"lane":"box3d_prior"}`), Train: vols, WorkDir: t.TempDir()}, nop)
	if err != nil {
		t.Fatal(err)
	}
	_, err = det{}.Predict(context.Background(), &protocol.PredictRequest{Checkpoint: res.Checkpoint, OutputDir: t.TempDir(),
		Cases: []protocol.Case{{ID: "lost", Images: []string{filepath.Join(dir, "lost.nii.gz")}}}})
	if err == nil || !strings.Contains(err.Error(), "case lost") {
		t.Errorf("missing image: %v", err)
	}
}

// TestResume trains 4 steps, resumes to 8 from the 4-step checkpoint and predicts with the
// result; a checkpoint of another network is refused.
func TestResume(t *testing.T) {
	cases := gen(t, 3, 10, tileCase)
	tk := task(t, pointSpec())
	req := &protocol.TrainRequest{Task: tk, Config: []byte(pointsConfig(4, 2, 2)), Train: cases, WorkDir: t.TempDir(), Seed: 5}
	res, res2 := plugintest.CheckExtend(t, det{}.Train, req, []byte(pointsConfig(8, 2, 1)))
	if m, err := ckpt.ReadManifest(res2.Checkpoint); err != nil || m.Step != 8 || m.Epoch != 4 {
		t.Errorf("final checkpoint %+v (%v), want step 8 epoch 4", m, err)
	}
	out := t.TempDir()
	pr, err := det{}.Predict(context.Background(), &protocol.PredictRequest{Checkpoint: res2.Checkpoint, Cases: cases[:1], OutputDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := taskspec.ReadAnnotation(pr.Predictions[0].Files[0], pointSpec()); err != nil {
		t.Errorf("prediction: %v", err)
	}
	req3 := *req
	req3.Config = []byte(strings.Replace(pointsConfig(8, 2, 1), "[8,16,32]", "[8,16]", 1))
	req3.ResumeFrom, req3.WorkDir = res.Checkpoint, t.TempDir()
	if _, err := (det{}).Train(context.Background(), &req3, nop); !errors.Is(err, ckpt.ErrMismatch) {
		t.Errorf("resumed a checkpoint into a different network: %v", err)
	}
}

// TestResumeSameBatches trains each mode's learned lane 6 steps in one run, and again
// resumed from the step-3 checkpoint: steps 4 to 6 report bit-identical losses (the
// samples' generator goes on from its state in the checkpoint).
func TestResumeSameBatches(t *testing.T) {
	for _, m := range []struct {
		s   *taskspec.Spec
		cfg string
		gen func(testing.TB, string, string, *rand.Rand) protocol.Case
	}{
		{pointSpec(), pointsConfig(6, 3, 1), tileCase},
		{box3DSpec(), seg3DConfig(6, 3, 1), volCase},
	} {
		req := &protocol.TrainRequest{Task: task(t, m.s), Config: []byte(m.cfg), Train: gen(t, 3, 12, m.gen), WorkDir: t.TempDir(), Seed: 9}
		plugintest.CheckResume(t, det{}.Train, req)
	}
}

// TestCancel cancels a long run at its second step: Train returns within the protocol's
// 2 s and the checkpoints written stay.
func TestCancel(t *testing.T) {
	plugintest.CheckCancel(t, det{}.Train, &protocol.TrainRequest{Task: task(t, pointSpec()), Config: []byte(pointsConfig(100000, 1, 1)), Train: gen(t, 2, 11, tileCase), WorkDir: t.TempDir(), Seed: 1})
}

// TestPlanLanes plans each mode: the lanes that fit, valid against the schema and
// accepted by parseConfig, sized from the fingerprint.
func TestPlanLanes(t *testing.T) {
	// A DENTEX-sized panoramic (1316×2744) and a TopCoW-sized volume (D, H, W).
	pano := []byte(`{"cases":[{"dims":[1,1316,2744],"spacing":[1,0.1,0.1]},{"dims":[1,1504,2872]}]}`)
	vol := []byte(`{"cases":[{"dims":[120,512,512]}]}`)
	for _, tc := range []struct {
		spec  *taskspec.Spec
		fp    []byte
		lanes string
		size  string
	}{
		{boxSpec(), pano, "centernet box_transfer", `"size":[1,256,512]`},
		// A small image (80×160) keeps its size, rounded to multiples of 32: 96×160.
		{boxSpec(), []byte(`{"cases":[{"dims":[1,80,160]}]}`), "centernet box_transfer", `"size":[1,96,160]`},
		{pointSpec(), nil, "points", `"size":[1,128,128]`},
		{box3DSpec(), vol, "box3d_seg box3d_prior_mean box3d_prior_intensity", `"size":[8,48,48]`},
		{box3DSpec(), []byte(`{"cases":3}`), "box3d_seg box3d_prior_mean box3d_prior_intensity", `"size":[32,48,48]`},
	} {
		r, lanes := plugintest.CheckPlan(t, det{}, &protocol.PlanRequest{Fingerprint: tc.fp, Task: task(t, tc.spec)}, func(b []byte) error {
			_, err := parseConfig(b)
			return err
		})
		for _, c := range r.Candidates {
			// The lanes that train nothing past their first step say so.
			capped := strings.HasPrefix(c.Name, lanePrior3D) || c.Name == laneTransfer
			if want := map[bool]int64{true: 1}[capped]; c.MaxSteps != want {
				t.Errorf("%s: at most %d steps, want %d", c.Name, c.MaxSteps, want)
			}
		}
		if lanes != tc.lanes {
			t.Errorf("%s: lanes %q, want %q", tc.spec.ID, lanes, tc.lanes)
		}
		if !strings.Contains(string(r.Candidates[0].Config), tc.size) {
			t.Errorf("%s: first lane %s, want %s", tc.spec.ID, r.Candidates[0].Config, tc.size)
		}
	}
	if _, err := (det{}).Plan(context.Background(), &protocol.PlanRequest{Fingerprint: []byte(`{`), Task: task(t, boxSpec())}); err == nil {
		t.Error("malformed fingerprint planned")
	}
	if _, err := (det{}).Plan(context.Background(), &protocol.PlanRequest{Task: protocol.Task{Kind: "segmentation", Dims: 2}}); err == nil {
		t.Error("a segmentation task was planned")
	}
	bad := boxSpec()
	bad.Dims = 3
	if _, err := (det{}).Plan(context.Background(), &protocol.PlanRequest{Task: task(t, bad)}); err == nil {
		t.Error("3-D boxes with attributes were planned")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ cfg, want string }{
		{`{"lane":"yolo"}`, "lane"},
		{`{"lane":"centernet","size":[2,64,64],"batch":1,"widths":[4],"steps":1}`, "size D must be 1"},
		{`{"lane":"centernet","size":[1,62,64],"batch":1,"widths":[4,8,16],"steps":1}`, "not divisible by 4"},
		{`{"lane":"points","size":[1,64,64],"batch":0,"widths":[4],"steps":1}`, "positive"},
		{`{"lane":"points","size":[1,64,64],"batch":1,"widths":[],"steps":1}`, "widths"},
		{`{"lane":"points","size":[1,64,64],"batch":1,"widths":[4],"steps":1,"threshold":2}`, "threshold"},
		{`{"lane":"box3d_prior","centre":"top"}`, "centre"},
		{`{"lane":"box3d_seg","size":[8,8,8],"batch":1,"widths":[4],"steps":1,"x":1}`, "unknown field"},
		{`{"lane":"box_transfer","size":[2,64,64]}`, "box_transfer's size"},
		{`{"lane":"box_transfer","size":[1,64,64],"neighbours":65}`, "neighbours"},
		{`{"lane":"box_transfer","size":[1,64,64],"margin":-1}`, "margin"},
		{`[]`, "cannot unmarshal"},
	} {
		if _, err := parseConfig([]byte(tc.cfg)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := outPath(t.TempDir(), "../x"); err == nil {
		t.Error("a case id with a path was accepted")
	}
}

// FuzzParseConfig checks that no configuration makes parseConfig panic, and that an
// accepted one has the invariants training relies on.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(boxesConfig(6, 3, 2)))
	f.Add([]byte(pointsConfig(6, 3, 2)))
	f.Add([]byte(seg3DConfig(6, 3, 2)))
	f.Add([]byte(`{"lane":"box3d_prior","centre":"intensity"}`))
	f.Add([]byte(`{"lane":"box_transfer","size":[1,80,160],"neighbours":6,"margin":4}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseConfig(b)
		if err != nil || c.Lane == lanePrior3D {
			return
		}
		if c.Lane == laneTransfer {
			if c.Neighbours < 1 || c.Margin < 0 || c.Size[0] != 1 || c.Size[1] < 1 || c.Size[2] < 1 || c.MaxDets < 1 {
				t.Fatalf("accepted %+v", c)
			}
			return
		}
		if c.Batch < 1 || c.Steps < 1 || c.Epoch < 1 || c.Report < 1 || len(c.Widths) == 0 || c.Size[0] < 1 || c.MaxDets < 1 || !(c.Scale > 0) || !(c.Sigma > 0) {
			t.Fatalf("accepted %+v", c)
		}
		div := 1 << (len(c.Widths) - 1)
		for _, v := range c.Size {
			if v > 1 && v%div != 0 {
				t.Fatalf("accepted size %v for %d stages", c.Size, len(c.Widths))
			}
		}
	})
}
