//go:build cgo

package vk

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "amidvk.h"
*/
import "C"

import (
	"sync"
	"unsafe"
)

// The C handles behind the package's types; without cgo they are empty (nocgo.go).

type cInstance struct{ h C.VkInstance }

type cDevice struct{ p *C.amid_dev }

type cBuffer struct {
	mem C.VkDeviceMemory
	buf C.VkBuffer
}

type cPipe struct{ p C.amid_pipe }

type cSet struct{ s C.VkDescriptorSet }

type cProgram struct {
	cb    C.VkCommandBuffer
	fence C.VkFence
	qp    C.VkQueryPool
	pools []C.VkDescriptorPool
	left  int // descriptor sets left in the last pool
}

// withCgo says whether the package can reach Vulkan.
const withCgo = true

const (
	resSuccess       = 0
	resTimeout       = 2
	resNotReady      = 1
	resIncomplete    = 5
	resHostMemory    = -1
	resDeviceMemory  = -2
	resDeviceLost    = -4
	resIncompatible  = -9
	resNotPresent    = -8
	resFragmentation = -1000161000
)

func loadInstance(lib string) (cInstance, uint32, int32, bool) {
	name := C.CString(lib)
	defer C.free(unsafe.Pointer(name))
	if C.amid_load(name) != C.AMID_LOADED {
		return cInstance{}, 0, 0, false
	}
	var v C.uint32_t
	var h C.VkInstance
	r := C.amid_instance(&v, &h)
	return cInstance{h}, uint32(v), int32(r), true
}

func (in cInstance) close() { C.amid_instance_destroy(in.h) }

func (in cInstance) count() (int, int32) {
	var n C.uint32_t
	r := C.amid_physical_count(in.h, &n)
	return int(n), int32(r)
}

func (in cInstance) info(i int) (Info, int32) {
	var c C.amid_info
	r := C.amid_physical_info(in.h, C.uint32_t(i), &c)
	inf := Info{
		Index: i, Name: C.GoString(&c.name[0]), Type: DeviceType(c._type),
		Driver: C.GoString(&c.driverName[0]), DriverInfo: C.GoString(&c.driverInfo[0]),
		Vendor: uint32(c.vendor), DeviceID: uint32(c.device), APIVersion: uint32(c.api), DriverVersion: uint32(c.driverVersion),
		MemoryBudget: c.hasBudget != 0, SubgroupSize: int(c.subgroupSize),
		MaxSharedMemory: int(c.maxShared), MaxInvocations: int(c.maxInvocations),
		MaxStorageBufferRange: uint64(c.maxStorageRange), MaxAllocation: uint64(c.maxAllocation),
		MinStorageAlign: uint64(c.minStorageAlign), MaxPushConstants: int(c.maxPushConstants),
		TimestampPeriod: float64(c.timestampPeriod), TimestampBits: int(c.timestampBits),
		ComputeQueue: c.queueFamily >= 0, Float16: c.float16 != 0, CoopMatKHR: c.coopmatKHR != 0, CoopMatNV: c.coopmatNV != 0,
	}
	for a := range 3 {
		inf.MaxGroupSize[a], inf.MaxGroupCount[a] = int(c.maxGroupSize[a]), int(c.maxGroupCount[a])
	}
	for h := range int(c.heapCount) {
		inf.Heaps = append(inf.Heaps, Heap{Size: uint64(c.heapSize[h]), Budget: uint64(c.heapBudget[h]),
			Usage: uint64(c.heapUsage[h]), DeviceLocal: c.heapFlags[h]&C.VK_MEMORY_HEAP_DEVICE_LOCAL_BIT != 0})
	}
	return inf, int32(r)
}

func (in cInstance) device(i int) (cDevice, int32) {
	p := (*C.amid_dev)(C.calloc(1, C.sizeof_amid_dev))
	r := C.amid_device(in.h, C.uint32_t(i), p)
	if r != C.VK_SUCCESS {
		C.free(unsafe.Pointer(p))
		return cDevice{}, int32(r)
	}
	return cDevice{p}, 0
}

func (d cDevice) close() {
	C.amid_device_destroy(d.p)
	C.free(unsafe.Pointer(d.p))
}

func (d cDevice) idle() int32 { return int32(C.amid_idle(d.p)) }

func (d cDevice) budget() (budget, usage []uint64) {
	var b, u [C.AMID_MAX_HEAPS]C.uint64_t
	var n C.uint32_t
	C.amid_budget(d.p, &b[0], &u[0], &n)
	for i := range int(n) {
		budget, usage = append(budget, uint64(b[i])), append(usage, uint64(u[i]))
	}
	return budget, usage
}

var mallocMu sync.Mutex

// mallocInUse is the C heap in use (glibc's mallinfo2: in arenas and in mapped chunks).
func mallocInUse() (uint64, bool) {
	mallocMu.Lock()
	defer mallocMu.Unlock()
	var n C.uint64_t
	if C.amid_malloc_in_use(&n) == 0 {
		return 0, false
	}
	return uint64(n), true
}

// Memory kinds of allocBlock.
const (
	memDevice   = C.AMID_MEM_DEVICE
	memUpload   = C.AMID_MEM_UPLOAD
	memReadback = C.AMID_MEM_READBACK
)

