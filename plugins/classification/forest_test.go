package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"amid/plugins/engine/ckpt"
	"amid/plugins/internal/forest"
	"amid/plugins/plugintest"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// patterns are the classes of the generated texture task, with their shares: white
// Gaussian noise, the same noise smoothed, and the white noise's values sorted so that
// the image brightens row by row. All three have the same intensity distribution
// (N(100, 10²)) and the same range of sizes, so neither a size nor an intensity rule
// separates them: only texture (white against the other two) and layout (the ramp).
var (
	patterns = []string{"white", "smooth", "ramp"}
	shares   = []float64{0.5, 0.3, 0.2}
)

func patternTask(t testing.TB) protocol.Task {
	s := taskspec.Spec{ID: "texture", Kind: taskspec.Classification, Dims: 2, Output: ".json", Metric: "balanced_accuracy",
		Attributes: []taskspec.Attribute{{Name: "pattern", Classes: patterns}}}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return protocol.Task{Kind: taskspec.Classification, Dims: 2, Metric: "balanced_accuracy", Spec: b}
}

// patternCase writes a 2D image of 24 to 48 pixels a side (drawn for every case alike) of
// the class drawn with the shares, and its label.
func patternCase(t testing.TB, dir, id string, r *rand.Rand) protocol.Case {
	t.Helper()
	X, Y := 24+r.IntN(25), 24+r.IntN(25)
	v, err := volume.New(volume.Float32, [4]int{X, Y, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	class, u := 0, r.Float64()
	for class < len(shares)-1 && u >= shares[class] {
		u -= shares[class]
		class++
	}
	px := v.Data.([]float32)
	for i := range px {
		px[i] = float32(100 + 10*r.NormFloat64())
	}
	switch patterns[class] {
	case "smooth":
		// A 3×3 box mean (wrapping at the edges) of white noise of σ 30 has σ 10.
		raw := make([]float64, len(px))
		for i := range raw {
			raw[i] = 30 * r.NormFloat64()
		}
		for y := range Y {
			for x := range X {
				var s float64
				for dy := -1; dy <= 1; dy++ {
					for dx := -1; dx <= 1; dx++ {
						s += raw[((y+dy+Y)%Y)*X+(x+dx+X)%X]
					}
				}
				px[y*X+x] = float32(100 + s/9)
			}
		}
	case "ramp":
		slices.Sort(px)
	}
	c := protocol.Case{ID: id, Images: []string{filepath.Join(dir, id+"_0000.nii.gz")}, Label: filepath.Join(dir, id+".json")}
	if err := imageio.Write(c.Images[0], v); err != nil {
		t.Fatal(err)
	}
	writeLabel(t, c.Label, &taskspec.Annotation{Classes: map[string]int{"pattern": class}})
	return c
}

func patternCases(t testing.TB, n int, seed uint64) []protocol.Case {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(seed, 13))
	var cs []protocol.Case
	for i := range n {
		cs = append(cs, patternCase(t, dir, fmt.Sprintf("img%03d", i), r))
	}
	return cs
}

// TestForestLearnsTexture trains the forest lane on 60 generated images that only texture
// and layout tell apart and validates it on 40 more: its balanced accuracy is at least 0.9
// (the Laplacian's σ relative to the range is about three times higher for white noise
// than for the smoothed noise or the ramp, and the ramp's layout runs from 0 to 1, so one
// split each separates the classes; 0.9 allows a few errors among the 40), where the prior
// scores 1/3. Training again with the same seed gives the same checkpoint, and predicting
// from it gives the same files twice, whose classes score what validation said.
func TestForestLearnsTexture(t *testing.T) {
	cases := patternCases(t, 100, 1)
	train, val := cases[:60], cases[60:]
	req := &protocol.TrainRequest{Task: patternTask(t), Config: []byte(`{"lane":"forest"}`), Train: train, Validation: val, WorkDir: t.TempDir(), Seed: 4}
	var msgs []string
	res, err := cls{}.Train(context.Background(), req, func(p *protocol.Progress) error {
		msgs = append(msgs, p.Message)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	v := res.Validation
	t.Logf("%s; balanced accuracy %.3f, prior %.3f", strings.Join(msgs, "; "), v["balanced_accuracy"], v["prior/balanced_accuracy"])
	if got := v["balanced_accuracy"]; got < 0.9 {
		t.Errorf("forest balanced accuracy %.3f, want at least 0.9", got)
	}
	if res.Steps != 1 {
		t.Errorf("%d steps, want 1", res.Steps)
	}
	req2 := *req
	req2.WorkDir = t.TempDir()
	res2, err := cls{}.Train(context.Background(), &req2, func(*protocol.Progress) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if res2.SHA256 != res.SHA256 {
		t.Errorf("the same seed gave checkpoints %s and %s", res.SHA256, res2.SHA256)
	}
	s, _ := spec(patternTask(t))
	var first [][]byte
	for run := range 2 {
		out := t.TempDir()
		pr, err := cls{}.Predict(context.Background(), &protocol.PredictRequest{Task: patternTask(t), Checkpoint: res.Checkpoint, Cases: val, OutputDir: out})
		if err != nil {
			t.Fatal(err)
		}
		var truth, pred []string
		for i, p := range pr.Predictions {
			b, err := os.ReadFile(p.Files[0])
			if err != nil {
				t.Fatal(err)
			}
			if run == 0 {
				first = append(first, b)
			} else if !bytes.Equal(b, first[i]) {
				t.Errorf("case %s: predictions differ:\n%s\n%s", p.CaseID, first[i], b)
			}
			a, err := taskspec.ReadAnnotation(p.Files[0], s)
			if err != nil {
				t.Fatal(err)
			}
			checkProbs(t, p.CaseID, s, a)
			l, err := taskspec.ReadAnnotation(val[i].Label, s)
			if err != nil {
				t.Fatal(err)
			}
			truth, pred = append(truth, patterns[l.Classes["pattern"]]), append(pred, patterns[a.Classes["pattern"]])
			if p.Confidence == nil || *p.Confidence <= 0 || *p.Confidence > 1 {
				t.Errorf("case %s: confidence %v", p.CaseID, p.Confidence)
			}
		}
		if got := balanced(truth, pred); got != v["balanced_accuracy"] {
			t.Errorf("predictions score %v, validation said %v", got, v["balanced_accuracy"])
		}
	}
}

// TestBalancedRows: classes of 3, 1 and 0 rows become 3 and 3 rows, the lone one repeated.
func TestBalancedRows(t *testing.T) {
	got := balancedRows([]uint8{0, 1, 0, 0}, 3)
	if want := []int{0, 2, 3, 1, 1, 1}; !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
}

// TestPlanForest: a task without a multi-label attribute gets the forest lane, on the CPU,
// in one step, with its trees; a forest configuration refuses network fields.
func TestPlanForest(t *testing.T) {
	r, err := cls{}.Plan(context.Background(), &protocol.PlanRequest{Task: patternTask(t)})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(r.Candidates, func(c protocol.Candidate) bool { return c.Name == "forest" })
	if i < 0 {
		t.Fatalf("no forest lane among %+v", r.Candidates)
	}
	c := r.Candidates[i]
	cfg, err := parseConfig(c.Config, 2)
	if err != nil || cfg.Lane != laneForest || cfg.Trees != defaultTrees || c.MaxSteps != 1 || c.Device != "cpu" {
		t.Errorf("forest candidate %+v: %+v (%v)", c, cfg, err)
	}
	for _, bad := range []string{`{"lane":"forest","grid":[1,8,8]}`, `{"lane":"forest","heads":"variant"}`, `{"lane":"forest","trees":5000}`, `{"lane":"prior","trees":3}`} {
		if _, err := parseConfig([]byte(bad), 2); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestForestCorrupt: a forest checkpoint whose extra bytes or record do not hold the
// forests is refused with an error, not a panic.
func TestForestCorrupt(t *testing.T) {
	cases := patternCases(t, 12, 2)
	res, err := cls{}.Train(context.Background(), &protocol.TrainRequest{Task: patternTask(t), Config: []byte(`{"lane":"forest","trees":4}`), Train: cases, WorkDir: t.TempDir(), Seed: 1},
		func(*protocol.Progress) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	man, st, err := ckpt.Read(res.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	var rec saved
	if err := json.Unmarshal(man.Train, &rec); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(r *saved, extra []byte) []byte
		want error
	}{
		{"truncated", func(_ *saved, e []byte) []byte { return e[:len(e)/2] }, forest.ErrFormat},
		{"trailing", func(_ *saved, e []byte) []byte { return append(e, 1) }, forest.ErrFormat},
		{"garbage", func(_ *saved, e []byte) []byte { return bytes.Repeat([]byte{0xff}, len(e)) }, forest.ErrFormat},
		{"negative length", func(r *saved, e []byte) []byte { r.Forests[0].Bytes = -1; return e }, forest.ErrFormat},
		{"unknown attribute", func(r *saved, e []byte) []byte { r.Forests[0].Attr = "colour"; return e }, forest.ErrFormat},
		{"more files", func(r *saved, e []byte) []byte { r.Files = 2; return e }, forest.ErrFormat},
		{"no forests", func(r *saved, _ []byte) []byte { r.Forests = nil; return nil }, forest.ErrFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rec
			r.Forests = slices.Clone(rec.Forests)
			extra := tc.edit(&r, slices.Clone(st.Extra))
			p := filepath.Join(t.TempDir(), "bad.ckpt")
			if err := ckpt.Save(p, ckpt.Checkpoint{Train: r, Epoch: 1, Step: 1, Model: empty{}, Extra: extra}); err != nil {
				t.Fatal(err)
			}
			_, err := cls{}.Predict(context.Background(), &protocol.PredictRequest{Checkpoint: p, Cases: cases[:1], OutputDir: t.TempDir()})
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
		})
	}
	// A flipped byte in the file fails the checkpoint's SHA-256.
	b, err := os.ReadFile(res.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-10] ^= 1
	p := filepath.Join(t.TempDir(), "flipped.ckpt")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (cls{}).Predict(context.Background(), &protocol.PredictRequest{Checkpoint: p, Cases: cases[:1], OutputDir: t.TempDir()}); !errors.Is(err, ckpt.ErrFormat) {
		t.Errorf("flipped byte: %v", err)
	}
}

// TestForestMultiLabel: the forest lane refuses a task with a multi-label attribute.
func TestForestMultiLabel(t *testing.T) {
	_, err := cls{}.Train(context.Background(), &protocol.TrainRequest{Task: multiTask(t), Config: []byte(`{"lane":"forest"}`), Train: multiCases(t, 4, 1), WorkDir: t.TempDir(), Seed: 1},
		func(*protocol.Progress) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "multi-label") {
		t.Errorf("error %v", err)
	}
}

func TestConformanceForest(t *testing.T) {
	tk := task(t)
	plugintest.Run(t, binary, &plugintest.Options{
		Task: &tk, Cases: volumeCases(t, 3, 2), TrainConfig: []byte(`{"lane":"forest","trees":8}`), CancelConfig: []byte(`{"lane":"forest","trees":8}`),
		NoRounds: "the forest lane grows all its trees in its one step; it has no steps to resume or split",
	})
}
