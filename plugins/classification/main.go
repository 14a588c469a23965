// Command amid-plugin-classification is AMID's built-in image- and volume-level
// classification plugin, trained on the CPU with AMID's own engine.
//
//   - Describe: classification in 2D and 3D, balanced accuracy, the configuration schema
//     (configSchema in config.go), hardware "cpu".
//   - Plan: reads the task spec (amid/plugins/taskspec.Spec in protocol.Task.Spec: its
//     attributes, their classes and groups) and offers three lanes: "cnn-variant" (an
//     encoder on a fixed grid with one softmax head per attribute group over the group's
//     training variants, the unit the TopCoW metric scores, and one per ungrouped
//     attribute), "cnn-attributes" (one head per attribute) and "prior" (per group the most
//     frequent training variant, per attribute the majority class; no training), always, so
//     that the host can keep the prior when learning does not beat it on validation.
//   - Train: reads each case's label (a taskspec.Annotation JSON with Classes), loads the
//     images onto the configured grid (crop, area-average resize, normalisation), trains
//     with AdamW, a poly learning rate and class-balanced cross-entropy, reports progress
//     every report_every steps, writes a checkpoint (amid/plugins/engine/ckpt) at the end of
//     every epoch and at the end, and scores the validation cases: "balanced_accuracy" is the
//     mean over groups and ungrouped attributes of sklearn's balanced accuracy of the
//     variant, "balanced_accuracy/<unit>" each one, and "prior/..." the same for the prior.
//     Cancelling stops within the step in flight; ResumeFrom continues a checkpoint.
//   - Predict: writes <case id>.json (a taskspec.Annotation with Classes) per case.
//
// Build: go build -o bin/plugins/amid-plugin-classification ./plugins/classification
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"amid/plugins/engine"
	"amid/plugins/internal/cnn"
	"amid/plugins/internal/stats"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
	"amid/plugins/taskspec"
)

// version is the plugin's version.
const version = "0.1.0"

func main() {
	if err := engine.EnsureCoreType(); err != nil {
		fmt.Fprintln(os.Stderr, "amid-plugin-classification:", err)
	}
	sdk.Serve(&cls{})
}

type cls struct{}

func (cls) Describe(context.Context, *protocol.DescribeRequest) (*protocol.DescribeResponse, error) {
	return &protocol.DescribeResponse{
		Name:            "classification",
		Version:         version,
		ProtocolVersion: protocol.Version,
		Tasks:           []protocol.TaskKind{{Kind: taskspec.Classification, Dims: []int{2, 3}}},
		Metrics:         []string{"balanced_accuracy"},
		ConfigSchema:    []byte(configSchema),
		Hardware:        []string{"cpu"},
	}, nil
}

// spec parses and checks the task's spec for a classification.
func spec(t protocol.Task) (*taskspec.Spec, error) {
	if t.Kind != taskspec.Classification {
		return nil, fmt.Errorf("the classification plugin handles classification tasks only, not %q", t.Kind)
	}
	if len(t.Spec) == 0 {
		return nil, fmt.Errorf("the task carries no spec: a classification needs its attributes")
	}
	s, err := taskspec.Parse(t.Spec)
	if err != nil {
		return nil, err
	}
	if len(s.Attributes) == 0 {
		return nil, fmt.Errorf("%w: a classification needs at least one attribute", taskspec.ErrSpec)
	}
	if t.Dims != 0 && s.Dims != t.Dims {
		return nil, fmt.Errorf("%w: the spec has %d dimensions, the task %d", taskspec.ErrSpec, s.Dims, t.Dims)
	}
	return s, nil
}

// fingerprint is what Plan reads of a dataset fingerprint, when present: the cases'
// dims in (D, H, W) order, as the segmentation plugin's fingerprint has them.
type fingerprint struct {
	Cases []struct {
		Dims []int `json:"dims"`
	} `json:"cases"`
}

// medianDims is the median (D, H, W) of the fingerprint's cases, zero when unknown.
func medianDims(b []byte) [3]int {
	var f fingerprint
	if json.Unmarshal(b, &f) != nil {
		return [3]int{}
	}
	var out [3]int
	for a := range 3 {
		var v []int
		for _, c := range f.Cases {
			if len(c.Dims) == 3 && c.Dims[a] > 0 {
				v = append(v, c.Dims[a])
			}
		}
		if len(v) > 0 {
			slices.Sort(v)
			out[a] = v[len(v)/2]
		}
	}
	return out
}

// planned returns the network configuration planned for a task of dims dimensions whose
// images have the median size med (zero: unknown): a 48³ grid with five stages of 8 to 128
// channels in 3D, 128² with 16 to 256 in 2D, no larger than the images.
func planned(dims int, med [3]int) cnn.Net {
	n := cnn.Net{Grid: [3]int{48, 48, 48}, Widths: []int{8, 16, 32, 64, 128}, Batch: 4, Steps: 2000, Epoch: 100, Report: 10}
	if dims == 2 {
		n = cnn.Net{Grid: [3]int{1, 128, 128}, Widths: []int{16, 32, 64, 128, 256}, Batch: 16, Steps: 2000, Epoch: 100, Report: 10}
	}
	for a := range 3 {
		if med[a] > 0 && med[a] < n.Grid[a] {
			n.Grid[a] = max(med[a], min(n.Grid[a], 2))
		}
	}
	return n
}

func (cls) Plan(_ context.Context, req *protocol.PlanRequest) (*protocol.PlanResponse, error) {
	s, err := spec(req.Task)
	if err != nil {
		return nil, fmt.Errorf("classification plan: %w", err)
	}
	net := planned(s.Dims, medianDims(req.Fingerprint))
	grouped := slices.ContainsFunc(s.Attributes, func(a taskspec.Attribute) bool { return a.Group != "" })
	out := &protocol.PlanResponse{}
	add := func(name string, c config, why string) error {
		b, err := json.Marshal(c)
		if err != nil {
			return err
		}
		out.Candidates = append(out.Candidates, protocol.Candidate{Name: name, Config: b, Rationale: why})
		return nil
	}
	shape := fmt.Sprintf("grid %v, widths %v, batch %d, %d steps", net.Grid, net.Widths, net.Batch, net.Steps)
	if grouped {
		if err := add("cnn-variant", config{Lane: laneCNN, Net: net, Heads: "variant", ClassWeights: "balanced"},
			"encoder with one head per attribute group over its training variants (the unit the metric scores), class-balanced; "+shape); err != nil {
			return nil, err
		}
	}
	if err := add("cnn-attributes", config{Lane: laneCNN, Net: net, Heads: "attributes", ClassWeights: "balanced"},
		"encoder with one head per attribute, class-balanced; "+shape); err != nil {
		return nil, err
	}
	if err := add("prior", config{Lane: lanePrior},
		"no training: per group the most frequent training variant, per attribute the majority class; keep it when learning does not beat it on validation"); err != nil {
		return nil, err
	}
	return out, nil
}

// balanced is sklearn's balanced accuracy.
func balanced(truth, pred []string) float64 { return stats.BalancedAccuracy(truth, pred) }
