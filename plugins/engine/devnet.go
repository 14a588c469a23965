package engine

import (
	"fmt"
	"math"
	"unsafe"

	"amid/plugins/engine/vk"
)

// A network built on a [Vulkan] backend keeps everything a step touches in device memory:
// every root tensor's values and gradient get a buffer (a tensor that is part of a channel
// concatenation is a view into its root's, as on the CPU), the parameters and their
// gradients live in two arenas (decaying parameters first, each aligned for binding), and
// each layer allocates what it keeps between its passes (statistics, indices, loss
// coefficients). Scratch that only lives within one layer's pass (partial sums of split
// reductions) is one shared workspace. Host memory is kept only for what the caller fills
// (inputs, targets) or reads back. Shaders bind a tensor's whole root buffer and address
// its values by element offsets (a view's offset and sample stride) in push constants.
//
// Each layer records its forward and backward dispatches ([devLayer]); programs (the
// training step, inference, transfers) are assembled from those recordings once and
// replayed.

// devLayer is a layer with a Vulkan implementation.
type devLayer interface {
	// devInit allocates the layer's device state and declares its scratch and feeds.
	devInit(dn *devNet) error
	devForward(r *rec)
	devBackward(r *rec)
}

// devStateful is a layer with non-trainable state saved in checkpoints (batch norm): its
// host values and their device copies.
type devStateful interface {
	devState() []copyJob
}

// devLoss is a loss layer whose values come back from the device as scalars.
type devLoss interface {
	// devValues sets the layer's values from the scalars read back.
	devValues(sc []float32)
}

// Scalar slots every network has: the gradient norm and the clipping factor of the last
// step.
const (
	scNorm = iota
	scFactor
	scFirstFree
)

// Step values: the host writes them with each step's upload.
const (
	svLR = iota
	svC1
	svC2
	svFirst
	svMaxNorm
	svCount
)

// stepBytes is the size of the step block at the start of a staging buffer.
const stepBytes = 256

// devNet is the device side of a network.
type devNet struct {
	v *Vulkan
	d *vk.Device
	n *Net

	bufs          []*vk.Buffer
	params, grads *vk.Buffer
	arena         int64
	groups        [2][2]int64 // byte ranges of the decaying and the other parameters
	step, scal    *vk.Buffer
	nscal         int
	ws            *vk.Buffer
	wsBytes       int64
	dummy         *vk.Buffer
	feeds         []feed
	consts        []copyJob // constant tables, uploaded once
	stage         int64     // staging bytes: the step block and every feed
	bytes         int64
	// ahead says that a trainer has changed the parameters on the device since they were
	// last copied to or from the host.
	ahead bool
}

// feed is host memory uploaded before a pass: an input tensor's sample or a loss's
// targets.
type feed struct {
	host   func() []byte
	dst    vk.Binding
	soff   int64 // offset in a staging buffer
	target bool  // a training target, not needed for inference
}

// align256 rounds n up to a multiple of 256 bytes, the strictest storage-buffer offset
// alignment devices ask for.
func align256(n int64) int64 { return (n + 255) &^ 255 }

