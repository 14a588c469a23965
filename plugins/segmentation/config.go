package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"amid/plugins/engine"
	"amid/plugins/engine/data"
	"amid/plugins/segmentation/plan"
)

// config is one training configuration; configSchema describes it. Axes of Patch, Kernels,
// Pools and Spacing are (D, H, W) = (Z, Y, X), as in package plan.
type config struct {
	Lane    string     `json:"lane"`
	Patch   [3]int     `json:"patch,omitzero"` // zero, with Batch and Widths, for the forest lane
	Batch   int        `json:"batch,omitempty"`
	Widths  []int      `json:"widths,omitempty"`
	Kernels [][3]int   `json:"kernels,omitempty"`
	Pools   [][3]int   `json:"pools,omitempty"`
	Spacing [3]float64 `json:"spacing,omitzero"` // zero: each image's own grid
	// Modality is "ct", "global" (images of another modality on one scale, normalised as
	// CT is: plan.SharedScale), "mr" (per-image z-score of non-zero voxels) or "rgb"; CT
	// and global take the training set's statistics in CT.
	Modality string   `json:"modality"`
	CT       *ctStats `json:"ct,omitempty"`
	Labels   []int    `json:"labels"` // the task's label value of each class; Labels[0] is background
	Steps    int      `json:"steps"`
	Epoch    int      `json:"steps_per_epoch"`
	LR       float64  `json:"learning_rate"`
	Decay    float64  `json:"weight_decay"`
	Seed     int64    `json:"seed"` // 0: the request's seed
	FgProb   float64  `json:"foreground_prob"`
	Report   int      `json:"report_every"`
	Mirror   bool     `json:"mirror"` // flip test-time augmentation at prediction
	// Slices is the number of neighbouring slices the 2.5d lane stacks as channels (odd).
	Slices int `json:"slices,omitempty"`
	// Coords gives the network each voxel's position in the patient frame as three more
	// input channels (data.Norm.Coords).
	Coords bool `json:"coords,omitempty"`
	// DeepSupervision adds nnU-Net's auxiliary losses at lower resolutions.
	DeepSupervision bool `json:"deep_supervision,omitempty"`
	// Post is the post-processing Predict applies: one of postprocessing's names (Train
	// reports the validation Dice of each), or, for the forest lane, postSmooth; the host
	// chooses one on validation cases.
	Post string `json:"postprocess,omitempty"`
	// MinComponent is the size in voxels under which "small" removes a component and an
	// instance seed is dropped; 0: defaultMinComponent for the lane.
	MinComponent int `json:"min_component,omitempty"`
	// Instances: the labels are instance ids (cells); the network learns background,
	// interior and boundary (Labels [0, 1, 2]) and Predict writes instance ids.
	Instances bool `json:"instances,omitempty"`
	// Cascade names the trained 3d_lowres checkpoint whose segmentation the
	// 3d_cascade_fullres lane takes as input (cascade.go).
	Cascade *cascadeRef `json:"cascade,omitempty"`
	// MaxDepth and Samples are the forest lane's: the deepest a tree's leaf lies, and
	// the training voxels its trees grow on (voxel.go).
	MaxDepth int `json:"max_depth,omitempty"`
	Samples  int `json:"samples,omitempty"`
}

// Post-processing options, in the order Train reports them ("dice", "dice_lcc", ...).
const (
	postNone  = "none"  // the network's label map as it is
	postLCC   = "lcc"   // the largest 26-connected component of each class
	postSmall = "small" // components under min_component voxels removed
	postFill  = "fill"  // holes in each class filled
	// postSmooth is the forest lane's: its class probabilities smoothed by a Gaussian of
	// smoothMM before the argmax. The forest classifies each voxel alone, and its
	// neighbours' votes quiet the speckle of doubtful voxels; a network's overlapping
	// windows already average its scores, and its lanes refuse the option.
	postSmooth = "smooth"
)

