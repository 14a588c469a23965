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
		b.ws.size = max(b.ws.size, g.rows()*g.outS())
	}
	l.colFn, l.unColFn, l.biasFn, l.biasGradFn = l.colRange, l.unColRange, l.biasRange, l.biasGradRange
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

	n                                  int // the sample the range functions work on
	colFn, unColFn, biasFn, biasGradFn func(lo, hi int)
}

func (l *conv) colRange(lo, hi int)   { l.g.im2col(l.x.Sample(l.n), l.ws.buf, lo, hi) }
func (l *conv) unColRange(lo, hi int) { l.g.col2im(l.ws.buf, l.x.GradSample(l.n), lo, hi, l.accX) }

func (l *conv) biasRange(lo, hi int) {
	P := l.g.outS()
	for n := range l.y.Shape.N {
		y := l.y.Sample(n)
		for co := lo; co < hi; co++ {
			v := l.bias.Data[co]
			r := y[co*P : (co+1)*P]
			for i := range r {
				r[i] += v
			}
		}
	}
}

func (l *conv) biasGradRange(lo, hi int) {
	P := l.g.outS()
	for co := lo; co < hi; co++ {
		var s float64
		for n := range l.y.Shape.N {
			for _, v := range l.y.GradSample(n)[co*P : (co+1)*P] {
				s += float64(v)
			}
		}
		l.bias.Grad[co] = float32(s)
	}
}

func (l *conv) forward() {
	cout, P, K := l.y.Shape.C, l.g.outS(), l.g.rows()
	for n := range l.x.Shape.N {
		l.n = n
		y := l.y.Sample(n)
		if l.pointwise {
			l.be.Sgemm(false, false, cout, P, K, 1, l.w.Data, K, l.x.Sample(n), P, 0, y, P)
			continue
		}
		l.be.Parallel(K, l.colFn)
		l.be.Sgemm(false, false, cout, P, K, 1, l.w.Data, K, l.ws.buf, P, 0, y, P)
	}
	if l.bias != nil {
		l.be.Parallel(cout, l.biasFn)
	}
}

func (l *conv) backward() {
	cout, P, K := l.y.Shape.C, l.g.outS(), l.g.rows()
	for n := range l.x.Shape.N {
		l.n = n
		dy := l.y.GradSample(n)
		var beta float32
		if n > 0 {
			beta = 1
		}
		if l.pointwise {
			x := l.x.Sample(n)
			l.be.Sgemm(false, true, cout, K, P, 1, dy, P, x, P, beta, l.w.Grad, K)
			if l.x.needGrad {
				var b float32
				if l.accX {
					b = 1
				}
				l.be.Sgemm(true, false, K, P, cout, 1, l.w.Data, K, dy, P, b, l.x.GradSample(n), P)
			}
			continue
		}
		l.be.Parallel(K, l.colFn)
		l.be.Sgemm(false, true, cout, K, P, 1, dy, P, l.ws.buf, P, beta, l.w.Grad, K)
		if l.x.needGrad {
			l.be.Sgemm(true, false, K, P, cout, 1, l.w.Data, K, dy, P, 0, l.ws.buf, P)
			l.be.Parallel(l.g.c, l.unColFn)
		}
	}
	if l.bias != nil {
		l.be.Parallel(cout, l.biasGradFn)
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
	l := &convT{be: b.be, x: x, g: g, ws: b.ws}
	l.y = b.tensor(Shape{x.Shape.N, cout, out[0], out[1], out[2]}, true)
	name := b.name("convtranspose")
	l.w = b.param(name+".weight", []int{x.Shape.C, cout, k[0], k[1], k[2]}, true)
	// PyTorch computes a transposed convolution's fan-in from weight.size(1)·k³.
	b.kaiming(l.w, cout*g.kk(), 1e-2)
	if bias {
		l.bias = b.param(name+".bias", []int{cout}, false)
	}
	b.ws.size = max(b.ws.size, g.rows()*g.outS())
	l.colFn, l.unColFn, l.biasFn, l.biasGradFn = l.colRange, l.unColRange, l.biasRange, l.biasGradRange
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

	n                                  int
	colFn, unColFn, biasFn, biasGradFn func(lo, hi int)
}

func (l *convT) colRange(lo, hi int)   { l.g.im2col(l.y.GradSample(l.n), l.ws.buf, lo, hi) }
func (l *convT) unColRange(lo, hi int) { l.g.col2im(l.ws.buf, l.y.Sample(l.n), lo, hi, false) }

func (l *convT) biasRange(lo, hi int) {
	S := l.y.Shape.Spatial()
	for co := lo; co < hi; co++ {
		v := l.bias.Data[co]
		r := l.y.Sample(l.n)[co*S : (co+1)*S]
		for i := range r {
			r[i] += v
		}
	}
}

func (l *convT) biasGradRange(lo, hi int) {
	S := l.y.Shape.Spatial()
	for co := lo; co < hi; co++ {
		var s float64
		for n := range l.y.Shape.N {
			for _, v := range l.y.GradSample(n)[co*S : (co+1)*S] {
				s += float64(v)
			}
		}
		l.bias.Grad[co] = float32(s)
	}
}

func (l *convT) forward() {
	cin, P, K := l.x.Shape.C, l.g.outS(), l.g.rows()
	for n := range l.x.Shape.N {
		l.n = n
		l.be.Sgemm(true, false, K, P, cin, 1, l.w.Data, K, l.x.Sample(n), P, 0, l.ws.buf, P)
		l.be.Parallel(l.g.c, l.unColFn)
		if l.bias != nil {
			l.be.Parallel(l.g.c, l.biasFn)
		}
	}
}

func (l *convT) backward() {
	cin, P, K := l.x.Shape.C, l.g.outS(), l.g.rows()
	for n := range l.x.Shape.N {
		l.n = n
		l.be.Parallel(K, l.colFn)
		var beta float32
		if n > 0 {
			beta = 1
		}
		l.be.Sgemm(false, true, cin, K, P, 1, l.x.Sample(n), P, l.ws.buf, P, beta, l.w.Grad, K)
		if l.x.needGrad {
			var b float32
			if l.accX {
				b = 1
			}
			l.be.Sgemm(false, false, cin, P, K, 1, l.w.Data, K, l.ws.buf, P, b, l.x.GradSample(n), P)
		}
	}
	if l.bias != nil {
		l.be.Parallel(l.g.c, l.biasGradFn)
	}
}
