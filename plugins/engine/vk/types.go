package vk

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"amid/plugins/compute"
)

// The failures a caller may react to (fall back to the CPU, re-plan smaller, resume from
// a checkpoint). Errors of this package wrap them with %w.
var (
	// ErrNoLoader: the Vulkan loader (libvulkan.so.1) cannot be opened, or the program was
	// built without cgo.
	ErrNoLoader = errors.New("no Vulkan loader")
	// ErrNoDevice: the loader works but offers no device with a compute queue, or the
	// asked device does not exist.
	ErrNoDevice = errors.New("no Vulkan device")
	// ErrDriverTooOld: the loader or the device's driver is older than Vulkan 1.1.
	ErrDriverTooOld = errors.New("the Vulkan driver is too old")
	// ErrOutOfDeviceMemory: an allocation did not fit in the device's memory (or in the
	// injected cap).
	ErrOutOfDeviceMemory = errors.New("out of device memory")
	// ErrDeviceLost: the device stopped working (VK_ERROR_DEVICE_LOST, or injected); every
	// later call on the device fails with it too.
	ErrDeviceLost = errors.New("the Vulkan device was lost")
)

// MinAPI is the oldest Vulkan version a device must support: 1.1 (subgroup properties,
// maintenance3's allocation limit, 16-bit storage).
const MinAPI = 1<<22 | 1<<12

// The least a device must offer per workgroup: the engine's kernels run 256 invocations
// and keep up to 16 KiB in shared memory (Vulkan guarantees 128 and 16 KiB; desktop GPUs
// offer 1024 and 32–64 KiB).
const (
	MinInvocations  = 256
	MinSharedMemory = 16 << 10
)

// DeviceType is the kind of a physical device, as Vulkan reports it.
type DeviceType int

// Device types in Vulkan's numbering.
const (
	Other DeviceType = iota
	Integrated
	Discrete
	Virtual
	CPU
)

func (t DeviceType) String() string {
	switch t {
	case Integrated:
		return "integrated"
	case Discrete:
		return "discrete"
	case Virtual:
		return "virtual"
	case CPU:
		return "cpu"
	}
	return "other"
}

// Heap is one memory heap of a device. Budget and Usage come from VK_EXT_memory_budget
// and are zero without it.
type Heap struct {
	Size, Budget, Usage uint64
	DeviceLocal         bool
}

// Info describes a physical device.
type Info struct {
	Index            int
	Name             string
	Type             DeviceType
	Driver           string // e.g. "NVIDIA", "radv", "llvmpipe"; empty before Vulkan 1.2
	DriverInfo       string // e.g. "Mesa 22.3.6 (LLVM 15.0.6)"
	Vendor, DeviceID uint32
	APIVersion       uint32
	DriverVersion    uint32
	Heaps            []Heap
	// MemoryBudget says whether the heaps' Budget and Usage are the driver's
	// (VK_EXT_memory_budget).
	MemoryBudget bool
	SubgroupSize int
	// Limits of compute work.
	MaxSharedMemory, MaxInvocations int
	MaxGroupSize, MaxGroupCount     [3]int
	MaxStorageBufferRange           uint64
	MaxAllocation                   uint64
	MinStorageAlign                 uint64
	MaxPushConstants                int
	// TimestampPeriod is nanoseconds per timestamp tick; TimestampBits 0 means the compute
	// queue has no timestamps.
	TimestampPeriod float64
	TimestampBits   int
	// ComputeQueue says whether the device has a queue family with compute.
	ComputeQueue bool
	// Float16 is shaderFloat16; CoopMatKHR and CoopMatNV say whether the device offers
	// VK_KHR_cooperative_matrix and VK_NV_cooperative_matrix.
	Float16, CoopMatKHR, CoopMatNV bool
}

// API is the device's Vulkan version as "major.minor.patch".
func (i Info) API() string {
	v := i.APIVersion
	return fmt.Sprintf("%d.%d.%d", v>>22&0x7f, v>>12&0x3ff, v&0xfff)
}

// DeviceMemory is the size of the device-local heaps (the largest one on a device that
// shares system memory).
func (i Info) DeviceMemory() uint64 {
	var s uint64
	for _, h := range i.Heaps {
		if h.DeviceLocal {
			s += h.Size
		}
	}
	return s
}

// Usable says why the device cannot run the engine, or nil.
func (i Info) Usable() error {
	switch {
	case i.APIVersion < MinAPI:
		return fmt.Errorf("vk: device %d (%s) supports Vulkan %s, 1.1 is needed: %w", i.Index, i.Name, i.API(), ErrDriverTooOld)
	case !i.ComputeQueue:
		return fmt.Errorf("vk: device %d (%s) has no compute queue: %w", i.Index, i.Name, ErrNoDevice)
	case i.MaxInvocations < MinInvocations || i.MaxSharedMemory < MinSharedMemory:
		return fmt.Errorf("vk: device %d (%s) runs workgroups of %d invocations and %d bytes of shared memory, the engine's kernels need %d and %d: %w",
			i.Index, i.Name, i.MaxInvocations, i.MaxSharedMemory, MinInvocations, MinSharedMemory, ErrNoDevice)
	}
	return nil
}

func (i Info) String() string {
	return fmt.Sprintf("%s (%s, %s, Vulkan %s, %.1f GiB)", i.Name, i.Type, strings.TrimSpace(i.Driver+" "+i.DriverInfo), i.API(),
		float64(i.DeviceMemory())/(1<<30))
}

// Options are test seams for failures a software driver cannot produce.
type Options struct {
	// MemoryCap, when positive, makes device allocations beyond this many bytes in all
	// fail with ErrOutOfDeviceMemory.
	MemoryCap int64
	// LoseAfter, when positive, makes the LoseAfter-th submission (counted from the
	// device's opening) and every later call fail with ErrDeviceLost.
	LoseAfter int
}

// FaultsFromEnv returns the Options that AMID_VK_FAULT (compute.EnvVulkanFaults) asks
// for: zero when unset.
func FaultsFromEnv() (Options, error) { return ParseFaults(compute.ReadSettings().VulkanFaults) }

// ParseFaults reads faults written as AMID_VK_FAULT takes them ("" for none).
func ParseFaults(s string) (Options, error) {
	var o Options
	if s == "" {
		return o, nil
	}
	for _, f := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(f), "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil || n < 0 {
			return o, fmt.Errorf("vk: %s=%q: %q is not NAME=NUMBER", compute.EnvVulkanFaults, s, f)
		}
		switch k {
		case "mem-cap":
			o.MemoryCap = n
		case "lost-after":
			o.LoseAfter = int(n)
		default:
			return o, fmt.Errorf("vk: %s=%q: unknown fault %q (mem-cap, lost-after)", compute.EnvVulkanFaults, s, k)
		}
	}
	return o, nil
}

// Binding is a range of a buffer bound to a shader: Off and Size in bytes (Size 0: the
// rest of the buffer); Write says whether the command writes it.
type Binding struct {
	Buf       *Buffer
	Off, Size int64
	Write     bool
}

// R binds all of b for reading.
func R(b *Buffer) Binding { return Binding{Buf: b} }

// W binds all of b for writing (and reading).
func W(b *Buffer) Binding { return Binding{Buf: b, Write: true} }

func (b Binding) size() int64 {
	if b.Size > 0 {
		return b.Size
	}
	return b.Buf.size - b.Off
}

// Span is the time between two timestamps of a program.
type Span struct {
	Label string
	Nanos float64
}
