package main

import (
	"context"
	"encoding/json"
	"fmt"
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
	plugintest.Main(m, "classification", &binary)
}

// The generated task: TopCoW-like anterior and posterior groups of 4 binary edges each.
var (
	antEdges = []string{"L-A1", "Acom", "3rd-A2", "R-A1"}
	posEdges = []string{"L-Pcom", "L-P1", "R-P1", "R-Pcom"}
	// edgeProb is the chance of each edge being present, TopCoW-like: the A1s and P1s are
	// nearly always there, a third A2 rarely, so the variants are imbalanced.
	edgeProb = map[string]float64{"L-A1": 0.9, "Acom": 0.7, "3rd-A2": 0.2, "R-A1": 0.9, "L-Pcom": 0.4, "L-P1": 0.9, "R-P1": 0.9, "R-Pcom": 0.4}
)

// topcowSpec is the spec of the generated task.
func topcowSpec(t testing.TB) []byte {
	s := taskspec.Spec{ID: "topcow-like", Kind: taskspec.Classification, Dims: 3, Modality: "CT", Output: ".json", Metric: "balanced_accuracy"}
	for _, e := range antEdges {
		s.Attributes = append(s.Attributes, taskspec.Attribute{Name: e, Classes: []string{"absent", "present"}, Group: "anterior"})
	}
	for _, e := range posEdges {
		s.Attributes = append(s.Attributes, taskspec.Attribute{Name: e, Classes: []string{"absent", "present"}, Group: "posterior"})
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// side is the edge of the generated volumes.
const side = 16

// volumeCase writes a side³ NIfTI volume of Gaussian noise (σ 1, mean 100) in which every
// present edge is a bright tube (+3) of radius 1.5 running along Z through one of 8
// regions (a 2×2 grid in X–Y, anterior edges in the upper Z half, posterior in the lower
// one), and its label.
func volumeCase(t testing.TB, dir, id string, r *rand.Rand) protocol.Case {
	t.Helper()
	v, err := volume.New(volume.Float32, [4]int{side, side, side, 1})
	if err != nil {
		t.Fatal(err)
	}
	v.Spacing = [3]float64{0.5, 0.5, 0.8}
	px := v.Data.([]float32)
	for i := range px {
		px[i] = float32(100 + r.NormFloat64())
	}
	classes := map[string]int{}
	for g, edges := range [][]string{antEdges, posEdges} {
		for k, e := range edges {
			if r.Float64() >= edgeProb[e] {
				classes[e] = 0
				continue
			}
			classes[e] = 1
			cx, cy := 4+8*(k%2), 4+8*(k/2) // region centres at 4 and 12
			for z := g * side / 2; z < (g+1)*side/2; z++ {
				for y := range side {
					for x := range side {
						if dx, dy := x-cx, y-cy; dx*dx+dy*dy <= 2 {
							px[(z*side+y)*side+x] += 3
						}
					}
				}
			}
		}
	}
	c := protocol.Case{ID: id, Images: []string{filepath.Join(dir, id+"_0000.nii.gz")}, Label: filepath.Join(dir, id+".json")}
	if err := imageio.Write(c.Images[0], v); err != nil {
		t.Fatal(err)
	}
	writeLabel(t, c.Label, &taskspec.Annotation{Classes: classes})
	return c
}

// writeLabel writes the annotation a as the label file at path.
func writeLabel(t testing.TB, path string, a *taskspec.Annotation) {
	t.Helper()
	imageplugintest.WriteLabel(t, path, a)
}

func volumeCases(t testing.TB, n int, seed uint64) []protocol.Case {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(seed, 11))
	var cs []protocol.Case
	for i := range n {
		cs = append(cs, volumeCase(t, dir, fmt.Sprintf("case%03d", i), r))
	}
	return cs
}

// tiny is a small cnn configuration on the generated volumes: four stages of 4 to 32
// channels on the full 16³ grid, the final 2³ map flattened.
func tiny(heads string, steps, epoch, report int) []byte {
	return fmt.Appendf(nil, `{"lane":"cnn","grid":[%d,%d,%d],"widths":[4,8,16,32],"batch":8,"steps":%d,"steps_per_epoch":%d,`+
		`"report_every":%d,"learning_rate":0.003,"heads":%q}`, side, side, side, steps, epoch, report, heads)
}

func task(t testing.TB) protocol.Task {
	return protocol.Task{Kind: taskspec.Classification, Dims: 3, Metric: "balanced_accuracy", Spec: topcowSpec(t)}
}

func TestConformance(t *testing.T) {
	tk := task(t)
	plugintest.Run(t, binary, &plugintest.Options{
		Task:         &tk,
		Cases:        volumeCases(t, 3, 1),
		TrainConfig:  tiny("variant", 6, 3, 2),
		CancelConfig: tiny("variant", 100000, 2, 1),
		RoundsConfig: tiny("variant", 6, 3, 1), // every step reported, a checkpoint at step 3 of 6
	})
}

func TestConformancePrior(t *testing.T) {
	tk := task(t)
	plugintest.Run(t, binary, &plugintest.Options{
		Task: &tk, Cases: volumeCases(t, 3, 2), TrainConfig: []byte(`{"lane":"prior"}`), CancelConfig: []byte(`{"lane":"prior"}`),
		NoRounds: "the prior lane's one step counts the training labels; it has no steps to resume or split",
	})
}

// TestLearns trains both cnn lanes on 128 generated volumes and scores 48 held-out ones
// against the prior.
func TestLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two networks for a few seconds each")
	}
	p := plugintest.Start(t, binary)
	cases := volumeCases(t, 176, 3)
	// margin is how far each lane must beat the prior: per-attribute heads see every edge
	// in every case; variant heads learn each of a group's 8 to 12 variants as one class
	// from 128 cases, a few of them seen only a handful of times.
	margin := map[string]float64{"attributes": 0.5, "variant": 0.2}
	for _, heads := range []string{"attributes", "variant"} {
		res, err := p.Train(context.Background(), &protocol.TrainRequest{
			LaneID: heads, Task: task(t), Config: tiny(heads, 200, 100, 100),
			Train: cases[:128], Validation: cases[128:], WorkDir: t.TempDir(), Seed: 3,
		}, func(*protocol.Progress) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		v := res.Validation
		t.Logf("heads %s: balanced accuracy learned %.3f (anterior %.3f, posterior %.3f), prior %.3f (anterior %.3f, posterior %.3f)", heads,
			v["balanced_accuracy"], v["balanced_accuracy/anterior"], v["balanced_accuracy/posterior"],
			v["prior/balanced_accuracy"], v["prior/balanced_accuracy/anterior"], v["prior/balanced_accuracy/posterior"])
		// The prior predicts one variant per group: its balanced accuracy is 1/(variants in
		// the validation set), about 0.1 here.
		if got, prior := v["balanced_accuracy"], v["prior/balanced_accuracy"]; !(got > prior+margin[heads]) {
			t.Errorf("heads %s: learned %.3f does not beat the prior %.3f by %g", heads, got, prior, margin[heads])
		}
	}
}
