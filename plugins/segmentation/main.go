// Command amid-plugin-segmentation is AMID's built-in segmentation plugin: nnU-Net style
// U-Nets in 2D and 3D trained with AMID's own engine (amid/plugins/engine) on the device
// AMID_DEVICE names: a GPU through Vulkan, or the CPU (amid/plugins/internal/device).
//
//   - Describe: segmentation in 2D and 3D, Dice metrics, the configuration schema
//     (configSchema in config.go), the hardware (the CPU and every Vulkan device) and the
//     compute identity of the device the setting chooses.
//   - Plan: the request's fingerprint is the JSON that plan.ParseFingerprint reads
//     (amid/plugins/segmentation/plan.Fingerprint: cases with dims and spacing in (D, H, W)
//     order, modality, channels, classes, foreground intensity statistics, class
//     frequencies; other fields, as the host's profile has, are ignored); plan.Plan within
//     a step budget of 40 % of the memory available (MemAvailable and the cgroup limits,
//     budget.go), or on a GPU of 80 % of its memory with each estimate the engine's count
//     of training there (device.go), gives one candidate per lane, naming its device and
//     the bytes planned there: "2d", and for 3-D tasks "2.5d", "3d_fullres" and
//     "3d_lowres" (the host adds "3d_cascade_fullres" on a trained 3d_lowres checkpoint:
//     cascade.go). The task spec (amid/plugins/taskspec, optional) gives the label values,
//     or asks for instances (cells): then the network learns background, interior and
//     boundary, and Predict writes instance ids.
//   - Train: reads each case's image (one file, which may hold several channels, or one
//     single-channel file per channel on a common grid) and label, samples patches with
//     the data package's Loader, trains with AdamW and a poly learning rate, reports progress every report_every steps, writes a
//     checkpoint (amid/plugins/engine/ckpt) at the end of every epoch and at the end, and
//     scores the validation cases with Dice. Cancelling stops within the step in flight.
//     The result's validation holds "dice" and the Dice after each post-processing option
//     ("dice_lcc", "dice_small", "dice_fill"), or "f1" and "dice" for instances.
//   - Predict: sliding-window inference (amid/plugins/engine/infer) on each case, the
//     configured post-processing (the request's configuration may change postprocess,
//     min_component and mirror); the label map is written on the input's grid with the
//     spec's output suffix, else in the input's format where it can be written (NIfTI,
//     MetaImage, NRRD, PNG, TIFF), else as NIfTI.
//
// Build: go build -o bin/plugins/amid-plugin-segmentation ./plugins/segmentation
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"amid/plugins/engine"
	"amid/plugins/internal/device"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
	"amid/plugins/segmentation/plan"
	"amid/plugins/taskspec"
)

// version is the plugin's version.
const version = "0.1.0"

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
	hw, id := device.Describe(0)
	return &protocol.DescribeResponse{
		Name:            "segmentation",
		Version:         version,
		ProtocolVersion: protocol.Version,
		Tasks:           []protocol.TaskKind{{Kind: "segmentation", Dims: []int{2, 3}}},
		Metrics:         []string{"dice", "mean_dice", "soft_dice"},
		ConfigSchema:    []byte(configSchema),
		Hardware:        hw,
		Compute:         id,
	}, nil
}

