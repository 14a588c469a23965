// Package vktest opens a Vulkan device for tests: Mesa's lavapipe in CI (Debian
// mesa-vulkan-drivers), with its vector width pinned so that results do not depend on the
// CPU running the tests. Outside CI a machine without Vulkan skips the test; in CI
// (ci.On) it fails, so that a Vulkan test never silently skips there.
package vktest

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"

	"amid/assets/ci"
	"amid/plugins/engine/vk"
)

// VectorWidth is the LLVM vector width lavapipe is pinned to (LP_NATIVE_VECTOR_WIDTH):
// 256 bits, AVX2's, which makes its subgroups 8 wide on every x86-64 CPU.
const VectorWidth = "256"

var (
	once sync.Once
	dev  *vk.Device
	err  error
)

// Pin sets lavapipe's vector width unless the environment already sets it; it must run
// before the Vulkan instance is created (TestMain, or Device below).
func Pin() {
	if os.Getenv("LP_NATIVE_VECTOR_WIDTH") == "" {
		os.Setenv("LP_NATIVE_VECTOR_WIDTH", VectorWidth)
	}
}

// SkipEnv, when set, makes Device skip its test with the value as the reason. make test's
// floats-alt step sets it: the race pass has run every Vulkan test, lavapipe computes the
// same whichever OpenBLAS core the CPU side forces, and the CPU side's differences between
// core types (1e-7 relative) are far within every tolerance these tests state, so a second
// pass (about 6 minutes of lavapipe on two cores) would check nothing new.
const SkipEnv = "AMID_TEST_VK_SKIP"

// Device returns the test device, shared by the tests of a process: AMID_TEST_VK_DEVICE
// picks one by index, else the first device (in CI, lavapipe). Without one it skips the
// test, or fails it in CI; with SkipEnv set it skips the test.
func Device(t testing.TB) *vk.Device {
	t.Helper()
	if why := os.Getenv(SkipEnv); why != "" {
		t.Skip(why)
	}
	once.Do(func() {
		Pin()
		var in *vk.Instance
		if in, err = vk.Open(); err != nil {
			return
		}
		dev, err = in.Device(Index(in), vk.Options{})
	})
	if err != nil {
		ci.Missing(t, fmt.Sprintf("no Vulkan device (Debian mesa-vulkan-drivers, which make test installs): %v", err))
	}
	return dev
}

// Index is the device tests use: AMID_TEST_VK_DEVICE when set, else the first discrete
// GPU, then the first integrated one, then the first device of any kind (lavapipe in CI).
func Index(in *vk.Instance) int {
	if n, err := strconv.Atoi(os.Getenv("AMID_TEST_VK_DEVICE")); err == nil {
		return n
	}
	devs := in.Devices()
	for _, want := range []vk.DeviceType{vk.Discrete, vk.Integrated} {
		for _, d := range devs {
			if d.Type == want && d.Usable() == nil {
				return d.Index
			}
		}
	}
	return 0
}
