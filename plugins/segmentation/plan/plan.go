// Package plan derives nnU-Net style training configurations for segmentation from a
// dataset fingerprint and a memory budget: target spacing (median, with nnU-Net's
// anisotropy rule), median shape after resampling, patch and batch size fitted to the
// budget, pooling and kernel sizes per stage, and the U-Net that engine.BuildUNet builds.
//
// Three lanes are planned where the data allow: "2d" (in-plane patches), "2.5d" (the same
// with neighbouring slices as channels) and "3d_fullres". Axes are in the engine's order
// (D, H, W) = (Z, Y, X) throughout; a 2D image has D = 1.
package plan

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"amid/plugins/engine"
)

// Lane names.
const (
	Lane2D    = "2d"
	Lane25D   = "2.5d"
	Lane3D    = "3d_fullres"
	Lane3DLow = "3d_lowres"
	// Lane3DCascade is nnU-Net's "3d_cascade_fullres": the 3d_fullres network given a
	// trained 3d_lowres network's segmentation as more input channels. Plan never plans
	// it, since it needs a trained 3d_lowres checkpoint: the host adds it after the first
	// round (amid/host/planner).
	Lane3DCascade = "3d_cascade_fullres"
	// LaneForest classifies each voxel with a random forest from filter responses and
	// its position (the plugin's voxel.go): no network, so Plan does not size it.
	LaneForest = "forest"
)

// Rules, from nnU-Net v2's default planner (peers.md §3.1) unless said otherwise.
const (
	// AnisoThreshold: an axis whose spacing exceeds the finest axis's by more than this
	// factor is the low-resolution axis.
	AnisoThreshold = 3
	// MinPoolEdge: an axis is pooled only while its feature map has at least this many
	// voxels (so the bottleneck keeps ≥ 4).
	MinPoolEdge = 8
	// MaxSpacingRatio: an axis is pooled, and gets a kernel of 3, only while its spacing is
	// less than this factor times the finest axis's.
	MaxSpacingRatio = 2
	// BaseWidth and the caps on the widths (32·2^i, at most 320 in 3D, 512 in 2D).
	BaseWidth  = 32
	MaxWidth3D = 320
	MaxWidth2D = 512
	// MaxStages caps the number of resolution stages (nnU-Net: 6 in 3D, 8 in 2D when the
	// patch allows; one cap keeps the engine's plans small).
	MaxStages = 7
	// MinBatch is the smallest batch (nnU-Net: 2).
	MinBatch = 2
	// MaxBatchFraction caps a batch at this fraction of the dataset's voxels (nnU-Net: 5 %).
	MaxBatchFraction = 0.05
	// MaxPatch3D and MaxPatch2D cap the starting patch (nnU-Net: 256³ and 2048² voxels).
	MaxPatch3D = 256 * 256 * 256
	MaxPatch2D = 2048 * 2048
	// Slices25D is the number of neighbouring slices the 2.5D lane stacks as channels.
	Slices25D = 5
)

// ErrFingerprint reports a fingerprint that cannot be planned for; ErrBudget a memory
// budget in which no patch fits.
var (
	ErrFingerprint = errors.New("plan: invalid fingerprint")
	ErrBudget      = errors.New("plan: memory budget too small")
)

// Case is one training image: voxels and spacing (mm) per axis in (D, H, W) order.
type Case struct {
	Dims    [3]int     `json:"dims"`
	Spacing [3]float64 `json:"spacing"`
	// ClassVoxels and ClassMeans are each class's voxel count and the mean intensity of
	// the first channel under it (host/profile), when the host measured them.
	ClassVoxels []int64   `json:"class_voxels,omitempty"`
	ClassMeans  []float64 `json:"class_means,omitempty"`
}

// Fingerprint summarises a segmentation dataset (nnU-Net's dataset_fingerprint.json).
type Fingerprint struct {
	Cases []Case `json:"cases"`
	// Modality names the image kind: "CT" (clipped to the foreground percentiles, then a
	// global z-score), "RGB" (scaled to 0–1), anything else a per-image z-score; case is
	// ignored.
	Modality string `json:"modality"`
	// Channels per image (3 for RGB).
	Channels int `json:"channels"`
	// Classes including background.
	Classes int `json:"classes"`
	// Foreground intensity percentiles 0.5 and 99.5, and the foreground mean and std.
	FGLow  float64 `json:"fg_p00_5"`
	FGHigh float64 `json:"fg_p99_5"`
	FGMean float64 `json:"fg_mean"`
	FGStd  float64 `json:"fg_std"`
	// ClassFrequency is each class's fraction of all labelled voxels (len Classes).
	ClassFrequency []float64 `json:"class_frequency,omitempty"`
}

// Budget bounds a configuration's training step.
type Budget struct {
	// Bytes is the memory a training step may use: activations and their gradients for
	// the whole batch, parameters, gradients and Adam's moments.
	Bytes int64
	// Estimate, when not nil, is the memory of training cfg on a batch of n patches on
	// the device the budget is for (engine.TrainingBytes); nil means the host's, Estimate.
	Estimate func(cfg engine.UNetConfig, n int, patch [3]int) int64
}

