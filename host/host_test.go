package host

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"amid/host/config"
	"amid/host/store"
)

func TestParseSums(t *testing.T) {
	a, b := strings.Repeat("ab", 32), strings.Repeat("CD", 32)
	got, err := parseSums("segmentation:" + a + ",detection:" + b)
	if err != nil || len(got) != 2 || got["segmentation"] != a || got["detection"] != strings.ToLower(b) {
		t.Errorf("parseSums = %v, %v", got, err)
	}
	if got, err := parseSums(""); err != nil || len(got) != 0 {
		t.Errorf("a build without sums: %v, %v", got, err)
	}
	for _, bad := range []string{"segmentation", "segmentation:abc", ":" + a, "x:" + a + ",x:" + a, "x:" + a + ","} {
		if _, err := parseSums(bad); err == nil {
			t.Errorf("parseSums(%q) accepted", bad)
		}
	}
	// The test binary is a plain build: it embeds no sums and so trusts nothing by itself.
	if got, err := BuiltinSums(); err != nil || len(got) != 0 {
		t.Errorf("BuiltinSums of a plain build = %v, %v", got, err)
	}
}

// Open takes its folders from the settings value alone, and a second Open of the same data
// folder is told AMID is running.
func TestOpen(t *testing.T) {
	t.Setenv(config.EnvHome, t.TempDir()) // ignored: the settings are passed as a value
	home, plugins, builtin := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv(config.EnvDevice, "vulkan") // ignored too
	if _, err := Open(config.Settings{Home: home, Device: "gpu"}, nil); err == nil || !strings.Contains(err.Error(), "AMID_DEVICE") {
		t.Errorf("a device setting that is not one: %v", err)
	}
	h, err := Open(config.Settings{Home: home, PluginDir: plugins, BuiltinPlugins: builtin, Device: "cpu"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if !slices.Contains(h.Supervisor.Env, "AMID_DEVICE=cpu") {
		t.Errorf("the plugins are not told the device: %q", h.Supervisor.Env)
	}
	if h.Paths.Store != filepath.Join(home, "amid.db") || h.Catalog.User != plugins || h.Catalog.Builtin != builtin || h.Catalog.Store != h.Store {
		t.Errorf("opened %+v with catalog %+v", h.Paths, h.Catalog)
	}
	if env := h.Env(); env.Catalog != h.Catalog || env.Supervisor.Logger == nil {
		t.Errorf("Env = %+v", env)
	}
	if _, err := Open(config.Settings{Home: home}, nil); !errors.Is(err, store.ErrLocked) {
		t.Errorf("a second Open: %v, want %v", err, store.ErrLocked)
	}
}
