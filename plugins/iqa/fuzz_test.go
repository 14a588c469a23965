package main

import (
	"testing"

	"amid/plugins/internal/imageplugin/imageplugintest"
)

// FuzzParseConfig: parseConfig never panics, and a configuration it accepts survives a
// round trip through JSON unchanged (what a checkpoint records is what prediction reads).
func FuzzParseConfig(f *testing.F) { imageplugintest.FuzzConfig(f, seeds, parseConfig) }

var seeds = []string{
	`{"lane":"cnn","grid":[1,32,32],"widths":[8,16],"batch":8,"steps":3,"loss":{"mse":1,"rank":1,"temperature":0.1},"folds":3,"snap":"off"}`,
	`{"lane":"cnn","grid":[8,16,16],"widths":[4],"batch":2,"steps":3,"intensity":"zscore","rot90":true}`,
	`{"lane":"cnn","grid":[1,32,32],"widths":[8],"batch":1,"steps":3,"loss":{"corr":1}}`,
	`{"lane":"cnn","loss":{"mse":-1}}`,
}