// Normalization says how images are scaled before training.
type Normalization struct {
	// Scheme is "ct" (clip to [Low, High], then (x − Mean)/Std), "global" (the same, for
	// images of another modality on one intensity scale: SharedScale), "zscore" (per
	// image) or "rgb" (divide by 255).
	Scheme string  `json:"scheme"`
	Low    float64 `json:"low,omitempty"`
	High   float64 `json:"high,omitempty"`
	Mean   float64 `json:"mean,omitempty"`
	Std    float64 `json:"std,omitempty"`
}

// Config is one planned lane; Net, Patch and Batch go to engine.BuildUNet.
type Config struct {
	Lane string `json:"lane"`
	// Spacing is the target spacing and MedianShape the median image shape after
	// resampling to it; (D, H, W).
	Spacing     [3]float64 `json:"spacing"`
	MedianShape [3]int     `json:"median_shape"`
	// Patch (D, H, W; D = 1 for the 2D lanes) and Batch fitted to the budget.
	Patch [3]int `json:"patch"`
	Batch int    `json:"batch"`
	// Slices stacked as channels (Slices25D for 2.5D, else 1).
	Slices int               `json:"slices"`
	Net    engine.UNetConfig `json:"net"`
	// Bytes is the estimated memory of a training step (see Estimate).
	Bytes int64 `json:"bytes"`
	// Steps is the planned total of steps and StepSeconds a step's time on this machine,
	// when the lane was fitted to its time (FitTime); 0 otherwise.
	Steps       int           `json:"steps,omitempty"`
	StepSeconds float64       `json:"step_seconds,omitempty"`
	Norm        Normalization `json:"norm"`
	// RareClasses are foreground classes under 0.1 % of the labelled voxels, where a
	// trainer should oversample foreground patches.
	RareClasses []int `json:"rare_classes,omitempty"`
	// Rationale lists the decisions and the figures behind them, in order.
	Rationale []string `json:"rationale"`
}

// Stages is the number of resolution stages of the U-Net.
func (c Config) Stages() int { return len(c.Net.Widths) }

// maxChannels bounds channels and classes.
const maxChannels = 1024

func (f Fingerprint) check() error {
	if len(f.Cases) == 0 {
		return fmt.Errorf("%w: no cases", ErrFingerprint)
	}
	if f.Channels < 1 || f.Classes < 2 || f.Channels > maxChannels || f.Classes > maxChannels {
		return fmt.Errorf("%w: %d channels and %d classes; need 1 to %d and 2 to %d", ErrFingerprint, f.Channels, f.Classes, maxChannels, maxChannels)
	}
	if len(f.ClassFrequency) != 0 && len(f.ClassFrequency) != f.Classes {
		return fmt.Errorf("%w: %d class frequencies for %d classes", ErrFingerprint, len(f.ClassFrequency), f.Classes)
	}
	for i, c := range f.Cases {
		for a := range 3 {
			if c.Dims[a] < 1 || !(c.Spacing[a] > 0) || math.IsInf(c.Spacing[a], 0) {
				return fmt.Errorf("%w: case %d has dims %v and spacing %v", ErrFingerprint, i, c.Dims, c.Spacing)
			}
		}
	}
	return nil
}

