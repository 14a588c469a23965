package engine

import (
	"fmt"

	"amid/plugins/engine/vk"
)

// Loss layers on the device: softmax with cross-entropy and Dice, the classification
// heads' cross-entropy, the regression loss, the image loss, and an Objective computed on
// the host between two device programs. Each writes its value into the network's scalars,
// which come back with every step.

// lossChunk is the voxels per workgroup of the loss reductions.
const lossChunk = 4096

// lossDev is a softmax loss's device state.
type lossDev struct {
	labels, prob, ce, coef *vk.Buffer
	nch, slot              int
}

func (l *Loss) devInit(dn *devNet) error {
	s := l.x.Shape
	d := &lossDev{nch: max((s.Spatial()+lossChunk-1)/lossChunk, 1), slot: dn.scalars(1)}
	var err error
	for _, b := range []struct {
		p *(*vk.Buffer)
		n int
	}{{&d.labels, s.N * s.Spatial()}, {&d.prob, s.Len()}, {&d.ce, s.N * s.Spatial()}, {&d.coef, 2 * s.N * s.C}} {
		if *b.p, err = dn.alloc(b.n); err != nil {
			return err
		}
	}
	dn.needScratch(scratchBytes(3 * s.N * s.C * d.nch))
	dn.addFeed(feed{host: bytesOf(l.labels), dst: vk.Binding{Buf: d.labels, Size: int64(4 * len(l.labels)), Write: true}, target: true})
	l.dv = d
	return nil
}

func (l *Loss) devPass(r *rec, pass int, part vk.Binding) {
	s, d := l.x.Shape, l.dv
	push := []uint32{u32(s.N), u32(s.C), u32(s.Spatial()), u32(l.x.off), u32(l.x.stride), lossChunk, u32(d.nch), u32(d.slot),
		f32(float32(l.wCE)), f32(float32(l.wDice)), b32(l.acc)}
	groups := groups1(s.N*s.Spatial(), 256)
	switch pass {
	case 1:
		rows := s.N * s.C
		groups = [3]int{d.nch, min(rows, 65535), (rows + 65534) / 65535}
	case 2:
		groups = [3]int{1, 1, 1}
	}
	dx := vk.W(r.dn.dummy)
	if pass == 3 {
		dx = vk.W(l.x.dg)
	}
	r.run(kSoftmax, []uint32{u32(pass)}, groups, push, vk.R(l.x.dd), vk.R(d.labels), vk.W(d.prob), vk.W(d.ce), part, vk.W(d.coef), vk.W(r.dn.scal), dx)
}

func (l *Loss) devForward(r *rec) {
	part := r.scratch(3 * l.x.Shape.N * l.x.Shape.C * l.dv.nch)
	l.devPass(r, 0, part)
	l.devPass(r, 1, part)
	l.devPass(r, 2, part)
}

func (l *Loss) devBackward(r *rec) {
	if l.x.needGrad {
		l.devPass(r, 3, vk.R(r.dn.dummy))
	}
}

func (l *Loss) devValues(sc []float32) { l.value = float64(sc[l.dv.slot]) }

// headLossDev is a head loss's device state.
type headLossDev struct {
	labels, weights, info, prob, st *vk.Buffer
	slot                            int
}

func (l *HeadLoss) devInit(dn *devNet) error {
	C, H := l.x.Shape.C, len(l.heads)
	d := &headLossDev{slot: dn.scalars(1)}
	w := make([]uint32, C)
	info := make([]uint32, 4*C)
	for h, k := range l.heads {
		for c := range k {
			w[l.off[h]+c] = f32(float32(l.weights[h][c]))
			info[4*(l.off[h]+c)], info[4*(l.off[h]+c)+1], info[4*(l.off[h]+c)+2] = u32(h), u32(l.off[h]), u32(k)
		}
	}
	var err error
	if d.weights, err = dn.table(w); err != nil {
		return err
	}
	if d.info, err = dn.table(info); err != nil {
		return err
	}
	if d.labels, err = dn.alloc(len(l.labels)); err != nil {
		return err
	}
	if d.prob, err = dn.alloc(len(l.prob)); err != nil {
		return err
	}
	if d.st, err = dn.alloc(H + 1); err != nil {
		return err
	}
	dn.addFeed(feed{host: bytesOf(l.labels), dst: vk.Binding{Buf: d.labels, Size: int64(4 * len(l.labels)), Write: true}, target: true})
	l.dv = d
	return nil
}

