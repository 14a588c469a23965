package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"amid/plugins/engine/ckpt"
	"amid/plugins/plugintest"
	"amid/plugins/protocol"
	"amid/plugins/protocol/schema"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// forestCfg is a forest lane's configuration of trees trees for labels.
func forestCfg(trees, report int, labels string) []byte {
	return fmt.Appendf(nil, `{"lane":"forest","modality":"mr","coords":true,"labels":%s,"steps":%d,"steps_per_epoch":4,"report_every":%d,"samples":20000}`, labels, trees, report)
}

// TestForestConformance runs the conformance suite, its resume and rounds checks
// included, on the forest lane: a step is a tree.
func TestForestConformance(t *testing.T) {
	plugintest.Run(t, binary, &plugintest.Options{
		Task:         &protocol.Task{Kind: "segmentation", Dims: 2, Metric: "dice"},
		Fingerprint:  fingerprint(3),
		Cases:        discCases(t, 3, 1),
		TrainConfig:  forestCfg(6, 2, "[0,1]"),
		CancelConfig: forestCfg(100000, 1, "[0,1]"),
		RoundsConfig: forestCfg(6, 1, "[0,1]"),
	})
}

// quadrantCase writes a 40×40×6 volume (1 mm) of one tissue: a ball of radius 15 around
// the grid's centre, 2 brighter than the background, under Gaussian noise of σ 1, its
// centre moved by up to 2 voxels from case to case. Its label map splits the ball into
// four classes by the quadrant its voxels lie in, about the grid's centre: the classes
// look the same and only position tells them apart, as in bench-quality's
// inia19-quadrants task.
func quadrantCase(t testing.TB, dir, id string, r *rand.Rand) protocol.Case {
	t.Helper()
	dims := [4]int{40, 40, 6, 1}
	img, err := volume.New(volume.Float32, dims)
	if err != nil {
		t.Fatal(err)
	}
	lab, err := volume.New(volume.Uint8, dims)
	if err != nil {
		t.Fatal(err)
	}
	cx, cy := 20+4*r.Float64()-2, 20+4*r.Float64()-2
	px, lx := img.Data.([]float32), lab.Data.([]uint8)
	for z := range dims[2] {
		for y := range dims[1] {
			for x := range dims[0] {
				i := (z*dims[1]+y)*dims[0] + x
				px[i] = float32(10 + r.NormFloat64())
				if math.Hypot(float64(x)-cx, float64(y)-cy) > 15 {
					continue
				}
				px[i] += 2
				k := uint8(1)
				if x >= 20 {
					k++
				}
				if y >= 20 {
					k += 2
				}
				lx[i] = k
			}
		}
	}
	return writeCase(t, dir, id, ".nii.gz", lab, img)
}