// percentile is the linear-interpolated q-quantile (0–1) of v, numpy's default.
func percentile(v []float64, q float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

// TargetSpacing is the per-axis median spacing; when the coarsest axis is more than
// AnisoThreshold times the finest, that axis takes the 10th percentile of its spacings
// instead, floored at the coarsest of the other axes (nnU-Net).
func TargetSpacing(f Fingerprint) [3]float64 {
	t, _ := targetSpacing(f)
	return t
}

// axisName names the axes (D, H, W) in rationales.
var axisName = [3]string{"D", "H", "W"}

func targetSpacing(f Fingerprint) ([3]float64, string) {
	var t [3]float64
	per := make([][]float64, 3)
	for a := range 3 {
		for _, c := range f.Cases {
			per[a] = append(per[a], c.Spacing[a])
		}
		t[a] = percentile(per[a], 0.5)
	}
	why := fmt.Sprintf("target spacing: per-axis median %.4g×%.4g×%.4g mm", t[0], t[1], t[2])
	lo, hi := 0, 0
	for a := range 3 {
		if t[a] < t[lo] {
			lo = a
		}
		if t[a] > t[hi] {
			hi = a
		}
	}
	if t[hi] > AnisoThreshold*t[lo] {
		floor := 0.0
		for a := range 3 {
			if a != hi {
				floor = max(floor, t[a])
			}
		}
		p10 := percentile(per[hi], 0.1)
		t[hi] = max(p10, floor)
		why += fmt.Sprintf("; %s is %.3g× the finest axis (> %d): its target is the 10th percentile %.4g mm floored at %.4g mm, %.4g mm",
			axisName[hi], t[hi]/t[lo], AnisoThreshold, p10, floor, t[hi])
	}
	return t, why
}

// MedianShape is the per-axis median of the case shapes resampled to spacing.
func MedianShape(f Fingerprint, spacing [3]float64) [3]int {
	var m [3]int
	for a := range 3 {
		var v []float64
		for _, c := range f.Cases {
			v = append(v, math.Round(float64(c.Dims[a])*c.Spacing[a]/spacing[a]))
		}
		m[a] = max(1, int(math.Round(percentile(v, 0.5))))
	}
	return m
}

// Topology returns nnU-Net's kernels per stage and pools per stage after the first for a
// patch at spacing: at every stage an axis gets a kernel of 3 once its spacing is within
// MaxSpacingRatio of the finest, and is pooled by 2 while its feature map has at least
// MinPoolEdge voxels and its spacing is within MaxSpacingRatio of the finest; pooled
// spacings double. Axes of one voxel get kernel 1 and are never pooled.
func Topology(patch [3]int, spacing [3]float64) (kernels, pools [][3]int) {
	size, sp := patch, spacing
	var three [3]bool
	for {
		finest := math.Inf(1)
		for a := range 3 {
			if size[a] > 1 {
				finest = min(finest, sp[a])
			}
		}
		var k, p [3]int
		pooled := false
		for a := range 3 {
			k[a], p[a] = 1, 1
			if patch[a] == 1 {
				continue
			}
			near := sp[a] < MaxSpacingRatio*finest
			if near {
				three[a] = true
			}
			if three[a] {
				k[a] = 3
			}
			if near && size[a] >= MinPoolEdge {
				p[a] = 2
				pooled = true
			}
		}
		kernels = append(kernels, k)
		if !pooled || len(kernels) == MaxStages {
			return kernels, pools
		}
		pools = append(pools, p)
		for a := range 3 {
			if p[a] == 2 {
				size[a] /= 2
				sp[a] *= 2
			}
		}
	}
}

// divisor is the product of the pools per axis: the patch must be a multiple of it.
func divisor(pools [][3]int) [3]int {
	d := [3]int{1, 1, 1}
	for _, p := range pools {
		for a := range 3 {
			d[a] *= p[a]
		}
	}
	return d
}

// widths are BaseWidth·2^i capped at limit.
func widths(stages, limit int) []int {
	w := make([]int, stages)
	for i := range w {
		w[i] = min(BaseWidth<<i, limit)
	}
	return w
}

// Estimate is the memory in bytes of one training step of the U-Net cfg on a batch of n
// patches (strided convolutions, as planned): per sample the input, every convolution's
// and normalisation's output with its gradient, the transposed convolutions' outputs with
// their gradients and the logits with gradient and softmax; plus 20 bytes per parameter
// (value, gradient, the engine's flipped copy of convolution weights for the input
// gradient, two Adam moments) and 12 more per weight of a convolution the engine folds
// (stride 1 with a kernel over depth, or over rows in 2D: the folded weight, its flipped
// form and a gradient part). Im2col workspaces (≤ 8 MiB per worker) are left out.
func Estimate(cfg engine.UNetConfig, n int, patch [3]int) int64 {
	st := len(cfg.Widths)
	pools := append([][3]int{{1, 1, 1}}, cfg.Pools...)
	size := patch
	var floats, params, folded int64
	vox0 := int64(patch[0] * patch[1] * patch[2])
	floats += int64(cfg.In)*vox0 + 3*int64(cfg.Classes)*vox0
	prev := cfg.In
	for s := range st {
		for a := range 3 {
			size[a] /= pools[s][a]
		}
		v := int64(size[0] * size[1] * size[2])
		w := int64(cfg.Widths[s])
		k := int64(cfg.Kernels[s][0] * cfg.Kernels[s][1] * cfg.Kernels[s][2])
		// Encoder convolutions, and the decoder's (all but the deepest stage), each
		// conv + norm output with gradient.
		convs := int64(cfg.Convs)
		params += (int64(prev)*k+1)*w + (convs-1)*(w*k+1)*w + 2*convs*w
		kern := cfg.Kernels[s]
		folds := kern[0] > 1 || (size[0] == 1 && kern[1] > 1)
		if folds {
			folded += (convs - 1) * w * k * w
			if s == 0 || cfg.MaxPool { // otherwise the stage's first convolution is strided
				folded += int64(prev) * k * w
			}
		}
		if s < st-1 {
			convs *= 2
			// Transposed convolution into this stage (data and gradient).
			floats += 2 * w * v
			wn := int64(cfg.Widths[s+1])
			p := int64(pools[s+1][0] * pools[s+1][1] * pools[s+1][2])
			params += wn*w*p + w + (2*w*k+1)*w + (int64(cfg.Convs)-1)*(w*k+1)*w + 2*int64(cfg.Convs)*w
			if folds {
				folded += 2*w*k*w + (int64(cfg.Convs)-1)*w*k*w
			}
		}
		floats += 4 * convs * w * v
		prev = cfg.Widths[s]
	}
	params += int64(cfg.Widths[0]+1) * int64(cfg.Classes)
	return 4*int64(n)*floats + 20*params + 12*folded
}
