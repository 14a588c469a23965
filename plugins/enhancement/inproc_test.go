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
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

func noProgress(*protocol.Progress) error { return nil }

// TestPlanLanes plans small, medium and large images: the base lane always, its patch
// shrunk for small images; the wide lane from 256 pixels a side. Every candidate is valid
// against the schema and accepted by parseConfig.
func TestPlanLanes(t *testing.T) {
	for _, tc := range []struct {
		h, w  int
		lanes string
		patch int
	}{
		{48, 60, "base", 48},    // 48 is a multiple of 8: the whole short side
		{20, 20, "base", 32},    // smaller than the smallest patch: padded
		{300, 200, "base", 128}, // short side under 256: no wide lane
		{600, 480, "base wide", 128},
	} {
		r, lanes := plugintest.CheckPlan(t, enh{}, &protocol.PlanRequest{Fingerprint: fingerprintJSON(5, tc.h, tc.w), Task: task()}, func(b []byte) error {
			_, err := parseConfig(b)
			return err
		})
		for _, c := range r.Candidates {
			if cfg, err := parseConfig(c.Config); err == nil && c.Name == laneBase && cfg.Patch != [2]int{tc.patch, tc.patch} {
				t.Errorf("%d×%d: base patch %v, want %d²", tc.h, tc.w, cfg.Patch, tc.patch)
			}
		}
		if lanes != tc.lanes {
			t.Errorf("%d×%d: lanes %q, want %q", tc.h, tc.w, lanes, tc.lanes)
		}
	}
	for fp, want := range map[string]string{
		`{"cases":3}`:                      "cannot unmarshal",
		`{"cases":[]}`:                     "no cases",
		`{"cases":[{"dims":[4,64,64]}]}`:   "slices",
		`{"cases":[{"dims":[64]}]}`:        "dims",
		`{"cases":[{"dims":[1,0,64]}]}`:    "dims",
		`{"cases":[{"dims":[1,64,1e7]}]}`:  "cannot unmarshal",
		`{"cases":[{"dims":[1,64,2e6]}]}`:  "dims",
		`not json`:                         "invalid",
		`{"cases":[{"dims":[1,64,64]}]} x`: "", // trailing data is the host's business
	} {
		_, err := enh{}.Plan(context.Background(), &protocol.PlanRequest{Fingerprint: []byte(fp), Task: task()})
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", fp, err)
			}
			continue
		}
		if !errors.Is(err, errFingerprint) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want errFingerprint mentioning %q", fp, err, want)
		}
	}
	for _, tk := range []protocol.Task{{Kind: "segmentation", Dims: 2}, {Kind: "enhancement", Dims: 3}, {Kind: "enhancement", Dims: 2, Spec: []byte(`{"kind":"iqa","dims":2}`)}} {
		if _, err := (enh{}).Plan(context.Background(), &protocol.PlanRequest{Fingerprint: fingerprintJSON(1, 64, 64), Task: tk}); err == nil {
			t.Errorf("task %+v was planned", tk)
		}
	}
}

// A task scored by PSNR trains on L1 alone; any other metric keeps the default mixture
// (lossFor says why).
func TestPlanLossFollowsMetric(t *testing.T) {
	for metric, want := range map[string][2]float64{"psnr": {1, 0}, "PSNR": {1, 0}, "ssim": {defaultL1, defaultSSIM}, "lncc": {defaultL1, defaultSSIM}, "": {defaultL1, defaultSSIM}} {
		tk := task()
		tk.Metric = metric
		r, err := enh{}.Plan(context.Background(), &protocol.PlanRequest{Fingerprint: fingerprintJSON(5, 600, 480), Task: tk})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Candidates {
			cfg, err := parseConfig(c.Config)
			if err != nil {
				t.Fatal(err)
			}
			if got := [2]float64{*cfg.L1, *cfg.SSIM}; got != want {
				t.Errorf("metric %q, lane %s: loss weights (L1, SSIM) %v, want %v", metric, c.Name, got, want)
			}
			if want[1] == 0 && !strings.Contains(c.Rationale, "L1 alone") {
				t.Errorf("metric %q, lane %s: the rationale does not say the loss: %s", metric, c.Name, c.Rationale)
			}
		}
	}
}

// TestReceptiveField checks the rationale's receptive fields by hand for one and two
// stages: two 3×3 convolutions see 5 pixels; with a 2×2 pooling and two more at half
// resolution, 5 + 1 + 8, and two at full resolution after the up-sampling, 4 more.
func TestReceptiveField(t *testing.T) {
	for stages, want := range map[int]int{1: 5, 2: 18} {
		if got := receptiveField(stages); got != want {
			t.Errorf("%d stages: %d px, want %d", stages, got, want)
		}
	}
}

