package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"amid/plugins/plugintest"
	"amid/plugins/protocol"
	"amid/viewer/imageio"
)

// predictFunc is a plugin's Predict: in process (seg{}) or through the built binary.
type predictFunc func(context.Context, *protocol.PredictRequest) (*protocol.PredictResponse, error)

// checkProbabilities predicts req's cases without and with the probability map and checks
// that the request changes nothing else (the label maps' bytes, the confidence), and that
// each map is a float32 image on the case's grid with one channel per label of labels
// (background first), summing to 1 at each voxel, whose argmax is the label map (the
// configuration post-processes nothing) and whose entropy over the predicted foreground
// gives the plugin's confidence, recomputed here.
func checkProbabilities(t *testing.T, predict predictFunc, req protocol.PredictRequest, labels []int) {
	t.Helper()
	req.OutputDir = t.TempDir()
	plain, err := predict(context.Background(), &req)
	if err != nil {
		t.Fatal(err)
	}
	asked := req
	asked.OutputDir, asked.Probabilities = t.TempDir(), true
	with, err := predict(context.Background(), &asked)
	if err != nil {
		t.Fatal(err)
	}
	K := len(labels)
	for i, p := range with.Predictions {
		q := plain.Predictions[i]
		if q.Probabilities != "" {
			t.Errorf("case %s: a probability map %s nobody asked for", q.CaseID, q.Probabilities)
		}
		if p.Probabilities != filepath.Join(asked.OutputDir, p.CaseID+probabilitySuffix) {
			t.Fatalf("case %s: probability map %q, want %s in the output folder", p.CaseID, p.Probabilities, p.CaseID+probabilitySuffix)
		}
		a, err := os.ReadFile(q.Files[0])
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p.Files[0])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) || p.Confidence == nil || q.Confidence == nil || *p.Confidence != *q.Confidence {
			t.Errorf("case %s: asking for probabilities changed the labels (%v) or the confidence (%v, %v)", p.CaseID, !bytes.Equal(a, b), p.Confidence, q.Confidence)
		}
		lab, err := imageio.Read(p.Files[0])
		if err != nil {
			t.Fatal(err)
		}
		prob, err := imageio.Read(p.Probabilities)
		if err != nil {
			t.Fatal(err)
		}
		want := lab.Dims
		want[3] = K
		if prob.Dims != want || prob.Spacing != lab.Spacing || prob.Origin != lab.Origin || prob.Direction != lab.Direction {
			t.Fatalf("case %s: map %v spacing %v origin %v, want %v on the labels' grid %v %v", p.CaseID, prob.Dims, prob.Spacing, prob.Origin, want, lab.Spacing, lab.Origin)
		}
		if _, ok := prob.Data.([]float32); !ok {
			t.Errorf("case %s: map of %T, want float32", p.CaseID, prob.Data)
		}
		var hFG, hAll float64
		var nFG int
		n := lab.Len()
		for j := range n {
			var sum float64
			best := 0
			for k := range K {
				v := prob.AtIndex(j*K + k)
				sum += v
				if v > prob.AtIndex(j*K+best) {
					best = k
				}
			}
			// K float32 scores, each rounded once (2⁻²⁴ relative) after a mean in float64,
			// and for a resampled grid a trilinear mean of such sums: 1e-5 is far above.
			if math.Abs(sum-1) > 1e-5 {
				t.Fatalf("case %s voxel %d: probabilities sum to %v", p.CaseID, j, sum)
			}
			if got := int(lab.AtIndex(j)); got != labels[best] {
				t.Fatalf("case %s voxel %d: label %d, the map's most probable %d", p.CaseID, j, got, labels[best])
			}
			var h float64
			for k := range K {
				if v := prob.AtIndex(j*K+k) / sum; v > 0 {
					h -= v * math.Log(v)
				}
			}
			hAll += h
			if best != 0 {
				hFG += h
				nFG++
			}
		}
		sure := 1 - hAll/float64(n)/math.Log(float64(K))
		if nFG > 0 {
			sure = 1 - hFG/float64(nFG)/math.Log(float64(K))
		}
		// The plugin sums the same entropies in float64 in the same order: 1e-9 allows the
		// division by the sum, which the plugin takes of the raw scores.
		if math.Abs(sure-*p.Confidence) > 1e-9 {
			t.Errorf("case %s: confidence %v, the map's entropy gives %v", p.CaseID, *p.Confidence, sure)
		}
		t.Logf("case %s: %d classes, confidence %.4f, %d foreground voxels of %d", p.CaseID, K, sure, nFG, n)
	}
}

// TestProbabilities asks for the probability map of a 2D network through the built plugin
// (the request's field and the map's path cross gRPC), of a 3D network trained at 2 mm on
// 1 mm volumes of three classes (the scores resampled back onto the image's grid), and of
// the forest (computed on the CPU), its probabilities smoothed or not.
func TestProbabilities(t *testing.T) {
	ctx := context.Background()
	t.Run("2d-plugin", func(t *testing.T) {
		p := plugintest.Start(t, binary)
		cases := discCases(t, 4, 31)
		res, err := p.Train(ctx, &protocol.TrainRequest{Task: protocol.Task{Kind: "segmentation", Dims: 2}, Config: tiny(20, 20, 10),
			Train: cases[:3], WorkDir: t.TempDir(), Seed: 3}, func(*protocol.Progress) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		checkProbabilities(t, p.Predict, protocol.PredictRequest{Checkpoint: res.Checkpoint, Cases: cases[3:]}, []int{0, 1})
	})
	slabs := slabCases(t, 4, 13)
	task := protocol.Task{Kind: "segmentation", Dims: 3}
	for _, c := range []struct {
		name string
		cfg  []byte
	}{
		{"3d-resampled", cascadeConfig("3d_lowres", `,"mirror":true`, [3]int{4, 12, 12}, 2, 8)},
		{"forest", forestCfg(4, 4, "[0,1,2]")},
		// smooth acts on the probabilities before the argmax: the map is the smoothed one
		{"forest-smooth", bytes.Replace(forestCfg(4, 4, "[0,1,2]"), []byte(`"lane":"forest"`), []byte(`"lane":"forest","postprocess":"smooth"`), 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := seg{}.Train(ctx, &protocol.TrainRequest{Task: task, Config: c.cfg, Train: slabs[:3], WorkDir: t.TempDir(), Seed: 6},
				func(*protocol.Progress) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			checkProbabilities(t, seg{}.Predict, protocol.PredictRequest{Task: task, Checkpoint: res.Checkpoint, Cases: slabs[3:]}, []int{0, 1, 2})
		})
	}
}
