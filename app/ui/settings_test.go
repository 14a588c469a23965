package ui

import (
	"slices"
	"strings"
	"testing"

	"amid/host/config"
)

// The Settings screen lists the devices a plugin describes, offers each Vulkan device by
// number, and saves the choice, which the next run's plugins get as AMID_DEVICE.
func TestSettingsDevice(t *testing.T) {
	t.Setenv(config.EnvDevice, "")
	a, _ := newApp(t)
	s := a.settings
	if s.device.Selected != config.DeviceAuto {
		t.Errorf("device %q before any choice, want auto", s.device.Selected)
	}
	s.showDevices([]string{"cpu", "vulkan:0 llvmpipe (LLVM 15.0.6, 256 bits) (cpu, llvmpipe Mesa 22.3.6, Vulkan 1.3.230, 2.0 GiB)", "vulkan:1 RTX (discrete, NVIDIA 550, Vulkan 1.3.277, 24.0 GiB)"})
	if want := []string{"auto", "cpu", "vulkan", "vulkan:0", "vulkan:1"}; !slices.Equal(s.device.Options, want) {
		t.Errorf("choices %q, want %q", s.device.Options, want)
	}
	if !strings.Contains(s.devices.Text, "vulkan:1 RTX (discrete") {
		t.Errorf("devices listed: %q", s.devices.Text)
	}
	if _, err := a.env(); err != nil {
		t.Fatal(err)
	}
	s.device.SetSelected("vulkan:1")
	s.save()
	if p := a.A.Preferences().String(prefDevice); p != "vulkan:1" || !slices.Contains(a.host.Supervisor.Env, "AMID_DEVICE=vulkan:1") {
		t.Errorf("saved %q; the plugins' environment %q", p, a.host.Supervisor.Env)
	}
	t.Setenv(config.EnvDevice, "cpu") // the environment takes precedence
	s.save()
	if !slices.Contains(a.host.Supervisor.Env, "AMID_DEVICE=cpu") || slices.Contains(a.host.Supervisor.Env, "AMID_DEVICE=vulkan:1") {
		t.Errorf("with $AMID_DEVICE=cpu the plugins' environment is %q", a.host.Supervisor.Env)
	}
}
