package engine

import "amid/plugins/engine/vk"

// Normalisation with LeakyReLU on the device (shaders/norm.comp): two-pass statistics in
// fixed-order chunks, the output, and the backward pass's sums, input gradient and
// parameter gradients (rows added in order per channel).

// normChunk is the values per workgroup of norm.comp.
const normChunk = 4096

// normDev is a norm layer's device state.
type normDev struct {
	stats, dgb, run *vk.Buffer
	rows, length    int // rows and values per row
	nch             int
}

func (l *norm) devInit(dn *devNet) error {
	s := l.x.Shape
	d := &normDev{rows: len(l.mean), length: s.Spatial()}
	if l.kind == Batch {
		d.length *= s.N
	}
	d.nch = max((d.length+normChunk-1)/normChunk, 1)
	var err error
	if d.stats, err = dn.alloc(2 * d.rows); err != nil {
		return err
	}
	if d.dgb, err = dn.alloc(2 * d.rows); err != nil {
		return err
	}
	if d.run, err = dn.alloc(2 * s.C); err != nil {
		return err
	}
	dn.needScratch(scratchBytes(2 * d.rows * d.nch))
	l.dv = d
	return nil
}

// devState: the running statistics of batch norm, saved with the parameters.
func (l *norm) devState() []copyJob {
	if l.runMean == nil {
		return nil
	}
	C := int64(4 * len(l.runMean))
	return []copyJob{
		{l.runMean, vk.Binding{Buf: l.dv.run, Size: C, Write: true}},
		{l.runVar, vk.Binding{Buf: l.dv.run, Off: C, Size: C, Write: true}},
	}
}

// Flags of norm.comp.
const (
	nfInstance = 1
	nfTraining = 2
	nfAccX     = 4
	nfNeedX    = 8
)

func (l *norm) devPass(r *rec, pass int, part vk.Binding, flags int) {
	d, s := l.dv, l.x.Shape
	if l.kind == Instance {
		flags |= nfInstance
	}
	push := []uint32{u32(s.N), u32(s.C), u32(s.Spatial()), u32(d.rows), u32(l.x.off), u32(l.x.stride), u32(l.y.off), u32(l.y.stride),
		normChunk, u32(d.nch), u32(flags), f32(l.k1()), f32(l.eps)}
	groups := [3]int{d.nch, min(d.rows, 65535), (d.rows + 65534) / 65535}
	if pass == 5 {
		groups = groups1(s.C, 256)
	}
	dx, dy := vk.R(r.dn.dummy), vk.R(r.dn.dummy)
	if pass >= 3 {
		dy = vk.R(l.y.dg)
		if l.x.needGrad {
			dx = vk.W(l.x.dg)
		}
	}
	gg, gb := vk.W(r.dn.dummy), vk.W(r.dn.dummy)
	if pass == 5 {
		gg, gb = r.dn.pgrad(l.gamma), r.dn.pgrad(l.beta)
	}
	r.run(kNorm, []uint32{u32(pass)}, groups, push, vk.R(l.x.dd), vk.W(l.y.dd), dy, dx, r.dn.pdata(l.gamma), r.dn.pdata(l.beta),
		vk.W(d.stats), part, vk.W(d.run), vk.W(d.dgb), gg, gb)
}

func (l *norm) devForward(r *rec) {
	flags := 0
	if r.training {
		flags |= nfTraining
	}
	part := r.scratch(2 * l.dv.rows * l.dv.nch)
	if l.kind == Instance || r.training {
		l.devPass(r, 0, part, flags)
		l.devPass(r, 1, part, flags)
	}
	l.devPass(r, 2, part, flags)
}

func (l *norm) devBackward(r *rec) {
	flags := nfTraining
	if l.accX {
		flags |= nfAccX
	}
	if l.x.needGrad {
		flags |= nfNeedX
	}
	part := r.scratch(2 * l.dv.rows * l.dv.nch)
	l.devPass(r, 3, part, flags)
	l.devPass(r, 4, part, flags)
	l.devPass(r, 5, part, flags)
}
