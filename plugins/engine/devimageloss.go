package engine

import "amid/plugins/engine/vk"

// imageLossDev is an image loss's device state.
type imageLossDev struct {
	target, coef *vk.Buffer
	slot         int // value, l1, mean SSIM, Σ SSIM, Σ|y − t|
}

func (l *ImageLoss) devInit(dn *devNet) error {
	s := l.y.Shape
	_, _, _, _, _, P := l.dims()
	d := &imageLossDev{slot: dn.scalars(5)}
	var err error
	if d.target, err = dn.alloc(len(l.target)); err != nil {
		return err
	}
	if d.coef, err = dn.alloc(len(l.coef)); err != nil {
		return err
	}
	maps := s.N * s.C * s.D * P
	dn.needScratch(scratchBytes(maps, s.Len(), rowSumScratch(1, maps), rowSumScratch(1, s.Len())))
	dn.addFeed(feed{host: bytesOf(l.target), dst: vk.Binding{Buf: d.target, Size: int64(4 * len(l.target)), Write: true}, target: true})
	l.dv = d
	return nil
}

func (l *ImageLoss) devPass(r *rec, pass int, smap, amap vk.Binding) {
	s, d := l.y.Shape, l.dv
	H, W, k, _, _, P := l.dims()
	c1 := (0.01 * l.cfg.Range) * (0.01 * l.cfg.Range)
	c2 := (0.03 * l.cfg.Range) * (0.03 * l.cfg.Range)
	push := []uint32{u32(s.N), u32(s.C * s.D), u32(H), u32(W), u32(k), u32(l.y.off), u32(l.y.stride), u32(d.slot),
		f32(float32(c1)), f32(float32(c2)), f32(float32(l.cfg.L1)), f32(float32(l.cfg.SSIM)), b32(l.acc)}
	var groups [3]int
	dx := vk.W(r.dn.dummy)
	switch pass {
	case 0:
		groups = groups1(s.N*s.C*s.D*P, 256)
	case 2:
		groups = [3]int{1, 1, 1}
	case 3:
		dx = vk.W(l.y.dg)
		fallthrough
	default:
		groups = groups1(s.Len(), 256)
	}
	r.run(kImageLoss, []uint32{u32(pass)}, groups, push, vk.R(l.y.dd), vk.R(d.target), vk.W(d.coef), smap, amap, vk.W(r.dn.scal), dx)
}

func (l *ImageLoss) devForward(r *rec) {
	s := l.y.Shape
	_, _, _, _, _, P := l.dims()
	maps := s.N * s.C * s.D * P
	smap, amap := r.scratch(maps), r.scratch(s.Len())
	l.devPass(r, 0, smap, amap)
	l.devPass(r, 1, smap, amap)
	r.rowSums(smap, 0, maps, 1, 1, maps, vk.W(r.dn.scal), l.dv.slot+3, 1, 0)
	r.rowSums(amap, 0, s.Len(), 1, 1, s.Len(), vk.W(r.dn.scal), l.dv.slot+4, 1, 0)
	l.devPass(r, 2, smap, amap)
}

func (l *ImageLoss) devBackward(r *rec) {
	if l.y.needGrad {
		d := vk.W(r.dn.dummy)
		l.devPass(r, 3, d, d)
	}
}

func (l *ImageLoss) devValues(sc []float32) {
	s := l.dv.slot
	l.value, l.l1, l.sim = float64(sc[s]), float64(sc[s+1]), float64(sc[s+2])
}
