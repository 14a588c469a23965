package vk

import (
	"fmt"
)

// Program is a command buffer recorded once and submitted any number of times: dispatches,
// copies and fills in order, each descriptor set made when the command is added. A memory
// barrier goes before a command only when it reads or writes memory an earlier command
// (since the last barrier) wrote, or writes memory an earlier one read; every program
// starts with one, so that it sees what earlier submissions wrote.
type Program struct {
	d        *Device
	c        cProgram
	ops      []op
	labels   []string
	written  []span2
	read     []span2
	recorded bool
	pending  bool
	err      error
	// Barriers counts the barriers recorded, Dispatches the dispatches.
	Barriers, Dispatches int
}

// span2 is a byte range of a block, for hazard tracking.
type span2 struct {
	blk    *block
	lo, hi int64
}

// op is one command; see amid_op in amidvk.h.
type op struct {
	kind           int
	pipe           *Pipeline
	set            cSet
	push           [maxPush]uint32
	npush          int
	groups         [3]uint32
	src, dst       *block
	srcOff, dstOff int64
	size           int64
	value          uint32
	query          uint32
}

const (
	opDispatch = iota
	opBarrier
	opCopy
	opFill
	opTimestamp
)

// NewProgram starts an empty program.
func (d *Device) NewProgram() (*Program, error) {
	if d.sizing {
		return nil, ErrSizing
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lost.Load() {
		return nil, d.errLost()
	}
	c, r := d.c.program()
	if r != resSuccess {
		return nil, d.fail(r, "allocating a command buffer")
	}
	p := &Program{d: d, c: c}
	p.ops = append(p.ops, op{kind: opBarrier})
	return p, nil
}

// Err is the first error met while adding commands.
func (p *Program) Err() error { return p.err }

func (p *Program) setErr(err error) {
	if p.err == nil {
		p.err = err
	}
}

func overlaps(list []span2, s span2) bool {
	for _, x := range list {
		if x.blk == s.blk && x.lo < s.hi && s.lo < x.hi {
			return true
		}
	}
	return false
}

// hazard adds a barrier when a command reading rd and writing wr depends on an earlier one.
func (p *Program) hazard(rd, wr []span2) {
	need := false
	for _, s := range rd {
		need = need || overlaps(p.written, s)
	}
	for _, s := range wr {
		need = need || overlaps(p.written, s) || overlaps(p.read, s)
	}
	if need {
		p.Barrier()
	}
	p.read = append(p.read, rd...)
	p.written = append(p.written, wr...)
}

// Barrier adds a memory barrier: every earlier shader or transfer write becomes visible to
// every later command.
func (p *Program) Barrier() {
	p.ops = append(p.ops, op{kind: opBarrier})
	p.written, p.read = p.written[:0], p.read[:0]
	p.Barriers++
}

func rangeOf(b Binding) span2 {
	lo := b.Buf.off + b.Off
	return span2{b.Buf.blk, lo, lo + b.size()}
}

// Dispatch adds a dispatch of groups workgroups of pipeline pl with the given push words
// and bindings (binding i at binding point i).
func (p *Program) Dispatch(pl *Pipeline, groups [3]int, push []uint32, binds ...Binding) {
	if p.err != nil {
		return
	}
	if p.recorded {
		p.setErr(fmt.Errorf("vk: dispatch of %s after the program was recorded", pl.name))
		return
	}
	if len(binds) != pl.binds || len(push) > pl.push {
		p.setErr(fmt.Errorf("vk: dispatch of %s with %d bindings and %d push words, the pipeline has %d and %d",
			pl.name, len(binds), len(push), pl.binds, pl.push))
		return
	}
	lim := p.d.info.MaxGroupCount
	for a, g := range groups {
		if g < 0 || (lim[a] > 0 && g > lim[a]) {
			p.setErr(fmt.Errorf("vk: dispatch of %s: %v workgroups exceed the device's %v", pl.name, groups, lim))
			return
		}
	}
	var rd, wr []span2
	for i, b := range binds {
		if b.Buf == nil || b.Buf.blk == nil {
			p.setErr(fmt.Errorf("vk: dispatch of %s: binding %d has no buffer", pl.name, i))
			return
		}
		if b.Off < 0 || b.Off+b.size() > b.Buf.size || b.size() <= 0 {
			p.setErr(fmt.Errorf("vk: dispatch of %s: binding %d range %d+%d outside its buffer of %d", pl.name, i, b.Off, b.size(), b.Buf.size))
			return
		}
		if b.Write {
			wr = append(wr, rangeOf(b))
		} else {
			rd = append(rd, rangeOf(b))
		}
	}
	if groups[0] == 0 || groups[1] == 0 || groups[2] == 0 {
		return
	}
	p.d.mu.Lock()
	set, r := p.d.c.set(&p.c, pl, binds)
	p.d.mu.Unlock()
	if r != resSuccess {
		p.setErr(p.d.fail(r, "allocating a descriptor set for "+pl.name))
		return
	}
	p.hazard(rd, wr)
	o := op{kind: opDispatch, pipe: pl, set: set, npush: len(push)}
	copy(o.push[:], push)
	for a, g := range groups {
		o.groups[a] = uint32(g)
	}
	p.ops = append(p.ops, o)
	p.Dispatches++
}

// Copy adds a copy of size bytes from src to dst (offsets within the bindings).
func (p *Program) Copy(dst, src Binding, size int64) {
	if p.err != nil || size == 0 {
		return
	}
	if size < 0 || src.Off+size > src.Buf.size || dst.Off+size > dst.Buf.size || size%4 != 0 {
		p.setErr(fmt.Errorf("vk: copy of %d bytes from %d+%d to %d+%d", size, src.Buf.size, src.Off, dst.Buf.size, dst.Off))
		return
	}
	s := span2{src.Buf.blk, src.Buf.off + src.Off, src.Buf.off + src.Off + size}
	t := span2{dst.Buf.blk, dst.Buf.off + dst.Off, dst.Buf.off + dst.Off + size}
	p.hazard([]span2{s}, []span2{t})
	p.ops = append(p.ops, op{kind: opCopy, src: src.Buf.blk, dst: dst.Buf.blk, srcOff: s.lo, dstOff: t.lo, size: size})
}

// Fill adds a fill of the binding's range with the 32-bit pattern v (0 for zeros).
func (p *Program) Fill(dst Binding, v uint32) {
	if p.err != nil {
		return
	}
	n := dst.size()
	if n%4 != 0 || dst.Off+n > dst.Buf.size {
		p.setErr(fmt.Errorf("vk: fill of %d bytes at %d of a buffer of %d", n, dst.Off, dst.Buf.size))
		return
	}
	t := rangeOf(dst)
	p.hazard(nil, []span2{t})
	p.ops = append(p.ops, op{kind: opFill, dst: dst.Buf.blk, dstOff: t.lo, size: n, value: v})
}

// Mark adds a timestamp named label, written when every earlier command is done; [Program.Times]
// reports the time from each mark to the next. Without timestamps on the device marks do
// nothing.
func (p *Program) Mark(label string) {
	if p.d.info.TimestampBits == 0 {
		return
	}
	p.ops = append(p.ops, op{kind: opTimestamp, query: uint32(len(p.labels))})
	p.labels = append(p.labels, label)
}

// End records the commands into the command buffer, ending with a barrier that makes
// every write visible to the host.
func (p *Program) End() error {
	if p.err != nil {
		return p.err
	}
	if p.recorded {
		return nil
	}
	p.ops = append(p.ops, op{kind: opBarrier, value: 1})
	p.d.mu.Lock()
	r := p.d.c.record(&p.c, p.ops, len(p.labels))
	p.d.mu.Unlock()
	if r != resSuccess {
		p.err = p.d.fail(r, "recording a command buffer")
		return p.err
	}
	p.recorded = true
	return nil
}

// Submit queues the recorded program; it must not be pending.
func (p *Program) Submit() error {
	if !p.recorded {
		if err := p.End(); err != nil {
			return err
		}
	}
	if p.pending {
		return fmt.Errorf("vk: program submitted while still running")
	}
	d := p.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lost.Load() {
		return d.errLost()
	}
	d.submits++
	if d.opt.LoseAfter > 0 && d.submits >= d.opt.LoseAfter {
		d.lost.Store(true)
		return fmt.Errorf("vk: submission %d (injected): %w", d.submits, ErrDeviceLost)
	}
	if r := d.c.submit(&p.c); r != resSuccess {
		return d.fail(r, "submitting work")
	}
	p.pending = true
	return nil
}

// Wait waits until the last submission has run; without one it returns at once.
func (p *Program) Wait() error {
	if !p.pending {
		if p.d.lost.Load() {
			return p.d.errLost()
		}
		return nil
	}
	p.pending = false
	if r := p.d.c.wait(&p.c); r != resSuccess {
		return p.d.fail(r, "waiting for the device")
	}
	if p.d.lost.Load() {
		return p.d.errLost()
	}
	return nil
}

// Run submits the program and waits for it.
func (p *Program) Run() error {
	if err := p.Submit(); err != nil {
		return err
	}
	return p.Wait()
}

// Times returns the time from each mark to the next of the last run (nil without marks).
func (p *Program) Times() ([]Span, error) {
	if len(p.labels) < 2 || p.pending {
		return nil, nil
	}
	p.d.mu.Lock()
	ts, r := p.d.c.queries(&p.c, len(p.labels))
	p.d.mu.Unlock()
	if r != resSuccess {
		return nil, p.d.fail(r, "reading timestamps")
	}
	mask := ^uint64(0)
	if b := p.d.info.TimestampBits; b < 64 {
		mask = 1<<b - 1
	}
	out := make([]Span, len(ts)-1)
	for i := range out {
		out[i] = Span{Label: p.labels[i], Nanos: float64((ts[i+1]-ts[i])&mask) * p.d.info.TimestampPeriod}
	}
	return out, nil
}

// Free releases the command buffer and descriptor sets, waiting for a pending run.
func (p *Program) Free() {
	if p == nil || p.d == nil {
		return
	}
	if p.pending {
		_ = p.Wait()
	}
	p.d.mu.Lock()
	defer p.d.mu.Unlock()
	if !p.d.closed {
		p.d.c.destroyProgram(&p.c)
	}
	p.d = nil
}
