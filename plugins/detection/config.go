package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"amid/plugins/engine"
)

// Lanes: the method each configuration trains.
const (
	// LaneBoxes is a CenterNet-style head for 2D boxes with attributes.
	laneBoxes = "centernet"
	// lanePoints is a heatmap per point class.
	lanePoints = "points"
	// laneSeg3D is a coarse 3D foreground segmentation whose largest component gives the box.
	laneSeg3D = "box3d_seg"
	// lanePrior3D is the training boxes' mean size at their mean relative position, or at
	// the image's intensity-weighted centre moved by the mean offset of the boxes from it.
	lanePrior3D = "box3d_prior"
	// laneTransfer predicts 2D boxes from the training images most like the image
	// (transfer.go).
	laneTransfer = "box_transfer"
)

// config is one training configuration; configSchema describes it. Size is (D, H, W).
type config struct {
	Lane string `json:"lane"`
	// Size is the working image of the centernet lane (D = 1; each image is resized to
	// it), the training patch of the points lane, the coarse grid of box3d_seg; unused by
	// box3d_prior.
	Size   [3]int `json:"size,omitzero"`
	Batch  int    `json:"batch,omitempty"`
	Widths []int  `json:"widths,omitempty"`
	// HeadWidth is the channels of the 3×3 convolution before the output of the centernet
	// and points heads (CenterNet's head_conv); 0: the output reads the U-Net directly.
	HeadWidth int `json:"head_width,omitempty"`
	// Scale is the points lane's zoom of each tile before the network (0.5: half size).
	Scale float64 `json:"scale,omitempty"`
	// Sigma is the Gaussian σ of the points lane's heatmap targets, in working pixels.
	Sigma float64 `json:"sigma,omitempty"`
	// Threshold is the lowest score kept; 0: chosen on the validation cases (points) or
	// 0.05 (boxes).
	Threshold float64 `json:"threshold,omitempty"`
	MaxDets   int     `json:"max_detections,omitempty"`
	NMS       float64 `json:"nms_iou,omitempty"`
	// Centre is box3d_prior's centre: "mean" relative position or "intensity".
	Centre string `json:"centre,omitempty"`
	// Neighbours and Margin are box_transfer's number of nearest training images and the
	// margin in working pixels around a group's boxes where they are compared.
	Neighbours int     `json:"neighbours,omitempty"`
	Margin     int     `json:"margin,omitempty"`
	Flip       bool    `json:"flip,omitempty"` // flips and quarter turns of points patches
	Steps      int     `json:"steps,omitempty"`
	Epoch      int     `json:"steps_per_epoch,omitempty"`
	LR         float64 `json:"learning_rate,omitempty"`
	Decay      float64 `json:"weight_decay,omitempty"`
	Seed       int64   `json:"seed,omitempty"` // 0: the request's seed
	Report     int     `json:"report_every,omitempty"`
}

const configSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "AMID detection plugin configuration",
  "type": "object",
  "properties": {
    "lane": {"enum": ["centernet", "points", "box3d_seg", "box3d_prior", "box_transfer"]},
    "size": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 4096}, "minItems": 3, "maxItems": 3, "description": "D, H, W: the working image (centernet, D = 1), the training patch (points, D = 1) or the coarse grid (box3d_seg)"},
    "batch": {"type": "integer", "minimum": 1, "maximum": 4096},
    "widths": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 1024}, "minItems": 1, "maxItems": 8},
    "head_width": {"type": "integer", "minimum": 0, "maximum": 1024, "description": "channels of the 3x3 convolution before the head's output; 0: none"},
    "scale": {"type": "number", "exclusiveMinimum": 0, "maximum": 4, "description": "points: zoom of each tile before the network"},
    "sigma": {"type": "number", "exclusiveMinimum": 0, "maximum": 64, "description": "points: Gaussian sigma of the heatmap targets in working pixels"},
    "threshold": {"type": "number", "minimum": 0, "maximum": 1, "description": "lowest score kept; 0 chooses it on validation (points) or uses 0.05 (boxes)"},
    "max_detections": {"type": "integer", "minimum": 1, "maximum": 100000},
    "nms_iou": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
    "centre": {"enum": ["mean", "intensity"]},
    "neighbours": {"type": "integer", "minimum": 1, "maximum": 64, "description": "box_transfer: the nearest training images a prediction reads"},
    "margin": {"type": "integer", "minimum": 0, "maximum": 1024, "description": "box_transfer: working pixels around the neighbours' boxes where the image is compared with them"},
    "flip": {"type": "boolean"},
    "steps": {"type": "integer", "minimum": 1, "maximum": 100000000},
    "steps_per_epoch": {"type": "integer", "minimum": 1},
    "learning_rate": {"type": "number", "exclusiveMinimum": 0, "maximum": 10},
    "weight_decay": {"type": "number", "minimum": 0},
    "seed": {"type": "integer"},
    "report_every": {"type": "integer", "minimum": 1}
  },
  "required": ["lane"],
  "additionalProperties": false
}`

// Defaults of the optional fields.
const (
	defaultEpoch   = 250
	defaultLR      = 2e-3 // AdamW
	defaultDecay   = 3e-5
	defaultReport  = 10
	defaultScale   = 0.5
	defaultSigma   = 2
	defaultMaxDets = 100 // COCO's maxDets
	defaultNMS     = 0.5
	defaultBoxThr  = 0.05
)

// parseConfig decodes and checks a configuration, filling the defaults.
func parseConfig(b []byte) (config, error) {
	var c config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("detection configuration: %w", err)
	}
	if c.Lane == lanePrior3D {
		if c.Centre == "" {
			c.Centre = "mean"
		}
		if c.Centre != "mean" && c.Centre != "intensity" {
			return c, fmt.Errorf("detection configuration: centre %q is not mean or intensity", c.Centre)
		}
		c.Steps, c.Epoch, c.Report, c.Batch = 1, 1, 1, 1
		return c, nil
	}
	if c.Lane == laneTransfer {
		return transferConfig(c)
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
	if c.Report == 0 {
		c.Report = defaultReport
	}
	if c.Scale == 0 {
		c.Scale = defaultScale
	}
	if c.Sigma == 0 {
		c.Sigma = defaultSigma
	}
	if c.MaxDets == 0 {
		c.MaxDets = defaultMaxDets
		if c.Lane == lanePoints {
			c.MaxDets = 100000
		}
	}
	if c.NMS == 0 {
		c.NMS = defaultNMS
	}
	switch {
	case c.Lane != laneBoxes && c.Lane != lanePoints && c.Lane != laneSeg3D:
		return c, fmt.Errorf("detection configuration: lane %q is not one of %q, %q, %q, %q", c.Lane, laneBoxes, lanePoints, laneSeg3D, lanePrior3D)
	case c.Lane != laneSeg3D && c.Size[0] != 1:
		return c, fmt.Errorf("detection configuration: lane %s is 2D: size D must be 1, not %d", c.Lane, c.Size[0])
	case slices.ContainsFunc(c.Size[:], func(v int) bool { return v < 1 || v > 4096 }):
		return c, fmt.Errorf("detection configuration: size %v must be between 1 and 4096 on each axis", c.Size)
	case c.HeadWidth < 0 || c.HeadWidth > 1024:
		return c, fmt.Errorf("detection configuration: head_width %d is not between 0 and 1024", c.HeadWidth)
	case c.Batch < 1 || c.Steps < 1 || c.Epoch < 1 || c.Report < 1 || c.MaxDets < 1:
		return c, fmt.Errorf("detection configuration: batch, steps, steps_per_epoch, report_every and max_detections must be positive")
	case len(c.Widths) == 0 || slices.ContainsFunc(c.Widths, func(v int) bool { return v < 1 || v > 1024 }):
		return c, fmt.Errorf("detection configuration: widths %v must be 1 to 8 values between 1 and 1024", c.Widths)
	case len(c.Widths) > 8:
		return c, fmt.Errorf("detection configuration: %d widths, at most 8", len(c.Widths))
	case !(c.LR > 0 && c.LR <= 10) || !(c.Decay >= 0):
		return c, fmt.Errorf("detection configuration: learning_rate must be in (0, 10] and weight_decay ≥ 0")
	case !(c.Scale > 0 && c.Scale <= 4) || !(c.Sigma > 0 && c.Sigma <= 64):
		return c, fmt.Errorf("detection configuration: scale must be in (0, 4] and sigma in (0, 64]")
	case !(c.Threshold >= 0 && c.Threshold <= 1) || !(c.NMS > 0 && c.NMS <= 1):
		return c, fmt.Errorf("detection configuration: threshold must be in [0, 1] and nms_iou in (0, 1]")
	}
	// Each stage after the first halves the axes longer than one voxel.
	div := 1 << (len(c.Widths) - 1)
	for a, v := range c.Size {
		if v > 1 && v%div != 0 {
			return c, fmt.Errorf("detection configuration: size %v is not divisible by %d (%d stages) along axis %d", c.Size, div, len(c.Widths), a)
		}
	}
	return c, nil
}

// arch is the U-Net of the configuration for channels inputs and outputs head channels.
func (c config) arch(channels, outputs int) engine.UNetConfig {
	return engine.UNetConfig{In: channels, Classes: outputs, Widths: c.Widths, Convs: 2, Norm: engine.Instance, Slope: 0.01}
}

// sizeXYZ is Size in (X, Y, Z) order.
func (c config) sizeXYZ() [3]int { return [3]int{c.Size[2], c.Size[1], c.Size[0]} }

// head is the head of a mode's network: the hidden convolution, and for boxes the pixel
// coordinates beside the U-Net's output.
func (c config) head(mode string) engine.Head {
	h := engine.Head{Hidden: c.HeadWidth}
	if mode == modeBoxes {
		h.Side = coordChannels
	}
	return h
}
