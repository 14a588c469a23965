package compute

import (
	"os"
	"strings"
)

// The environment variables a plugin process reads its settings from. The host sets
// EnvDevice and EnvPreferCore ([Env], amid/host/config); the others are for a user or a
// test that must steer a plugin from outside it.
const (
	// EnvDevice is the device setting a plugin process computes with: "auto" (a discrete
	// GPU, then an integrated one, else the CPU; never a software Vulkan device), "cpu",
	// "vulkan" (any Vulkan device, a software one included) or "vulkan:N" (Vulkan device
	// N). The host sets it from its settings (amid/host/config); unset means auto.
	EnvDevice = "AMID_DEVICE"
	// EnvPreferCore names the BLAS core type a plugin should use when its user set none
	// and its CPU can run it. [Env] sets it when a host re-runs a model package, so that a
	// CPU able to run the package's kernels reproduces its predictions byte for byte.
	EnvPreferCore = "AMID_OPENBLAS_PREFER"
	// EnvCoreType is OpenBLAS's own variable that forces its kernels. A user (or a test
	// run) that sets it chooses the kernels: the engine then checks the choice against the
	// CPU and leaves it alone.
	EnvCoreType = "OPENBLAS_CORETYPE"
	// EnvRestarted marks a process that the engine has already re-executed with
	// EnvCoreType set (so it never restarts twice).
	EnvRestarted = "AMID_OPENBLAS_REEXEC"
	// EnvVulkanLoader names the Vulkan loader library to open instead of libvulkan.so.1 (a
	// path, or a name the dynamic linker searches for).
	EnvVulkanLoader = "AMID_VK_LOADER"
	// EnvVulkanFaults injects Vulkan faults for tests: comma-separated "mem-cap=BYTES" and
	// "lost-after=N" (amid/plugins/engine/vk's ParseFaults reads them).
	EnvVulkanFaults = "AMID_VK_FAULT"
)

// Settings is what a plugin process's environment tells it. [ReadSettings] is the one
// place the plugin side reads its settings, as amid/host/config is the host's: the
// device, the engine's BLAS kernels and the Vulkan layer take theirs from it. (The
// plugin protocol's TLS files are the handshake between host and plugin, not settings;
// amid/plugins/protocol reads them.)
type Settings struct {
	// Device is EnvDevice's value, trimmed; "auto" when unset.
	Device string
	// PreferCore and CoreType are EnvPreferCore's and EnvCoreType's values ("" when unset).
	PreferCore, CoreType string
	// Restarted is whether EnvRestarted is set.
	Restarted bool
	// VulkanLoader is EnvVulkanLoader's value; "libvulkan.so.1" when unset.
	VulkanLoader string
	// VulkanFaults is EnvVulkanFaults's value ("" for none).
	VulkanFaults string
}

// ReadSettings reads this process's settings from its environment.
func ReadSettings() Settings { return settingsFrom(os.Getenv) }

// settingsFrom reads the settings through getenv.
func settingsFrom(getenv func(string) string) Settings {
	s := Settings{
		Device:       strings.TrimSpace(getenv(EnvDevice)),
		PreferCore:   getenv(EnvPreferCore),
		CoreType:     getenv(EnvCoreType),
		Restarted:    getenv(EnvRestarted) != "",
		VulkanLoader: getenv(EnvVulkanLoader),
		VulkanFaults: getenv(EnvVulkanFaults),
	}
	if s.Device == "" {
		s.Device = "auto"
	}
	if s.VulkanLoader == "" {
		s.VulkanLoader = "libvulkan.so.1"
	}
	return s
}