// TestResume trains 4 steps, resumes to 8 from the 4-step checkpoint, and predicts with
// the result; a checkpoint of another architecture is refused.
func TestResume(t *testing.T) {
	cases := usCases(t, 3, 4)
	req := &protocol.TrainRequest{Task: task(), Config: tiny(4, 2, 2), Train: cases, WorkDir: t.TempDir(), Seed: 5}
	// Every progress event names a positive loss and speed.
	train := func(ctx context.Context, req *protocol.TrainRequest, report func(*protocol.Progress) error) (*protocol.TrainResult, error) {
		return enh{}.Train(ctx, req, func(p *protocol.Progress) error {
			if p.Losses["loss"] <= 0 || p.SamplesPerSecond <= 0 {
				t.Errorf("progress %+v", p)
			}
			return report(p)
		})
	}
	res, res2 := plugintest.CheckExtend(t, train, req, tiny(8, 2, 1))
	if m, err := ckpt.ReadManifest(res2.Checkpoint); err != nil || m.Step != 8 || m.Epoch != 4 {
		t.Errorf("final checkpoint %+v (%v), want step 8 epoch 4", m, err)
	}
	req3 := *req
	req3.Config = []byte(strings.Replace(string(tiny(8, 2, 1)), "[8,16,32]", "[8,16]", 1))
	req3.ResumeFrom, req3.WorkDir = res.Checkpoint, t.TempDir()
	if _, err := (enh{}).Train(context.Background(), &req3, noProgress); !errors.Is(err, ckpt.ErrMismatch) {
		t.Errorf("resumed a checkpoint into a different network: %v", err)
	}
}

// TestResumeSameBatches trains 6 steps in one run, and again resumed from the step-3
// checkpoint: steps 4 to 6 report bit-identical losses (the data order goes on).
func TestResumeSameBatches(t *testing.T) {
	req := &protocol.TrainRequest{Task: task(), Config: tiny(6, 3, 1), Train: usCases(t, 3, 8), WorkDir: t.TempDir(), Seed: 9}
	plugintest.CheckResume(t, enh{}.Train, req)
}

// TestCancel cancels a long run after its second step: Train returns within the
// protocol's 2 s and the last checkpoint stays.
func TestCancel(t *testing.T) {
	plugintest.CheckCancel(t, enh{}.Train, &protocol.TrainRequest{Task: task(), Config: tiny(100000, 1, 1), Train: usCases(t, 2, 6), WorkDir: t.TempDir(), Seed: 1})
}

// TestFormats trains two steps on 16-bit PNG pairs and predicts them, and an 8-bit RGB
// PNG, with both inference modes: each prediction has the input's size and element type
// (one grey channel), and the task spec's output suffix names the file when it has one.
func TestFormats(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(7, 7))
	var cases []protocol.Case
	for i, sz := range [][2]int{{45, 38}, {33, 52}} {
		clean, low := usPair(r, sz[0], sz[1], 4000) // 12-bit values in 16-bit files
		c := protocol.Case{ID: []string{"a", "b"}[i], Images: []string{filepath.Join(dir, "low"+string(rune('a'+i))+".png")}, Label: filepath.Join(dir, "high"+string(rune('a'+i))+".png")}
		writeImage(t, c.Images[0], low, sz[0], sz[1], volume.Uint16)
		writeImage(t, c.Label, clean, sz[0], sz[1], volume.Uint16)
		cases = append(cases, c)
	}
	// An RGB 8-bit image, grey values in all three channels but one pixel.
	rgb, err := volume.New(volume.Uint8, [4]int{36, 40, 1, 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := range rgb.Len() {
		rgb.SetIndex(i, float64(i/3%200))
	}
	rgb.SetIndex(0, 255)
	rgbPath := filepath.Join(dir, "rgb.png")
	if err := imageio.Write(rgbPath, rgb); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"window", "whole"} {
		t.Run(mode, func(t *testing.T) {
			cfg := strings.Replace(string(tiny(2, 2, 1)), `"lane"`, `"inference":"`+mode+`","lane"`, 1)
			res, err := enh{}.Train(context.Background(), &protocol.TrainRequest{Task: task(), Config: []byte(cfg), Train: cases, Validation: cases[1:], WorkDir: t.TempDir(), Seed: 2}, noProgress)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"lncc", "ssim", "psnr", "lncc_input", "ssim_input", "psnr_input"} {
				if _, ok := res.Validation[k]; !ok {
					t.Errorf("validation %v lacks %s", res.Validation, k)
				}
			}
			out := t.TempDir()
			all := append(append([]protocol.Case(nil), cases...), protocol.Case{ID: "rgb", Images: []string{rgbPath}})
			pr, err := enh{}.Predict(context.Background(), &protocol.PredictRequest{Task: task(), Checkpoint: res.Checkpoint, Cases: all, OutputDir: out})
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range pr.Predictions {
				in, _ := imageio.Read(all[i].Images[0])
				want := filepath.Join(out, all[i].ID+".png")
				if len(p.Files) != 1 || p.Files[0] != want {
					t.Fatalf("prediction %+v, want %s", p, want)
				}
				got, err := imageio.Read(want)
				if err != nil {
					t.Fatal(err)
				}
				if got.Dims != [4]int{in.Dims[0], in.Dims[1], 1, 1} || got.DType() != in.DType() {
					t.Errorf("case %s: prediction %v %v, input %v %v", p.CaseID, got.Dims, got.DType(), in.Dims, in.DType())
				}
			}
			// The task spec's output suffix.
			tk := task()
			tk.Spec = []byte(strings.Replace(spec, `"metric"`, `"output":".tif","metric"`, 1))
			pr, err = enh{}.Predict(context.Background(), &protocol.PredictRequest{Task: tk, Checkpoint: res.Checkpoint, Cases: cases[:1], OutputDir: out})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := imageio.Read(pr.Predictions[0].Files[0]); err != nil || filepath.Ext(pr.Predictions[0].Files[0]) != ".tif" || got.DType() != volume.Uint16 {
				t.Errorf("prediction with spec output .tif: %v %v", pr.Predictions[0].Files, err)
			}
		})
	}
}

