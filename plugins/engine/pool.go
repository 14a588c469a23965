package engine

// MaxPool adds max-pooling with window and stride k per axis (the size is rounded down).
func (b *Builder) MaxPool(x *Tensor, k [3]int) *Tensor {
	d := x.Shape.dims()
	var out [3]int
	for a := range 3 {
		if k[a] < 1 || d[a] < k[a] {
			b.fail("max-pool %v by %v does not fit", x.Shape, k)
			return b.tensor(Shape{}, true)
		}
		out[a] = d[a] / k[a]
	}
	l := &maxPool{be: b.be, x: x, k: k}
	l.y = b.tensor(Shape{x.Shape.N, x.Shape.C, out[0], out[1], out[2]}, true)
	l.idx = make([]int32, l.y.Shape.Len())
	l.fwdFn, l.bwdFn = l.fwdRange, l.bwdRange
	b.use(x, &l.accX)
	b.layers = append(b.layers, l)
	return l.y
}

type maxPool struct {
	be           Backend
	x, y         *Tensor
	k            [3]int
	idx          []int32 // per output: the offset of the maximum inside its channel
	accX         bool
	fwdFn, bwdFn func(part, lo, hi int)
	dv           *maxPoolDev // on a Vulkan device
}

// rows are (sample, channel) pairs.
func (l *maxPool) fwdRange(_, lo, hi int) {
	C, in, out := l.x.Shape.C, l.x.Shape.dims(), l.y.Shape.dims()
	S, P := l.x.Shape.Spatial(), l.y.Shape.Spatial()
	for r := lo; r < hi; r++ {
		n, c := r/C, r%C
		xs, ys := l.x.Sample(n)[c*S:(c+1)*S], l.y.Sample(n)[c*P:(c+1)*P]
		idx := l.idx[r*P : (r+1)*P]
		o := 0
		for od := range out[0] {
			for oh := range out[1] {
				for ow := range out[2] {
					best, bi := float32(0), -1
					for kd := range l.k[0] {
						for kh := range l.k[1] {
							base := ((od*l.k[0]+kd)*in[1]+oh*l.k[1]+kh)*in[2] + ow*l.k[2]
							for kw := range l.k[2] {
								if v := xs[base+kw]; bi < 0 || v > best {
									best, bi = v, base+kw
								}
							}
						}
					}
					ys[o], idx[o] = best, int32(bi)
					o++
				}
			}
		}
	}
}

func (l *maxPool) bwdRange(_, lo, hi int) {
	C := l.x.Shape.C
	S, P := l.x.Shape.Spatial(), l.y.Shape.Spatial()
	for r := lo; r < hi; r++ {
		n, c := r/C, r%C
		dx, dy := l.x.GradSample(n)[c*S:(c+1)*S], l.y.GradSample(n)[c*P:(c+1)*P]
		if !l.accX {
			clear(dx)
		}
		for o, i := range l.idx[r*P : (r+1)*P] {
			dx[i] += dy[o]
		}
	}
}

func (l *maxPool) forward() { l.be.Parallel(l.y.Shape.N*l.y.Shape.C, l.fwdFn) }

func (l *maxPool) backward() {
	if l.x.needGrad {
		l.be.Parallel(l.y.Shape.N*l.y.Shape.C, l.bwdFn)
	}
}

// Concat joins tensors along channels without copying: the parts become views into the
// result, so their producers write straight into it. Each part must be produced by a
// layer, not yet be part of a concatenation, and share the batch and spatial size.
func (b *Builder) Concat(parts ...*Tensor) *Tensor {
	if len(parts) == 0 {
		b.fail("concatenation of nothing")
		return b.tensor(Shape{}, true)
	}
	s := parts[0].Shape
	s.C = 0
	for _, p := range parts {
		if p.root != nil || !p.needGrad || p.Shape.N != s.N || p.Shape.dims() != s.dims() {
			b.fail("cannot concatenate %v with %v", p.Shape, parts[0].Shape)
			return b.tensor(Shape{}, true)
		}
		s.C += p.Shape.C
	}
	t := b.tensor(s, true)
	off := 0
	for _, p := range parts {
		p.root, p.off, p.stride = t, off, s.Sample()
		off += p.Shape.Sample()
	}
	return t
}

// GlobalAvgPool averages each channel over its voxels: N×C×1×1×1.
func (b *Builder) GlobalAvgPool(x *Tensor) *Tensor {
	l := &gap{x: x}
	l.y = b.tensor(Shape{x.Shape.N, x.Shape.C, 1, 1, 1}, true)
	b.use(x, &l.accX)
	b.layers = append(b.layers, l)
	return l.y
}

type gap struct {
	x, y *Tensor
	accX bool
}

func (l *gap) forward() {
	S := l.x.Shape.Spatial()
	for n := range l.x.Shape.N {
		xs, ys := l.x.Sample(n), l.y.Sample(n)
		for c := range ys {
			var s float64
			for _, v := range xs[c*S : (c+1)*S] {
				s += float64(v)
			}
			ys[c] = float32(s / float64(S))
		}
	}
}

func (l *gap) backward() {
	if !l.x.needGrad {
		return
	}
	S := l.x.Shape.Spatial()
	for n := range l.x.Shape.N {
		dx, dy := l.x.GradSample(n), l.y.GradSample(n)
		for c, g := range dy {
			g /= float32(S)
			d := dx[c*S : (c+1)*S]
			for i := range d {
				if l.accX {
					d[i] += g
				} else {
					d[i] = g
				}
			}
		}
	}
}

// Dense adds a fully connected layer on x flattened per sample: N×out×1×1×1. Its weight
// has PyTorch's Linear layout (out, in).
func (b *Builder) Dense(x *Tensor, out int) *Tensor {
	if out < 1 {
		b.fail("dense layer with %d outputs", out)
		return b.tensor(Shape{}, true)
	}
	l := &dense{be: b.be, x: x}
	l.y = b.tensor(Shape{x.Shape.N, out, 1, 1, 1}, true)
	name := b.name("dense")
	in := x.Shape.Sample()
	l.w = b.param(name+".weight", []int{out, in}, true)
	b.kaiming(l.w, in, 1e-2)
	l.bias = b.param(name+".bias", []int{out}, false)
	b.use(x, &l.accX)
	b.layers = append(b.layers, l)
	return l.y
}

type dense struct {
	be      Backend
	x, y    *Tensor
	w, bias *Param
	accX    bool
	dv      *denseDev // on a Vulkan device
}

func (l *dense) forward() {
	N, in, out := l.x.Shape.N, l.x.Shape.Sample(), l.y.Shape.C
	l.be.Sgemm(false, true, N, out, in, 1, l.x.Data[l.x.off:], l.x.stride, l.w.Data, in, 0, l.y.Data, out)
	for n := range N {
		ys := l.y.Sample(n)
		for o := range ys {
			ys[o] += l.bias.Data[o]
		}
	}
}

func (l *dense) backward() {
	N, in, out := l.x.Shape.N, l.x.Shape.Sample(), l.y.Shape.C
	l.be.Sgemm(true, false, out, in, N, 1, l.y.Grad, out, l.x.Data[l.x.off:], l.x.stride, 0, l.w.Grad, in)
	for o := range out {
		var s float64
		for n := range N {
			s += float64(l.y.Grad[n*out+o])
		}
		l.bias.Grad[o] = float32(s)
	}
	if l.x.needGrad {
		var beta float32
		if l.accX {
			beta = 1
		}
		l.be.Sgemm(false, false, N, in, out, 1, l.y.Grad, out, l.w.Data, in, beta, l.x.Grad[l.x.off:], l.x.stride)
	}
}
