package engine

import (
	"fmt"

	"amid/plugins/engine/vk"
)

// Max-pooling, global average pooling, dense layers and residual sums on the device.
// Concatenations need nothing: the parts are views into their root's buffers there too.

// maxPoolDev is a max-pool's device state: per output, the offset of its window's
// maximum.
type maxPoolDev struct{ idx *vk.Buffer }

func (l *maxPool) devInit(dn *devNet) error {
	b, err := dn.alloc(l.y.Shape.Len())
	if err != nil {
		return err
	}
	l.dv = &maxPoolDev{idx: b}
	return nil
}

func (l *maxPool) push(acc bool) []uint32 {
	in, out := l.x.Shape.dims(), l.y.Shape.dims()
	return []uint32{u32(l.x.Shape.N), u32(l.x.Shape.C), u32(in[0]), u32(in[1]), u32(in[2]), u32(out[0]), u32(out[1]), u32(out[2]),
		u32(l.k[0]), u32(l.k[1]), u32(l.k[2]), u32(l.x.off), u32(l.x.stride), u32(l.y.off), u32(l.y.stride), b32(acc)}
}

func (l *maxPool) devForward(r *rec) {
	d := r.dn.dummy
	r.run(kMaxPool, []uint32{0}, groups1(l.y.Shape.Len(), 256), l.push(false), vk.R(l.x.dd), vk.W(l.y.dd), vk.W(l.dv.idx), vk.R(d), vk.W(d))
}

func (l *maxPool) devBackward(r *rec) {
	if !l.x.needGrad {
		return
	}
	d := r.dn.dummy
	r.run(kMaxPool, []uint32{1}, groups1(l.x.Shape.Len(), 256), l.push(l.accX), vk.R(d), vk.W(d), vk.W(l.dv.idx), vk.R(l.y.dg), vk.W(l.x.dg))
}

// contiguous checks that a layer's output has no gaps between samples (gap and dense
// write their per-sample rows with the sample stride of a plain tensor).
func contiguous(t *Tensor, what string) error {
	if !t.Contiguous() {
		return fmt.Errorf("%w: %s output %v inside a concatenation is not supported", ErrNotOnDevice, what, t.Shape)
	}
	return nil
}

func (l *gap) devInit(dn *devNet) error {
	dn.needScratch(scratchBytes(rowSumScratch(l.x.Shape.N*l.x.Shape.C, l.x.Shape.Spatial())))
	return contiguous(l.y, "global average pool")
}

func (l *gap) devForward(r *rec) {
	s := l.x.Shape
	r.rowSums(vk.R(l.x.dd), l.x.off, l.x.stride, s.N, s.C, s.Spatial(), vk.W(l.y.dd), 0, 1/float32(s.Spatial()), rsPerSample)
}

func (l *gap) devBackward(r *rec) {
	if !l.x.needGrad {
		return
	}
	s := l.x.Shape
	r.run(kBcast, nil, groups1(s.Len(), 256), []uint32{u32(s.N), u32(s.C), u32(s.Spatial()), u32(l.y.off), u32(l.y.stride),
		u32(l.x.off), u32(l.x.stride), f32(1 / float32(s.Spatial())), b32(l.accX)}, vk.R(l.y.dg), vk.W(l.x.dg))
}

// denseDev is a dense layer's device state.
type denseDev struct{ fwd, dw, dx gemmCfg }

func (l *dense) devInit(dn *devNet) error {
	N, in, out := l.x.Shape.N, l.x.Shape.Sample(), l.y.Shape.C
	l.dv = &denseDev{fwd: chooseGemm(N, out), dw: chooseGemm(out, in), dx: chooseGemm(N, in)}
	dn.needScratch(scratchBytes(rowSumScratch(out, N)))
	return contiguous(l.y, "dense")
}

func (l *dense) devForward(r *rec) {
	N, in, out := l.x.Shape.N, l.x.Shape.Sample(), l.y.Shape.C
	a := gemmArgs{M: N, N: out, K: in, flags: gemmBias, aoff: l.x.off, ars: l.x.stride, acs: 1, brs: 1, bcs: in,
		coff: l.y.off, crs: l.y.stride, ccs: 1}
	r.gemm(gemmPlain, l.dv.fwd, a, 1, vk.R(l.x.dd), r.dn.pdata(l.w), vk.W(l.y.dd), r.dn.pdata(l.bias), vk.Binding{})
}

func (l *dense) devBackward(r *rec) {
	N, in, out := l.x.Shape.N, l.x.Shape.Sample(), l.y.Shape.C
	a := gemmArgs{M: out, N: in, K: N, aoff: l.y.off, ars: 1, acs: l.y.stride, boff: l.x.off, brs: l.x.stride, bcs: 1, crs: in, ccs: 1}
	r.gemm(gemmPlain, l.dv.dw, a, 1, vk.R(l.y.dg), vk.R(l.x.dd), r.dn.pgrad(l.w), vk.Binding{}, vk.Binding{})
	r.rowSums(vk.R(l.y.dg), l.y.off, l.y.stride, N, out, 1, r.dn.pgrad(l.bias), 0, 1, 0)
	if l.x.needGrad {
		a := gemmArgs{M: N, N: in, K: out, aoff: l.y.off, ars: l.y.stride, acs: 1, brs: in, bcs: 1, coff: l.x.off, crs: l.x.stride, ccs: 1}
		if l.accX {
			a.flags = gemmAcc
		}
		r.gemm(gemmPlain, l.dv.dx, a, 1, vk.R(l.y.dg), r.dn.pdata(l.w), vk.W(l.x.dg), vk.Binding{}, vk.Binding{})
	}
}

func (l *add) devInit(*devNet) error { return nil }

func (l *add) devForward(r *rec) {
	s := l.x.Shape
	r.eltwise(s.N, s.Sample(), l.x.dd, l.x.off, l.x.stride, 1, l.y.dd, l.y.off, l.y.stride, 1, l.z.dd, l.z.off, l.z.stride, false)
}

func (l *add) devBackward(r *rec) {
	s := l.x.Shape
	// y was registered after x, so it runs first: with x = y it overwrites and x adds.
	if l.y.needGrad {
		r.eltwise(s.N, s.Sample(), l.z.dg, l.z.off, l.z.stride, 1, nil, 0, 0, 0, l.y.dg, l.y.off, l.y.stride, l.accY)
	}
	if l.x.needGrad {
		r.eltwise(s.N, s.Sample(), l.z.dg, l.z.off, l.z.stride, 1, nil, 0, 0, 0, l.x.dg, l.x.off, l.x.stride, l.accX)
	}
}
