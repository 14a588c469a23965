// Command amid-plugin-segmentation is AMID's built-in segmentation plugin: nnU-Net style
// U-Nets in 2D and 3D trained on the CPU with AMID's own engine (amid/plugins/engine).
//
//   - Describe: segmentation in 2D and 3D, Dice metrics, the configuration schema
//     (configSchema in config.go), hardware "cpu".
//   - Plan: the request's fingerprint is the JSON that plan.ParseFingerprint reads
//     (amid/plugins/segmentation/plan.Fingerprint: cases with dims and spacing in (D, H, W)
//     order, modality, channels, classes, foreground intensity statistics, class
//     frequencies); plan.Plan within a 4 GiB step budget gives one candidate per lane it
//     offers that this plugin trains ("2d", "3d_fullres"; "2.5d" is left out).
//   - Train: reads each case's image (one file, which may hold several channels, or one
//     single-channel file per channel on a common grid) and label, samples patches with
//     the data package's Loader, trains with AdamW and a poly learning rate, reports progress every report_every steps, writes a
//     checkpoint (amid/plugins/engine/ckpt) at the end of every epoch and at the end, and
//     scores the validation cases with Dice. Cancelling stops within the step in flight.
//   - Predict: sliding-window inference (amid/plugins/engine/infer) on each case; the label
//     map is written on the input's grid in the input's format where it can be written
//     (NIfTI, MetaImage, NRRD, PNG, TIFF), else as NIfTI.
//
// Build: go build -o bin/plugins/amid-plugin-segmentation ./plugins/segmentation
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"amid/plugins/engine"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
	"amid/plugins/segmentation/plan"
)

// version is the plugin's version.
const version = "0.1.0"

// planBudget is the memory a planned training step may use.
const planBudget = 4 << 30

// plannedEpochs is the number of epochs (of steps_per_epoch steps) a planned candidate
// trains; nnU-Net's 1000 are out of reach on a CPU.
const plannedEpochs = 50

func main() {
	if err := engine.EnsureCoreType(); err != nil {
		fmt.Fprintln(os.Stderr, "amid-plugin-segmentation:", err)
	}
	sdk.Serve(&seg{})
}

type seg struct{}

func (seg) Describe(context.Context, *protocol.DescribeRequest) (*protocol.DescribeResponse, error) {
	return &protocol.DescribeResponse{
		Name:            "segmentation",
		Version:         version,
		ProtocolVersion: protocol.Version,
		Tasks:           []protocol.TaskKind{{Kind: "segmentation", Dims: []int{2, 3}}},
		Metrics:         []string{"dice", "mean_dice", "soft_dice"},
		ConfigSchema:    []byte(configSchema),
		Hardware:        []string{"cpu"},
	}, nil
}

func (seg) Plan(_ context.Context, req *protocol.PlanRequest) (*protocol.PlanResponse, error) {
	if req.Task.Kind != "segmentation" {
		return nil, fmt.Errorf("the segmentation plugin plans segmentation tasks only, not %q", req.Task.Kind)
	}
	f, err := plan.ParseFingerprint(req.Fingerprint)
	if err != nil {
		return nil, fmt.Errorf("segmentation plan: %w", err)
	}
	lanes, err := plan.Plan(f, plan.Budget{Bytes: planBudget})
	if err != nil {
		return nil, fmt.Errorf("segmentation plan: %w", err)
	}
	out := &protocol.PlanResponse{}
	for _, l := range lanes {
		if l.Lane == plan.Lane25D || (req.Task.Dims == 2 && l.Lane != plan.Lane2D) {
			continue
		}
		c := fromPlan(l, f)
		b, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		why := fmt.Sprintf("%s: patch %v, batch %d, %d stages, about %d MiB per step", l.Lane, l.Patch, l.Batch, l.Stages(), l.Bytes>>20)
		for _, r := range l.Rationale {
			why += "; " + r
		}
		out.Candidates = append(out.Candidates, protocol.Candidate{Name: l.Lane, Config: b, Rationale: why})
	}
	if len(out.Candidates) == 0 {
		return nil, fmt.Errorf("segmentation plan: no lane fits a %d-D task", req.Task.Dims)
	}
	return out, nil
}

// fromPlan is the configuration of a planned lane.
func fromPlan(l plan.Config, f plan.Fingerprint) config {
	c := config{
		Lane: l.Lane, Patch: l.Patch, Batch: l.Batch, Widths: l.Net.Widths, Kernels: l.Net.Kernels, Pools: l.Net.Pools,
		Spacing: l.Spacing, Steps: plannedEpochs * defaultEpoch, Epoch: defaultEpoch, LR: defaultLR,
		FgProb: defaultFgProb, Report: defaultReport,
	}
	switch l.Norm.Scheme {
	case "ct":
		if !(l.Norm.Std > 0) {
			c.Modality = "mr" // no foreground statistics: z-score each image
			break
		}
		c.Modality = "ct"
		c.CT = &ctStats{Low: l.Norm.Low, High: l.Norm.High, Mean: l.Norm.Mean, Std: l.Norm.Std}
	case "rgb":
		c.Modality = "rgb"
	default:
		c.Modality = "mr"
	}
	if len(l.RareClasses) > 0 {
		c.FgProb = 0.5
	}
	classes := max(f.Classes, 2)
	for k := range classes {
		c.Labels = append(c.Labels, k)
	}
	return c
}
