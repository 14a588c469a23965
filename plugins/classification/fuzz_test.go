package main

import (
	"testing"

	"amid/plugins/internal/imageplugin/imageplugintest"
)

// FuzzParseConfig: parseConfig never panics, and a configuration it accepts survives a
// round trip through JSON unchanged (what a checkpoint records is what prediction reads).
func FuzzParseConfig(f *testing.F) { imageplugintest.FuzzConfig(f, seeds, parseConfig) }

var seeds = []string{
	`{"lane":"prior"}`,
	`{"lane":"cnn","grid":[16,16,16],"widths":[4,8],"batch":2,"steps":3,"heads":"attributes","roi":[[0,1],[0.2,0.8],[0,0.5]]}`,
	`{"lane":"cnn","grid":[1,32,32],"widths":[4],"batch":2,"steps":3,"class_weights":"none","flip":[false,true,true],"jitter":true}`,
	`{"lane":"cnn","grid":[0,16,16],"widths":[],"batch":0,"steps":3}`,
}
