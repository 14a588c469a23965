package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"amid/plugins/engine/vk/vktest"
	"amid/plugins/internal/imageplugin/imageplugintest"
	"amid/plugins/plugintest"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// binary is the plugin built once for the tests that start it.
var binary string

func TestMain(m *testing.M) {
	vktest.Pin() // lavapipe's vector width, before any Vulkan instance exists
	plugintest.Main(m, "iqa", &binary)
}

// ldctSpec is the spec of an LDCT-IQA-like task: 2D CT slices scored 0–4 in steps of 0.2.
func ldctSpec(t testing.TB, dims int) []byte {
	s := taskspec.Spec{ID: "ldct-like", Kind: taskspec.IQA, Dims: dims, Modality: "CT", Output: ".json", Metric: "score",
		Score: &taskspec.ScoreRange{Min: 0, Max: 4, Step: 0.2}}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func task(t testing.TB) protocol.Task {
	return protocol.Task{Kind: taskspec.IQA, Dims: 2, Metric: "score", Spec: ldctSpec(t, 2)}
}

// side is the edge of the generated slices.
const side = 64

// noiseHU is the noise's standard deviation of a slice of score s: 10 HU at the best
// score 4 up to 90 HU at 0, as a dose falls (LDCT-IQA's radiologists score noise above all).
func noiseHU(s float64) float64 { return 10 + 20*(4-s) }

// sliceCase writes a side×side float32 TIFF of a CT-like slice — air (−1000 HU) around an
// elliptical body (40 HU) holding two round organs (60 and −50 HU) of random size and
// place — with Gaussian noise of noiseHU(score) for a score drawn on the 0.2 grid, and its
// label.
func sliceCase(t testing.TB, dir, id string, r *rand.Rand) (protocol.Case, float64) {
	t.Helper()
	v, err := volume.New(volume.Float32, [4]int{side, side, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	score := float64(r.IntN(21)) / 5
	px := v.Data.([]float32)
	for i, hu := range ctSlice(r, noiseHU(score)) {
		px[i] = float32(hu)
	}
	c := protocol.Case{ID: id, Images: []string{filepath.Join(dir, id+".tif")}, Label: filepath.Join(dir, id+".json")}
	if err := imageio.Write(c.Images[0], v); err != nil {
		t.Fatal(err)
	}
	writeLabel(t, c.Label, &taskspec.Annotation{Score: &score})
	return c, score
}

// ctSlice draws a side×side CT-like slice, row by row: air (−1000 HU) around an elliptical
// body (40 HU) holding two round organs (60 and −50 HU) of random size and place, with
// Gaussian noise of sd HU.
func ctSlice(r *rand.Rand, sd float64) []float64 {
	ax, ay := 22+6*r.Float64(), 16+6*r.Float64()
	type disc struct{ x, y, r, hu float64 }
	organs := []disc{{24 + 8*r.Float64(), 28 + 8*r.Float64(), 5 + 3*r.Float64(), 60}, {36 + 6*r.Float64(), 30 + 6*r.Float64(), 4 + 2*r.Float64(), -50}}
	img := make([]float64, side*side)
	for y := range side {
		for x := range side {
			dx, dy := (float64(x)-side/2)/ax, (float64(y)-side/2)/ay
			hu := -1000.0
			if dx*dx+dy*dy <= 1 {
				hu = 40
				for _, o := range organs {
					if math.Hypot(float64(x)-o.x, float64(y)-o.y) <= o.r {
						hu = o.hu
					}
				}
			}
			img[y*side+x] = hu + sd*r.NormFloat64()
		}
	}
	return img
}

// writeLabel writes the annotation a as the label file at path.
func writeLabel(t testing.TB, path string, a *taskspec.Annotation) {
	t.Helper()
	imageplugintest.WriteLabel(t, path, a)
}

func sliceCases(t testing.TB, n int, seed uint64) []protocol.Case {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(seed, 13))
	var cs []protocol.Case
	for i := range n {
		c, _ := sliceCase(t, dir, fmt.Sprintf("slice%03d", i), r)
		cs = append(cs, c)
	}
	return cs
}

// tiny is a small configuration: the 64² slices averaged down to 32², three stages of 8
// to 32 channels, global average pooling.
func tiny(steps, epoch, report int, extra string) []byte {
	return fmt.Appendf(nil, `{"lane":"cnn","grid":[1,32,32],"widths":[8,16,32],"batch":8,"steps":%d,"steps_per_epoch":%d,`+
		`"report_every":%d,"learning_rate":0.003,"flip":[false,true,true],"rot90":true%s}`, steps, epoch, report, extra)
}

func TestConformance(t *testing.T) {
	tk := task(t)
	plugintest.Run(t, binary, &plugintest.Options{
		Task:         &tk,
		Cases:        sliceCases(t, 4, 1),
		TrainConfig:  tiny(6, 2, 2, `,"folds":2,"loss":{"mse":1,"rank":1}`),
		CancelConfig: tiny(100000, 2, 1, ""),
		// 2 folds of 4 steps, every step reported, an epoch checkpoint every 2: the rounds
		// split at step 4, the folds' boundary (TestRounds splits inside a fold too).
		RoundsConfig: tiny(4, 2, 1, `,"folds":2`),
	})
}

// TestLearns trains three lanes on 96 generated slices and scores 48 held-out ones with
// the LDCT-IQA score |PLCC| + |SROCC| + |KROCC| (at most 3).
func TestLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("trains four networks for a few seconds each")
	}
	p := plugintest.Start(t, binary)
	cases := sliceCases(t, 144, 3)
	for _, lane := range []struct{ name, extra string }{
		{"mse", ""},
		{"mse+rank", `,"loss":{"mse":1,"rank":1}`},
		{"mse+rank 2-fold", `,"loss":{"mse":1,"rank":1},"folds":2`},
	} {
		res, err := p.Train(context.Background(), &protocol.TrainRequest{
			LaneID: "learn", Task: task(t), Config: tiny(150, 50, 50, lane.extra),
			Train: cases[:96], Validation: cases[96:], WorkDir: t.TempDir(), Seed: 3,
		}, func(*protocol.Progress) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		v := res.Validation
		t.Logf("%s: score %.3f (PLCC %.3f, SROCC %.3f, KROCC %.3f); raw %.3f, snapped %.3f; out-of-fold %.3f",
			lane.name, v["score"], v["plcc"], v["srocc"], v["krocc"], v["score_raw"], v["score_snapped"], v["oof/score"])
		// Noise from 10 to 90 HU is plain to see against the slices' structure: a model
		// that ranks it scores well above 2 (KROCC, the lowest term, stays below 1 with
		// ties on the grid).
		if !(v["score"] > 2.2) {
			t.Errorf("%s: score %.3f, want > 2.2", lane.name, v["score"])
		}
	}
}
