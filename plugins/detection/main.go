// Command amid-plugin-detection is AMID's built-in detection plugin, trained with AMID's
// own engine (amid/plugins/engine) on the device AMID_DEVICE names, a GPU or the CPU
// (amid/plugins/internal/device), each lane's batch planned to the device's memory. The task's spec (amid/plugins/taskspec,
// sent in protocol.Task.Spec) picks one of three modes; labels and predictions are
// taskspec.Annotation JSON files, a prediction named <case id>.json in the output folder.
//
//   - 2D boxes with attributes (spec.Attributes; DENTEX's quadrant, enumeration and
//     diagnosis), lane "centernet": each image is resized to a working size and a U-Net
//     with a CenterNet-style head predicts a centre heatmap (focal loss), the centre's
//     offset and the box's log size (L1) and each attribute's class (cross-entropy, read
//     at the peak). Peaks of the heatmap (3×3 maxima) become boxes, non-maximum
//     suppression keeps at most max_detections, and scores are the heatmap probability
//     calibrated on the validation boxes (Platt scaling), in [0, 1].
//     Beside it, lane "box_transfer" (transfer.go) trains nothing: a new image's boxes are
//     fused from the training images most like it, with locally linear weights, ready in
//     seconds where the network needs thousands of steps.
//   - points with classes (spec.Points; PUMA's nuclei), lane "points": tiles are zoomed by
//     scale, a U-Net predicts a heatmap per class trained on Gaussian targets with the
//     focal loss; sliding-window inference, peaks at least 1.5 σ apart, the class of
//     highest probability, the score threshold chosen for the best F1 on validation.
//   - one 3D box per volume (spec.Box3D; TopCoW), lanes "box3d_seg" (a U-Net segments the
//     box's inside on a coarse grid; the largest component's extent is the box) and
//     "box3d_prior" (the training boxes' mean size in mm at their mean relative position,
//     or at the image's intensity-weighted centre plus their mean offset from it).
//
// Train reports progress every report_every steps, writes a checkpoint
// (amid/plugins/engine/ckpt) at the end of every epoch and at the end, resumes from one,
// stops within the step in flight on cancel and at the request's time limit. Unusable
// input (a missing, corrupt or empty label file, an object outside its image) is an error
// naming the case and the file.
//
// Build: go build -o bin/plugins/amid-plugin-detection ./plugins/detection
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"amid/plugins/engine"
	"amid/plugins/internal/device"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
	"amid/plugins/taskspec"
)

// version is the plugin's version.
const version = "0.1.0"

// plannedEpochs is the number of epochs of steps_per_epoch steps a planned candidate
// trains; the host's time limit usually ends it sooner.
const plannedEpochs = 40

func main() {
	if err := engine.EnsureCoreType(); err != nil {
		fmt.Fprintln(os.Stderr, "amid-plugin-detection:", err)
	}
	sdk.Serve(&det{})
}

type det struct{}

func (det) Describe(context.Context, *protocol.DescribeRequest) (*protocol.DescribeResponse, error) {
	hw, id := device.Describe(0)
	return &protocol.DescribeResponse{
		Name:            "detection",
		Version:         version,
		ProtocolVersion: protocol.Version,
		Tasks:           []protocol.TaskKind{{Kind: taskspec.Detection, Dims: []int{2, 3}}},
		Metrics:         []string{"ap_mean", "f1", "iou"},
		ConfigSchema:    []byte(configSchema),
		Hardware:        hw,
		Compute:         id,
	}, nil
}

// fingerprint is what the plan reads of a dataset fingerprint: the cases' sizes in
// (D, H, W) order, as the segmentation plugin's fingerprint gives them. Other fields, and
// a cases field of another shape, are ignored.
type fingerprint struct {
	Cases []struct {
		Dims    [3]int     `json:"dims"`
		Spacing [3]float64 `json:"spacing"`
	} `json:"cases"`
}

