package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"amid/plugins/internal/cnn"
)

// Lanes.
const (
	lanePrior = "prior" // per group the most frequent variant, per attribute the majority class
	laneCNN   = "cnn"   // a convolutional encoder with one softmax head per attribute or group
	// laneForest is a random forest per attribute on the images' global features
	// (amid/plugins/internal/imagefeat), class-balanced (forest.go).
	laneForest = "forest"
)

// config is one training configuration; configSchema describes it. The prior lane needs
// only its lane; the cnn lane needs the network fields of cnn.Net; the forest lane takes
// its trees and a seed.
type config struct {
	Lane string `json:"lane"`
	cnn.Net
	// Heads is "variant" (one head per attribute group over the group's training variants,
	// the unit the metric scores) or "attributes" (one head per attribute). Ungrouped
	// attributes always get their own head.
	Heads string `json:"heads,omitempty"`
	// ClassWeights is "balanced" (each class weighed by n / (classes · n_class), sklearn's
	// "balanced") or "none".
	ClassWeights string `json:"class_weights,omitempty"`
	// Trees is the forest lane's number of trees per attribute (defaultTrees).
	Trees int `json:"trees,omitempty"`
}

const configSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "AMID classification plugin configuration",
  "type": "object",
  "properties": {
    "lane": {"enum": ["prior", "cnn", "forest"]},
    "trees": {"type": "integer", "minimum": 1, "maximum": 4096, "description": "forest: trees per attribute"},
    "heads": {"enum": ["variant", "attributes"]},
    "class_weights": {"enum": ["balanced", "none"]},
    ` + cnn.NetSchema + `
  },
  "required": ["lane"],
  "if": {"properties": {"lane": {"const": "cnn"}}},
  "then": {"required": ["grid", "widths", "batch", "steps"]},
  "additionalProperties": false
}`

// parseConfig decodes and checks a configuration for a task of dims dimensions (0: either),
// filling the defaults.
func parseConfig(b []byte, dims int) (config, error) {
	var c config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("classification configuration: %w", err)
	}
	if c.Trees != 0 && c.Lane != laneForest {
		return c, fmt.Errorf("classification configuration: trees is the forest lane's, not %s's", c.Lane)
	}
	switch c.Lane {
	case lanePrior:
		return c, nil
	case laneForest:
		return forestConfig(c)
	case laneCNN:
	default:
		return c, fmt.Errorf("classification configuration: lane %q is not %q, %q or %q", c.Lane, lanePrior, laneCNN, laneForest)
	}
	c.Fill("flatten", "zscore")
	if c.Heads == "" {
		c.Heads = "variant"
	}
	if c.ClassWeights == "" {
		c.ClassWeights = "balanced"
	}
	switch {
	case c.Heads != "variant" && c.Heads != "attributes":
		return c, fmt.Errorf("classification configuration: heads %q is not variant or attributes", c.Heads)
	case c.ClassWeights != "balanced" && c.ClassWeights != "none":
		return c, fmt.Errorf("classification configuration: class_weights %q is not balanced or none", c.ClassWeights)
	}
	if err := c.Net.Check(dims); err != nil {
		return c, fmt.Errorf("classification configuration: %w", err)
	}
	return c, nil
}

// forestConfig checks the forest lane's configuration c, filling its trees: no network,
// heads or class weights (the forest is always balanced), and 1 to maxForestTrees trees.
func forestConfig(c config) (config, error) {
	if c.Trees == 0 {
		c.Trees = defaultTrees
	}
	switch {
	case !reflect.DeepEqual(c.Net, cnn.Net{Seed: c.Seed}) || c.Heads != "" || c.ClassWeights != "":
		return c, fmt.Errorf("classification configuration: the forest lane takes only trees and seed, no network, heads or class_weights")
	case c.Trees < 1 || c.Trees > maxForestTrees:
		return c, fmt.Errorf("classification configuration: trees %d is not from 1 to %d", c.Trees, maxForestTrees)
	}
	return c, nil
}
