package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amid/plugins/engine/ckpt"
	"amid/plugins/plugintest"
	"amid/plugins/protocol"
	"amid/plugins/segmentation/plan"
	"amid/viewer/imageio"
)

// TestPlanLanes plans the plan package's ISLES-like and CT-like fingerprints: both get a
// 2d, a 2.5d, a 3d_fullres, a 3d_lowres (both are large enough to coarsen) and a forest
// candidate, each valid against the schema and accepted by parseConfig; a 2-D task gets
// the 2d and the forest lanes only.
func TestPlanLanes(t *testing.T) {
	for _, name := range []string{"isles_like.json", "ct_like.json"} {
		fp, err := os.ReadFile(filepath.Join("plan", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, dims := range []int{3, 2} {
			_, lanes := plugintest.CheckPlan(t, seg{}, &protocol.PlanRequest{Fingerprint: fp, Task: protocol.Task{Kind: "segmentation", Dims: dims}}, func(b []byte) error {
				_, err := parseConfig(b)
				return err
			})
			want := "2d 2.5d 3d_fullres 3d_lowres forest"
			if dims == 2 {
				want = "2d forest"
			}
			if lanes != want {
				t.Errorf("%s, %d-D task: lanes %q, want %q", name, dims, lanes, want)
			}
		}
	}
	if _, err := (seg{}).Plan(context.Background(), &protocol.PlanRequest{Fingerprint: []byte(`{"cases":3}`), Task: protocol.Task{Kind: "segmentation"}}); !errors.Is(err, plan.ErrFingerprint) {
		t.Errorf("a malformed fingerprint: %v, want ErrFingerprint", err)
	}
	if _, err := (seg{}).Plan(context.Background(), &protocol.PlanRequest{Task: protocol.Task{Kind: "detection"}}); err == nil {
		t.Error("a detection task was planned")
	}
}

// TestResume trains 4 steps, resumes to 8 from the 4-step checkpoint, and predicts with
// the result: the prediction lies on the input's grid in the input's format.
func TestResume(t *testing.T) {
	cases := discCases(t, 3, 4)
	work := t.TempDir()
	req := &protocol.TrainRequest{Task: protocol.Task{Kind: "segmentation", Dims: 2}, Config: tiny(4, 2, 2), Train: cases, WorkDir: work, Seed: 5}
	res, res2 := plugintest.CheckExtend(t, seg{}.Train, req, tiny(8, 2, 1))
	if m, err := ckpt.ReadManifest(res2.Checkpoint); err != nil || m.Step != 8 || m.Epoch != 4 {
		t.Errorf("final checkpoint %+v (%v), want step 8 epoch 4", m, err)
	}
	out := t.TempDir()
	pr, err := seg{}.Predict(context.Background(), &protocol.PredictRequest{Checkpoint: res2.Checkpoint, Cases: cases[:1], OutputDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Predictions) != 1 || pr.Predictions[0].Files[0] != filepath.Join(out, "case000.nii.gz") {
		t.Fatalf("predictions %+v", pr.Predictions)
	}
	got, err := imageio.Read(pr.Predictions[0].Files[0])
	if err != nil {
		t.Fatal(err)
	}
	img, err := imageio.Read(cases[0].Images[0])
	if err != nil {
		t.Fatal(err)
	}
	if got.Dims != [4]int{side, side, 1, 1} || got.Spacing != img.Spacing || got.Origin != img.Origin {
		t.Errorf("prediction grid %v %v %v, image %v %v %v", got.Dims, got.Spacing, got.Origin, img.Dims, img.Spacing, img.Origin)
	}
	// A checkpoint of another architecture is refused on resume.
	req3 := *req
	req3.Config = []byte(strings.Replace(string(tiny(8, 2, 1)), "[8,16,32]", "[8,16]", 1))
	req3.ResumeFrom, req3.WorkDir = res.Checkpoint, t.TempDir()
	if _, err := (seg{}).Train(context.Background(), &req3, func(*protocol.Progress) error { return nil }); err == nil {
		t.Error("resumed a checkpoint into a different network")
	}
}

// TestTimeLimitReport trains with reports too rare to come before a 1 s time limit: the
// run still ends with one progress event, at the step it stopped at, with the mean loss of
// the steps since the start, no ETA, and a message saying why it stopped.
func TestTimeLimitReport(t *testing.T) {
	cases := discCases(t, 2, 7)
	var got []*protocol.Progress
	res, err := seg{}.Train(context.Background(), &protocol.TrainRequest{Config: tiny(1000000, 1000000, 1000000), Train: cases, WorkDir: t.TempDir(), Seed: 1, TimeLimit: time.Second},
		func(p *protocol.Progress) error { got = append(got, p); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d progress events; want 1, at the time limit", len(got))
	}
	p := got[0]
	loss, ok := p.Losses["dice_ce"]
	if res.Steps < 1 || p.Step != res.Steps || !ok || loss <= 0 || p.ETA != 0 || p.Message != fmt.Sprintf("time limit reached after step %d", res.Steps) {
		t.Errorf("last event %+v, result at step %d; want that step, a positive dice_ce loss, no ETA and the time-limit message", p, res.Steps)
	}
}

// TestCancel cancels a long run after its second checkpoint: Train returns within the
// protocol's 2 s and the checkpoint stays.
func TestCancel(t *testing.T) {
	plugintest.CheckCancel(t, seg{}.Train, &protocol.TrainRequest{Config: tiny(100000, 1, 1), Train: discCases(t, 2, 6), WorkDir: t.TempDir(), Seed: 1})
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ cfg, want string }{
		{`{"lane":"4d","patch":[1,8,8],"batch":1,"widths":[4],"modality":"mr","labels":[0,1],"steps":1}`, "lane"},
		{`{"lane":"2.5d","patch":[1,8,8],"batch":1,"widths":[4],"modality":"mr","labels":[0,1],"steps":1,"slices":4}`, "odd"},
		{`{"lane":"2.5d","patch":[3,8,8],"batch":1,"widths":[4],"modality":"mr","labels":[0,1],"steps":1}`, "D = 1"},
		{`{"lane":"2d","patch":[1,8,8],"batch":1,"widths":[4],"modality":"mr","labels":[0,1],"steps":1,"slices":3}`, "2.5d lane"},
		{`{"lane":"2d","patch":[1,8,8],"batch":1,"widths":[4],"modality":"mr","labels":[0,1],"steps":1,"postprocess":"max"}`, "postprocess"},
		{`{"lane":"2d","patch":[1,8,8],"batch":1,"widths":[4],"modality":"mr","labels":[0,1],"steps":1,"min_component":-1}`, "min_component"},
		{`{"lane":"2d","patch":[1,8,8],"batch":1,"widths":[4],"modality":"mr","labels":[0,1],"steps":1,"instances":true}`, "instances"},
		{`{"lane":"2d","patch":[2,8,8],"batch":1,"widths":[4],"modality":"mr","labels":[0,1],"steps":1}`, "D = 1"},
		{`{"lane":"2d","patch":[1,8,8],"batch":1,"widths":[4],"modality":"ct","labels":[0,1],"steps":1}`, "ct statistics"},
		{`{"lane":"2d","patch":[1,8,8],"batch":1,"widths":[4],"modality":"global","labels":[0,1],"steps":1}`, "modality global needs ct statistics"},
		{`{"lane":"forest","modality":"global","labels":[0,1],"steps":1}`, "modality global needs ct statistics"},
		{`{"lane":"2d","patch":[1,8,8],"batch":1,"widths":[4],"modality":"mr","labels":[0],"steps":1}`, "labels"},
		{`{"lane":"2d","patch":[1,8,8],"batch":0,"widths":[4],"modality":"mr","labels":[0,1],"steps":1}`, "positive"},
		{`{"lane":"2d","patch":[1,8,8],"batch":1,"widths":[4],"modality":"mr","labels":[0,1],"steps":1,"x":1}`, "unknown field"},
		{`[]`, "cannot unmarshal"},
	} {
		if _, err := parseConfig([]byte(tc.cfg)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := outPath(t.TempDir(), "../x", "a.png", ""); err == nil {
		t.Error("a case id with a path was accepted")
	}
	for img, want := range map[string]string{"a.PNG": "c.png", "a.nii.gz": "c.nii.gz", "a.dcm": "c.nii.gz", "a.mha": "c.mha"} {
		if p, _ := outPath("d", "c", img, ""); p != filepath.Join("d", want) {
			t.Errorf("outPath for %s = %s, want %s", img, p, want)
		}
	}
	// The task's output suffix wins over the input's; one imageio cannot write is an error.
	for suffix, want := range map[string]string{".tif": "c.tif", ".seg.nrrd": "c.seg.nrrd", ".nii.gz": "c.nii.gz"} {
		if p, err := outPath("d", "c", "a.png", suffix); err != nil || p != filepath.Join("d", want) {
			t.Errorf("outPath with suffix %s = %s, %v; want %s", suffix, p, err, want)
		}
	}
	for _, suffix := range []string{".json", "tif", ".dcm"} {
		if _, err := outPath("d", "c", "a.png", suffix); err == nil {
			t.Errorf("output suffix %q was accepted", suffix)
		}
	}
}

// FuzzParseConfig checks that no configuration makes parseConfig panic, and that an
// accepted one has the invariants training relies on.
func FuzzParseConfig(f *testing.F) {
	f.Add(tiny(6, 3, 2))
	f.Add([]byte(`{"lane":"3d_fullres","patch":[8,8,8],"batch":2,"widths":[4,8],"modality":"ct","ct":{"low":-100,"high":200,"mean":40,"std":50},"labels":[0,3],"steps":5}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseConfig(b)
		if err != nil {
			return
		}
		if c.Batch < 1 || c.Steps < 1 || c.Epoch < 1 || c.Report < 1 || len(c.Labels) < 2 || len(c.Widths) == 0 || c.Patch[0] < 1 {
			t.Fatalf("accepted %+v", c)
		}
	})
}
