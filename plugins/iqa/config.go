package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"amid/plugins/internal/cnn"
)

// Lanes.
const (
	laneCNN    = "cnn"    // a convolutional regressor (train.go)
	laneForest = "forest" // a random forest on global image features (forest.go)
)

// config is one training configuration; configSchema describes it. The forest lane takes
// only its own fields (trees, max_depth, min_leaf, bins), seed and snap; the cnn lane
// the network fields of cnn.Net, loss and folds.
type config struct {
	Lane string `json:"lane"` // laneCNN or laneForest
	cnn.Net
	Loss lossConfig `json:"loss,omitzero"`
	// Folds is 1 for one model on all training cases, or k ≥ 2 for k models, each trained
	// for steps on the cases outside one of k folds, whose predictions are averaged.
	Folds int `json:"folds,omitempty"`
	// Snap puts predictions on the task's score grid: "on", "off", or "auto" (whichever
	// scores better on the validation cases, else on the out-of-fold predictions; off
	// without either).
	Snap string `json:"snap,omitempty"`
	forestConfig
}

// lossConfig weighs the regression loss's terms (amid/plugins/engine.RegressionWeights)
// on scores scaled to [0, 1] over the task's range; temperature is in those units.
type lossConfig struct {
	MSE  float64 `json:"mse,omitempty"`
	Rank float64 `json:"rank,omitempty"`
	Corr float64 `json:"corr,omitempty"`
	Temp float64 `json:"temperature,omitempty"`
}

const configSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "AMID image-quality plugin configuration",
  "type": "object",
  "properties": {
    "lane": {"enum": ["cnn", "forest"]},
    "loss": {"type": "object", "properties": {
      "mse": {"type": "number", "minimum": 0, "description": "weight of the mean squared error"},
      "rank": {"type": "number", "minimum": 0, "description": "weight of the pairwise logistic ranking loss within a batch"},
      "corr": {"type": "number", "minimum": 0, "description": "weight of 1 − Pearson correlation within a batch"},
      "temperature": {"type": "number", "exclusiveMinimum": 0, "description": "ranking temperature in units of the score range"}
    }, "additionalProperties": false},
    "folds": {"type": "integer", "minimum": 1, "maximum": 20},
    "snap": {"enum": ["auto", "on", "off"]},
    "trees": {"type": "integer", "minimum": 1, "maximum": 4096, "description": "forest: the number of trees"},
    "max_depth": {"type": "integer", "minimum": 1, "maximum": 30, "description": "forest: the deepest a tree's leaf lies"},
    "min_leaf": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "forest: the fewest training images a split leaves on either side"},
    "bins": {"type": "integer", "minimum": 2, "maximum": 64, "description": "forest: the most quantile classes the training scores are binned into"},
    ` + cnn.NetSchema + `
  },
  "required": ["lane"],
  "if": {"properties": {"lane": {"const": "cnn"}}},
  "then": {"required": ["grid", "widths", "batch", "steps"]},
  "additionalProperties": false
}`

// defaultTemp is the ranking temperature: a twentieth of the score range (one grid step of
// LDCT-IQA's 0–4 in steps of 0.2).
const defaultTemp = 0.05

// parseConfig decodes and checks a configuration for a task of dims dimensions (0:
// either), filling the defaults.
func parseConfig(b []byte, dims int) (config, error) {
	var c config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("iqa configuration: %w", err)
	}
	switch c.Lane {
	case laneForest:
		return c.checkForest()
	case laneCNN:
	default:
		return c, fmt.Errorf("iqa configuration: lane %q is not %q or %q", c.Lane, laneCNN, laneForest)
	}
	if c.forestConfig != (forestConfig{}) {
		return c, fmt.Errorf("iqa configuration: trees, max_depth, min_leaf and bins are the forest lane's, not cnn's")
	}
	c.Fill("avg", "dataset")
	if c.Loss == (lossConfig{}) {
		c.Loss.MSE = 1
	}
	if c.Loss.Temp == 0 {
		c.Loss.Temp = defaultTemp
	}
	if c.Folds == 0 {
		c.Folds = 1
	}
	if c.Snap == "" {
		c.Snap = "auto"
	}
	ok := func(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }
	switch {
	case !ok(c.Loss.MSE) || !ok(c.Loss.Rank) || !ok(c.Loss.Corr) || c.Loss.MSE+c.Loss.Rank+c.Loss.Corr == 0 || !(c.Loss.Temp > 0):
		return c, fmt.Errorf("iqa configuration: loss weights %+v must be non-negative, not all zero, with a positive temperature", c.Loss)
	case c.Folds < 1 || c.Folds > 20:
		return c, fmt.Errorf("iqa configuration: folds %d outside 1..20", c.Folds)
	case c.Snap != "auto" && c.Snap != "on" && c.Snap != "off":
		return c, fmt.Errorf("iqa configuration: snap %q is not auto, on or off", c.Snap)
	case (c.Loss.Rank > 0 || c.Loss.Corr > 0) && c.Batch < 2:
		return c, fmt.Errorf("iqa configuration: the ranking and correlation losses compare the samples of a batch: batch %d is too small", c.Batch)
	}
	if err := c.Net.Check(dims); err != nil {
		return c, fmt.Errorf("iqa configuration: %w", err)
	}
	return c, nil
}