func newDevNet(v *Vulkan, n *Net) (dn *devNet, err error) {
	dn = &devNet{v: v, d: v.dev, n: n, nscal: scFirstFree, stage: stepBytes}
	defer func() {
		if err != nil {
			dn.free()
			dn = nil
		}
	}()
	// Parameter arenas: decaying parameters, then the others.
	var off int64
	for g, decay := range []bool{true, false} {
		dn.groups[g][0] = off
		for _, p := range n.params {
			if p.Decay == decay {
				p.aoff = off
				off += align256(int64(4 * len(p.Data)))
			}
		}
		dn.groups[g][1] = off
	}
	dn.arena = max(off, 256)
	if dn.params, err = dn.allocBytes(dn.arena); err != nil {
		return dn, err
	}
	if dn.grads, err = dn.allocBytes(dn.arena); err != nil {
		return dn, err
	}
	if dn.step, err = dn.allocBytes(stepBytes); err != nil {
		return dn, err
	}
	if dn.dummy, err = dn.allocBytes(256); err != nil {
		return dn, err
	}
	for _, t := range n.tensors {
		if t.root != nil {
			continue
		}
		if t.dd, err = dn.alloc(t.Shape.Len()); err != nil {
			return dn, err
		}
		if t.needGrad {
			if t.dg, err = dn.alloc(t.Shape.Len()); err != nil {
				return dn, err
			}
		}
	}
	for _, t := range n.tensors {
		if r := t.root; r != nil {
			t.dd, t.dg = r.dd, r.dg
		}
	}
	for _, l := range n.layers {
		dl, ok := l.(devLayer)
		if !ok {
			return dn, fmt.Errorf("%w: layer %s has no Vulkan implementation", ErrNotOnDevice, describe(l))
		}
		if err := dl.devInit(dn); err != nil {
			return dn, err
		}
	}
	// Inputs: host memory the caller fills, uploaded sample by sample (a side input is
	// part of a concatenation).
	for _, t := range n.tensors {
		if !t.input {
			continue
		}
		r := t.owner()
		if r.Data == nil {
			r.Data = make([]float32, r.Shape.Len())
		}
		t.Data = r.Data
		for s := range t.Shape.N {
			o := t.off + s*t.stride
			dn.addFeed(feed{host: bytesOf(t.Data[o : o+t.Shape.Sample()]), dst: vk.Binding{Buf: t.dd, Off: int64(4 * o), Size: int64(4 * t.Shape.Sample()), Write: true}})
		}
	}
	dn.needScratch(scratchBytes(rowSumScratch(1, int(dn.arena/4)))) // the gradient norm
	if dn.scal, err = dn.alloc(dn.nscal); err != nil {
		return dn, err
	}
	if dn.wsBytes > 0 {
		if dn.ws, err = dn.allocBytes(dn.wsBytes); err != nil {
			return dn, err
		}
	}
	// Zero every buffer (padding must stay zero, labels in range), then upload the
	// parameters and the layers' state.
	if err := dn.pushParams(nil, true); err != nil {
		return dn, err
	}
	n.bytes = dn.bytes
	return dn, nil
}

// addFeed places f in the staging layout.
func (dn *devNet) addFeed(f feed) {
	f.soff = dn.stage
	dn.stage += align256(f.dst.Size)
	dn.feeds = append(dn.feeds, f)
}

// bytesOf returns a function giving s's memory as bytes (float32 values or int32 labels).
func bytesOf[T float32 | int32](s []T) func() []byte {
	return func() []byte {
		if len(s) == 0 {
			return nil
		}
		return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))
	}
}

// alloc allocates n float32 values of device memory owned by the network.
func (dn *devNet) alloc(n int) (*vk.Buffer, error) { return dn.allocBytes(int64(4 * max(n, 1))) }

func (dn *devNet) allocBytes(n int64) (*vk.Buffer, error) {
	b, err := dn.d.Alloc(n)
	if err != nil {
		return nil, fmt.Errorf("engine: network of %d MiB on %s: %w", dn.bytes>>20, dn.d.Info().Name, err)
	}
	dn.bufs = append(dn.bufs, b)
	dn.bytes += b.Size()
	return b, nil
}

// scalars reserves n scalar slots and returns the first.
func (dn *devNet) scalars(n int) int {
	s := dn.nscal
	dn.nscal += n
	return s
}

// needScratch declares that one of a layer's passes uses up to n bytes of workspace.
func (dn *devNet) needScratch(n int64) { dn.wsBytes = max(dn.wsBytes, n) }

// free releases every device buffer of the network.
func (dn *devNet) free() {
	for _, b := range dn.bufs {
		b.Free()
	}
	dn.bufs = nil
}

// Free releases a network's device memory (nothing on the CPU). The network must not be
// used afterwards.
func (n *Net) Free() {
	if n.dev != nil {
		n.dev.free()
		n.dev = nil
	}
}

// DeviceBytes is the device memory a network on a Vulkan device holds (0 on the CPU).
func (n *Net) DeviceBytes() int64 {
	if n.dev == nil {
		return 0
	}
	return n.dev.bytes
}

// Param bindings.
func (dn *devNet) pdata(p *Param) vk.Binding {
	return vk.Binding{Buf: dn.params, Off: p.aoff, Size: int64(4 * len(p.Data))}
}

func (dn *devNet) pgrad(p *Param) vk.Binding {
	return vk.Binding{Buf: dn.grads, Off: p.aoff, Size: int64(4 * len(p.Data)), Write: true}
}

// rec records a program: the layers' dispatches with their pipelines and scratch.
type rec struct {
	dn       *devNet
	p        *vk.Program
	err      error
	scr      int64 // next free workspace byte of the current layer's pass
	training bool
	prof     bool
}

func (dn *devNet) newRec(prof bool) (*rec, error) {
	p, err := dn.d.NewProgram()
	if err != nil {
		return nil, err
	}
	return &rec{dn: dn, p: p, training: true, prof: prof}, nil
}

func (r *rec) fail(err error) {
	if r.err == nil && err != nil {
		r.err = err
	}
}

