package main

import (
	"testing"

	"amid/plugins/plugintest"
)

// TestConformance builds this plugin and runs AMID's conformance suite against it.
func TestConformance(t *testing.T) {
	bin := plugintest.Build(t, ".", "echo", t.TempDir())
	plugintest.Run(t, bin, nil)
}