// TestBadInput feeds Train and Predict a pair of different sizes, a case without target,
// a corrupt PNG, a missing file, a 3D image and a bad case id: each is an error that
// names the case and the problem.
func TestBadInput(t *testing.T) {
	good := usCases(t, 2, 9)
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.png")
	b, err := os.ReadFile(good[0].Images[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(corrupt, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	vol, err := volume.New(volume.Uint8, [4]int{16, 16, 3, 1})
	if err != nil {
		t.Fatal(err)
	}
	vol3d := filepath.Join(dir, "vol.nii.gz")
	if err := imageio.Write(vol3d, vol); err != nil {
		t.Fatal(err)
	}
	small := filepath.Join(dir, "small.png")
	writeImage(t, small, make([]float64, 20*20), 20, 20, volume.Uint8)
	for _, tc := range []struct {
		name string
		c    protocol.Case
		want string
	}{
		{"sizes", protocol.Case{ID: "x1", Images: []string{good[0].Images[0]}, Label: small}, "case x1: images do not pair"},
		{"no target", protocol.Case{ID: "x2", Images: []string{good[0].Images[0]}}, "case x2 has no high-quality target"},
		{"no image", protocol.Case{ID: "x3", Label: good[0].Label}, "case x3 has no low-quality image"},
		{"corrupt", protocol.Case{ID: "x4", Images: []string{corrupt}, Label: good[0].Label}, "case x4: low-quality image"},
		{"missing", protocol.Case{ID: "x5", Images: []string{good[0].Images[0]}, Label: filepath.Join(dir, "none.png")}, "case x5: high-quality target"},
		{"3d", protocol.Case{ID: "x6", Images: []string{vol3d}, Label: vol3d}, "3 slices"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := enh{}.Train(context.Background(), &protocol.TrainRequest{Task: task(), Config: tiny(2, 2, 1), Train: []protocol.Case{good[1], tc.c}, WorkDir: t.TempDir(), Seed: 1}, noProgress)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Train: %v, want an error with %q", err, tc.want)
			}
			_, err = enh{}.Train(context.Background(), &protocol.TrainRequest{Task: task(), Config: tiny(2, 2, 1), Train: good, Validation: []protocol.Case{tc.c}, WorkDir: t.TempDir(), Seed: 1}, noProgress)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "validation") {
				t.Errorf("Train with it for validation: %v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := (enh{}).Train(context.Background(), &protocol.TrainRequest{Task: task(), Config: tiny(2, 2, 1), WorkDir: t.TempDir()}, noProgress); err == nil {
		t.Error("Train without cases succeeded")
	}
	res, err := enh{}.Train(context.Background(), &protocol.TrainRequest{Task: task(), Config: tiny(1, 1, 1), Train: good, WorkDir: t.TempDir(), Seed: 1}, noProgress)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c    protocol.Case
		want string
	}{
		{protocol.Case{ID: "p1", Images: []string{corrupt}}, "case p1"},
		{protocol.Case{ID: "p2"}, "case p2 has no image"},
		{protocol.Case{ID: "../p3", Images: []string{good[0].Images[0]}}, "cannot name a file"},
		{protocol.Case{ID: "p4", Images: []string{vol3d}}, "3 slices"},
	} {
		_, err := enh{}.Predict(context.Background(), &protocol.PredictRequest{Task: task(), Checkpoint: res.Checkpoint, Cases: []protocol.Case{tc.c}, OutputDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Predict %+v: %v, want an error with %q", tc.c, err, tc.want)
		}
	}
	if _, err := (enh{}).Predict(context.Background(), &protocol.PredictRequest{Task: task(), Checkpoint: good[0].Images[0], Cases: good, OutputDir: t.TempDir()}); err == nil {
		t.Error("Predict with a PNG as checkpoint succeeded")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ cfg, want string }{
		{`{"lane":"deep","patch":[32,32],"batch":1,"widths":[4],"steps":1}`, "lane"},
		{`{"lane":"base","patch":[30,32],"batch":1,"widths":[4,8,16],"steps":1}`, "divisible"},
		{`{"lane":"base","patch":[4,32],"batch":1,"widths":[4],"steps":1}`, "SSIM window"},
		{`{"lane":"base","patch":[32,32],"batch":0,"widths":[4],"steps":1}`, "positive"},
		{`{"lane":"base","patch":[32,32],"batch":1,"widths":[],"steps":1}`, "widths"},
		{`{"lane":"base","patch":[32,32],"batch":1,"widths":[4],"steps":1,"l1_weight":0,"ssim_weight":0}`, "not both 0"},
		{`{"lane":"base","patch":[32,32],"batch":1,"widths":[4],"steps":1,"inference":"tiles"}`, "inference"},
		{`{"lane":"base","patch":[32,32],"batch":1,"widths":[4],"steps":1,"overlap":1}`, "overlap"},
		{`{"lane":"base","patch":[32,32],"batch":1,"widths":[4],"steps":1,"x":1}`, "unknown field"},
		{`[]`, "cannot unmarshal"},
	} {
		if _, err := parseConfig([]byte(tc.cfg)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
	c, err := parseConfig([]byte(`{"lane":"base","patch":[32,32],"batch":1,"widths":[4],"steps":1,"l1_weight":0}`))
	if err != nil || *c.L1 != 0 || *c.SSIM != defaultSSIM {
		t.Errorf("an explicit l1_weight of 0: %+v, %v", c, err)
	}
	for img, want := range map[string]string{"a.PNG": "c.png", "a.tif": "c.tif", "a.dcm": "c.png", "a.mha": "c.mha"} {
		if p, _ := outPath("d", "c", img, nil, volume.Uint8); p != filepath.Join("d", want) {
			t.Errorf("outPath for %s = %s, want %s", img, p, want)
		}
	}
	if p, _ := outPath("d", "c", "a.dcm", nil, volume.Int16); p != filepath.Join("d", "c.tif") {
		t.Errorf("outPath for 16-bit signed DICOM = %s, want c.tif", p)
	}
}

// FuzzParseConfig checks that no configuration makes parseConfig panic, and that an
// accepted one has the invariants training relies on.
func FuzzParseConfig(f *testing.F) {
	f.Add(tiny(6, 3, 2))
	f.Add([]byte(`{"lane":"wide","patch":[256,256],"batch":4,"widths":[32,64,128,256,512],"steps":5,"inference":"whole","l1_weight":1,"ssim_weight":0}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseConfig(b)
		if err != nil {
			return
		}
		div := 1 << (len(c.Widths) - 1)
		if c.Batch < 1 || c.Steps < 1 || c.Epoch < 1 || c.Report < 1 || len(c.Widths) == 0 || c.Patch[0]%div != 0 ||
			c.Patch[0] < c.Window || !(*c.L1+*c.SSIM > 0) {
			t.Fatalf("accepted %+v", c)
		}
	})
}

// FuzzParseFingerprint checks that no fingerprint makes Plan's parser panic and that an
// accepted one gives positive sides.
func FuzzParseFingerprint(f *testing.F) {
	f.Add(fingerprintJSON(3, 48, 60))
	f.Add([]byte(`{"cases":[{"dims":[64,64]},{"dims":[1,2,3]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, w, err := parseFingerprint(b)
		if err == nil && (h < 1 || w < 1 || h > maxSide || w > maxSide) {
			t.Fatalf("accepted sides %d×%d", h, w)
		}
	})
}
