package vk

import (
	"fmt"
	"unsafe"
)

// Device memory is suballocated: buffers are ranges of large blocks (one VkDeviceMemory
// and one VkBuffer each), so that allocating a network's tensors costs few driver calls
// and descriptors bind ranges of a block. Blocks grow from 16 MiB to 256 MiB as more are
// needed (each as large as those held, so that the total doubles); a larger request gets
// a block of its own. Host-visible buffers (uploads and read-backs) are blocks of their
// own, mapped for their whole life.

const (
	firstBlock = 16 << 20
	maxBlock   = 256 << 20
)

// block is one device allocation and the free ranges left in it (sorted, coalesced).
type block struct {
	c    cBuffer
	size int64
	host []byte // mapped memory of a host-visible block
	free []span
}

type span struct{ off, size int64 }

// Buffer is a range of device (or mapped host) memory.
type Buffer struct {
	d         *Device
	blk       *block
	off, size int64
}

// Size is the buffer's length in bytes.
func (b *Buffer) Size() int64 { return b.size }

// Host is the mapped memory of a host-visible buffer (nil for device memory).
func (b *Buffer) Host() []byte {
	if b.blk.host == nil {
		return nil
	}
	return b.blk.host[b.off : b.off+b.size]
}

// Floats is the mapped memory of a host-visible buffer as float32 values.
func (b *Buffer) Floats() []float32 {
	h := b.Host()
	if len(h) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&h[0])), len(h)/4)
}

// Alloc returns a buffer of device memory of at least size bytes (contents undefined).
func (d *Device) Alloc(size int64) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("vk: allocation of %d bytes", size)
	}
	if uint64(size) > d.info.MaxStorageBufferRange {
		return nil, fmt.Errorf("vk: a buffer of %d MiB exceeds the largest the device binds (%d MiB): %w",
			size>>20, d.info.MaxStorageBufferRange>>20, ErrOutOfDeviceMemory)
	}
	size = (size + d.align - 1) / d.align * d.align
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lost.Load() {
		return nil, d.errLost()
	}
	if d.opt.MemoryCap > 0 && d.used+size > d.opt.MemoryCap {
		return nil, fmt.Errorf("vk: %d MiB more would exceed the cap of %d MiB (%d MiB in use): %w",
			size>>20, d.opt.MemoryCap>>20, d.used>>20, ErrOutOfDeviceMemory)
	}
	for _, b := range d.blocks {
		if b.host != nil {
			continue
		}
		if off, ok := b.take(size); ok {
			d.used += size
			return &Buffer{d: d, blk: b, off: off, size: size}, nil
		}
	}
	// A new block is as large as the blocks held (16, 16, 32, 64, … MiB): the size
	// depends on what the device holds now, not on what it held before, so that a network
	// built on a device whose earlier networks were freed takes the memory a sizer (and
	// the plan made with it) counts.
	bs := min(max(d.blockMem, firstBlock), maxBlock)
	if lim := int64(d.info.MaxAllocation); lim > 0 {
		bs = min(bs, lim)
	}
	bs = max(bs, size)
	var c cBuffer
	if !d.sizing {
		var r int32
		if c, _, r = d.c.alloc(bs, memDevice); r != resSuccess {
			return nil, d.fail(r, fmt.Sprintf("allocating %d MiB of device memory (%d MiB held)", bs>>20, d.blockMem>>20))
		}
	}
	b := &block{c: c, size: bs, free: []span{{0, bs}}}
	d.blocks = append(d.blocks, b)
	d.blockMem += bs
	d.notePeak()
	off, _ := b.take(size)
	d.used += size
	return &Buffer{d: d, blk: b, off: off, size: size}, nil
}

// AllocHost returns a mapped, host-visible buffer of size bytes: for uploads, or with
// readback set for reading results (cached memory where the device has it).
func (d *Device) AllocHost(size int64, readback bool) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("vk: allocation of %d bytes", size)
	}
	if uint64(size) > d.info.MaxStorageBufferRange {
		return nil, fmt.Errorf("vk: a host buffer of %d MiB exceeds the largest the device binds (%d MiB): %w",
			size>>20, d.info.MaxStorageBufferRange>>20, ErrOutOfDeviceMemory)
	}
	size = (size + d.align - 1) / d.align * d.align
	kind := memUpload
	if readback {
		kind = memReadback
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lost.Load() {
		return nil, d.errLost()
	}
	var c cBuffer
	var host []byte
	if d.sizing {
		host = make([]byte, size)
	} else {
		var r int32
		if c, host, r = d.c.alloc(size, kind); r != resSuccess {
			return nil, d.fail(r, fmt.Sprintf("allocating %d MiB of host-visible memory", size>>20))
		}
		clear(host)
	}
	b := &block{c: c, size: size, host: host}
	d.blocks = append(d.blocks, b)
	d.hostMem += size
	d.notePeak()
	return &Buffer{d: d, blk: b, size: size}, nil
}

// Free returns the buffer's memory; a host-visible buffer's block is released.
func (b *Buffer) Free() {
	if b == nil || b.blk == nil {
		return
	}
	d := b.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	if b.blk.host != nil {
		for i, x := range d.blocks {
			if x == b.blk {
				d.blocks = append(d.blocks[:i], d.blocks[i+1:]...)
				break
			}
		}
		d.hostMem -= b.blk.size
		if !d.sizing {
			d.c.free(b.blk.c, true)
		}
	} else {
		blk := b.blk
		blk.give(b.off, b.size)
		d.used -= b.size
		if len(blk.free) == 1 && blk.free[0].size == blk.size {
			// An empty block goes back to the driver, so that a network built again
			// smaller after running out of memory finds the memory free.
			for i, x := range d.blocks {
				if x == blk {
					d.blocks = append(d.blocks[:i], d.blocks[i+1:]...)
					break
				}
			}
			if !d.sizing {
				d.c.free(blk.c, false)
			}
			d.blockMem -= blk.size
		}
	}
	b.blk = nil
}

// notePeak records the memory held now if it is the most so far (d.mu held).
func (d *Device) notePeak() { d.peak = max(d.peak, d.blockMem+d.hostMem) }

// take finds the first free range of at least size bytes.
func (b *block) take(size int64) (int64, bool) {
	for i, s := range b.free {
		if s.size < size {
			continue
		}
		if s.size == size {
			b.free = append(b.free[:i], b.free[i+1:]...)
		} else {
			b.free[i] = span{s.off + size, s.size - size}
		}
		return s.off, true
	}
	return 0, false
}

// give returns a range, merging it with its free neighbours.
func (b *block) give(off, size int64) {
	i := 0
	for i < len(b.free) && b.free[i].off < off {
		i++
	}
	b.free = append(b.free, span{})
	copy(b.free[i+1:], b.free[i:])
	b.free[i] = span{off, size}
	if i+1 < len(b.free) && b.free[i].off+b.free[i].size == b.free[i+1].off {
		b.free[i].size += b.free[i+1].size
		b.free = append(b.free[:i+1], b.free[i+2:]...)
	}
	if i > 0 && b.free[i-1].off+b.free[i-1].size == b.free[i].off {
		b.free[i-1].size += b.free[i].size
		b.free = append(b.free[:i], b.free[i+1:]...)
	}
}
