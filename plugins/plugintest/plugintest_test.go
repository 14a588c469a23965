package plugintest

import (
	"testing"
)

// TestEcho runs the suite on the example plugin, built from its own module.
func TestEcho(t *testing.T) {
	bin := Build(t, "../examples/echo", "echo", t.TempDir())
	Run(t, bin, nil)
}

func TestInside(t *testing.T) {
	for _, c := range []struct {
		dir, path string
		want      bool
	}{
		{"/w", "/w/a", true},
		{"/w", "/w/a/b", true},
		{"/w", "/w", true},
		{"/w", "/x/a", false},
		{"/w", "/w/../x", false},
		{"/w", "/w/..a", true},
	} {
		if got := inside(c.dir, c.path); got != c.want {
			t.Errorf("inside(%q, %q) = %v, want %v", c.dir, c.path, got, c.want)
		}
	}
}
