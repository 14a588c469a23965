package plugintest

import (
	"testing"
)

// TestEcho runs the suite on the example plugin, built from its own module.
func TestEcho(t *testing.T) {
	bin := Build(t, "../examples/echo", "echo", t.TempDir())
	Run(t, bin, nil)
}
