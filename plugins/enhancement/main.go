// Command amid-plugin-enhancement is AMID's built-in image-enhancement plugin: low- to
// high-quality image-to-image restoration of 2D images (USenhance ultrasound), trained with
// AMID's own engine (amid/plugins/engine) on the device AMID_DEVICE names, a GPU or the
// CPU (amid/plugins/internal/device).
//
//   - Describe: enhancement in 2D, metrics LNCC, SSIM and PSNR, the configuration schema
//     (configSchema in config.go), the hardware and the device the setting chooses.
//   - Plan: the fingerprint's case sizes (see parseFingerprint) give one or two lanes: a
//     residual U-Net of widths 32–256 on 128² patches ("base") and, when the images are
//     large enough, one of widths 32–512 on 256² patches ("wide"), each with its rationale.
//   - Train: each case's Images[0] is the low-quality image and its Label the
//     high-quality target (same size; any 2D format amid/viewer/imageio reads, RGB taken
//     as grey). Every pair is read once before training so that bad input fails at once.
//     Patches of both images are cut alike (left–right flips); the network is
//     engine.BuildResUNet (its head predicts a correction added to the input, and starts
//     at zero: the untrained network is the identity) with 0.16·L1 + 0.84·(1 − SSIM) by
//     default, L1 alone for a task scored by PSNR (lossFor), AdamW with a poly learning rate. Progress every report_every steps, a
//     checkpoint (amid/plugins/engine/ckpt) every epoch and at the end; validation reports
//     LNCC, SSIM and PSNR of the enhanced images and of the inputs ("_input"). Cancelling
//     stops within the step in flight; a time limit ends training normally.
//   - Predict: sliding-window (Gaussian-blended) or whole-image inference; the result is
//     written at the input's size and element type (8-bit in, 8-bit out; 16-bit in,
//     16-bit out; values rounded and clipped to the type's range) as
//     <OutputDir>/<case id><ext>, ext the task spec's Output or the input's own.
//
// Build: go build -o bin/plugins/amid-plugin-enhancement ./plugins/enhancement
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"amid/plugins/engine"
	"amid/plugins/internal/device"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
)

// version is the plugin's version.
const version = "0.1.0"

// plannedEpochs is the number of epochs (of defaultEpoch steps) a planned candidate trains;
// the host's time limit usually ends training earlier.
const plannedEpochs = 40

func main() {
	if err := engine.EnsureCoreType(); err != nil {
		fmt.Fprintln(os.Stderr, "amid-plugin-enhancement:", err)
	}
	sdk.Serve(&enh{})
}

type enh struct{}

func (enh) Describe(context.Context, *protocol.DescribeRequest) (*protocol.DescribeResponse, error) {
	hw, id := device.Describe(0)
	return &protocol.DescribeResponse{
		Name:            "enhancement",
		Version:         version,
		ProtocolVersion: protocol.Version,
		Tasks:           []protocol.TaskKind{{Kind: "enhancement", Dims: []int{2}}},
		Metrics:         []string{"lncc", "ssim", "psnr"},
		ConfigSchema:    []byte(configSchema),
		Hardware:        hw,
		Compute:         id,
	}, nil
}

// errFingerprint marks a fingerprint the plugin cannot plan from.
var errFingerprint = errors.New("invalid fingerprint")

// fingerprint is what Plan reads of a dataset fingerprint: the size of each case, as
// "dims" in (D, H, W) order (the segmentation planner's form) or (H, W). Other fields are
// ignored.
type fingerprint struct {
	Cases []struct {
		Dims []int `json:"dims"`
	} `json:"cases"`
}

// maxSide bounds an image side the planner accepts.
const maxSide = 1 << 20

// parseFingerprint returns the median height and width of the fingerprint's cases.
func parseFingerprint(b []byte) (h, w int, err error) {
	var f fingerprint
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&f); err != nil {
		return 0, 0, fmt.Errorf("%w: %v", errFingerprint, err)
	}
	if len(f.Cases) == 0 {
		return 0, 0, fmt.Errorf("%w: no cases", errFingerprint)
	}
	var hs, ws []int
	for i, c := range f.Cases {
		d := c.Dims
		if len(d) == 3 {
			if d[0] != 1 {
				return 0, 0, fmt.Errorf("%w: case %d has %d slices; enhancement takes 2D images", errFingerprint, i, d[0])
			}
			d = d[1:]
		}
		if len(d) != 2 || d[0] < 1 || d[1] < 1 || d[0] > maxSide || d[1] > maxSide {
			return 0, 0, fmt.Errorf("%w: case %d has dims %v; want (D, H, W) or (H, W) of 1 to %d", errFingerprint, i, c.Dims, maxSide)
		}
		hs, ws = append(hs, d[0]), append(ws, d[1])
	}
	slices.Sort(hs)
	slices.Sort(ws)
	return hs[len(hs)/2], ws[len(ws)/2], nil
}

// Lane shapes.
var (
	baseWidths = []int{32, 64, 128, 256}
	wideWidths = []int{32, 64, 128, 256, 512}
)

