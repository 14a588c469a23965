package engine

import "amid/plugins/engine/vk"

// Convolutions on the device, as implicit GEMM (shaders/gemm.comp): the forward pass and
// a transposed convolution's input gradient gather the column matrix of the input while
// loading tiles; the input gradient of a convolution (and a transposed convolution's
// forward pass) gathers, for each input voxel, the output gradients its kernel offsets
// reach, so that every input voxel is written once (no scatter, no atomics); the weight
// gradient sums over samples and voxels in fixed chunks whose partials a second pass adds
// in order. A transposed convolution whose kernel equals its stride (a U-Net's
// up-sampling) runs one product per kernel offset instead, as its outputs do not overlap.

// convDev is a convolution's device state.
type convDev struct {
	kt, ktD       *vk.Buffer // gather tables: im2col of the input, input gradient
	fwd, dgr, wgr gemmCfg
	parts, chunk  int // weight-gradient split
	n, cin, cout  int
	P, Q, K       int // output voxels, input voxels per channel, im2col rows
}

// scratchBytes is the workspace of a list of scratch requests (float32 values each).
func scratchBytes(n ...int) int64 {
	var s int64
	for _, v := range n {
		s += align256(int64(4 * max(v, 1)))
	}
	return s
}

func (l *conv) devInit(dn *devNet) error {
	d := &convDev{n: l.x.Shape.N, cin: l.g.c, cout: l.y.Shape.C, P: l.g.outS(), Q: l.g.inS(), K: l.g.rows()}
	d.fwd = chooseGemm(d.cout, d.n*d.P)
	d.wgr = chooseGemm(d.cout, d.K)
	d.parts, d.chunk = splitK(d.cout, d.K, d.n*d.P, d.wgr)
	var err error
	if d.kt, err = dn.table(ktabIm2col(&l.g)); err != nil {
		return err
	}
	var scr []int
	if d.parts > 1 {
		scr = append(scr, d.parts*d.cout*d.K)
	}
	if l.bias != nil {
		scr = append(scr, rowSumScratch(d.cout, d.n*d.P))
	}
	if l.x.needGrad {
		d.dgr = chooseGemm(d.cin, d.n*d.Q)
		if d.ktD, err = dn.table(ktabDgrad(d.cout, d.cin, l.g.k, d.P)); err != nil {
			return err
		}
	}
	dn.needScratch(scratchBytes(scr...))
	l.dv = d
	return nil
}

func (l *conv) devForward(r *rec) {
	d, g := l.dv, l.g
	a := gemmArgs{M: d.cout, N: d.n * d.P, K: d.K, boff: l.x.off, brs: l.x.stride, coff: l.y.off, crs: l.y.stride,
		in: g.in, out: g.out, s: g.s, p: g.p, kk: g.kk()}
	var bias vk.Binding
	if l.bias != nil {
		a.flags |= gemmBias
		bias = r.dn.pdata(l.bias)
	}
	r.gemm(gemmFwd, d.fwd, a, 1, r.dn.pdata(l.w), vk.R(l.x.dd), vk.W(l.y.dd), bias, vk.R(d.kt))
}

func (l *conv) devBackward(r *rec) {
	d, g := l.dv, l.g
	r.weightGrad(d.wgr, d.parts, d.chunk, gemmArgs{M: d.cout, N: d.K, K: d.n * d.P, aoff: l.y.off, ars: l.y.stride,
		boff: l.x.off, brs: l.x.stride, in: g.in, out: g.out, s: g.s, p: g.p, kk: g.kk()},
		vk.R(l.y.dg), vk.R(l.x.dd), r.dn.pgrad(l.w), vk.R(d.kt))
	if l.bias != nil {
		r.rowSums(vk.R(l.y.dg), l.y.off, l.y.stride, d.n, d.cout, d.P, r.dn.pgrad(l.bias), 0, 1, 0)
	}
	if l.x.needGrad {
		a := gemmArgs{M: d.cin, N: d.n * d.Q, K: d.cout * g.kk(), boff: l.y.off, brs: l.y.stride, coff: l.x.off, crs: l.x.stride,
			in: g.out, out: g.in, s: g.s, p: g.p, kk: g.kk()}
		if l.accX {
			a.flags |= gemmAcc
		}
		r.gemm(gemmDgrad, d.dgr, a, 1, r.dn.pdata(l.w), vk.R(l.y.dg), vk.W(l.x.dg), vk.Binding{}, vk.R(d.ktD))
	}
}

// weightGrad records a weight gradient: in parts chunks into workspace partials and a
// second pass adding them in order, or straight into dw.
func (r *rec) weightGrad(cfg gemmCfg, parts, chunk int, a gemmArgs, dy, x, dw, kt vk.Binding) {
	if parts <= 1 {
		a.chunk = a.K
		r.gemm(gemmWgrad, cfg, a, 1, dy, x, dw, vk.Binding{}, kt)
		return
	}
	a.chunk, a.flags = chunk, gemmSplit
	part := r.scratch(parts * a.M * a.N)
	r.gemm(gemmWgrad, cfg, a, parts, dy, x, part, vk.Binding{}, kt)
	r.sumParts(part, a.M*a.N, parts, dw, 0, false)
}

