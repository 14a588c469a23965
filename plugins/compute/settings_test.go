package compute

import "testing"

// TestSettings reads each setting from its variable, with the defaults a plugin assumes
// when the host set nothing: auto for the device, the system's Vulkan loader.
func TestSettings(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if s := settingsFrom(getenv); s != (Settings{Device: "auto", VulkanLoader: "libvulkan.so.1"}) {
		t.Errorf("unset: %+v", s)
	}
	env = map[string]string{
		EnvDevice: " vulkan:1 ", EnvPreferCore: "Haswell", EnvCoreType: "SkylakeX", EnvRestarted: "1",
		EnvVulkanLoader: "/opt/lib/libvulkan.so", EnvVulkanFaults: "mem-cap=4096",
	}
	want := Settings{Device: "vulkan:1", PreferCore: "Haswell", CoreType: "SkylakeX", Restarted: true,
		VulkanLoader: "/opt/lib/libvulkan.so", VulkanFaults: "mem-cap=4096"}
	if s := settingsFrom(getenv); s != want {
		t.Errorf("set: %+v, want %+v", s, want)
	}
}
