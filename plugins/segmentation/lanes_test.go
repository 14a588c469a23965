package main

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"amid/plugins/plugintest"
	"amid/plugins/protocol"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// TestResumeSameBatches trains 6 steps in one run, and again resumed from the first run's
// step-3 checkpoint: steps 4 to 6 have bit-identical losses, so the resumed run saw the
// same batches with the same weights and optimizer state.
func TestResumeSameBatches(t *testing.T) {
	cases := discCases(t, 3, 11)
	req := &protocol.TrainRequest{Task: protocol.Task{Kind: "segmentation", Dims: 2}, Config: tiny(6, 3, 1), Train: cases, WorkDir: t.TempDir(), Seed: 9}
	plugintest.CheckResume(t, seg{}.Train, req)
}

// TestRounds trains 6 steps in one run, and in two rounds (to step 2, then on from its
// final checkpoint): steps 3 to 6 have bit-identical losses.
func TestRounds(t *testing.T) {
	cases := discCases(t, 3, 11)
	req := &protocol.TrainRequest{Task: protocol.Task{Kind: "segmentation", Dims: 2}, Config: tiny(6, 3, 1), Train: cases, WorkDir: t.TempDir(), Seed: 9}
	plugintest.CheckRounds(t, seg{}.Train, req, 2)
}