// TestForestLearnsPosition trains 16 trees on 4 quadrant cases and scores 2 held out:
// the validation Dice must reach 0.85. Intensity alone cannot do it: the four classes have
// one intensity, so any rule on it gives one class to the whole ball, a mean Dice of at
// most about 0.25 + 0.15 (one class right, the others empty).
func TestForestLearnsPosition(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(4, 2))
	var cases []protocol.Case
	for i := range 6 {
		cases = append(cases, quadrantCase(t, dir, fmt.Sprintf("q%d", i), r))
	}
	res, err := seg{}.Train(context.Background(), &protocol.TrainRequest{
		Task: protocol.Task{Kind: "segmentation", Dims: 3}, Config: forestCfg(16, 4, "[0,1,2,3,4]"),
		Train: cases[:4], Validation: cases[4:], WorkDir: t.TempDir(), Seed: 3,
	}, func(*protocol.Progress) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("validation %v", res.Validation)
	if d := res.Validation["dice"]; !(d >= 0.85) {
		t.Errorf("validation Dice %.4f, want at least 0.85", d)
	}
	// Normalised with the training set's statistics (modality global, as the planner
	// chooses for images on one scale: the ball is 12 ± 1 in every case, whose 0.5 and
	// 99.5 percentiles are 12 ∓ 2.58) it learns alike.
	global, err := seg{}.Train(context.Background(), &protocol.TrainRequest{
		Task: protocol.Task{Kind: "segmentation", Dims: 3}, Config: []byte(`{"lane":"forest","modality":"global","ct":{"low":9.4,"high":14.6,"mean":12,"std":1},"coords":true,"labels":[0,1,2,3,4],"steps":16,"steps_per_epoch":4,"report_every":4,"samples":20000}`),
		Train: cases[:4], Validation: cases[4:], WorkDir: t.TempDir(), Seed: 3,
	}, func(*protocol.Progress) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if d := global.Validation["dice"]; !(d >= 0.85) {
		t.Errorf("with global statistics: validation Dice %.4f, want at least 0.85", d)
	}
	// Without the position planes the forest sees four classes of one look.
	blind, err := seg{}.Train(context.Background(), &protocol.TrainRequest{
		Task: protocol.Task{Kind: "segmentation", Dims: 3}, Config: []byte(`{"lane":"forest","modality":"mr","labels":[0,1,2,3,4],"steps":16,"samples":20000}`),
		Train: cases[:4], Validation: cases[4:], WorkDir: t.TempDir(), Seed: 3,
	}, func(*protocol.Progress) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("without position: validation %v", blind.Validation)
	if d := blind.Validation["dice"]; d >= res.Validation["dice"]-0.2 {
		t.Errorf("without position the forest scored %.4f, with it %.4f: position should decide", d, res.Validation["dice"])
	}
}

// TestForestResume grows 8 trees in one run, and 4 then 4 more resumed from the first
// run's checkpoint: the two forests must be the same bytes, and predict the same labels.
func TestForestResume(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(5, 1))
	var cases []protocol.Case
	for i := range 3 {
		cases = append(cases, quadrantCase(t, dir, fmt.Sprintf("q%d", i), r))
	}
	train := func(until int64, resume string) string {
		res, err := seg{}.Train(context.Background(), &protocol.TrainRequest{
			Task: protocol.Task{Kind: "segmentation", Dims: 3}, Config: forestCfg(8, 1, "[0,1,2,3,4]"),
			Train: cases[:2], WorkDir: t.TempDir(), Seed: 7, Until: until, ResumeFrom: resume,
		}, func(*protocol.Progress) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return res.Checkpoint
	}
	whole := train(0, "")
	half := train(4, "")
	resumed := train(0, half)
	forestOf := func(path string) (*ckpt.Stored, *ckpt.Manifest) {
		m, s, err := ckpt.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		return s, m
	}
	a, ma := forestOf(whole)
	b, mb := forestOf(resumed)
	if ma.Step != 8 || mb.Step != 8 || len(a.Extra) == 0 || !slices.Equal(a.Extra, b.Extra) || string(ma.Train) != string(mb.Train) {
		t.Fatalf("8 trees at once (step %d, %d bytes) and 4 + 4 resumed (step %d, %d bytes) differ", ma.Step, len(a.Extra), mb.Step, len(b.Extra))
	}
	predict := func(ck string) []float64 {
		out := t.TempDir()
		pr, err := seg{}.Predict(context.Background(), &protocol.PredictRequest{Task: protocol.Task{Kind: "segmentation", Dims: 3}, Checkpoint: ck, Cases: cases[2:], OutputDir: out})
		if err != nil {
			t.Fatal(err)
		}
		v, err := imageio.Read(pr.Predictions[0].Files[0])
		if err != nil {
			t.Fatal(err)
		}
		var px []float64
		for i := range v.NumVoxels() {
			px = append(px, v.AtIndex(i))
		}
		return px
	}
	if !slices.Equal(predict(whole), predict(resumed)) {
		t.Error("the two forests predict differently")
	}
}

// A forest round whose time limit passed before its first tree (a round started late on a
// busy machine: a demo run under load logged "for at most 0s" and failed its only lane
// with "a forest without trees") still grows one tree, and validates.
func TestForestLateRound(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(5, 1))
	var cases []protocol.Case
	for i := range 3 {
		cases = append(cases, quadrantCase(t, dir, fmt.Sprintf("q%d", i), r))
	}
	res, err := seg{}.Train(context.Background(), &protocol.TrainRequest{
		Task: protocol.Task{Kind: "segmentation", Dims: 3}, Config: forestCfg(8, 1, "[0,1,2,3,4]"),
		Train: cases[:2], Validation: cases[2:], WorkDir: t.TempDir(), Seed: 7, TimeLimit: time.Nanosecond,
	}, func(*protocol.Progress) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 1 || len(res.Validation) == 0 {
		t.Errorf("a late round: %d trees, validation %v; want 1 tree, validated", res.Steps, res.Validation)
	}
}

// TestForestConfig: the forest lane takes no network fields, and a network lane no
// forest fields.
func TestForestConfig(t *testing.T) {
	c, err := parseConfig(forestCfg(4, 1, "[0,1]"))
	if err != nil || c.MaxDepth != defaultForestDepth || c.Samples != 20000 {
		t.Fatalf("forest: %+v, %v", c, err)
	}
	for _, bad := range []string{
		`{"lane":"forest","modality":"mr","labels":[0,1],"steps":4,"patch":[1,8,8]}`,
		`{"lane":"forest","modality":"mr","labels":[0,1],"steps":4,"widths":[8]}`,
		`{"lane":"forest","modality":"mr","labels":[0,1],"steps":4,"instances":true}`,
		`{"lane":"forest","modality":"mr","labels":[0,1],"steps":4,"max_depth":31}`,
		`{"lane":"2d","patch":[1,8,8],"batch":2,"widths":[8],"modality":"mr","labels":[0,1],"steps":4,"max_depth":8}`,
		`{"lane":"2d","patch":[1,8,8],"batch":2,"widths":[8],"modality":"mr","labels":[0,1],"steps":4,"postprocess":"smooth"}`,
	} {
		if _, err := parseConfig([]byte(bad)); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}

// TestSmoothOption: "smooth" is the forest lane's post-processing, in the plugin and in
// its schema (from which the host reads the options a lane may try), and a network lane
// refuses it with a reason.
func TestSmoothOption(t *testing.T) {
	s, err := schema.Compile([]byte(configSchema))
	if err != nil {
		t.Fatal(err)
	}
	forestSmooth := `{"lane":"forest","modality":"mr","labels":[0,1],"steps":4,"postprocess":"smooth"}`
	netSmooth := `{"lane":"2d","patch":[1,8,8],"batch":2,"widths":[8],"modality":"mr","labels":[0,1],"steps":4,"postprocess":"smooth"}`
	if c, err := parseConfig([]byte(forestSmooth)); err != nil || c.Post != postSmooth {
		t.Errorf("the forest with smooth: %+v, %v", c, err)
	}
	if err := s.Check([]byte(forestSmooth)); err != nil {
		t.Errorf("the schema refuses the forest with smooth: %v", err)
	}
	if _, err := parseConfig([]byte(netSmooth)); err == nil || !strings.Contains(err.Error(), "forest lane's") {
		t.Errorf("a 2d lane with smooth: %v, want a refusal that names the forest", err)
	}
	if err := s.Check([]byte(netSmooth)); err == nil {
		t.Errorf("the schema allows smooth for a 2d lane: the host would try it")
	}
	if err := s.Check([]byte(strings.Replace(netSmooth, "smooth", "lcc", 1))); err != nil {
		t.Errorf("the schema refuses lcc for a 2d lane: %v", err)
	}
}

// TestSmoothPlanes: each plane is smoothed by the same filter, so every voxel's
// probabilities still sum to 1 (to float32 rounding), and a lone voxel whose forest vote
// was doubtful (0.6 against its neighbours' 0.1) takes its neighbours' class.
func TestSmoothPlanes(t *testing.T) {
	dims := [3]int{9, 9, 3}
	S := dims[0] * dims[1] * dims[2]
	prob := make([]float32, 2*S)
	for i := range S {
		prob[i], prob[S+i] = 0.9, 0.1
	}
	lone := 4 + 4*dims[0] + 1*dims[0]*dims[1]
	prob[lone], prob[S+lone] = 0.4, 0.6
	smoothPlanes(prob, 2, dims, [3]float64{1, 1, 1}, smoothMM)
	for i := range S {
		if d := math.Abs(float64(prob[i]+prob[S+i]) - 1); d > 1e-6 {
			t.Fatalf("voxel %d: probabilities sum to 1%+g", i, d)
		}
	}
	if prob[S+lone] >= prob[lone] {
		t.Errorf("the lone voxel kept its class: %v against %v", prob[S+lone], prob[lone])
	}
}
