package engine

// Add adds the elementwise sum x + y of two tensors of the same shape: a residual
// (identity) connection when one of them is the network's input or an earlier activation.
func (b *Builder) Add(x, y *Tensor) *Tensor {
	if x.Shape != y.Shape {
		b.fail("sum of %v and %v: shapes differ", x.Shape, y.Shape)
		return b.tensor(Shape{}, true)
	}
	l := &add{be: b.be, x: x, y: y}
	l.z = b.tensor(x.Shape, true)
	l.fwdFn, l.bwdFn = l.fwdRange, l.bwdRange
	b.use(x, &l.accX)
	b.use(y, &l.accY)
	b.layers = append(b.layers, l)
	return l.z
}

type add struct {
	be           Backend
	x, y, z      *Tensor
	accX, accY   bool
	fwdFn, bwdFn func(part, lo, hi int)
}

func (l *add) fwdRange(_, lo, hi int) {
	for n := lo; n < hi; n++ {
		xs, ys, zs := l.x.Sample(n), l.y.Sample(n), l.z.Sample(n)
		ys, zs = ys[:len(xs)], zs[:len(xs)]
		for i, v := range xs {
			zs[i] = v + ys[i]
		}
	}
}

// pass hands the output gradient dz on to an input gradient d, adding when acc is set.
func pass(d, dz []float32, acc bool) {
	if !acc {
		copy(d, dz)
		return
	}
	d = d[:len(dz)]
	for i, g := range dz {
		d[i] += g
	}
}

func (l *add) bwdRange(_, lo, hi int) {
	for n := lo; n < hi; n++ {
		// y was registered after x, so it runs first: with x = y it overwrites and x adds.
		dz := l.z.GradSample(n)
		if l.y.needGrad {
			pass(l.y.GradSample(n), dz, l.accY)
		}
		if l.x.needGrad {
			pass(l.x.GradSample(n), dz, l.accX)
		}
	}
}

func (l *add) forward()  { l.be.Parallel(l.x.Shape.N, l.fwdFn) }
func (l *add) backward() { l.be.Parallel(l.x.Shape.N, l.bwdFn) }