func (d cDevice) alloc(size int64, kind int) (cBuffer, []byte, int32) {
	var b cBuffer
	var p unsafe.Pointer
	r := C.amid_alloc(d.p, C.uint64_t(size), C.int(kind), &b.mem, &b.buf, &p)
	if r != C.VK_SUCCESS {
		return b, nil, int32(r)
	}
	var host []byte
	if p != nil {
		host = unsafe.Slice((*byte)(p), size)
	}
	return b, host, 0
}

func (d cDevice) free(b cBuffer, mapped bool) {
	m := C.int(0)
	if mapped {
		m = 1
	}
	C.amid_free(d.p, b.mem, b.buf, m)
}

func (d cDevice) pipeline(spv []byte, binds, pushBytes int, spec []uint32) (cPipe, int32) {
	code := C.CBytes(spv)
	defer C.free(code)
	var sp unsafe.Pointer
	if len(spec) > 0 {
		sp = C.CBytes(unsafe.Slice((*byte)(unsafe.Pointer(&spec[0])), 4*len(spec)))
		defer C.free(sp)
	}
	var p cPipe
	r := C.amid_pipeline(d.p, (*C.uint32_t)(code), C.size_t(len(spv)), C.uint32_t(binds), C.uint32_t(pushBytes),
		(*C.uint32_t)(sp), C.uint32_t(len(spec)), &p.p)
	return p, int32(r)
}

func (d cDevice) destroyPipeline(p *cPipe) { C.amid_pipeline_destroy(d.p, &p.p) }

func (d cDevice) program() (cProgram, int32) {
	var p cProgram
	r := C.amid_cmd(d.p, &p.cb, &p.fence)
	return p, int32(r)
}

// setsPerPool is the number of descriptor sets of each descriptor pool a program makes.
const setsPerPool = 256

func (d cDevice) set(p *cProgram, pl *Pipeline, binds []Binding) (cSet, int32) {
	if p.left == 0 {
		var pool C.VkDescriptorPool
		if r := C.amid_pool(d.p, setsPerPool, setsPerPool*maxBindings, &pool); r != C.VK_SUCCESS {
			return cSet{}, int32(r)
		}
		p.pools = append(p.pools, pool)
		p.left = setsPerPool
	}
	var bufs [maxBindings]C.VkBuffer
	var offs, ranges [maxBindings]C.uint64_t
	for i, b := range binds {
		bufs[i] = b.Buf.blk.c.buf
		offs[i] = C.uint64_t(b.Buf.off + b.Off)
		ranges[i] = C.uint64_t(b.size())
	}
	var s cSet
	r := C.amid_set(d.p, p.pools[len(p.pools)-1], pl.c.p.setLayout, C.uint32_t(len(binds)), &bufs[0], &offs[0], &ranges[0], &s.s)
	if r == C.VK_SUCCESS {
		p.left--
	}
	return s, int32(r)
}

func (d cDevice) record(p *cProgram, ops []op, queries int) int32 {
	if queries > 0 && p.qp == nil {
		if r := C.amid_query_pool(d.p, C.uint32_t(queries), &p.qp); r != C.VK_SUCCESS {
			return int32(r)
		}
	}
	if len(ops) == 0 {
		return int32(C.amid_record(d.p, p.cb, p.qp, C.uint32_t(queries), nil, 0))
	}
	cops := make([]C.amid_op, len(ops))
	for i, o := range ops {
		c := &cops[i]
		c.kind = C.uint32_t(o.kind)
		c.npush = C.uint32_t(o.npush)
		for a := range 3 {
			c.groups[a] = C.uint32_t(o.groups[a])
		}
		c.value = C.uint32_t(o.value)
		c.query = C.uint32_t(o.query)
		if o.pipe != nil {
			c.pipe = o.pipe.c.p.pipe
			c.layout = o.pipe.c.p.layout
			c.set = o.set.s
		}
		if o.src != nil {
			c.src = o.src.c.buf
		}
		if o.dst != nil {
			c.dst = o.dst.c.buf
		}
		c.srcOff, c.dstOff, c.size = C.uint64_t(o.srcOff), C.uint64_t(o.dstOff), C.uint64_t(o.size)
		for j := range o.npush {
			c.push[j] = C.uint32_t(o.push[j])
		}
	}
	return int32(C.amid_record(d.p, p.cb, p.qp, C.uint32_t(queries), &cops[0], C.uint32_t(len(cops))))
}

func (d cDevice) submit(p *cProgram) int32 { return int32(C.amid_submit(d.p, p.cb, p.fence)) }

func (d cDevice) wait(p *cProgram) int32 { return int32(C.amid_wait(d.p, p.fence, C.UINT64_MAX)) }

func (d cDevice) queries(p *cProgram, n int) ([]uint64, int32) {
	out := make([]C.uint64_t, n)
	r := C.amid_queries(d.p, p.qp, C.uint32_t(n), &out[0])
	res := make([]uint64, n)
	for i, v := range out {
		res[i] = uint64(v)
	}
	return res, int32(r)
}

func (d cDevice) destroyProgram(p *cProgram) {
	C.amid_cmd_destroy(d.p, p.cb, p.fence)
	if p.qp != nil {
		C.amid_query_pool_destroy(d.p, p.qp)
	}
	for _, pool := range p.pools {
		C.amid_pool_destroy(d.p, pool)
	}
	*p = cProgram{}
}
