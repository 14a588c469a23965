// Command amid-plugin-iqa is AMID's built-in image-quality assessment plugin: a
// regressor of a quality score (LDCT-IQA: 0–4), either a random forest on global image
// features or a convolutional network trained with AMID's own engine on the device
// AMID_DEVICE names, a GPU or the CPU (amid/plugins/internal/device).
//
//   - Describe: iqa in 2D and 3D, the score |PLCC| + |SROCC| + |KROCC|, the configuration
//     schema (configSchema in config.go), the hardware and the device the setting chooses.
//   - Plan: reads the task spec (amid/plugins/taskspec.Spec in protocol.Task.Spec: the
//     score's range and grid) and offers "forest" (a random forest on global image
//     features regressing the score through quantile classes of it, forest.go: one step,
//     first so that a budget that keeps few lanes keeps it), "cnn" (mean squared error),
//     "cnn-rank" (plus a pairwise ranking loss within each batch, which the rank
//     correlations of the metric reward) and "cnn-rank-5fold" (five such models on five
//     folds, averaged).
//   - Train: reads each case's label (a taskspec.Annotation JSON with Score). The forest
//     lane computes its features on the CPU and grows its trees in one step. The cnn
//     lanes load the images onto the configured grid (crop, area-average resize,
//     normalisation with the training set's statistics by default), scale scores to
//     [0, 1] over the task's range, train with AdamW and a poly learning rate, report
//     progress every report_every steps and write a checkpoint
//     (amid/plugins/engine/ckpt; all folds' models in one file) at the end of every epoch
//     and at the end. Both score the validation cases: "score" is |PLCC| + |SROCC| +
//     |KROCC| (with "plcc", "srocc", "krocc"), "score_raw" and "score_snapped" the score
//     without and with the score grid, "oof/score" the out-of-fold score of k folds.
//     Snapping is chosen on validation when "snap" is "auto". Cancelling stops within the
//     step in flight; ResumeFrom continues a checkpoint, within the fold it was written in
//     (the forest grows its one step again).
//   - Predict: writes <case id>.json (a taskspec.Annotation with Score) per case: the
//     forest's expected score, or the mean of the networks' predictions, on the score
//     grid when snapping was chosen, always inside the score range.
//
// Build: go build -o bin/plugins/amid-plugin-iqa ./plugins/iqa
package main

import (
	"context"
	"encoding/json"
	"fmt"

	"amid/plugins/internal/cnn"
	"amid/plugins/internal/imagefeat"
	"amid/plugins/internal/imageplugin"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
)

// version is the plugin's version.
const version = "0.1.0"

func main() { imageplugin.Main("iqa", &iqa{}) }

type iqa struct{}

func (iqa) Describe(context.Context, *protocol.DescribeRequest) (*protocol.DescribeResponse, error) {
	return imageplugin.Describe("iqa", version, taskspec.IQA, []string{"score", "plcc", "srocc", "krocc"}, configSchema), nil
}

// spec parses and checks the task's spec for an image-quality task; a task without a
// spec gets one of its kind and dimension (scores then scale over the training range).
func spec(t protocol.Task) (*taskspec.Spec, error) {
	return imageplugin.Spec(t, taskspec.IQA, func() (*taskspec.Spec, error) {
		s := &taskspec.Spec{Kind: taskspec.IQA, Dims: t.Dims}
		return s, s.Check()
	}, nil)
}

// planned is the network planned for a task of dims dimensions whose images have the
// median size med (zero: unknown): imageplugin.Planned's, 1500 steps, with flips on the
// in-plane axes (every axis in 3D) and, in 2D, rotations by 90°.
func planned(dims int, med [3]int) cnn.Net {
	n := imageplugin.Planned(dims, med, 1500)
	n.Flip = [3]bool{dims == 3, true, true}
	n.Rot90 = dims == 2
	return n
}

func (iqa) Plan(_ context.Context, req *protocol.PlanRequest) (*protocol.PlanResponse, error) {
	s, err := spec(req.Task)
	if err != nil {
		return nil, fmt.Errorf("iqa plan: %w", err)
	}
	net, where, bytes, fit := imageplugin.Fit(planned(s.Dims, imageplugin.MedianDims(req.Fingerprint)), 1, 1)
	rank := lossConfig{MSE: 1, Rank: 1, Temp: defaultTemp}
	shape := fmt.Sprintf("grid %v, widths %v, batch %d, %d steps", net.Grid, net.Widths, net.Batch, net.Steps)
	if fit != "" {
		shape += "; " + fit
	}
	// The forest lane goes first: it learns in seconds whatever the budget, and the host
	// keeps whichever lane validates better, so a budget that keeps few lanes keeps it.
	b, err := json.Marshal(config{Lane: laneForest, Snap: "auto", forestConfig: forestConfig{Trees: defaultTrees, MaxDepth: defaultMaxDepth, MinLeaf: defaultMinLeaf, Bins: defaultBins}})
	if err != nil {
		return nil, err
	}
	out := &protocol.PlanResponse{Candidates: []protocol.Candidate{{Name: laneForest, Config: b, Device: "cpu", MaxSteps: 1,
		Rationale: fmt.Sprintf("features + random forest: %d global features of each image (intensity percentiles and histogram, "+
			"robust σ of Laplacians at %v pixels, gradient, a coarse layout), %d trees regressing the score through at most %d quantile classes; "+
			"it learns in seconds in one step, and the host keeps it when the networks do not beat it on validation",
			imagefeat.Count, imagefeat.Spacings, defaultTrees, defaultBins)}}}
	for _, c := range []struct {
		name string
		cfg  config
		why  string
	}{
		{"cnn", config{Lane: "cnn", Net: net, Loss: lossConfig{MSE: 1}, Folds: 1, Snap: "auto"}, "regression with mean squared error; " + shape},
		{"cnn-rank", config{Lane: "cnn", Net: net, Loss: rank, Folds: 1, Snap: "auto"},
			"mean squared error plus a pairwise ranking loss within each batch, for the metric's rank correlations; " + shape},
		{"cnn-rank-5fold", config{Lane: "cnn", Net: net, Loss: rank, Folds: 5, Snap: "auto"},
			"five ranking-aware models on five folds of the training cases, predictions averaged (five times the steps); " + shape},
	} {
		b, err := json.Marshal(c.cfg)
		if err != nil {
			return nil, err
		}
		out.Candidates = append(out.Candidates, protocol.Candidate{Name: c.name, Config: b, Rationale: c.why, Device: where, MemoryBytes: bytes})
	}
	return out, nil
}
