package cnn

import (
	"fmt"

	"amid/plugins/engine/data"
)

// Net is the part of a plugin configuration that describes the input grid, the encoder
// and its training. Axes of Grid, ROI and Flip are (D, H, W) = (Z, Y, X), as in the
// segmentation plugin; D = 1 for 2D.
type Net struct {
	Grid   [3]int        `json:"grid,omitzero"`
	ROI    [3][2]float64 `json:"roi,omitzero"` // fractions of the extent per axis; zero: whole image
	Widths []int         `json:"widths,omitempty"`
	Convs  int           `json:"convs,omitempty"`
	Norm   string        `json:"norm,omitempty"` // batch, instance
	Pool   string        `json:"pool,omitempty"` // avg, flatten
	Batch  int           `json:"batch,omitempty"`
	Steps  int           `json:"steps,omitempty"`
	Epoch  int           `json:"steps_per_epoch,omitempty"`
	Report int           `json:"report_every,omitempty"`
	LR     float64       `json:"learning_rate,omitempty"`
	Decay  float64       `json:"weight_decay,omitempty"`
	Seed   int64         `json:"seed,omitempty"` // 0: the request's seed
	// Intensity is "zscore" (each image) or "dataset" (the training set's percentiles,
	// mean and deviation).
	Intensity string  `json:"intensity,omitempty"`
	Flip      [3]bool `json:"flip,omitzero"`   // random flips per axis
	Rot90     bool    `json:"rot90,omitempty"` // random quarter turns in the H–W plane (square grids)
	// Jitter is random intensity scaling, shift and gamma (nnU-Net's ranges, each with
	// probability 0.3); it suits tasks whose labels do not depend on absolute intensity.
	Jitter bool `json:"jitter,omitempty"`
}

// NetSchema is the JSON Schema properties of [Net], to be spliced into a plugin's schema.
const NetSchema = `"grid": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 1024}, "minItems": 3, "maxItems": 3, "description": "model input D, H, W; D = 1 for 2D"},
    "roi": {"type": "array", "items": {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1}, "minItems": 2, "maxItems": 2}, "minItems": 3, "maxItems": 3, "description": "crop before resizing: [lo, hi) fractions of the extent per axis D, H, W"},
    "widths": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 1024}, "minItems": 1, "maxItems": 8},
    "convs": {"type": "integer", "minimum": 1, "maximum": 4},
    "norm": {"enum": ["batch", "instance"]},
    "pool": {"enum": ["avg", "flatten"]},
    "batch": {"type": "integer", "minimum": 1, "maximum": 4096},
    "steps": {"type": "integer", "minimum": 1, "maximum": 100000000},
    "steps_per_epoch": {"type": "integer", "minimum": 1},
    "report_every": {"type": "integer", "minimum": 1},
    "learning_rate": {"type": "number", "exclusiveMinimum": 0, "maximum": 10},
    "weight_decay": {"type": "number", "minimum": 0},
    "seed": {"type": "integer"},
    "intensity": {"enum": ["zscore", "dataset"]},
    "flip": {"type": "array", "items": {"type": "boolean"}, "minItems": 3, "maxItems": 3},
    "rot90": {"type": "boolean"},
    "jitter": {"type": "boolean"}`

// Defaults of Net's optional fields.
const (
	DefaultConvs  = 2
	DefaultEpoch  = 250
	DefaultReport = 10
	DefaultLR     = 1e-3
	DefaultDecay  = 1e-4
	slope         = 0.01 // LeakyReLU (nnU-Net)
	// Clip is the gradient-norm clip (nnU-Net).
	Clip = 12
)

// Fill sets the defaults of the optional fields; pool and intensity are the plugin's own
// defaults.
func (n *Net) Fill(pool, intensity string) {
	if n.Convs == 0 {
		n.Convs = DefaultConvs
	}
	if n.Norm == "" {
		n.Norm = "batch"
	}
	if n.Pool == "" {
		n.Pool = pool
	}
	if n.Epoch == 0 {
		n.Epoch = DefaultEpoch
	}
	if n.Report == 0 {
		n.Report = DefaultReport
	}
	if n.LR == 0 {
		n.LR = DefaultLR
	}
	if n.Decay == 0 {
		n.Decay = DefaultDecay
	}
	if n.Intensity == "" {
		n.Intensity = intensity
	}
}

// Check reports the first field that cannot be used, for a task of dims dimensions (0:
// either).
func (n Net) Check(dims int) error {
	for _, g := range n.Grid {
		if g < 1 || g > 1024 {
			return fmt.Errorf("grid %v has a size outside 1..1024", n.Grid)
		}
	}
	switch {
	case dims == 2 && n.Grid[0] != 1:
		return fmt.Errorf("a 2D task's grid has D = 1, not %d", n.Grid[0])
	case dims == 3 && n.Grid[0] < 2:
		return fmt.Errorf("a 3D task's grid has D ≥ 2, not %d", n.Grid[0])
	case n.Batch < 1 || n.Steps < 1 || n.Epoch < 1 || n.Report < 1:
		return fmt.Errorf("batch, steps, steps_per_epoch and report_every must be positive")
	case !(n.LR > 0) || n.Decay < 0:
		return fmt.Errorf("learning_rate must be positive and weight_decay ≥ 0")
	case n.Intensity != "zscore" && n.Intensity != "dataset":
		return fmt.Errorf("intensity %q is not zscore or dataset", n.Intensity)
	}
	if err := n.ROIXYZ().Check(); err != nil {
		return err
	}
	return n.Arch(1, 1).Check()
}

// Arch is the encoder for in channels and outputs.
func (n Net) Arch(in, outputs int) Arch {
	return Arch{In: in, Outputs: outputs, Widths: n.Widths, Convs: n.Convs, Norm: n.Norm, Pool: n.Pool, Slope: slope}
}

// GridXYZ is the grid in the (X, Y, Z) order of images.
func (n Net) GridXYZ() [3]int { return [3]int{n.Grid[2], n.Grid[1], n.Grid[0]} }

// ROIXYZ is the region in the (X, Y, Z) order of images.
func (n Net) ROIXYZ() ROI { return ROI{n.ROI[2], n.ROI[1], n.ROI[0]} }

// Augment is the data package's augmentation for the configuration; nil when off.
func (n Net) Augment() *data.Augment {
	a := &data.Augment{Flip: [3]bool{n.Flip[2], n.Flip[1], n.Flip[0]}, Rot90: n.Rot90}
	if n.Jitter {
		a.Scale, a.Shift, a.Gamma, a.P = [2]float64{0.75, 1.25}, 0.1, [2]float64{0.7, 1.5}, 0.3
	}
	if *a == (data.Augment{}) {
		return nil
	}
	return a
}
