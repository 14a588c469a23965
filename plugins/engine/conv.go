package engine

// Conv adds a convolution of x with cout filters of size k (per axis D, H, W; use 1 on D
// for 2D), stride s and zero padding p, with a bias when bias is set. Its weight has
// PyTorch's layout (cout, cin, kd, kh, kw).
func (b *Builder) Conv(x *Tensor, cout int, k, s, p [3]int, bias bool) *Tensor {
	g, ok := newGeom(x.Shape.C, x.Shape.dims(), k, s, p)
	if !ok || cout < 1 {
		b.fail("conv %v kernel %v stride %v padding %v to %d channels does not fit", x.Shape, k, s, p, cout)
		return b.tensor(Shape{}, true)
	}
	g.colBudget = b.tiling.colBudget
	l := &conv{be: b.be, x: x, g: g, ws: b.ws}
	l.y = b.tensor(Shape{x.Shape.N, cout, g.out[0], g.out[1], g.out[2]}, true)
	name := b.name("conv")
	l.w = b.param(name+".weight", []int{cout, x.Shape.C, k[0], k[1], k[2]}, true)
	b.kaiming(l.w, x.Shape.C*g.kk(), 1e-2)
	if bias {
		l.bias = b.param(name+".bias", []int{cout}, false)
	}
	l.pointwise = g.kk() == 1 && s == [3]int{1, 1, 1} && p == [3]int{}
	if !l.pointwise {
		b.ws.size = max(b.ws.size, g.rows()*g.tileRows()*g.out[2])
	}
	if !l.pointwise && s == [3]int{1, 1, 1} && !b.forwardOnly() {
		// With stride 1 the input gradient is a convolution of the output gradient with the
		// flipped, transposed kernel and padding k−1−p: an SGEMM with cout·k³ as its inner
		// dimension instead of a memory-bound one with cout, and im2col instead of col2im.
		gt, ok := newGeom(cout, g.out, k, s, [3]int{k[0] - 1 - p[0], k[1] - 1 - p[1], k[2] - 1 - p[2]})
		gt.colBudget = g.colBudget
		if ok && gt.out == g.in {
			l.gt, l.flipped = &gt, make([]float32, len(l.w.Data))
			b.scratch = append(b.scratch, l.flipped)
			b.ws.size = max(b.ws.size, gt.rows()*gt.tileRows()*gt.out[2])
		}
	}
	l.dw = b.partScratch(len(l.w.Data))
	if !l.pointwise && !b.tiling.columns {
		if l.fold = newFolded(planar(g), cout); l.fold != nil {
			b.ws.size = max(b.ws.size, l.fold.size())
			b.scratch = append(b.scratch, l.fold.w)
			if !b.forwardOnly() {
				l.dwf0 = make([]float32, len(l.w.Data))
				b.scratch = append(b.scratch, l.dwf0)
			}
		}
		if l.gt != nil {
			if l.foldT = newFolded(planar(*l.gt), g.c); l.foldT != nil {
				b.ws.size = max(b.ws.size, l.foldT.size())
				b.scratch = append(b.scratch, l.foldT.w)
			}
		}
	}
	l.fwdFn, l.bwdFn, l.biasGradFn, l.tileFn, l.chanFn = l.fwdRange, l.bwdRange, l.biasGradRange, l.tileRange, l.chanRange
	b.use(x, &l.accX)
	b.layers = append(b.layers, l)
	return l.y
}

type conv struct {
	be        Backend
	x, y      *Tensor
	w, bias   *Param
	g         geom
	ws        *workspace
	pointwise bool
	accX      bool
	dw        [][]float32 // weight-gradient part sums of workers 1…
	// gt and flipped compute the input gradient of a stride-1 convolution as a
	// convolution: geometry over the output gradient, weight flipped to (cin, cout, k³).
	gt      *geom
	flipped []float32
	// fold computes the output and the weight gradient with the depth axis folded into
	// the SGEMM's rows, foldT the input gradient; nil where folding does not apply.
	fold, foldT *folded
	dwf0        []float32 // the first worker's folded weight gradient (the others use dw)

	n                                        int // the sample tileRange and chanRange work on
	fwdFn, bwdFn, biasGradFn, tileFn, chanFn func(part, lo, hi int)
	dv                                       *convDev // on a Vulkan device
}