// smoothMM is postSmooth's σ in mm, fitted on the tuning tasks of `make bench-quality`
// (BenchmarkForestTask, forest of 32 trees, 2026-12-07; test Dice of t1-tissue, t1-brain,
// ch2-lobes, mean): none 0.8080, 0.9484, 0.6499, 0.8021; σ 1 mm 0.8036, 0.9503, 0.6591,
// 0.8043; σ 2 mm 0.6866, 0.9552, 0.6647, 0.7688. Regions gain and thin tissue classes on
// 2 × 2 × 3 mm voxels lose, so the option is the host's choice on validation, not a
// constant of the model, and 1 mm is the σ that did best over the three.
const smoothMM = 1.0

// postprocessing lists the options with the validation key of each.
var postprocessing = []struct{ name, key string }{
	{postNone, "dice"}, {postLCC, "dice_lcc"}, {postSmall, "dice_small"}, {postFill, "dice_fill"},
}

type ctStats struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"`
}

const configSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "AMID segmentation plugin configuration",
  "type": "object",
  "properties": {
    "lane": {"enum": ["2d", "2.5d", "3d_fullres", "3d_lowres", "3d_cascade_fullres", "forest"]},
    "patch": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 4096}, "minItems": 3, "maxItems": 3, "description": "D, H, W; D = 1 for 2d"},
    "batch": {"type": "integer", "minimum": 1, "maximum": 4096},
    "widths": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 1024}, "minItems": 1, "maxItems": 8},
    "kernels": {"type": "array", "items": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 7}, "minItems": 3, "maxItems": 3}},
    "pools": {"type": "array", "items": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 4}, "minItems": 3, "maxItems": 3}},
    "spacing": {"type": "array", "items": {"type": "number", "minimum": 0}, "minItems": 3, "maxItems": 3, "description": "target spacing D, H, W in mm; zeros keep each image's grid"},
    "modality": {"enum": ["ct", "global", "mr", "rgb"]},
    "ct": {"type": "object", "properties": {"low": {"type": "number"}, "high": {"type": "number"}, "mean": {"type": "number"}, "std": {"type": "number", "exclusiveMinimum": 0}}, "required": ["low", "high", "mean", "std"], "additionalProperties": false},
    "labels": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2, "maxItems": 1024, "uniqueItems": true},
    "steps": {"type": "integer", "minimum": 1, "maximum": 100000000},
    "steps_per_epoch": {"type": "integer", "minimum": 1},
    "learning_rate": {"type": "number", "exclusiveMinimum": 0, "maximum": 10},
    "weight_decay": {"type": "number", "minimum": 0},
    "seed": {"type": "integer"},
    "foreground_prob": {"type": "number", "minimum": 0, "maximum": 1},
    "report_every": {"type": "integer", "minimum": 1},
    "mirror": {"type": "boolean"},
    "slices": {"type": "integer", "minimum": 3, "maximum": 15, "description": "2.5d: neighbouring slices stacked as channels, odd"},
    "coords": {"type": "boolean", "description": "position as input: each voxel's patient-frame position as three more channels"},
    "deep_supervision": {"type": "boolean"},
    "postprocess": {"enum": ["none", "lcc", "small", "fill", "smooth"], "description": "smooth: the forest lane's class probabilities smoothed before the argmax"},
    "min_component": {"type": "integer", "minimum": 0},
    "instances": {"type": "boolean", "description": "labels are instance ids; the network learns background, interior and boundary"},
    "max_depth": {"type": "integer", "minimum": 1, "maximum": 30, "description": "forest: the deepest a tree's leaf lies"},
    "samples": {"type": "integer", "minimum": 1, "maximum": 100000000, "description": "forest: the training voxels the trees grow on"},
    "cascade": {"type": "object", "description": "3d_cascade_fullres: the trained 3d_lowres checkpoint whose segmentation is more input", "properties": {"checkpoint": {"type": "string", "minLength": 1}, "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"}}, "required": ["checkpoint", "sha256"], "additionalProperties": false}
  },
  "required": ["lane", "modality", "labels", "steps"],
  "if": {"properties": {"lane": {"const": "forest"}}},
  "else": {"properties": {"postprocess": {"not": {"const": "smooth"}}}},
  "additionalProperties": false
}`

// Defaults of the optional fields.
const (
	defaultEpoch  = 250  // nnU-Net's iterations per epoch
	defaultLR     = 3e-3 // AdamW
	defaultDecay  = 3e-5 // nnU-Net's weight decay
	defaultFgProb = 0.33 // nnU-Net forces a third of each batch onto foreground
	defaultReport = 10
	// defaultMinComponent is min_component in voxels for a 3D and a 2D lane: a lesion
	// of 100 voxels at 1 mm is about 6 mm across; 20 pixels is a speck in a 2D image.
	defaultMinComponent3D = 100
	defaultMinComponent2D = 20
	// defaultMinSeed is min_component for instances: the fewest interior voxels that
	// start an instance (a cell of 4 pixels across has about 8 inside its boundary).
	defaultMinSeed = 8
)

// parseConfig decodes and checks a configuration, filling the defaults.
func parseConfig(b []byte) (config, error) {
	var c config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("segmentation configuration: %w", err)
	}
	if c.Epoch == 0 {
		c.Epoch = defaultEpoch
		if c.Lane == plan.LaneForest {
			c.Epoch = forestEpoch
		}
	}
	if c.LR == 0 {
		c.LR = defaultLR
	}
	if c.Decay == 0 {
		c.Decay = defaultDecay
	}
	if c.FgProb == 0 {
		c.FgProb = defaultFgProb
	}
	if c.Report == 0 {
		c.Report = defaultReport
	}
	if c.Post == "" {
		c.Post = postNone
	}
	if c.MinComponent == 0 {
		switch {
		case c.Instances:
			c.MinComponent = defaultMinSeed
		case c.is3D():
			c.MinComponent = defaultMinComponent3D
		default:
			c.MinComponent = defaultMinComponent2D
		}
	}
	if c.Lane == plan.Lane25D && c.Slices == 0 {
		c.Slices = plan.Slices25D
	}
	if c.Lane == plan.LaneForest {
		return forestConfig(c)
	}
	switch {
	case c.Lane != plan.Lane2D && c.Lane != plan.Lane25D && !c.is3D():
		return c, fmt.Errorf("segmentation configuration: lane %q is not one of %q, %q, %q, %q, %q, %q", c.Lane, plan.Lane2D, plan.Lane25D, plan.Lane3D, plan.Lane3DLow, plan.Lane3DCascade, plan.LaneForest)
	case c.MaxDepth != 0 || c.Samples != 0:
		return c, fmt.Errorf("segmentation configuration: max_depth and samples are the forest lane's, not %s's", c.Lane)
	case (c.Lane == plan.Lane3DCascade) != (c.Cascade != nil):
		return c, fmt.Errorf("segmentation configuration: a cascade (the 3d_lowres checkpoint) is given with lane %s and only there", plan.Lane3DCascade)
	case c.Cascade != nil && (c.Cascade.Checkpoint == "" || len(c.Cascade.SHA256) != 64):
		return c, fmt.Errorf("segmentation configuration: the cascade needs the 3d_lowres checkpoint's path and its sha256 (64 hex digits)")
	case c.Lane == plan.Lane3DCascade && c.Instances:
		return c, fmt.Errorf("segmentation configuration: lane %s does not learn instances", plan.Lane3DCascade)
	case !c.is3D() && c.Patch[0] != 1:
		return c, fmt.Errorf("segmentation configuration: a %s patch has D = 1, not %d", c.Lane, c.Patch[0])
	case c.Lane == plan.Lane25D && (c.Slices < 3 || c.Slices%2 == 0 || c.Slices > maxSlices):
		return c, fmt.Errorf("segmentation configuration: slices %d is not an odd number from 3 to %d", c.Slices, maxSlices)
	case c.Lane != plan.Lane25D && c.Slices != 0:
		return c, fmt.Errorf("segmentation configuration: slices is for the 2.5d lane, not %s", c.Lane)
	case !slices.ContainsFunc(postprocessing, func(p struct{ name, key string }) bool { return p.name == c.Post }):
		if c.Post == postSmooth {
			return c, fmt.Errorf("segmentation configuration: postprocess smooth is the forest lane's, not %s's: a network's overlapping windows already average its scores", c.Lane)
		}
		return c, fmt.Errorf("segmentation configuration: postprocess %q is not none, lcc, small or fill", c.Post)
	case c.MinComponent < 0:
		return c, fmt.Errorf("segmentation configuration: min_component %d is negative", c.MinComponent)
	case c.Instances && !slices.Equal(c.Labels, []int{0, 1, 2}):
		return c, fmt.Errorf("segmentation configuration: instances take labels [0, 1, 2] (background, interior, boundary), not %v", c.Labels)
	case slices.ContainsFunc(c.Patch[:], func(v int) bool { return v < 1 }):
		return c, fmt.Errorf("segmentation configuration: patch %v has a non-positive size", c.Patch)
	case c.Batch < 1 || c.Steps < 1 || c.Epoch < 1 || c.Report < 1:
		return c, fmt.Errorf("segmentation configuration: batch, steps, steps_per_epoch and report_every must be positive")
	case len(c.Widths) == 0:
		return c, fmt.Errorf("segmentation configuration: no widths")
	case len(c.Labels) < 2:
		return c, fmt.Errorf("segmentation configuration: %d labels, at least background and one class", len(c.Labels))
	case modalityErr(c) != nil:
		return c, modalityErr(c)
	case !(c.LR > 0) || c.Decay < 0 || c.FgProb < 0 || c.FgProb > 1:
		return c, fmt.Errorf("segmentation configuration: learning_rate must be positive, weight_decay ≥ 0, foreground_prob in [0, 1]")
	}
	for _, s := range c.Spacing {
		if s < 0 {
			return c, fmt.Errorf("segmentation configuration: negative spacing %v", c.Spacing)
		}
	}
	return c, nil
}

// forestConfig checks the forest lane's configuration c, filling its defaults: no
// network fields, and no post-processing an instance map would need.
func forestConfig(c config) (config, error) {
	if c.MaxDepth == 0 {
		c.MaxDepth = defaultForestDepth
	}
	if c.Samples == 0 {
		c.Samples = defaultForestSamples
	}
	switch {
	case c.Patch != [3]int{} || c.Batch != 0 || len(c.Widths) > 0 || c.Kernels != nil || c.Pools != nil || c.Slices != 0 || c.Cascade != nil || c.DeepSupervision:
		return c, fmt.Errorf("segmentation configuration: the forest lane has no network: no patch, batch, widths, kernels, pools, slices, cascade or deep_supervision")
	case c.Instances:
		return c, fmt.Errorf("segmentation configuration: the forest lane does not learn instances")
	case c.MaxDepth < 1 || c.MaxDepth > 30 || c.Samples < 1 || c.Steps < 1 || c.Report < 1:
		return c, fmt.Errorf("segmentation configuration: the forest needs max_depth from 1 to 30 and positive samples, steps and report_every")
	case len(c.Labels) < 2 || len(c.Labels) > 256:
		return c, fmt.Errorf("segmentation configuration: %d labels; the forest takes background and 1 to 255 classes", len(c.Labels))
	case modalityErr(c) != nil:
		return c, modalityErr(c)
	case c.Post != postSmooth && !slices.ContainsFunc(postprocessing, func(p struct{ name, key string }) bool { return p.name == c.Post }) || c.MinComponent < 0:
		return c, fmt.Errorf("segmentation configuration: postprocess %q or min_component %d is not valid (none, lcc, small, fill or smooth)", c.Post, c.MinComponent)
	}
	for _, s := range c.Spacing {
		if s < 0 {
			return c, fmt.Errorf("segmentation configuration: negative spacing %v", c.Spacing)
		}
	}
	return c, nil
}

// is3D reports whether the lane's patches are volumes (3d_fullres, 3d_lowres and
// 3d_cascade_fullres).
func (c config) is3D() bool {
	return c.Lane == plan.Lane3D || c.Lane == plan.Lane3DLow || c.Lane == plan.Lane3DCascade
}

// inputs is the number of channels the network takes for an image of channels channels:
// those and, in the cascade, the one-hot planes of the low-resolution segmentation.
func (c config) inputs(channels int) int {
	if c.Lane == plan.Lane3DCascade {
		return channels + len(c.Labels) - 1
	}
	return channels
}

// maxSlices bounds a 2.5d stack.
const maxSlices = 15

// stack is the number of slices per image channel the network sees: Slices for 2.5d, else 1.
func (c config) stack() int { return max(1, c.Slices) }

// net is the U-Net the configuration describes for channels image channels (each of
// stack() slices in 2.5d; and the one-hot planes of the cascade), with the position planes
// at its head with coords.
func (c config) net(channels int) engine.UNetConfig {
	pos := 0
	if c.Coords {
		pos = data.CoordChannels
	}
	return engine.UNetConfig{
		Position: pos, In: c.inputs(channels) * c.stack(), Classes: len(c.Labels), Widths: c.Widths, Kernels: c.Kernels, Pools: c.Pools,
		Convs: 2, Norm: engine.Instance, Slope: 0.01, DeepSupervision: c.DeepSupervision,
	}
}

// modalityErr says what is wrong with c's modality and its statistics, if anything.
func modalityErr(c config) error {
	switch {
	case (c.Modality == "ct" || c.Modality == "global") && (c.CT == nil || !(c.CT.Std > 0)):
		return fmt.Errorf("segmentation configuration: modality %s needs ct statistics with a positive std", c.Modality)
	case !slices.Contains([]string{"ct", "global", "mr", "rgb"}, c.Modality):
		return fmt.Errorf("segmentation configuration: modality %q is not ct, global, mr or rgb", c.Modality)
	}
	return nil
}

// norm is the data package's normalisation for the configuration.
func (c config) norm() data.Norm {
	switch c.Modality {
	case "ct", "global":
		return data.Norm{Modality: data.CT, CT: data.CTStats{Lo: c.CT.Low, Hi: c.CT.High, Mean: c.CT.Mean, Std: c.CT.Std}, Coords: c.Coords}
	case "rgb":
		return data.Norm{Modality: data.RGB, Coords: c.Coords}
	}
	return data.Norm{Modality: data.MR, Coords: c.Coords}
}

// spacingXYZ is the target spacing in the volume's (X, Y, Z) order; zero keeps the grid.
func (c config) spacingXYZ() [3]float64 {
	if c.Spacing[0] == 0 || c.Spacing[1] == 0 || c.Spacing[2] == 0 {
		return [3]float64{}
	}
	return [3]float64{c.Spacing[2], c.Spacing[1], c.Spacing[0]}
}

// patchXYZ is the network's patch in the (X, Y, Z) order of the data and infer packages.
func (c config) patchXYZ() [3]int { return [3]int{c.Patch[2], c.Patch[1], c.Patch[0]} }

// samplePatch is the patch the loader cuts: the network's, or in 2.5d a stack of Slices
// slices around the predicted one.
func (c config) samplePatch() [3]int {
	p := c.patchXYZ()
	p[2] *= c.stack()
	return p
}
