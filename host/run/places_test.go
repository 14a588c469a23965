package run

import (
	"slices"
	"testing"

	"amid/plugins/compute"
)

// The local places follow the device setting: the CPU's (two side by side where each half
// has minCoresPerLane cores) unless a plugin found the setting's GPU, and then one place
// that passes the setting to the plugin process.
func TestDevicePlaces(t *testing.T) {
	cpu := compute.Identity{Engine: "e", Device: "cpu", Workers: 16}
	gpu := compute.Identity{Engine: "e", Device: "vulkan NVIDIA GeForce RTX 4090 (NVIDIA 550.54)", Workers: 1}
	for _, c := range []struct {
		setting   string
		described []compute.Identity
		want      string
	}{
		{"", []compute.Identity{cpu}, "cpu"},
		{"", []compute.Identity{gpu}, "auto"},
		{"auto", []compute.Identity{cpu, cpu}, "cpu"},
		{"auto", []compute.Identity{cpu, gpu}, "auto"},
		{"vulkan:1", []compute.Identity{gpu}, "vulkan:1"},
		{"cpu", []compute.Identity{gpu}, "cpu"},
	} {
		if got := placesDevice(c.setting, c.described); got != c.want {
			t.Errorf("setting %q, plugins on %v: places for %q, want %q", c.setting, c.described, got, c.want)
		}
	}
	if ps := DevicePlaces(16, "cpu"); len(ps) != 2 || ps[0].Device != "cpu" || ps[0].Workers != 8 {
		t.Errorf("16 cores on the CPU: %+v", ps)
	}
	ps := DevicePlaces(16, "vulkan:1")
	if len(ps) != 1 || ps[0].Device != "vulkan:1" || ps[0].Workers != 16 {
		t.Fatalf("16 cores and a GPU: %+v", ps)
	}
	if env := PlaceEnv(ps[0]); !slices.Contains(env, compute.EnvDevice+"=vulkan:1") {
		t.Errorf("the GPU place's environment %v does not pass the setting on", env)
	}
	// The host's setting reaches Local through the supervisor's environment; the last
	// one set wins, as in a process's environment.
	if got := settingIn([]string{"A=1", compute.EnvDevice + "=auto", compute.EnvDevice + "=vulkan:0"}); got != "vulkan:0" {
		t.Errorf("settingIn: %q", got)
	}
}
