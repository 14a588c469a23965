package vk

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"amid/plugins/compute"
)

// Instance is the process's Vulkan instance and its devices.
type Instance struct {
	c       cInstance
	devices []Info
}

var (
	openOnce sync.Once
	shared   *Instance
	openErr  error
)

// Open loads the Vulkan loader and creates the process's instance, once; later calls
// return the same instance (or error). An instance without devices is not an error:
// [Instance.Device] reports ErrNoDevice.
func Open() (*Instance, error) {
	openOnce.Do(func() { shared, openErr = open() })
	return shared, openErr
}

func open() (*Instance, error) {
	lib := compute.ReadSettings().VulkanLoader // $AMID_VK_LOADER, else libvulkan.so.1
	if !withCgo {
		return nil, fmt.Errorf("vk: built without cgo, so without Vulkan: %w", ErrNoLoader)
	}
	c, version, r, loaded := loadInstance(lib)
	if !loaded {
		return nil, fmt.Errorf("vk: cannot open the Vulkan loader %s (Debian: libvulkan1): %w", lib, ErrNoLoader)
	}
	if r == resIncompatible || (r == resSuccess && version < MinAPI) {
		return nil, fmt.Errorf("vk: the Vulkan loader supports version %d.%d, 1.1 is needed: %w", version>>22, version>>12&0x3ff, ErrDriverTooOld)
	}
	if r != resSuccess {
		return nil, result(r, "creating the Vulkan instance")
	}
	in := &Instance{c: c}
	n, r := c.count()
	if r != resSuccess && r != resIncomplete {
		c.close()
		return nil, result(r, "listing Vulkan devices")
	}
	for i := range n {
		inf, r := c.info(i)
		if r == resSuccess {
			in.devices = append(in.devices, inf)
		}
	}
	return in, nil
}

// Devices describes every physical device, in the loader's order (the index of
// [Instance.Device]).
func (in *Instance) Devices() []Info { return slices.Clone(in.devices) }

// Device opens physical device index with one compute queue.
func (in *Instance) Device(index int, opt Options) (*Device, error) {
	if index < 0 || index >= len(in.devices) {
		if len(in.devices) == 0 {
			return nil, fmt.Errorf("vk: the Vulkan loader offers no device: %w", ErrNoDevice)
		}
		return nil, fmt.Errorf("vk: no device %d (there are %d): %w", index, len(in.devices), ErrNoDevice)
	}
	inf := in.devices[index]
	if err := inf.Usable(); err != nil {
		return nil, err
	}
	c, r := in.c.device(index)
	if r != resSuccess {
		return nil, result(r, fmt.Sprintf("opening device %d (%s)", index, inf.Name))
	}
	d := &Device{c: c, info: inf, opt: opt, pipes: map[string]*Pipeline{}}
	d.align = max(int64(inf.MinStorageAlign), 256)
	return d, nil
}

// Device is an opened device with one compute queue. Its methods may be called from
// several goroutines; a [Program] belongs to one at a time.
type Device struct {
	c     cDevice
	info  Info
	opt   Options
	align int64

	mu       sync.Mutex
	blocks   []*block
	used     int64 // bytes of live device allocations
	blockMem int64 // bytes of device memory held in blocks
	hostMem  int64 // bytes of host-visible memory held (staging and read-back buffers)
	peak     int64 // the most blockMem + hostMem held at once
	// sizing marks a device that only counts: see NewSizer.
	sizing  bool
	pipes   map[string]*Pipeline
	submits int
	lost    atomic.Bool
	closed  bool
}

// Info describes the device.
func (d *Device) Info() Info { return d.info }

// Heaps are the device's memory heaps with the driver's current budget and usage where
// it reports them (VK_EXT_memory_budget).
func (d *Device) Heaps() []Heap {
	h := slices.Clone(d.info.Heaps)
	if d.sizing {
		return h
	}
	b, u := d.c.budget()
	for i := range h {
		if i < len(b) && d.info.MemoryBudget {
			h[i].Budget, h[i].Usage = b[i], u[i]
		}
	}
	return h
}

// Usage is the memory the driver reports this process holds on the device, and where
// the figure comes from: VK_EXT_memory_budget's usage summed over the device's heaps where
// the driver has the extension ("VK_EXT_memory_budget"); else, on a CPU device (lavapipe
// of Mesa 22.3 has no budget extension), whose device memory is the process's C heap, the
// bytes glibc's allocator has handed out ("mallinfo2"), the driver's own allocations
// included. ok is false when neither is to be had. The figure is the driver's, not this
// package's bookkeeping: compare it with Held.
func (d *Device) Usage() (bytes uint64, source string, ok bool) {
	if d.sizing {
		return 0, "", false
	}
	if d.info.MemoryBudget {
		_, u := d.c.budget()
		for _, v := range u {
			bytes += v
		}
		return bytes, "VK_EXT_memory_budget", true
	}
	if d.info.Type == CPU {
		if n, ok := mallocInUse(); ok {
			return n, "mallinfo2", true
		}
	}
	return 0, "", false
}

