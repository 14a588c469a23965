package engine

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"amid/plugins/compute"
	"amid/plugins/engine/shaders"
	"amid/plugins/engine/vk"
)

// The named failures of a Vulkan device, for callers that fall back to the CPU, re-plan
// smaller or resume from a checkpoint (errors.Is).
var (
	ErrNoLoader          = vk.ErrNoLoader
	ErrNoDevice          = vk.ErrNoDevice
	ErrDriverTooOld      = vk.ErrDriverTooOld
	ErrOutOfDeviceMemory = vk.ErrOutOfDeviceMemory
	ErrDeviceLost        = vk.ErrDeviceLost
)

// Vulkan is a backend that runs networks on a Vulkan device: a network built with it
// keeps its tensors, parameters and optimizer state in device memory, and trains through
// a [Trainer] whose whole step is recorded once and replayed. Its embedded CPU backend
// runs what stays on the host (an [Objective]'s function, the data pipeline's loops).
type Vulkan struct {
	*CPU
	dev *vk.Device
}

// NewVulkan opens Vulkan device index (in the loader's order, see [VulkanDevices]) with
// workers CPU loop workers for host-side work (0: GOMAXPROCS). The environment variable
// AMID_VK_FAULT injects an allocation cap or a lost device (package vk).
func NewVulkan(index, workers int) (*Vulkan, error) {
	in, err := vk.Open()
	if err != nil {
		return nil, err
	}
	opt, err := vk.FaultsFromEnv()
	if err != nil {
		return nil, err
	}
	d, err := in.Device(index, opt)
	if err != nil {
		return nil, err
	}
	return &Vulkan{CPU: NewCPU(workers), dev: d}, nil
}

// NewVulkanOn is a backend on an opened device (several backends, and the tests, may
// share one device; Close closes the device for all of them).
func NewVulkanOn(d *vk.Device, workers int) *Vulkan { return &Vulkan{CPU: NewCPU(workers), dev: d} }

// Name implements Backend.
func (v *Vulkan) Name() string {
	i := v.dev.Info()
	return fmt.Sprintf("vulkan %d: %s", i.Index, i)
}

// Identity implements Backend: the device and its driver fix every result of a network
// on it (the order of every sum is set by the shaders and by tile shapes chosen from the
// layers' shapes alone), whatever the host's workers: an Objective's function runs per
// sample, its values added in sample order.
func (v *Vulkan) Identity() compute.Identity { return VulkanIdentity(v.dev.Info()) }

// VulkanIdentity is the identity of a Vulkan backend on the device info describes (a
// plugin's Describe reports it before it opens the device).
func VulkanIdentity(i vk.Info) compute.Identity {
	return compute.Identity{Engine: Version, Device: fmt.Sprintf("vulkan %s (%s)", i.Name, strings.TrimSpace(i.Driver+" "+i.DriverInfo)), Workers: 1}
}

// Info describes the device.
func (v *Vulkan) Info() vk.Info { return v.dev.Info() }

// Device is the backend's Vulkan device.
func (v *Vulkan) Device() *vk.Device { return v.dev }

// Close frees the device; networks built on it must be freed first.
func (v *Vulkan) Close() { v.dev.Close() }

// VulkanDevices lists the Vulkan devices of this machine (an error when there is no
// loader).
func VulkanDevices() ([]vk.Info, error) {
	in, err := vk.Open()
	if err != nil {
		return nil, err
	}
	return in.Devices(), nil
}

// ErrDeviceSetting reports a device setting that is not auto, cpu, vulkan or vulkan:N.
var ErrDeviceSetting = errors.New("not a device setting: want auto, cpu, vulkan or vulkan:N")

// ChooseDevice resolves a device setting on this machine without opening a device: the
// Vulkan device it names, or nil for the CPU. "cpu" is the CPU; "vulkan" the first usable
// discrete, then integrated GPU, then any other usable device, lavapipe included;
// "vulkan:N" device N; "auto" (or "") a discrete GPU, then an integrated one, else the CPU:
// lavapipe, a CPU itself, is never chosen. With "auto" a machine without a usable GPU gets
// the CPU and, as the error, the reason (nil when there is simply no GPU device); the other
// settings fail when they cannot be honoured, a malformed one with ErrDeviceSetting.
func ChooseDevice(setting string) (*vk.Info, error) {
	s := strings.ToLower(strings.TrimSpace(setting))
	switch {
	case s == "cpu":
		return nil, nil
	case s == "auto" || s == "":
		devs, err := VulkanDevices()
		if err != nil {
			return nil, err
		}
		i, ok := pickGPU(devs, false)
		if !ok {
			return nil, nil
		}
		return &devs[i], nil
	case s == "vulkan":
		devs, err := VulkanDevices()
		if err != nil {
			return nil, err
		}
		i, ok := pickGPU(devs, true)
		if !ok {
			return nil, fmt.Errorf("engine: device setting %q: %w", setting, ErrNoDevice)
		}
		return &devs[i], nil
	case strings.HasPrefix(s, "vulkan:"):
		i, err := strconv.Atoi(s[len("vulkan:"):])
		if err != nil || i < 0 {
			return nil, fmt.Errorf("engine: device setting %q: %w", setting, ErrDeviceSetting)
		}
		devs, err := VulkanDevices()
		if err != nil {
			return nil, err
		}
		if i >= len(devs) {
			return nil, fmt.Errorf("engine: device setting %q: there are %d Vulkan devices: %w", setting, len(devs), ErrNoDevice)
		}
		if err := devs[i].Usable(); err != nil {
			return nil, err
		}
		return &devs[i], nil
	}
	return nil, fmt.Errorf("engine: device setting %q: %w", setting, ErrDeviceSetting)
}