func (seg) Plan(_ context.Context, req *protocol.PlanRequest) (*protocol.PlanResponse, error) {
	if req.Task.Kind != "segmentation" {
		return nil, fmt.Errorf("the segmentation plugin plans segmentation tasks only, not %q", req.Task.Kind)
	}
	sp, err := spec(req.Task)
	if err != nil {
		return nil, fmt.Errorf("segmentation plan: %w", err)
	}
	fp := req.Fingerprint
	if sp != nil && sp.Instances {
		// Instance maps are learnt as background, interior and boundary, whatever the
		// number of instances the profile counted.
		if fp, err = withClasses(fp, 3); err != nil {
			return nil, fmt.Errorf("segmentation plan: %w", err)
		}
	}
	f, err := plan.ParseFingerprint(fp)
	if err != nil {
		return nil, fmt.Errorf("segmentation plan: %w", err)
	}
	budget, dev := planBudget()
	lanes, err := plan.Plan(f, budget)
	if err != nil {
		return nil, fmt.Errorf("segmentation plan: %w", err)
	}
	if req.Task.Dims == 3 {
		low, err := plan.LowRes(f, budget)
		if err != nil {
			return nil, fmt.Errorf("segmentation plan: %w", err)
		}
		if low != nil {
			lanes = append(lanes, *low)
		}
	}
	out := &protocol.PlanResponse{}
	var calib calibration
	timed := sp != nil && sp.LaneSeconds > 0
	if timed {
		var fresh bool
		if calib, fresh, err = calibrate(req.Calibration, calibrationBackend(dev)); err != nil {
			return nil, fmt.Errorf("segmentation plan: %w", err)
		}
		if fresh {
			if out.Calibration, err = json.Marshal(calib); err != nil {
				return nil, err
			}
		}
	}
	var cheapest *plan.Config // of the lanes too slow, the one whose minimum takes least
	var fitted []plan.Config
	for _, l := range lanes {
		if req.Task.Dims == 2 && l.Lane != plan.Lane2D {
			continue
		}
		if timed {
			t := plan.Time{Lane: sp.LaneSeconds, MinSteps: minSteps(sp.MinSteps, l.Lane), Train: sp.TrainSeconds, StepSeconds: calib.stepSeconds}
			if err := plan.FitTime(&l, t); errors.Is(err, plan.ErrTime) {
				out.Skipped = append(out.Skipped, strings.TrimPrefix(err.Error(), plan.ErrTime.Error()+": "))
				need := float64(t.MinSteps) * l.StepSeconds
				if cheapest == nil || need < float64(minSteps(sp.MinSteps, cheapest.Lane))*cheapest.StepSeconds {
					c := l
					cheapest = &c
				}
				continue
			} else if err != nil {
				return nil, fmt.Errorf("segmentation plan: %w", err)
			}
		}
		fitted = append(fitted, l)
	}
	if len(fitted) == 0 && cheapest != nil {
		// No lane reaches its minimum in the time a lane gets: the budget is too short for
		// a fair comparison, so only the cheapest lane is planned, and it says so.
		cheapest.Rationale = append(cheapest.Rationale, fmt.Sprintf("no lane reaches its minimum steps in the %.0f s a lane trains in the first round: only this one, the cheapest, is planned, at its smallest sensible size", sp.LaneSeconds))
		fitted = append(fitted, *cheapest)
	}
	for _, l := range fitted {
		c, err := fromPlan(l, f, sp)
		if err != nil {
			return nil, fmt.Errorf("segmentation plan: %w", err)
		}
		b, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		bytes := plannedBytes(dev, c, f.Channels)
		why := fmt.Sprintf("%s: patch %v, batch %d, %d stages, widths %v, about %d MiB per step on %s (of %d MiB planned to)", l.Lane, l.Patch, l.Batch, l.Stages(), l.Net.Widths, bytes>>20, device.Where(dev), budget.Bytes>>20)
		for _, r := range l.Rationale {
			why += "; " + r
		}
		out.Candidates = append(out.Candidates, protocol.Candidate{Name: l.Lane, Config: b, Rationale: why, StepSeconds: l.StepSeconds, MemoryBytes: bytes, Device: device.Where(dev)})
	}
	if len(lanes) > 0 && (sp == nil || !sp.Instances) {
		c, why, err := forestCandidate(lanes[0], f, sp)
		if err != nil {
			return nil, fmt.Errorf("segmentation plan: %w", err)
		}
		b, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		out.Candidates = append(out.Candidates, protocol.Candidate{Name: plan.LaneForest, Config: b, Rationale: why,
			StepSeconds: forestTreeSeconds * float64(c.Samples) / defaultForestSamples, MemoryBytes: forestBytes(c, f, lanes[0]),
			Device: "cpu", MaxSteps: forestTrees})
	}
	if len(out.Candidates) == 0 {
		msg := fmt.Sprintf("segmentation plan: no lane fits a %d-D task", req.Task.Dims)
		if len(out.Skipped) > 0 {
			msg += ": " + strings.Join(out.Skipped, "; ")
		}
		return nil, errors.New(msg)
	}
	return out, nil
}

// minSteps is the minimum steps of lane from the host's table ("" for any lane), 1 when
// none is given.
func minSteps(m map[string]int, lane string) int {
	if n, ok := m[lane]; ok {
		return max(n, 1)
	}
	return max(m[""], 1)
}

// withClasses is the fingerprint JSON fp with its class count set to k and its class
// frequencies dropped.
func withClasses(fp []byte, k int) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(fp, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", plan.ErrFingerprint, err)
	}
	if m == nil {
		return nil, fmt.Errorf("%w: not an object", plan.ErrFingerprint)
	}
	m["classes"] = json.RawMessage(strconv.Itoa(k))
	delete(m, "class_frequency")
	return json.Marshal(m)
}

// fromPlan is the configuration of a planned lane; the task spec, when given, names the
// label values (background 0 first) or asks for instances.
func fromPlan(l plan.Config, f plan.Fingerprint, sp *taskspec.Spec) (config, error) {
	c := config{
		Lane: l.Lane, Patch: l.Patch, Batch: l.Batch, Widths: l.Net.Widths, Kernels: l.Net.Kernels, Pools: l.Net.Pools,
		Spacing: l.Spacing, Steps: plannedEpochs * defaultEpoch, Epoch: defaultEpoch, LR: defaultLR,
		FgProb: defaultFgProb, Report: defaultReport, DeepSupervision: true,
	}
	if l.Steps > 0 { // fitted to its time: the planned total the schedule spans
		c.Steps, c.Epoch = l.Steps, min(defaultEpoch, l.Steps)
	}
	if l.Lane == plan.Lane25D {
		c.Slices = l.Slices
	}
	switch l.Norm.Scheme {
	case "ct", "global":
		if !(l.Norm.Std > 0) {
			c.Modality = "mr" // no foreground statistics: z-score each image
			break
		}
		c.Modality = l.Norm.Scheme
		c.CT = &ctStats{Low: l.Norm.Low, High: l.Norm.High, Mean: l.Norm.Mean, Std: l.Norm.Std}
	case "rgb":
		c.Modality = "rgb"
	default:
		c.Modality = "mr"
	}
	if len(l.RareClasses) > 0 {
		c.FgProb = 0.5
	}
	switch {
	case sp != nil && sp.Instances:
		c.Instances, c.Labels = true, []int{0, 1, 2}
	case sp != nil && len(sp.Labels) > 0:
		c.Labels = []int{0}
		for _, lb := range sp.Labels {
			if lb.Value != 0 {
				c.Labels = append(c.Labels, lb.Value)
			}
		}
		slices.Sort(c.Labels[1:])
		if len(c.Labels) != f.Classes {
			return c, fmt.Errorf("the task spec has %d labels with background, the fingerprint %d classes", len(c.Labels), f.Classes)
		}
	default:
		for k := range max(f.Classes, 2) {
			c.Labels = append(c.Labels, k)
		}
	}
	return c, nil
}