// fwdRange convolves samples [lo,hi): per tile of output rows, im2col into the worker's
// workspace and one SGEMM.
func (l *conv) fwdRange(part, lo, hi int) {
	cout, P, K := l.y.Shape.C, l.g.outS(), l.g.rows()
	col := l.ws.bufs[part]
	Q, R, o2 := l.g.outRows(), l.g.tileRows(), l.g.out[2]
	for n := lo; n < hi; n++ {
		y := l.y.Sample(n)
		if l.pointwise {
			l.be.Sgemm(false, false, cout, P, K, 1, l.w.Data, K, l.x.Sample(n), P, 0, y, P)
		} else if l.fold != nil {
			l.fold.forward(l.be, l.x.Sample(n), y, col, false)
		} else {
			for q0 := 0; q0 < Q; q0 += R {
				q1 := min(Q, q0+R)
				T := (q1 - q0) * o2
				l.g.im2col(l.x.Sample(n), col, q0, q1)
				l.be.Sgemm(false, false, cout, T, K, 1, l.w.Data, K, col, T, 0, y[q0*o2:], P)
			}
		}
		if l.bias != nil {
			addBias(y, l.bias.Data, P)
		}
	}
}

// addBias adds b[c] to channel c of y (channels of P values).
func addBias(y, b []float32, P int) {
	for c, v := range b {
		r := y[c*P : (c+1)*P]
		for i := range r {
			r[i] += v
		}
	}
}

// bwdRange computes the weight gradient of samples [lo,hi) into the worker's part sum and
// their input gradients.
func (l *conv) bwdRange(part, lo, hi int) {
	cout, P, K := l.y.Shape.C, l.g.outS(), l.g.rows()
	col := l.ws.bufs[part]
	dw := l.w.Grad
	if part > 0 {
		dw = l.dw[part]
	}
	var bx float32
	if l.accX {
		bx = 1
	}
	Q, R, o2 := l.g.outRows(), l.g.tileRows(), l.g.out[2]
	for n := lo; n < hi; n++ {
		dy := l.y.GradSample(n)
		var beta float32
		if n > lo {
			beta = 1
		}
		if l.pointwise {
			l.be.Sgemm(false, true, cout, K, P, 1, dy, P, l.x.Sample(n), P, beta, dw, K)
			if l.x.needGrad {
				l.be.Sgemm(true, false, K, P, cout, 1, l.w.Data, K, dy, P, bx, l.x.GradSample(n), P)
			}
			continue
		}
		if l.fold != nil {
			dwf := l.dwf0
			if part > 0 {
				dwf = l.dw[part]
			}
			l.fold.weightGrad(l.be, l.x.Sample(n), dy, dwf, col, beta)
			if l.x.needGrad {
				dx := l.x.GradSample(n)
				if l.foldT != nil {
					l.foldT.forward(l.be, dy, dx, col, l.accX)
				} else {
					l.inputGrad(dy, dx, col, bx)
				}
			}
			continue
		}
		viaCol2im := l.x.needGrad && l.gt == nil
		if viaCol2im && !l.accX {
			clear(l.x.GradSample(n))
		}
		for q0 := 0; q0 < Q; q0 += R {
			q1 := min(Q, q0+R)
			T := (q1 - q0) * o2
			l.g.im2col(l.x.Sample(n), col, q0, q1)
			l.be.Sgemm(false, true, cout, K, T, 1, dy[q0*o2:], P, col, T, beta, dw, K)
			beta = 1
			if viaCol2im {
				l.be.Sgemm(true, false, K, T, cout, 1, l.w.Data, K, dy[q0*o2:], P, 0, col, T)
				l.g.col2im(col, l.x.GradSample(n), q0, q1)
			}
		}
		if l.x.needGrad && l.gt != nil {
			l.inputGrad(dy, l.x.GradSample(n), col, bx)
		}
	}
}

// inputGrad writes (bx 0) or adds (bx 1) the input gradient dx of one sample from its
// output gradient dy as a convolution with the flipped kernel.
func (l *conv) inputGrad(dy, dx, col []float32, bx float32) {
	g := l.gt
	Kt, Pi, Qt, Rt, ot := g.rows(), g.outS(), g.outRows(), g.tileRows(), g.out[2]
	for q0 := 0; q0 < Qt; q0 += Rt {
		q1 := min(Qt, q0+Rt)
		T := (q1 - q0) * ot
		g.im2col(dy, col, q0, q1)
		l.be.Sgemm(false, false, l.g.c, T, Kt, 1, l.flipped, Kt, col, T, bx, dx[q0*ot:], Pi)
	}
}