func (l *HeadLoss) devPass(r *rec, pass int) {
	s, d := l.x.Shape, l.dv
	push := []uint32{u32(s.N), u32(s.C), u32(len(l.heads)), u32(l.x.off), u32(l.x.stride), u32(d.slot), b32(l.acc)}
	groups, dx := [3]int{1, 1, 1}, vk.W(r.dn.dummy)
	if pass == 1 {
		groups, dx = groups1(s.N*s.C, 256), vk.W(l.x.dg)
	}
	r.run(kHeadLoss, []uint32{u32(pass)}, groups, push, vk.R(l.x.dd), vk.R(d.labels), vk.R(d.weights), vk.R(d.info), vk.W(d.prob), vk.W(d.st), vk.W(r.dn.scal), dx)
}

func (l *HeadLoss) devForward(r *rec) { l.devPass(r, 0) }

func (l *HeadLoss) devBackward(r *rec) {
	if l.x.needGrad {
		l.devPass(r, 1)
	}
}

func (l *HeadLoss) devValues(sc []float32) { l.value = float64(sc[l.dv.slot]) }

// regLossDev is a regression loss's device state.
type regLossDev struct {
	targets, grad *vk.Buffer
	host          []float32 // the targets as uploaded
	slot          int       // value, then the three terms
}

func (l *RegressionLoss) devInit(dn *devNet) error {
	N := l.x.Shape.N
	d := &regLossDev{host: make([]float32, N), slot: dn.scalars(4)}
	var err error
	if d.targets, err = dn.alloc(N); err != nil {
		return err
	}
	if d.grad, err = dn.alloc(N); err != nil {
		return err
	}
	dn.addFeed(feed{host: bytesOf(d.host), dst: vk.Binding{Buf: d.targets, Size: int64(4 * N), Write: true}, target: true})
	l.dv = d
	return nil
}

func (l *RegressionLoss) devPass(r *rec, pass int) {
	d := l.dv
	push := []uint32{u32(l.x.Shape.N), u32(l.x.off), u32(l.x.stride), u32(d.slot), b32(l.acc),
		f32(float32(l.w.MSE)), f32(float32(l.w.Rank)), f32(float32(l.w.Corr)), f32(float32(l.w.Temp))}
	groups, dx := [3]int{1, 1, 1}, vk.W(r.dn.dummy)
	if pass == 1 {
		groups, dx = groups1(l.x.Shape.N, 256), vk.W(l.x.dg)
	}
	r.run(kRegLoss, []uint32{u32(pass)}, groups, push, vk.R(l.x.dd), vk.R(d.targets), vk.W(d.grad), vk.W(r.dn.scal), dx)
}

func (l *RegressionLoss) devForward(r *rec) { l.devPass(r, 0) }

func (l *RegressionLoss) devBackward(r *rec) {
	if l.x.needGrad {
		l.devPass(r, 1)
	}
}

func (l *RegressionLoss) devValues(sc []float32) {
	s := l.dv.slot
	l.value = float64(sc[s])
	l.terms = [3]float64{float64(sc[s+1]), float64(sc[s+2]), float64(sc[s+3])}
}

// objectiveDev is an Objective's device state: the gradient the host computed.
type objectiveDev struct{ grad *vk.Buffer }

func (o *Objective) devInit(dn *devNet) error {
	if dn.n.layers[len(dn.n.layers)-1] != layer(o) {
		return fmt.Errorf("%w: an objective must be the last layer", ErrNotOnDevice)
	}
	b, err := dn.alloc(len(o.grad))
	if err != nil {
		return err
	}
	o.dv = &objectiveDev{grad: b}
	return nil
}

// The objective's function runs on the host between two programs (Trainer); on the
// device its forward pass is the read-back of its input, recorded by the trainer.
func (o *Objective) devForward(*rec) {}

func (o *Objective) devBackward(r *rec) {
	if !o.x.needGrad {
		return
	}
	s := o.x.Shape
	r.eltwise(s.N, s.Sample(), o.dv.grad, 0, s.Sample(), float32(1/float64(s.N)), nil, 0, 0, 0, o.x.dg, o.x.off, o.x.stride, o.acc)
}
