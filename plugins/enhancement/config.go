package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"amid/plugins/engine"
)

// config is one training configuration; configSchema describes it. Patch is (H, W).
type config struct {
	Lane   string `json:"lane"`
	Patch  [2]int `json:"patch"`
	Batch  int    `json:"batch"`
	Widths []int  `json:"widths"`
	Steps  int    `json:"steps"`
	Epoch  int    `json:"steps_per_epoch"`
	// LR and Decay are AdamW's learning rate (decayed by the poly schedule) and weight
	// decay.
	LR    float64 `json:"learning_rate"`
	Decay float64 `json:"weight_decay"`
	// L1 and SSIM weigh the loss terms; nil takes the defaults.
	L1     *float64 `json:"l1_weight,omitempty"`
	SSIM   *float64 `json:"ssim_weight,omitempty"`
	Window int      `json:"ssim_window"`
	Seed   int64    `json:"seed"` // 0: the request's seed
	Report int      `json:"report_every"`
	// Inference is "window" (sliding patches blended with Gaussian weights) or "whole"
	// (the network run once on the whole image, padded to the pooling).
	Inference string  `json:"inference"`
	Overlap   float64 `json:"overlap"`
	Mirror    bool    `json:"mirror"` // flip test-time augmentation (window inference)
}

// Lane names.
const (
	laneBase = "base"
	laneWide = "wide"
)

const configSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "AMID enhancement plugin configuration",
  "type": "object",
  "properties": {
    "lane": {"enum": ["base", "wide"]},
    "patch": {"type": "array", "items": {"type": "integer", "minimum": 8, "maximum": 4096}, "minItems": 2, "maxItems": 2, "description": "H, W of the training patches; divisible by 2^(stages-1)"},
    "batch": {"type": "integer", "minimum": 1, "maximum": 4096},
    "widths": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 1024}, "minItems": 1, "maxItems": 8},
    "steps": {"type": "integer", "minimum": 1, "maximum": 100000000},
    "steps_per_epoch": {"type": "integer", "minimum": 1},
    "learning_rate": {"type": "number", "exclusiveMinimum": 0, "maximum": 10},
    "weight_decay": {"type": "number", "minimum": 0},
    "l1_weight": {"type": "number", "minimum": 0},
    "ssim_weight": {"type": "number", "minimum": 0},
    "ssim_window": {"type": "integer", "minimum": 2, "maximum": 31},
    "seed": {"type": "integer"},
    "report_every": {"type": "integer", "minimum": 1},
    "inference": {"enum": ["window", "whole"]},
    "overlap": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "mirror": {"type": "boolean"}
  },
  "required": ["lane", "patch", "batch", "widths", "steps"],
  "additionalProperties": false
}`

// Defaults of the optional fields.
const (
	defaultEpoch   = 250
	defaultLR      = 1e-3
	defaultDecay   = 1e-4
	defaultL1      = 0.16 // Zhao et al. 2017: 0.16·L1 + 0.84·(1 − SSIM)
	defaultSSIM    = 0.84
	defaultWindow  = 7 // skimage's SSIM window, the one the grader scores with
	defaultReport  = 10
	defaultInfer   = "window"
	defaultOverlap = 0.5
)

// parseConfig decodes and checks a configuration, filling the defaults.
func parseConfig(b []byte) (config, error) {
	var c config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("enhancement configuration: %w", err)
	}
	if c.Epoch == 0 {
		c.Epoch = defaultEpoch
	}
	if c.LR == 0 {
		c.LR = defaultLR
	}
	if c.Decay == 0 {
		c.Decay = defaultDecay
	}
	if c.L1 == nil {
		v := defaultL1
		c.L1 = &v
	}
	if c.SSIM == nil {
		v := defaultSSIM
		c.SSIM = &v
	}
	if c.Window == 0 {
		c.Window = defaultWindow
	}
	if c.Report == 0 {
		c.Report = defaultReport
	}
	if c.Inference == "" {
		c.Inference = defaultInfer
	}
	if c.Overlap == 0 {
		c.Overlap = defaultOverlap
	}
	div := 1 << max(len(c.Widths)-1, 0)
	switch {
	case c.Lane != laneBase && c.Lane != laneWide:
		return c, fmt.Errorf("enhancement configuration: lane %q is not %q or %q", c.Lane, laneBase, laneWide)
	case len(c.Widths) == 0 || len(c.Widths) > 8:
		return c, fmt.Errorf("enhancement configuration: %d widths, want 1 to 8", len(c.Widths))
	case c.Batch < 1 || c.Steps < 1 || c.Epoch < 1 || c.Report < 1:
		return c, fmt.Errorf("enhancement configuration: batch, steps, steps_per_epoch and report_every must be positive")
	case c.Patch[0] < c.Window || c.Patch[1] < c.Window || c.Patch[0] > 4096 || c.Patch[1] > 4096:
		return c, fmt.Errorf("enhancement configuration: patch %v must be from the SSIM window (%d) to 4096", c.Patch, c.Window)
	case c.Patch[0]%div != 0 || c.Patch[1]%div != 0:
		return c, fmt.Errorf("enhancement configuration: patch %v is not divisible by %d, the pooling of %d stages", c.Patch, div, len(c.Widths))
	case c.Window < 2 || c.Window > 31:
		return c, fmt.Errorf("enhancement configuration: ssim_window %d is not in 2…31", c.Window)
	case !(*c.L1 >= 0) || !(*c.SSIM >= 0) || !(*c.L1+*c.SSIM > 0):
		return c, fmt.Errorf("enhancement configuration: l1_weight %g and ssim_weight %g must be ≥ 0, not both 0", *c.L1, *c.SSIM)
	case !(c.LR > 0) || !(c.Decay >= 0):
		return c, fmt.Errorf("enhancement configuration: learning_rate must be positive and weight_decay ≥ 0")
	case c.Inference != "window" && c.Inference != "whole":
		return c, fmt.Errorf("enhancement configuration: inference %q is not window or whole", c.Inference)
	case !(c.Overlap > 0 && c.Overlap < 1):
		return c, fmt.Errorf("enhancement configuration: overlap %g is not in (0, 1)", c.Overlap)
	}
	for _, w := range c.Widths {
		if w < 1 || w > 1024 {
			return c, fmt.Errorf("enhancement configuration: width %d is not in 1…1024", w)
		}
	}
	return c, nil
}

// net is the residual U-Net of the configuration: one grey channel in and out, two
// convolutions with instance norm and LeakyReLU per stage, max-pooling down.
func (c config) net() engine.UNetConfig {
	return engine.UNetConfig{In: 1, Classes: 1, Widths: c.Widths, Convs: 2, MaxPool: true, Norm: engine.Instance, Slope: 0.01}
}

// loss is the configured L1 + SSIM loss on images scaled to [0, 1].
func (c config) loss() engine.ImageLossConfig {
	return engine.ImageLossConfig{L1: *c.L1, SSIM: *c.SSIM, Window: c.Window, Range: 1}
}

// patch3 is the patch in the engine's (D, H, W) order.
func (c config) patch3() [3]int { return [3]int{1, c.Patch[0], c.Patch[1]} }

// patchXYZ is the patch in the (X, Y, Z) order of the data and infer packages.
func (c config) patchXYZ() [3]int { return [3]int{c.Patch[1], c.Patch[0], 1} }