const (
	basePatch, baseBatch = 128, 8
	widePatch, wideBatch = 256, 4
	minPatch             = 32 // smallest planned patch side (a multiple of 8, the base pooling)
)

// receptiveField is the receptive field in pixels of the plugin's U-Net with the given
// number of stages: two 3×3 convolutions per stage, 2×2 max-pooling down, 2×2 transposed
// convolutions up (which widen nothing).
func receptiveField(stages int) int {
	rf, jump := 1, 1
	for s := range stages {
		if s > 0 {
			rf += jump // 2×2 pooling
			jump *= 2
		}
		rf += 2 * 2 * jump // two 3×3 convolutions
	}
	for s := stages - 2; s >= 0; s-- {
		jump /= 2
		rf += 2 * 2 * jump
	}
	return rf
}

func (enh) Plan(_ context.Context, req *protocol.PlanRequest) (*protocol.PlanResponse, error) {
	if _, err := checkTask(req.Task); err != nil {
		return nil, fmt.Errorf("enhancement plan: %w", err)
	}
	h, w, err := parseFingerprint(req.Fingerprint)
	if err != nil {
		return nil, fmt.Errorf("enhancement plan: %w", err)
	}
	side := min(h, w)
	out := &protocol.PlanResponse{}
	// Candidates carry every default explicitly, so the host shows what will run.
	add := func(name string, c config, why string) error {
		b, err := json.Marshal(c)
		if err != nil {
			return err
		}
		if c, err = parseConfig(b); err != nil {
			return err
		}
		// The batch planned to the device the setting chooses (package device).
		batch, where, bytes, fit := device.Fit(c.Batch, clipNorm, func(be engine.Backend, n int) (*engine.Net, engine.Optimizer, error) {
			u, err := engine.BuildResUNet(be, c.net(), n, c.patch3(), 1, c.loss())
			if err != nil {
				return nil, nil, err
			}
			return u.Net, engine.NewAdamW(be, u.Params(), c.LR, c.Decay), nil
		})
		if c.Batch = batch; fit != "" {
			why += "; " + fit
		}
		if b, err = json.Marshal(c); err != nil {
			return err
		}
		out.Candidates = append(out.Candidates, protocol.Candidate{Name: name, Config: b, Rationale: why, Device: where, MemoryBytes: bytes})
		return nil
	}
	l1, ssim, lossWhy := lossFor(req.Task.Metric)
	// base: patches of at most 128², shrunk (to a multiple of 8) for small images.
	p := max(minPatch, min(basePatch, side/8*8))
	base := config{Lane: laneBase, Patch: [2]int{p, p}, Batch: baseBatch, Widths: baseWidths,
		Steps: plannedEpochs * defaultEpoch, Epoch: defaultEpoch, L1: &l1, SSIM: &ssim}
	why := fmt.Sprintf("base: residual U-Net %v (%d stages, receptive field %d px) on %d² patches, batch %d, of images of median %d×%d; "+
		"the head predicts a correction added to the input, so training starts from the identity; "+
		"%s; sliding-window inference, overlap 0.5",
		baseWidths, len(baseWidths), receptiveField(len(baseWidths)), p, baseBatch, h, w, lossWhy)
	if err := add(laneBase, base, why); err != nil {
		return nil, err
	}
	if side >= widePatch {
		wide := config{Lane: laneWide, Patch: [2]int{widePatch, widePatch}, Batch: wideBatch, Widths: wideWidths,
			Steps: plannedEpochs * defaultEpoch, Epoch: defaultEpoch, L1: &l1, SSIM: &ssim}
		why := fmt.Sprintf("wide: residual U-Net %v (%d stages, receptive field %d px) on %d² patches, batch %d: "+
			"more context for speckle and shadowing at organ scale on images of median %d×%d; about twice the compute of base per step; %s",
			wideWidths, len(wideWidths), receptiveField(len(wideWidths)), widePatch, wideBatch, h, w, lossWhy)
		if err := add(laneWide, wide, why); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// lossFor is the loss weights (L1, SSIM) for a task scored by metric, and the
// sentence that says why. A task scored by PSNR, a mean squared error, trains on L1
// alone: SSIM is blind to a uniform offset, and with the default mixture a denoiser of real
// MR (make bench-quality's mr-rician-denoise) raised SSIM from 0.80 to 0.89 on validation
// slices while its PSNR fell from 32.3 to 29.8 dB under the noisy input's, through a bias
// of −4.4 grey levels; and L1 reaches a higher PSNR than L2 itself (Zhao et al. 2017, the
// mixture's source). Any other metric (SSIM, LNCC, none) keeps the mixture.
func lossFor(metric string) (l1, ssim float64, why string) {
	if strings.EqualFold(metric, "psnr") {
		return 1, 0, "L1 alone, as the task is scored by PSNR (SSIM is blind to a uniform offset; Zhao et al. 2017: L1 reaches a higher PSNR than L2)"
	}
	return defaultL1, defaultSSIM, "0.16·L1 + 0.84·(1 − SSIM) (Zhao et al. 2017), SSIM with the grader's 7×7 window"
}