// volumeCases writes n 24×24×8 volumes (1 mm) of noise with a bright ball of radius 3–4.5
// and its label (value 1), as NIfTI.
func volumeCases(t *testing.T, n int, seed uint64) []protocol.Case {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(seed, 3))
	var out []protocol.Case
	for i := range n {
		img, _ := volume.New(volume.Float32, [4]int{24, 24, 8, 1})
		lab, _ := volume.New(volume.Uint8, [4]int{24, 24, 8, 1})
		cx, cy, cz, rad := 7+10*r.Float64(), 7+10*r.Float64(), 2.5+3*r.Float64(), 3+1.5*r.Float64()
		px, lx := img.Data.([]float32), lab.Data.([]uint8)
		for z := range 8 {
			for y := range 24 {
				for x := range 24 {
					j := (z*24+y)*24 + x
					px[j] = float32(r.NormFloat64())
					if math.Sqrt(sq(float64(x)-cx)+sq(float64(y)-cy)+sq(float64(z)-cz)) <= rad {
						px[j] += 3
						lx[j] = 1
					}
				}
			}
		}
		id := "vol" + string(rune('a'+i))
		c := protocol.Case{ID: id, Images: []string{filepath.Join(dir, id+"_0000.nii.gz")}, Label: filepath.Join(dir, id+".nii.gz")}
		if err := imageio.Write(c.Images[0], img); err != nil {
			t.Fatal(err)
		}
		if err := imageio.Write(c.Label, lab); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func sq(x float64) float64 { return x * x }

// Test25D trains the 2.5d lane (3 slices as channels) on volumes, with deep supervision,
// through the built plugin, and checks the validation it reports (Dice of every
// post-processing option) and the prediction's grid.
func Test25D(t *testing.T) {
	p := plugintest.Start(t, binary)
	cases := volumeCases(t, 5, 1)
	cfg := `{"lane":"2.5d","slices":3,"patch":[1,24,24],"batch":4,"widths":[8,16,32,32],"modality":"mr","labels":[0,1],` +
		`"steps":60,"steps_per_epoch":60,"report_every":20,"learning_rate":0.01,"deep_supervision":true}`
	res, err := p.Train(context.Background(), &protocol.TrainRequest{
		Task: protocol.Task{Kind: "segmentation", Dims: 3}, Config: []byte(cfg), Train: cases[:4], Validation: cases[4:], WorkDir: t.TempDir(), Seed: 2,
	}, func(*protocol.Progress) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("2.5d validation after 60 steps: %v", res.Validation)
	for _, p := range postprocessing {
		if _, ok := res.Validation[p.key]; !ok {
			t.Errorf("validation lacks %s: %v", p.key, res.Validation)
		}
	}
	// 0.7: a ball 3 σ brighter than the noise is found within 60 steps (about 0.9 here).
	if d := res.Validation["dice"]; !(d >= 0.7) {
		t.Errorf("2.5d validation Dice %v, want ≥ 0.7", d)
	}
	out := t.TempDir()
	pr, err := p.Predict(context.Background(), &protocol.PredictRequest{Checkpoint: res.Checkpoint, Cases: cases[4:], OutputDir: out})
	if err != nil {
		t.Fatal(err)
	}
	got, err := imageio.Read(pr.Predictions[0].Files[0])
	if err != nil {
		t.Fatal(err)
	}
	if got.Dims != [4]int{24, 24, 8, 1} {
		t.Errorf("prediction dims %v", got.Dims)
	}
}

// TestPostprocessChosen trains on disc images through the built plugin, then predicts an
// image with a large and a small disc: without post-processing both are found, with
// postprocess "lcc" in the request's configuration only the large one, with "small" and
// min_component above the small disc's area too.
func TestPostprocessChosen(t *testing.T) {
	p := plugintest.Start(t, binary)
	cases := discCases(t, 6, 21)
	res, err := p.Train(context.Background(), &protocol.TrainRequest{
		Task: protocol.Task{Kind: "segmentation", Dims: 2}, Config: tiny(80, 80, 40), Train: cases[:5], Validation: cases[5:], WorkDir: t.TempDir(), Seed: 4,
	}, func(*protocol.Progress) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Validation) != len(postprocessing) {
		t.Errorf("validation %v, want one Dice per post-processing option", res.Validation)
	}
	// Two discs, radius 7 (about 154 pixels) and 3 (about 29), 2.5 brighter than noise.
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(8, 8))
	img, _ := volume.New(volume.Float32, [4]int{side, side, 1, 1})
	px := img.Data.([]float32)
	for y := range side {
		for x := range side {
			px[y*side+x] = float32(10 + r.NormFloat64())
			if math.Hypot(float64(x)-10, float64(y)-10) <= 7 || math.Hypot(float64(x)-24, float64(y)-24) <= 3 {
				px[y*side+x] += 2.5
			}
		}
	}
	c := protocol.Case{ID: "two", Images: []string{filepath.Join(dir, "two_0000.nii.gz")}}
	if err := imageio.Write(c.Images[0], img); err != nil {
		t.Fatal(err)
	}
	big := func(post string, minComp int) (int, int) {
		var cfg map[string]any
		if err := json.Unmarshal(tiny(80, 80, 40), &cfg); err != nil {
			t.Fatal(err)
		}
		cfg["postprocess"], cfg["min_component"] = post, minComp
		b, _ := json.Marshal(cfg)
		out := t.TempDir()
		pr, err := p.Predict(context.Background(), &protocol.PredictRequest{Config: b, Checkpoint: res.Checkpoint, Cases: []protocol.Case{c}, OutputDir: out})
		if err != nil {
			t.Fatal(err)
		}
		lab, err := imageio.Read(pr.Predictions[0].Files[0])
		if err != nil {
			t.Fatal(err)
		}
		// Foreground near each disc's centre.
		return int(lab.AtIndex(10*side + 10)), int(lab.AtIndex(24*side + 24))
	}
	if a, b := big("none", 0); a != 1 || b != 1 {
		t.Fatalf("no post-processing: large disc %d, small disc %d; want both found", a, b)
	}
	if a, b := big("lcc", 0); a != 1 || b != 0 {
		t.Errorf("lcc: large disc %d, small disc %d; want only the large", a, b)
	}
	if a, b := big("small", 60); a != 1 || b != 0 {
		t.Errorf("small under 60 pixels: large disc %d, small disc %d; want only the large", a, b)
	}
	if _, err := p.Predict(context.Background(), &protocol.PredictRequest{Config: []byte(`{"postprocess":"x"}`), Checkpoint: res.Checkpoint, Cases: []protocol.Case{c}, OutputDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "request") {
		t.Errorf("an invalid request configuration: %v", err)
	}
}