// OpenDevice opens the backend a device setting names (see [ChooseDevice]). With "auto"
// a machine without a usable GPU gets the CPU and, as the error, the reason (nil when there
// is simply no GPU device); the other settings fail when they cannot be honoured.
func OpenDevice(setting string, workers int) (Backend, error) {
	info, err := ChooseDevice(setting)
	s := strings.ToLower(strings.TrimSpace(setting))
	auto := s == "auto" || s == ""
	if info == nil {
		if err != nil && !auto {
			return nil, err
		}
		return NewCPU(workers), err
	}
	v, err := NewVulkan(info.Index, workers)
	if err != nil && auto {
		return NewCPU(workers), err
	}
	return v, err
}

// pickGPU chooses a discrete device, then an integrated one; with anyKind also a virtual
// or other one, then a CPU device.
func pickGPU(devs []vk.Info, anyKind bool) (int, bool) {
	order := []vk.DeviceType{vk.Discrete, vk.Integrated}
	if anyKind {
		order = append(order, vk.Virtual, vk.Other, vk.CPU)
	}
	for _, t := range order {
		for _, d := range devs {
			if d.Type == t && d.Usable() == nil {
				return d.Index, true
			}
		}
	}
	return 0, false
}

// kernel is a shader and how it is bound: its bindings and push words.
type kernel struct {
	name         string
	binds, words int
}

// The engine's shaders (package shaders).
var (
	kEltwise   = kernel{"eltwise", 3, 12}
	kGemm      = kernel{"gemm", 5, 28}
	kSumParts  = kernel{"sumparts", 2, 4}
	kRowSum    = kernel{"rowsum", 3, 11}
	kNorm      = kernel{"norm", 12, 13}
	kMaxPool   = kernel{"maxpool", 5, 16}
	kBcast     = kernel{"bcast", 2, 9}
	kSoftmax   = kernel{"softmax", 8, 11}
	kHeadLoss  = kernel{"headloss", 8, 7}
	kRegLoss   = kernel{"regloss", 5, 9}
	kImageLoss = kernel{"imageloss", 7, 13}
	kClip      = kernel{"clip", 2, 4}
	kAdam      = kernel{"adam", 6, 7}
	kSGD       = kernel{"sgd", 5, 5}
	kWindow    = kernel{"window", 7, 15}
	kFocal     = kernel{"focal", 8, 6}
)

// pipeline returns k's pipeline with the given specialization constants.
func (v *Vulkan) pipeline(k kernel, spec ...uint32) (*vk.Pipeline, error) {
	spv, err := shaders.SPIRV(k.name)
	if err != nil {
		return nil, err
	}
	return v.dev.Pipeline(k.name, spv, k.binds, k.words, spec...)
}

// kPeak is the arithmetic-peak kernel.
var kPeak = kernel{"peak", 1, 3}

// MeasurePeak measures the device's float32 arithmetic peak in GFLOP/s (a multiply-add
// counted as two), the yardstick of the benchmark's share of peak: Vulkan reports no
// clock or core count to compute it from. It takes the best of three runs of about
// a fixed amount of work (a few milliseconds on a GPU).
func (v *Vulkan) MeasurePeak() (float64, error) {
	pl, err := v.pipeline(kPeak)
	if err != nil {
		return 0, err
	}
	groups, iters := 8192, 4096
	if v.Info().Type == vk.CPU {
		groups, iters = 64, 1024 // a CPU device: a smoke test, not minutes
	}
	out, err := v.dev.Alloc(int64(4 * 256 * groups))
	if err != nil {
		return 0, err
	}
	defer out.Free()
	p, err := v.dev.NewProgram()
	if err != nil {
		return 0, err
	}
	defer p.Free()
	p.Mark("peak")
	p.Dispatch(pl, [3]int{groups, 1, 1}, []uint32{uint32(iters), math.Float32bits(0.999), math.Float32bits(1e-3)}, vk.W(out))
	p.Mark("end")
	if err := p.End(); err != nil {
		return 0, err
	}
	flops := float64(groups) * 256 * float64(iters) * 16
	best := 0.0
	for range 3 {
		t := time.Now()
		if err := p.Run(); err != nil {
			return 0, err
		}
		sec := time.Since(t).Seconds()
		if sp, err := p.Times(); err == nil && len(sp) == 1 && sp[0].Nanos > 0 {
			sec = sp[0].Nanos / 1e9
		}
		best = max(best, flops/sec/1e9)
	}
	return best, nil
}