func (l *conv) biasGradRange(_, lo, hi int) {
	P := l.g.outS()
	for co := lo; co < hi; co++ {
		var s float64
		for n := range l.y.Shape.N {
			s += sum32(l.y.GradSample(n)[co*P : (co+1)*P])
		}
		l.bias.Grad[co] = float32(s)
	}
}

func (l *conv) forward() {
	N := l.x.Shape.N
	if l.fold != nil && (N >= l.be.Workers() || l.g.k[0] > 1) {
		l.fold.setWeight(l.w.Data) // only where the folded path runs (see below)
	}
	if N >= l.be.Workers() || l.pointwise {
		l.be.Parallel(N, l.fwdFn)
		return
	}
	if l.fold != nil && l.g.k[0] > 1 {
		// Fewer samples than workers: split each sample's output channels. Each worker
		// builds the whole column matrix, which pays for itself only when folding made it
		// k[0] times smaller (BenchmarkUNetInfer: 3D 1.09× faster than tiles; 2D none).
		for n := range N {
			l.n = n
			l.be.Parallel(l.y.Shape.C, l.chanFn)
			if l.bias != nil {
				addBias(l.y.Sample(n), l.bias.Data, l.g.outS())
			}
		}
		return
	}
	// Fewer samples than workers (inference on one patch): split each sample's tiles.
	for n := range N {
		l.n = n
		l.be.Parallel((l.g.outRows()+l.g.tileRows()-1)/l.g.tileRows(), l.tileFn)
		if l.bias != nil {
			addBias(l.y.Sample(n), l.bias.Data, l.g.outS())
		}
	}
}

// chanRange computes the output channels [lo,hi) of sample l.n on the folded path.
func (l *conv) chanRange(part, lo, hi int) {
	l.fold.channels(l.be, l.x.Sample(l.n), l.y.Sample(l.n), l.ws.bufs[part], false, lo, hi)
}

// tileRange convolves tiles [lo,hi) of sample l.n.
func (l *conv) tileRange(part, lo, hi int) {
	cout, P, K := l.y.Shape.C, l.g.outS(), l.g.rows()
	col := l.ws.bufs[part]
	Q, R, o2 := l.g.outRows(), l.g.tileRows(), l.g.out[2]
	x, y := l.x.Sample(l.n), l.y.Sample(l.n)
	for t := lo; t < hi; t++ {
		q0 := t * R
		q1 := min(Q, q0+R)
		T := (q1 - q0) * o2
		l.g.im2col(x, col, q0, q1)
		l.be.Sgemm(false, false, cout, T, K, 1, l.w.Data, K, col, T, 0, y[q0*o2:], P)
	}
}

// flip writes the weight as (cin, cout, k³) with every kernel reversed.
func (l *conv) flip() {
	cout, cin, kk := l.y.Shape.C, l.g.c, l.g.kk()
	for co := range cout {
		for ci := range cin {
			src := l.w.Data[(co*cin+ci)*kk : (co*cin+ci+1)*kk]
			dst := l.flipped[(ci*cout+co)*kk : (ci*cout+co+1)*kk]
			for i, v := range src {
				dst[kk-1-i] = v
			}
		}
	}
}

func (l *conv) backward() {
	N := l.x.Shape.N
	if l.gt != nil && l.x.needGrad {
		l.flip()
		if l.foldT != nil {
			l.foldT.setWeight(l.flipped)
		}
	}
	l.be.Parallel(N, l.bwdFn)
	if l.fold != nil {
		l.fold.addGrad(l.w.Grad, l.dwf0, false)
		for p := 1; p < min(N, l.be.Workers()); p++ {
			l.fold.addGrad(l.w.Grad, l.dw[p], true)
		}
	} else {
		addParts(l.w.Grad, l.dw, min(N, l.be.Workers()))
	}
	if l.bias != nil {
		l.be.Parallel(l.y.Shape.C, l.biasGradFn)
	}
}

// addParts adds the part sums of workers 1 … parts−1 to dst, in order.
func addParts(dst []float32, part [][]float32, parts int) {
	for p := 1; p < parts; p++ {
		for i, v := range part[p] {
			dst[i] += v
		}
	}
}