// run dispatches kernel k.
func (r *rec) run(k kernel, spec []uint32, groups [3]int, push []uint32, binds ...vk.Binding) {
	if r.err != nil {
		return
	}
	pl, err := r.dn.v.pipeline(k, spec...)
	if err != nil {
		r.fail(err)
		return
	}
	if len(push) != k.words {
		r.fail(fmt.Errorf("engine: kernel %s given %d push words, it takes %d", k.name, len(push), k.words))
		return
	}
	r.p.Dispatch(pl, groups, push, binds...)
}

// scratch takes n float32 values of the workspace for the current pass.
func (r *rec) scratch(n int) vk.Binding {
	b := int64(4 * max(n, 1))
	off := r.scr
	r.scr += align256(b)
	if r.scr > r.dn.wsBytes {
		r.fail(fmt.Errorf("engine: a layer took %d bytes of a workspace of %d", r.scr, r.dn.wsBytes))
		return vk.Binding{Buf: r.dn.dummy}
	}
	return vk.Binding{Buf: r.dn.ws, Off: off, Size: b, Write: true}
}

// mark adds a profiling timestamp.
func (r *rec) mark(label string) {
	if r.prof {
		r.p.Mark(label)
	}
}

// end finishes the program.
func (r *rec) end() (*vk.Program, error) {
	if r.err == nil {
		r.err = r.p.End()
	}
	if r.err != nil {
		r.p.Free()
		return nil, r.err
	}
	return r.p, nil
}

// upload copies the step block and the feeds (without targets unless asked) from a
// staging buffer laid out as dn.stage says.
func (r *rec) upload(stage *vk.Buffer, targets bool) {
	r.p.Copy(vk.W(r.dn.step), vk.R(stage), stepBytes)
	for _, f := range r.dn.feeds {
		if f.target && !targets {
			continue
		}
		r.p.Copy(f.dst, vk.Binding{Buf: stage, Off: f.soff}, f.dst.Size)
	}
}

// fillStage writes the feeds' host memory (and the step values) into a staging buffer.
func (dn *devNet) fillStage(stage *vk.Buffer, step []float32, targets bool) {
	h := stage.Host()
	for i, v := range step {
		putF32(h[4*i:], v)
	}
	for _, f := range dn.feeds {
		if f.target && !targets {
			continue
		}
		copy(h[f.soff:f.soff+f.dst.Size], f.host())
	}
}

func putF32(b []byte, v float32) {
	u := math.Float32bits(v)
	b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}

// zeroGrads clears the gradients that every consumer adds to (views into
// concatenations).
func (r *rec) zeroGrads() {
	for _, t := range r.dn.n.zeroT {
		r.p.Fill(vk.W(t.dg), 0)
	}
}

// forward records layers [lo, hi).
func (r *rec) forward(lo, hi int) {
	for i := lo; i < hi; i++ {
		l := r.dn.n.layers[i]
		r.scr = 0
		r.mark("fwd " + describe(l))
		l.(devLayer).devForward(r)
	}
}

// backward records the backward passes of layers hi−1 … lo.
func (r *rec) backward(hi, lo int) {
	for i := hi - 1; i >= lo; i-- {
		l := r.dn.n.layers[i]
		r.scr = 0
		r.mark("bwd " + describe(l))
		l.(devLayer).devBackward(r)
	}
}

// groups1 is the workgroup count of a grid-stride kernel over n values with wg per group.
func groups1(n, wg int) [3]int { return [3]int{min(max((n+wg-1)/wg, 1), 65535), 1, 1} }

// tiles spreads t workgroups over x and y (x at most 65535).
func tiles(t, z int) [3]int {
	x := min(max(t, 1), 65535)
	return [3]int{x, (t + x - 1) / x, z}
}

func u32(v int) uint32     { return uint32(int32(v)) }
func f32(v float32) uint32 { return math.Float32bits(v) }
func b32(v bool) uint32 {
	if v {
		return 1
	}
	return 0
}

// eltwise records z = ax·x (+ ay·y) (+ z when acc) over n samples of len values.
func (r *rec) eltwise(n, length int, x *vk.Buffer, xoff, xstride int, ax float32,
	y *vk.Buffer, yoff, ystride int, ay float32, z *vk.Buffer, zoff, zstride int, acc bool) {
	useY := y != nil
	if !useY {
		y = x
	}
	r.run(kEltwise, []uint32{256}, groups1(n*length, 256), []uint32{u32(n), u32(length), u32(xoff), u32(xstride),
		u32(yoff), u32(ystride), u32(zoff), u32(zstride), f32(ax), f32(ay), b32(useY), b32(acc)},
		vk.R(x), vk.R(y), vk.W(z))
}