// sumParts records out[off+i] = Σ_z part[z·n + i] (+ out when acc).
func (r *rec) sumParts(part vk.Binding, n, parts int, out vk.Binding, off int, acc bool) {
	r.run(kSumParts, nil, groups1(n, 256), []uint32{u32(n), u32(parts), u32(off), b32(acc)}, part, out)
}

// convTDev is a transposed convolution's device state.
type convTDev struct {
	ups           bool // kernel = stride, no padding: one product per kernel offset
	kt, ktF       *vk.Buffer
	fwd, dgr, wgr gemmCfg
	parts, chunk  int
	n, cin, cout  int
	Px, Py, K     int // input and output voxels per channel, rows of the output's im2col
}

func (l *convT) devInit(dn *devNet) error {
	g := &l.g
	d := &convTDev{n: l.x.Shape.N, cin: l.x.Shape.C, cout: g.c, Px: g.outS(), Py: g.inS(), K: g.rows()}
	d.ups = g.k == g.s && g.p == [3]int{}
	if d.ups {
		d.fwd = chooseGemm(d.cout, d.n*d.Px)
	} else {
		d.fwd = chooseGemm(d.cout, d.n*d.Py)
		var err error
		if d.ktF, err = dn.table(ktabDgrad(d.cin, d.cout, g.k, d.Px)); err != nil {
			return err
		}
	}
	d.wgr = chooseGemm(d.cin, d.K)
	d.parts, d.chunk = splitK(d.cin, d.K, d.n*d.Px, d.wgr)
	var err error
	if d.kt, err = dn.table(ktabIm2col(g)); err != nil {
		return err
	}
	if l.x.needGrad {
		d.dgr = chooseGemm(d.cin, d.n*d.Px)
	}
	var scr []int
	if d.parts > 1 {
		scr = append(scr, d.parts*d.cin*d.K)
	}
	if l.bias != nil {
		scr = append(scr, rowSumScratch(d.cout, d.n*d.Py))
	}
	dn.needScratch(scratchBytes(scr...))
	l.dv = d
	return nil
}

func (l *convT) devForward(r *rec) {
	d, g := l.dv, l.g
	var bias vk.Binding
	flags := 0
	if l.bias != nil {
		flags, bias = gemmBias, r.dn.pdata(l.bias)
	}
	if d.ups {
		a := gemmArgs{M: d.cout, N: d.n * d.Px, K: d.cin, flags: flags, boff: l.x.off, brs: l.x.stride, coff: l.y.off, crs: l.y.stride,
			in: g.in, out: g.out, s: g.s, cspat: d.Py, kk: g.kk()}
		r.gemm(gemmUps, d.fwd, a, g.kk(), r.dn.pdata(l.w), vk.R(l.x.dd), vk.W(l.y.dd), bias, vk.Binding{})
		return
	}
	a := gemmArgs{M: d.cout, N: d.n * d.Py, K: d.cin * g.kk(), flags: flags, boff: l.x.off, brs: l.x.stride, coff: l.y.off, crs: l.y.stride,
		in: g.out, out: g.in, s: g.s, p: g.p, kk: g.kk()}
	r.gemm(gemmDgrad, d.fwd, a, 1, r.dn.pdata(l.w), vk.R(l.x.dd), vk.W(l.y.dd), bias, vk.R(d.ktF))
}

func (l *convT) devBackward(r *rec) {
	d, g := l.dv, l.g
	r.weightGrad(d.wgr, d.parts, d.chunk, gemmArgs{M: d.cin, N: d.K, K: d.n * d.Px, aoff: l.x.off, ars: l.x.stride,
		boff: l.y.off, brs: l.y.stride, in: g.in, out: g.out, s: g.s, p: g.p, kk: g.kk()},
		vk.R(l.x.dd), vk.R(l.y.dg), r.dn.pgrad(l.w), vk.R(d.kt))
	if l.bias != nil {
		r.rowSums(vk.R(l.y.dg), l.y.off, l.y.stride, d.n, d.cout, d.Py, r.dn.pgrad(l.bias), 0, 1, 0)
	}
	if l.x.needGrad {
		a := gemmArgs{M: d.cin, N: d.n * d.Px, K: d.K, boff: l.y.off, brs: l.y.stride, coff: l.x.off, crs: l.x.stride,
			in: g.in, out: g.out, s: g.s, p: g.p, kk: g.kk()}
		if l.accX {
			a.flags |= gemmAcc
		}
		r.gemm(gemmFwd, d.dgr, a, 1, r.dn.pdata(l.w), vk.R(l.y.dg), vk.W(l.x.dg), vk.Binding{}, vk.R(d.kt))
	}
}