// ConvTranspose adds a transposed convolution (the input gradient of a convolution) with
// cout output channels, kernel k, stride s and padding p: with k = s it upsamples by s.
// Its weight has PyTorch's layout (cin, cout, kd, kh, kw).
func (b *Builder) ConvTranspose(x *Tensor, cout int, k, s, p [3]int, bias bool) *Tensor {
	var out [3]int
	for a, in := range x.Shape.dims() {
		out[a] = (in-1)*s[a] - 2*p[a] + k[a]
	}
	g, ok := newGeom(cout, out, k, s, p)
	if !ok || cout < 1 || g.out != x.Shape.dims() {
		b.fail("transposed conv %v kernel %v stride %v padding %v to %d channels does not fit", x.Shape, k, s, p, cout)
		return b.tensor(Shape{}, true)
	}
	g.colBudget = b.tiling.colBudget
	l := &convT{be: b.be, x: x, g: g, ws: b.ws}
	l.y = b.tensor(Shape{x.Shape.N, cout, out[0], out[1], out[2]}, true)
	name := b.name("convtranspose")
	l.w = b.param(name+".weight", []int{x.Shape.C, cout, k[0], k[1], k[2]}, true)
	// PyTorch computes a transposed convolution's fan-in from weight.size(1)·k³.
	b.kaiming(l.w, cout*g.kk(), 1e-2)
	if bias {
		l.bias = b.param(name+".bias", []int{cout}, false)
	}
	b.ws.size = max(b.ws.size, g.rows()*g.tileRows()*g.out[2])
	l.dw = b.partScratch(len(l.w.Data))
	l.fwdFn, l.bwdFn, l.biasGradFn = l.fwdRange, l.bwdRange, l.biasGradRange
	b.use(x, &l.accX)
	b.layers = append(b.layers, l)
	return l.y
}

// convT works on geometry g seen from the output: g.c = cout channels of size g.in (the
// output), windows g.out = the input's positions.
type convT struct {
	be      Backend
	x, y    *Tensor
	w, bias *Param
	g       geom
	ws      *workspace
	accX    bool
	dw      [][]float32

	fwdFn, bwdFn, biasGradFn func(part, lo, hi int)
	dv                       *convTDev // on a Vulkan device
}

func (l *convT) fwdRange(part, lo, hi int) {
	cin, P, K := l.x.Shape.C, l.g.outS(), l.g.rows()
	col := l.ws.bufs[part]
	Q, R, o2 := l.g.outRows(), l.g.tileRows(), l.g.out[2]
	for n := lo; n < hi; n++ {
		y := l.y.Sample(n)
		clear(y)
		for q0 := 0; q0 < Q; q0 += R {
			q1 := min(Q, q0+R)
			T := (q1 - q0) * o2
			l.be.Sgemm(true, false, K, T, cin, 1, l.w.Data, K, l.x.Sample(n)[q0*o2:], P, 0, col, T)
			l.g.col2im(col, y, q0, q1)
		}
		if l.bias != nil {
			addBias(y, l.bias.Data, l.y.Shape.Spatial())
		}
	}
}

func (l *convT) bwdRange(part, lo, hi int) {
	cin, P, K := l.x.Shape.C, l.g.outS(), l.g.rows()
	col := l.ws.bufs[part]
	dw := l.w.Grad
	if part > 0 {
		dw = l.dw[part]
	}
	var bx float32
	if l.accX {
		bx = 1
	}
	Q, R, o2 := l.g.outRows(), l.g.tileRows(), l.g.out[2]
	for n := lo; n < hi; n++ {
		var beta float32
		if n > lo {
			beta = 1
		}
		for q0 := 0; q0 < Q; q0 += R {
			q1 := min(Q, q0+R)
			T := (q1 - q0) * o2
			l.g.im2col(l.y.GradSample(n), col, q0, q1)
			l.be.Sgemm(false, true, cin, K, T, 1, l.x.Sample(n)[q0*o2:], P, col, T, beta, dw, K)
			beta = 1
			if l.x.needGrad {
				l.be.Sgemm(false, false, cin, T, K, 1, l.w.Data, K, col, T, bx, l.x.GradSample(n)[q0*o2:], P)
			}
		}
	}
}

func (l *convT) biasGradRange(_, lo, hi int) {
	S := l.y.Shape.Spatial()
	for co := lo; co < hi; co++ {
		var s float64
		for n := range l.y.Shape.N {
			s += sum32(l.y.GradSample(n)[co*S : (co+1)*S])
		}
		l.bias.Grad[co] = float32(s)
	}
}

func (l *convT) forward() { l.be.Parallel(l.x.Shape.N, l.fwdFn) }

func (l *convT) backward() {
	N := l.x.Shape.N
	l.be.Parallel(N, l.bwdFn)
	addParts(l.w.Grad, l.dw, min(N, l.be.Workers()))
	if l.bias != nil {
		l.be.Parallel(l.g.c, l.biasGradFn)
	}
}