// parseFingerprint reads a fingerprint; empty means unknown sizes, malformed JSON is an
// error.
func parseFingerprint(b []byte) (fingerprint, error) {
	var f fingerprint
	if len(bytes.TrimSpace(b)) == 0 {
		return f, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return f, fmt.Errorf("detection plan: fingerprint: %w", err)
	}
	if json.Unmarshal(b, &f) != nil {
		f.Cases = nil
	}
	return f, nil
}

// medianDims is the median size (D, H, W) of the fingerprint's cases, ok false without.
func (f fingerprint) medianDims() ([3]int, bool) {
	if len(f.Cases) == 0 {
		return [3]int{}, false
	}
	var m [3]int
	for a := range 3 {
		v := make([]int, 0, len(f.Cases))
		for _, c := range f.Cases {
			v = append(v, c.Dims[a])
		}
		slices.Sort(v)
		m[a] = v[len(v)/2]
	}
	return m, m[0] > 0 && m[1] > 0 && m[2] > 0
}

// fit is n scaled by k, rounded to a multiple of div, between div and most.
func fit(n int, k float64, div, most int) int {
	v := int(float64(n)*k/float64(div)+0.5) * div
	return min(max(v, div), most)
}

func (det) Plan(_ context.Context, req *protocol.PlanRequest) (*protocol.PlanResponse, error) {
	s, mode, err := taskSpec(req.Task)
	if err != nil {
		return nil, fmt.Errorf("detection plan: %w", err)
	}
	fp, err := parseFingerprint(req.Fingerprint)
	if err != nil {
		return nil, err
	}
	med, known := fp.medianDims()
	var out []protocol.Candidate
	add := func(name string, c config, why string) error {
		var where string
		var bytes int64
		if c.Lane != lanePrior3D && c.Lane != laneTransfer {
			var fit string
			if c.Batch, where, bytes, fit = fitBatch(c, s, mode); fit != "" {
				why += "; " + fit
			}
		}
		b, err := json.Marshal(c)
		if err != nil {
			return err
		}
		if _, err := parseConfig(b); err != nil {
			return fmt.Errorf("detection plan: lane %s: %w", name, err)
		}
		cand := protocol.Candidate{Name: name, Config: b, Rationale: why, Device: where, MemoryBytes: bytes}
		if c.Lane == lanePrior3D || c.Lane == laneTransfer {
			// Nothing to train past the first step (the prior's fit, the atlas's
			// reading), on the CPU: the host gives its time to the other lanes.
			cand.MaxSteps, cand.Device = 1, "cpu"
		}
		out = append(out, cand)
		return nil
	}
	train := func(c config) config {
		c.Epoch, c.Steps, c.LR, c.Report = defaultEpoch, plannedEpochs*defaultEpoch, defaultLR, defaultReport
		return c
	}
	switch mode {
	case modeBoxes:
		// The longest side becomes 512 working pixels (a panoramic X-ray of about
		// 2900×1300 to 512×224): teeth stay 10–40 pixels, a step stays under a second.
		// Smaller images keep their size: enlarging adds compute and no detail.
		size := [3]int{1, 256, 512}
		if known {
			k := min(1, 512/float64(max(med[1], med[2])))
			size = [3]int{1, fit(med[1], k, 32, 512), fit(med[2], k, 32, 512)}
		}
		c := train(config{Lane: laneBoxes, Size: size, Batch: 4, Widths: []int{16, 32, 64, 128, 128, 256}, HeadWidth: 32})
		why := fmt.Sprintf("centernet: images resized to %d×%d, U-Net of 6 stages, centre heatmap (focal loss), offset and log-size regression, %d attribute heads read at the peak, NMS at %.1f, Platt-calibrated scores", size[2], size[1], len(s.Attributes), defaultNMS)
		if err := add(laneBoxes, c, why); err != nil {
			return nil, err
		}
		// The fast lane beside it: the training images on a grid of at most
		// transferLongSide pixels, their boxes carried over to the images most like them.
		tsize := [3]int{1, transferLongSide / 2, transferLongSide}
		if known {
			k := min(1, transferLongSide/float64(max(med[1], med[2])))
			tsize = [3]int{1, fit(med[1], k, 1, transferLongSide), fit(med[2], k, 1, transferLongSide)}
		}
		tc := config{Lane: laneTransfer, Size: tsize, Neighbours: defaultNeighbours, Margin: defaultMargin}
		why = fmt.Sprintf("box_transfer: the training images at %d×%d, each image's boxes fused from its %d nearest training images with locally linear weights; no training, ready in seconds", tsize[2], tsize[1], defaultNeighbours)
		if err := add(laneTransfer, tc, why); err != nil {
			return nil, err
		}
	case modePoints:
		c := train(config{Lane: lanePoints, Size: [3]int{1, 128, 128}, Batch: 4, Widths: []int{16, 32, 64, 128}, HeadWidth: 16, Scale: defaultScale, Sigma: defaultSigma, Flip: true})
		why := fmt.Sprintf("points: tiles at %.2g zoom, 128×128 patches with flips, one heatmap per class of %d with Gaussian targets (σ %g working pixels), focal loss, sliding-window peaks, F1-tuned threshold", defaultScale, len(s.Points), float64(defaultSigma))
		if err := add(lanePoints, c, why); err != nil {
			return nil, err
		}
	case modeBox3D:
		grid := [3]int{32, 48, 48}
		if known {
			k := 48 / float64(max(med[0], med[1], med[2]))
			grid = [3]int{fit(med[0], k, 8, 48), fit(med[1], k, 8, 48), fit(med[2], k, 8, 48)}
		}
		c := train(config{Lane: laneSeg3D, Size: grid, Batch: 2, Widths: []int{8, 16, 32, 64}})
		c.Steps = 20 * defaultEpoch
		why := fmt.Sprintf("box3d_seg: volumes resized to a %d×%d×%d grid, a 3-D U-Net segments the box's inside, the largest component's extent is the box (the prior when nothing is found)", grid[0], grid[1], grid[2])
		if err := add(laneSeg3D, c, why); err != nil {
			return nil, err
		}
		for _, centre := range []string{"mean", "intensity"} {
			why := "box3d_prior: the training boxes' mean size in mm at their mean relative position; no training, a baseline the learned lane must beat"
			if centre == "intensity" {
				why = "box3d_prior: the training boxes' mean size in mm at the intensity-weighted centre of the brightest 1% of voxels plus the boxes' mean offset from it"
			}
			if err := add(lanePrior3D+"_"+centre, config{Lane: lanePrior3D, Centre: centre}, why); err != nil {
				return nil, err
			}
		}
	}
	return &protocol.PlanResponse{Candidates: out}, nil
}

// fitBatch plans a lane's batch to the device the setting chooses (device.Fit): its
// network with AdamW, the host's objective (the heatmap and box losses) counted as the
// device buffers it exchanges.
func fitBatch(c config, s *taskspec.Spec, mode string) (int, string, int64, string) {
	arch := c.arch(channelsOf(mode), headChannels(mode, s))
	return device.Fit(c.Batch, clipNorm, func(be engine.Backend, n int) (*engine.Net, engine.Optimizer, error) {
		var net *engine.Net
		if mode == modeBox3D {
			u, err := engine.BuildUNet(be, arch, n, c.Size, 1)
			if err != nil {
				return nil, nil, err
			}
			net = u.Net
		} else {
			u, err := engine.BuildUNetHead(be, arch, c.head(mode), n, c.Size, 1, func(int, []float32, []float32) float64 { return 0 })
			if err != nil {
				return nil, nil, err
			}
			net = u.Net
		}
		return net, engine.NewAdamW(be, net.Params(), defaultLR, 0), nil
	})
}