// Allocated is the device memory the package holds in its blocks, and the part of it
// handed out as buffers.
func (d *Device) Allocated() (held, used int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.blockMem, d.used
}

// Held is the memory the device's driver was asked for and still holds: device-local
// blocks and host-visible buffers; peak is the most held at once since the device was
// opened. Transient buffers (a transfer's staging) count in peak.
func (d *Device) Held() (held, peak int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.blockMem + d.hostMem, d.peak
}

// NewSizer returns a device that allocates nothing and runs nothing, for the device
// info describes: its allocations only count, by the same block rules as a real
// device's, so that what a network would hold there (Held's peak) is known before it is
// built there, or on a machine without the device or without Vulkan. Creating a program
// or a pipeline on it fails with ErrSizing.
func NewSizer(info Info) *Device {
	d := &Device{info: info, sizing: true, pipes: map[string]*Pipeline{}}
	d.align = max(int64(info.MinStorageAlign), 256)
	if d.info.MaxStorageBufferRange == 0 {
		d.info.MaxStorageBufferRange = 1<<32 - 1
	}
	return d
}

// Sizing says whether d is a sizer (NewSizer).
func (d *Device) Sizing() bool { return d.sizing }

// ErrSizing reports work asked of a sizer, which only counts memory.
var ErrSizing = errors.New("vk: a sizer counts memory and runs nothing")

// Lost says whether the device was lost.
func (d *Device) Lost() bool { return d.lost.Load() }

func (d *Device) errLost() error {
	return fmt.Errorf("vk: %s: %w", d.info.Name, ErrDeviceLost)
}

// Close waits for the device to finish and frees it with every block and pipeline.
// Buffers and programs must not be used afterwards.
func (d *Device) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.closed = true
	if d.sizing {
		d.blocks = nil
		return
	}
	d.c.idle()
	for _, p := range d.pipes {
		d.c.destroyPipeline(&p.c)
	}
	for _, b := range d.blocks {
		d.c.free(b.c, b.host != nil)
	}
	d.blocks = nil
	d.c.close()
}

// result turns a VkResult into an error naming what was being done.
func result(r int32, what string) error {
	switch r {
	case resSuccess:
		return nil
	case resDeviceLost:
		return fmt.Errorf("vk: %s: %w", what, ErrDeviceLost)
	case resDeviceMemory:
		return fmt.Errorf("vk: %s: %w", what, ErrOutOfDeviceMemory)
	case resHostMemory:
		return fmt.Errorf("vk: %s: out of host memory: %w", what, ErrOutOfDeviceMemory)
	case resFragmentation:
		return fmt.Errorf("vk: %s: memory fragmented: %w", what, ErrOutOfDeviceMemory)
	case resIncompatible:
		return fmt.Errorf("vk: %s: %w", what, ErrDriverTooOld)
	case resNotPresent:
		return fmt.Errorf("vk: %s: a needed feature is missing: %w", what, ErrNoDevice)
	}
	return fmt.Errorf("vk: %s: VkResult %d", what, r)
}

// fail is result for a call on d: a lost device is remembered.
func (d *Device) fail(r int32, what string) error {
	if r == resDeviceLost {
		d.lost.Store(true)
	}
	return result(r, what)
}

// Pipeline is a compute pipeline: one SPIR-V module with one set of specialization
// constants, bindings storage buffers at bindings 0… of set 0 and push words of push
// constants.
type Pipeline struct {
	c           cPipe
	name        string
	binds, push int
}

// maxBindings is the most storage buffers a pipeline binds.
const maxBindings = 16

// maxPush is the most push-constant words of a pipeline (128 bytes, the least every
// device offers).
const maxPush = 32

// Pipeline returns the pipeline of the named SPIR-V module with the given bindings, push
// words and specialization constants (constant_id 0, 1, … in order), creating it on first
// use.
func (d *Device) Pipeline(name string, spv []byte, binds, push int, spec ...uint32) (*Pipeline, error) {
	if binds < 1 || binds > maxBindings || push < 0 || push > maxPush || 4*push > d.info.MaxPushConstants {
		return nil, fmt.Errorf("vk: pipeline %s: %d bindings and %d push words do not fit", name, binds, push)
	}
	if len(spv)%4 != 0 || len(spv) == 0 {
		return nil, fmt.Errorf("vk: pipeline %s: SPIR-V of %d bytes", name, len(spv))
	}
	if d.sizing {
		return nil, ErrSizing
	}
	key := fmt.Sprint(name, binds, push, spec)
	d.mu.Lock()
	defer d.mu.Unlock()
	if p := d.pipes[key]; p != nil {
		return p, nil
	}
	if d.lost.Load() {
		return nil, d.errLost()
	}
	c, r := d.c.pipeline(spv, binds, 4*push, spec)
	if r != resSuccess {
		return nil, d.fail(r, "creating pipeline "+name)
	}
	p := &Pipeline{c: c, name: name, binds: binds, push: push}
	d.pipes[key] = p
	return p, nil
}

// Name is the pipeline's shader name.
func (p *Pipeline) Name() string { return p.name }
