package engine

import (
	"fmt"
	"math"

	"amid/plugins/engine/vk"
)

// WindowJob is one window of a sliding-window pass: its origin in the image (X, Y, Z;
// negative where the image is smaller than the patch) and the axes its patch is flipped
// along (bit a for axis a, test-time augmentation).
type WindowJob struct {
	Lo   [3]int
	Flip int
}

// Windows runs sliding-window inference of a network on a Vulkan device with the image in
// device memory: each batch of windows is cut out of it (flipped), run through the
// network, and its outputs, flipped back and weighted, are summed into the image's sums
// there; only the image goes up and the averaged outputs come back (package infer's
// WindowNet drives it). Sums are float32, added slot by slot in the jobs' order, so runs
// repeat bit for bit.
type Windows struct {
	dn      *devNet
	in      *Tensor
	out     *vk.Buffer
	outOff  int
	outStr  int
	B, C, K int
	P       [3]int // X, Y, Z
	wt      *vk.Buffer
	inv     float32

	dims                [3]int // the image size the buffers below are for
	img, num, den, jobs *vk.Buffer
	imgUp, jobsUp, back *vk.Buffer
	prep, batch, fin    *vk.Program
	training            bool
}

// NewWindows prepares sliding windows of net (on a Vulkan device) whose input is in (B
// patches of C channels, D×H×W = Z×Y×X) and whose output is out (a contiguous tensor or a
// softmax loss's probabilities: K planes per patch); weights are the patch's voxel
// weights (X fastest) and flips the number of flips of each window, whose mean is taken.
// Like NewPredictor it uploads the host parameters unless a trainer left newer ones.
func NewWindows(net *Net, in *Tensor, out Output, weights []float32, flips int) (*Windows, error) {
	dn := net.dev
	if dn == nil {
		return nil, fmt.Errorf("%w: device windows need a network on a Vulkan device", ErrConfig)
	}
	if !in.input || in.root != nil {
		return nil, fmt.Errorf("%w: device windows need the network's input tensor", ErrConfig)
	}
	s := in.Shape
	w := &Windows{dn: dn, in: in, B: s.N, C: s.C, P: [3]int{s.W, s.H, s.D}}
	PN := s.Spatial()
	switch o := out.(type) {
	case *Tensor:
		if !o.Contiguous() || o.Shape.N != s.N || o.Shape.Spatial() != PN {
			return nil, fmt.Errorf("%w: window output %v for input %v", ErrConfig, o.Shape, s)
		}
		w.out, w.outOff, w.outStr, w.K = o.owner().dd, o.off, o.stride, o.Shape.C
	case *Loss:
		if o.x.Shape.N != s.N || o.x.Shape.Spatial() != PN {
			return nil, fmt.Errorf("%w: window output %v for input %v", ErrConfig, o.x.Shape, s)
		}
		w.out, w.outStr, w.K = o.dv.prob, o.x.Shape.Sample(), o.x.Shape.C
	default:
		return nil, fmt.Errorf("%w: window output %T is not a tensor or a softmax loss", ErrConfig, out)
	}
	if len(weights) != PN || flips < 1 || flips&(flips-1) != 0 {
		return nil, fmt.Errorf("%w: %d weights for %d voxels, %d flips", ErrConfig, len(weights), PN, flips)
	}
	w.inv = 1 / float32(flips)
	bits := make([]uint32, PN)
	for i, v := range weights {
		bits[i] = math.Float32bits(v)
	}
	var err error
	if w.wt, err = dn.table(bits); err != nil {
		return nil, err
	}
	if err := dn.transfer(dn.consts[len(dn.consts)-1:], true, false, nil); err != nil {
		return nil, err
	}
	if !dn.ahead {
		if err := dn.pushParams(nil, false); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// push is the window shader's push constants for pass slot.
func (w *Windows) push(slot int) []uint32 {
	return []uint32{u32(w.dims[0]), u32(w.dims[1]), u32(w.dims[2]), u32(w.P[0]), u32(w.P[1]), u32(w.P[2]),
		u32(w.C), u32(w.K), u32(w.B), u32(w.in.off), u32(w.in.stride), u32(w.outOff), u32(w.outStr), u32(slot), f32(w.inv)}
}

// size prepares buffers and programs for images of dims.
func (w *Windows) size(dims [3]int, training bool) error {
	if dims == w.dims && training == w.training && w.batch != nil {
		return nil
	}
	w.free()
	w.dims, w.training = dims, training
	d := w.dn.d
	N := dims[0] * dims[1] * dims[2]
	var err error
	alloc := func(b **vk.Buffer, n int) {
		if err == nil {
			*b, err = d.Alloc(int64(4 * max(n, 1)))
		}
	}
	alloc(&w.img, w.C*N)
	alloc(&w.num, w.K*N)
	alloc(&w.den, N)
	alloc(&w.jobs, 4*w.B)
	host := func(b **vk.Buffer, n int, readback bool) {
		if err == nil {
			*b, err = d.AllocHost(int64(4*max(n, 1)), readback)
		}
	}
	host(&w.imgUp, w.C*N, false)
	host(&w.jobsUp, 4*w.B, false)
	host(&w.back, w.K*N, true)
	if err != nil {
		return fmt.Errorf("engine: windows over an image of %v voxels: %w", dims, err)
	}
	dummy := vk.R(w.dn.dummy)
	binds := func(in vk.Binding) []vk.Binding {
		return []vk.Binding{vk.R(w.img), vk.R(w.jobs), in, vk.R(w.out), vk.R(w.wt), vk.W(w.num), vk.W(w.den)}
	}
	// prep: the image up, the sums cleared.
	if w.prep, err = d.NewProgram(); err != nil {
		return err
	}
	w.prep.Copy(vk.W(w.img), vk.R(w.imgUp), int64(4*w.C*N))
	w.prep.Fill(vk.W(w.num), 0)
	w.prep.Fill(vk.W(w.den), 0)
	if err := w.prep.End(); err != nil {
		return err
	}
	// batch: the jobs up, cut, forward, add slot by slot.
	r, err := w.dn.newRec(false)
	if err != nil {
		return err
	}
	r.training = training
	r.p.Copy(vk.W(w.jobs), vk.R(w.jobsUp), int64(16*w.B))
	r.run(kWindow, []uint32{0}, groups1(w.B*w.C*w.P[0]*w.P[1]*w.P[2], 256), w.push(0), binds(vk.W(w.in.dd))...)
	L := len(w.dn.n.layers)
	if _, ok := w.dn.n.layers[L-1].(*Objective); ok {
		L--
	}
	r.forward(0, L)
	for s := range w.B {
		r.run(kWindow, []uint32{1}, groups1(w.P[0]*w.P[1]*w.P[2], 256), w.push(s), binds(dummy)...)
	}
	if w.batch, err = r.end(); err != nil {
		return err
	}
	// fin: the mean, back to the host.
	r, err = w.dn.newRec(false)
	if err != nil {
		return err
	}
	r.run(kWindow, []uint32{2}, groups1(w.K*N, 256), w.push(0), binds(dummy)...)
	r.p.Copy(vk.W(w.back), vk.R(w.num), int64(4*w.K*N))
	w.fin, err = r.end()
	return err
}

// Run predicts img (C planes of dims X·Y·Z) over the windows in jobs, in batches of the
// network's batch size in the jobs' order, and returns K planes: each voxel's weighted
// mean of the outputs of the windows covering it (voxels no window covers are NaN).
func (w *Windows) Run(img []float32, dims [3]int, jobs []WindowJob) ([]float32, error) {
	N := dims[0] * dims[1] * dims[2]
	if len(img) != w.C*N || N <= 0 {
		return nil, fmt.Errorf("engine: windows: image of %d values for %d channels of %v voxels", len(img), w.C, dims)
	}
	if err := w.size(dims, w.dn.n.training); err != nil {
		return nil, err
	}
	copy(floats(w.imgUp.Host()), img)
	if err := w.prep.Run(); err != nil {
		return nil, err
	}
	js := w.jobsUp.Host()
	for b0 := 0; b0 < len(jobs); b0 += w.B {
		for s := range w.B {
			v := [4]int32{}
			if j := b0 + s; j < len(jobs) {
				job := jobs[j]
				v = [4]int32{int32(job.Lo[0]), int32(job.Lo[1]), int32(job.Lo[2]), int32(job.Flip&7 | 1<<8)}
			}
			for i, x := range v {
				putF32(js[16*s+4*i:], math.Float32frombits(uint32(x)))
			}
		}
		if err := w.batch.Run(); err != nil {
			return nil, err
		}
	}
	if err := w.fin.Run(); err != nil {
		return nil, err
	}
	out := make([]float32, w.K*N)
	copy(out, floats(w.back.Host()))
	return out, nil
}

// Close releases the windows' programs and buffers.
func (w *Windows) Close() {
	w.free()
	w.wt = nil
}

func (w *Windows) free() {
	for _, p := range []*vk.Program{w.prep, w.batch, w.fin} {
		p.Free()
	}
	for _, b := range []*vk.Buffer{w.img, w.num, w.den, w.jobs, w.imgUp, w.jobsUp, w.back} {
		b.Free()
	}
	w.prep, w.batch, w.fin = nil, nil, nil
	w.img, w.num, w.den, w.jobs, w.imgUp, w.jobsUp, w.back = nil, nil, nil, nil, nil, nil, nil
}
