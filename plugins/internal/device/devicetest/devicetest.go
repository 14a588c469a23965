// Package devicetest makes a built-in plugin's tests compute on the test's Vulkan device
// (Mesa's lavapipe in CI: a CPU device that "auto" never takes, so the tests name it by
// index) and compares what two devices predicted.
package devicetest

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"amid/plugins/compute"
	"amid/plugins/compute/predictions"
	"amid/plugins/engine/vk"
	"amid/plugins/engine/vk/vktest"
	"amid/plugins/internal/device"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
)

// Setting is the device setting of the test's Vulkan device, "vulkan:N". Without Vulkan
// the test skips (and fails in CI).
func Setting(t testing.TB) string {
	t.Helper()
	vktest.Device(t)
	in, err := vk.Open()
	if err != nil {
		t.Fatal(err)
	}
	return "vulkan:" + strconv.Itoa(vktest.Index(in))
}

// Use makes this process's plugin compute on the test's Vulkan device, opened afresh with
// the faults given (AMID_VK_FAULT's form, "" for none), until the test ends.
func Use(t testing.TB, faults string) {
	t.Helper()
	t.Setenv(compute.EnvDevice, Setting(t))
	t.Setenv(compute.EnvVulkanFaults, faults)
	device.CloseAll()
	t.Cleanup(device.CloseAll)
}

// CrossDevice predicts cases with the checkpoint on the test's Vulkan device and on the
// CPU through p, in this process, and checks that each response names its device and
// that the prediction files agree within compute.Table (under the task's spec, when it
// has one). It returns the agreement's summary.
func CrossDevice(t *testing.T, p protocol.Plugin, task protocol.Task, checkpoint string, cases []protocol.Case) string {
	t.Helper()
	predict := func(dev string) *protocol.PredictResponse {
		t.Setenv(compute.EnvDevice, dev)
		r, err := p.Predict(context.Background(), &protocol.PredictRequest{Task: task, Checkpoint: checkpoint, Cases: cases, OutputDir: t.TempDir()})
		if err != nil {
			t.Fatalf("predicting with %s=%s: %v", compute.EnvDevice, dev, err)
		}
		return r
	}
	gpu, cpu := predict(Setting(t)), predict("cpu")
	if !isVulkan(gpu.Compute) || cpu.Compute.Device != "cpu" {
		t.Errorf("predicted with %v and %v, want the Vulkan device and the CPU", gpu.Compute, cpu.Compute)
	}
	spec := &taskspec.Spec{Kind: task.Kind}
	if len(task.Spec) > 0 {
		var err error
		if spec, err = taskspec.Parse(task.Spec); err != nil {
			t.Fatal(err)
		}
	}
	ag := compute.NewAgreement(compute.Table)
	if len(gpu.Predictions) != len(cases) || len(cpu.Predictions) != len(cases) {
		t.Fatalf("%d and %d predictions of %d cases", len(gpu.Predictions), len(cpu.Predictions), len(cases))
	}
	for i, g := range gpu.Predictions {
		c := cpu.Predictions[i]
		for j, f := range g.Files {
			if err := predictions.Compare(ag, spec, filepath.Base(f), f, c.Files[j]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !ag.OK() {
		t.Errorf("the CPU's predictions against %s's: %v", gpu.Compute.Device, ag.Problems)
	}
	return ag.Summary()
}

// isVulkan says whether an identity names a Vulkan device.
func isVulkan(id compute.Identity) bool {
	return len(id.Device) > 7 && id.Device[:7] == "vulkan "
}

// Vulkan checks that a result was computed on a Vulkan device.
func Vulkan(t testing.TB, what string, id compute.Identity) {
	t.Helper()
	if !isVulkan(id) {
		t.Errorf("%s computed with %v, not on the Vulkan device", what, id)
	}
}
