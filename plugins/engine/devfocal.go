package engine

import (
	"fmt"

	"amid/plugins/engine/vk"
)

// focalDev is a focal loss's device state.
type focalDev struct {
	target, g, st *vk.Buffer
	slot          int
}

func (l *Focal) devInit(dn *devNet) error {
	if dn.n.layers[len(dn.n.layers)-1] != layer(l) {
		return fmt.Errorf("%w: a focal loss must be the last layer on a Vulkan device", ErrConfig)
	}
	s := l.x.Shape
	d := &focalDev{slot: dn.scalars(1)}
	var err error
	if d.target, err = dn.alloc(s.Len()); err != nil {
		return err
	}
	if d.g, err = dn.alloc(s.Len()); err != nil {
		return err
	}
	if d.st, err = dn.alloc(3 * s.N); err != nil {
		return err
	}
	dn.needScratch(scratchBytes(s.Len(), s.Len(), rowSumScratch(s.N, s.Sample()), rowSumScratch(s.N, s.Sample())))
	dn.addFeed(feed{host: bytesOf(l.target), dst: vk.Binding{Buf: d.target, Size: int64(4 * s.Len()), Write: true}, target: true})
	l.dv = d
	return nil
}

func (l *Focal) devPass(r *rec, pass int, lmap, pmap vk.Binding) {
	s, d := l.x.Shape, l.dv
	push := []uint32{u32(s.N), u32(s.Sample()), u32(l.x.off), u32(l.x.stride), u32(d.slot), b32(l.acc)}
	groups, dx := groups1(s.Len(), 256), vk.W(r.dn.dummy)
	switch pass {
	case 1:
		groups = [3]int{1, 1, 1}
	case 2:
		dx = vk.W(l.x.dg)
	}
	r.run(kFocal, []uint32{u32(pass)}, groups, push, vk.R(l.x.dd), vk.R(d.target), lmap, pmap, vk.W(d.g), vk.W(d.st), vk.W(r.dn.scal), dx)
}

func (l *Focal) devForward(r *rec) {
	s := l.x.Shape
	lmap, pmap := r.scratch(s.Len()), r.scratch(s.Len())
	l.devPass(r, 0, lmap, pmap)
	r.rowSums(lmap, 0, s.Sample(), s.N, 1, s.Sample(), vk.W(l.dv.st), 0, 1, rsPerSample)
	r.rowSums(pmap, 0, s.Sample(), s.N, 1, s.Sample(), vk.W(l.dv.st), s.N, 1, rsPerSample)
	l.devPass(r, 1, lmap, pmap)
}

func (l *Focal) devBackward(r *rec) {
	if l.x.needGrad {
		d := vk.W(r.dn.dummy)
		l.devPass(r, 2, d, d)
	}
}

func (l *Focal) devValues(sc []float32) { l.value = float64(sc[l.dv.slot]) }
