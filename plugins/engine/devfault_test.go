package engine

import (
	"errors"
	"strings"
	"testing"

	"amid/plugins/compute"
	"amid/plugins/engine/vk"
	"amid/plugins/engine/vk/vktest"
)

// faultyVulkan opens the test device again with injected faults.
func faultyVulkan(t *testing.T, opt vk.Options) *Vulkan {
	t.Helper()
	vktest.Device(t)
	in, err := vk.Open()
	if err != nil {
		t.Fatal(err)
	}
	d, err := in.Device(vktest.Index(in), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return NewVulkanOn(d, 2)
}

// A network that does not fit the device's memory fails to build with
// ErrOutOfDeviceMemory, leaves nothing allocated, and a smaller one then fits (the
// re-planning the plugins do).
func TestDeviceOutOfMemory(t *testing.T) {
	v := faultyVulkan(t, vk.Options{MemoryCap: 4 << 20})
	cfg := UNetConfig{In: 1, Classes: 2, Widths: []int{8, 16}, Convs: 2, Slope: 0.01}
	_, err := BuildUNet(v, cfg, 4, [3]int{1, 128, 128}, 1)
	if !errors.Is(err, ErrOutOfDeviceMemory) {
		t.Fatalf("a network over the cap: %v, want ErrOutOfDeviceMemory", err)
	}
	if !strings.Contains(err.Error(), v.Info().Name) {
		t.Errorf("the error does not name the device: %v", err)
	}
	if _, used := v.dev.Allocated(); used != 0 {
		t.Errorf("%d bytes left allocated after the failed build", used)
	}
	u, err := BuildUNet(v, cfg, 1, [3]int{1, 32, 32}, 1)
	if err != nil {
		t.Fatalf("the smaller network: %v", err)
	}
	u.Free()
}

// A device lost during training fails the step with ErrDeviceLost, and every later step
// and transfer too; the host's parameters stay as they were (a lane resumes from its
// checkpoint).
func TestDeviceLostWhileTraining(t *testing.T) {
	// Submissions: the network's first upload, the trainer's upload, then steps.
	v := faultyVulkan(t, vk.Options{LoseAfter: 5})
	u, err := BuildUNet(v, UNetConfig{In: 1, Classes: 2, Widths: []int{4}, Convs: 1, Slope: 0.01}, 1, [3]int{1, 8, 8}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Free()
	tr, err := NewTrainer(u.Net, NewAdam(v, u.Params(), 1e-3), TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var lost error
	for s := range 5 {
		if _, err := tr.Step(1e-3); err != nil {
			if s < 2 {
				t.Fatalf("step %d: %v", s, err)
			}
			lost = err
			break
		}
	}
	if !errors.Is(lost, ErrDeviceLost) {
		t.Fatalf("got %v, want ErrDeviceLost", lost)
	}
	if _, err := tr.Step(1e-3); !errors.Is(err, ErrDeviceLost) {
		t.Errorf("a step after the loss: %v", err)
	}
	if err := tr.ToHost(); !errors.Is(err, ErrDeviceLost) {
		t.Errorf("reading back after the loss: %v", err)
	}
}

// AMID_VK_FAULT reaches devices opened by NewVulkan.
func TestFaultEnvironment(t *testing.T) {
	vktest.Device(t)
	t.Setenv(compute.EnvVulkanFaults, "mem-cap=1024")
	in, _ := vk.Open()
	v, err := NewVulkan(vktest.Index(in), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, err := BuildUNet(v, UNetConfig{In: 1, Classes: 2, Widths: []int{4}, Convs: 1, Slope: 0.01}, 1, [3]int{1, 8, 8}, 1); !errors.Is(err, ErrOutOfDeviceMemory) {
		t.Fatalf("under a 1 KiB cap: %v", err)
	}
	t.Setenv(compute.EnvVulkanFaults, "bogus")
	if _, err := NewVulkan(vktest.Index(in), 1); err == nil {
		t.Fatal("a malformed AMID_VK_FAULT was accepted")
	}
}

func TestOpenDevice(t *testing.T) {
	for _, bad := range []string{"gpu", "vulkan:x", "vulkan:-1"} {
		if _, err := OpenDevice(bad, 1); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	be, err := OpenDevice("cpu", 1)
	if _, ok := be.(*CPU); err != nil || !ok {
		t.Fatalf("cpu: %T, %v", be, err)
	}
	vktest.Device(t)
	// lavapipe is a CPU: auto never picks it, vulkan does when nothing else exists.
	devs, _ := VulkanDevices()
	_, gpu := pickGPU(devs, false)
	be, err = OpenDevice("auto", 1)
	if v, ok := be.(*Vulkan); ok {
		defer v.Close()
		if v.Info().Type == vk.CPU {
			t.Errorf("auto chose %s, a CPU device", v.Info().Name)
		}
	} else if gpu || err != nil {
		t.Errorf("auto: %T, %v with a GPU present", be, err)
	}
	be, err = OpenDevice("vulkan", 1)
	if err != nil {
		t.Fatalf("vulkan: %v", err)
	}
	be.(*Vulkan).Close()
	if _, err := OpenDevice("vulkan:99", 1); !errors.Is(err, ErrNoDevice) {
		t.Errorf("vulkan:99: %v", err)
	}
}
