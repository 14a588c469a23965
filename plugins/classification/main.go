// Command amid-plugin-classification is AMID's built-in image- and volume-level
// classification plugin, trained with AMID's own engine on the device AMID_DEVICE names, a
// GPU or the CPU (amid/plugins/internal/device).
//
//   - Describe: classification in 2D and 3D, balanced accuracy, the configuration schema
//     (configSchema in config.go), the hardware and the device the setting chooses.
//   - Plan: reads the task spec (amid/plugins/taskspec.Spec in protocol.Task.Spec: its
//     attributes, their classes and groups) and offers four lanes: "cnn-variant" (an
//     encoder on a fixed grid with one softmax head per attribute group over the group's
//     training variants, the unit the TopCoW metric scores, and one per ungrouped
//     attribute), "cnn-attributes" (one head per attribute), "forest" (a class-balanced
//     random forest per attribute on each image's global features, amid/plugins/internal/
//     imagefeat, grown in one step on the CPU in about a second; not for a multi-label
//     attribute) and "prior" (per group the most frequent training variant, per attribute
//     the majority class; no training), always, so that the host can keep the fast lanes
//     when the network does not beat them on validation.
//   - Train: reads each case's label (a taskspec.Annotation JSON with Classes), loads the
//     images onto the configured grid (crop, area-average resize, normalisation), trains
//     with AdamW, a poly learning rate and class-balanced cross-entropy, reports progress
//     every report_every steps, writes a checkpoint (amid/plugins/engine/ckpt) at the end of
//     every epoch and at the end, and scores the validation cases: "balanced_accuracy" is the
//     mean over groups and ungrouped attributes of sklearn's balanced accuracy of the
//     variant, "balanced_accuracy/<unit>" each one, and "prior/..." the same for the prior.
//     Cancelling stops within the step in flight; ResumeFrom continues a checkpoint.
//   - A multi-label attribute (taskspec.Attribute.MultiLabel) is trained with one sigmoid
//     a finding (binary cross-entropy; an uncertain label is left out of the loss),
//     validated by "auroc", the mean AUROC over findings, "auroc/<finding>" each one's;
//     its prediction holds each finding's probability (Probs) and the findings at 0.5.
//   - Predict: writes <case id>.json (a taskspec.Annotation with Classes) per case.
//
// Build: go build -o bin/plugins/amid-plugin-classification ./plugins/classification
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"amid/plugins/internal/cnn"
	"amid/plugins/internal/imageplugin"
	"amid/plugins/metrics"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
)

// version is the plugin's version.
const version = "0.1.0"

func main() { imageplugin.Main("classification", &cls{}) }

type cls struct{}

func (cls) Describe(context.Context, *protocol.DescribeRequest) (*protocol.DescribeResponse, error) {
	return imageplugin.Describe("classification", version, taskspec.Classification, []string{"balanced_accuracy"}, configSchema), nil
}

// spec parses and checks the task's spec for a classification.
func spec(t protocol.Task) (*taskspec.Spec, error) {
	return imageplugin.Spec(t, taskspec.Classification, func() (*taskspec.Spec, error) {
		return nil, fmt.Errorf("the task carries no spec: a classification needs its attributes")
	}, func(s *taskspec.Spec) error {
		if len(s.Attributes) == 0 {
			return fmt.Errorf("%w: a classification needs at least one attribute", taskspec.ErrSpec)
		}
		return nil
	})
}

// planned returns the network configuration planned for a task of dims dimensions whose
// images have the median size med (zero: unknown): imageplugin.Planned's, 2000 steps.
func planned(dims int, med [3]int) cnn.Net { return imageplugin.Planned(dims, med, 2000) }

func (cls) Plan(_ context.Context, req *protocol.PlanRequest) (*protocol.PlanResponse, error) {
	s, err := spec(req.Task)
	if err != nil {
		return nil, fmt.Errorf("classification plan: %w", err)
	}
	net := planned(s.Dims, imageplugin.MedianDims(req.Fingerprint))
	// Sized for the device with one channel and a head of the attributes' classes (the
	// heads of variants, known at training, are of that order).
	outputs := 0
	for _, a := range s.Attributes {
		outputs += len(a.Classes)
		if a.MultiLabel { // two logits a finding's sigmoid
			outputs += len(a.Classes)
		}
	}
	net, where, bytes, fit := imageplugin.Fit(net, 1, max(outputs, 2))
	grouped := slices.ContainsFunc(s.Attributes, func(a taskspec.Attribute) bool { return a.Group != "" })
	out := &protocol.PlanResponse{}
	add := func(name string, c config, why string) error {
		b, err := json.Marshal(c)
		if err != nil {
			return err
		}
		cand := protocol.Candidate{Name: name, Config: b, Rationale: why, Device: where}
		switch c.Lane {
		case laneCNN:
			cand.MemoryBytes = bytes
		case laneForest:
			cand.Device = "cpu"
			cand.MaxSteps = 1 // the forest grows all its trees in one step
		default:
			cand.MaxSteps = 1 // the prior counts its labels in one step
		}
		out.Candidates = append(out.Candidates, cand)
		return nil
	}
	shape := fmt.Sprintf("grid %v, widths %v, batch %d, %d steps", net.Grid, net.Widths, net.Batch, net.Steps)
	if fit != "" {
		shape += "; " + fit
	}
	if grouped {
		if err := add("cnn-variant", config{Lane: laneCNN, Net: net, Heads: "variant", ClassWeights: "balanced"},
			"encoder with one head per attribute group over its training variants (the unit the metric scores), class-balanced; "+shape); err != nil {
			return nil, err
		}
	}
	what := "encoder with one head per attribute, class-balanced; "
	if _, ok := s.MultiLabel(); ok {
		what = "encoder with one sigmoid per finding (binary cross-entropy, uncertain labels left out), balanced per finding; "
	}
	if err := add("cnn-attributes", config{Lane: laneCNN, Net: net, Heads: "attributes", ClassWeights: "balanced"},
		what+shape); err != nil {
		return nil, err
	}
	if _, ok := s.MultiLabel(); !ok {
		if err := add("forest", config{Lane: laneForest, Trees: defaultTrees},
			fmt.Sprintf("a random forest of %d trees per attribute on each image's global features (size, intensity percentiles, histogram, noise, texture, coarse layout), class-balanced; "+
				"it learns in about a second where the network needs thousands of steps; keep whichever validates better", defaultTrees)); err != nil {
			return nil, err
		}
	}
	if err := add("prior", config{Lane: lanePrior},
		"no training: per group the most frequent training variant, per attribute the majority class; keep it when learning does not beat it on validation"); err != nil {
		return nil, err
	}
	return out, nil
}

// balanced is sklearn's balanced accuracy.
func balanced(truth, pred []string) float64 { return metrics.BalancedAccuracy(truth, pred) }
