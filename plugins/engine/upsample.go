package engine

// Upsample adds nearest-neighbour upsampling by k per axis: every voxel becomes a block of
// k[0]×k[1]×k[2] copies (PyTorch's nn.Upsample(mode="nearest") with an integer scale). The
// built-in plugins go up with transposed convolutions; cmd/benchgorgonia uses this where a
// library without them (gorgonia's Upsample2D) is measured beside the engine.
func (b *Builder) Upsample(x *Tensor, k [3]int) *Tensor {
	d := x.Shape.dims()
	for a := range 3 {
		if k[a] < 1 {
			b.fail("upsampling %v by %v", x.Shape, k)
			return b.tensor(Shape{}, true)
		}
	}
	l := &upsample{be: b.be, x: x, k: k}
	l.y = b.tensor(Shape{x.Shape.N, x.Shape.C, d[0] * k[0], d[1] * k[1], d[2] * k[2]}, true)
	l.fwdFn, l.bwdFn = l.fwdRange, l.bwdRange
	b.use(x, &l.accX)
	b.layers = append(b.layers, l)
	return l.y
}

type upsample struct {
	be           Backend
	x, y         *Tensor
	k            [3]int
	accX         bool
	fwdFn, bwdFn func(part, lo, hi int)
}

func (l *upsample) output() *Tensor { return l.y }

// fwdRange and bwdRange take rows lo to hi, which are (sample, channel) pairs.
func (l *upsample) fwdRange(_, lo, hi int) {
	C, in, out := l.x.Shape.C, l.x.Shape.dims(), l.y.Shape.dims()
	S, P := l.x.Shape.Spatial(), l.y.Shape.Spatial()
	for r := lo; r < hi; r++ {
		n, c := r/C, r%C
		xs, ys := l.x.Sample(n)[c*S:(c+1)*S], l.y.Sample(n)[c*P:(c+1)*P]
		o := 0
		for od := range out[0] {
			for oh := range out[1] {
				src := xs[(od/l.k[0]*in[1]+oh/l.k[1])*in[2]:][:in[2]]
				for _, v := range src {
					for range l.k[2] {
						ys[o] = v
						o++
					}
				}
			}
		}
	}
}

func (l *upsample) bwdRange(_, lo, hi int) {
	C, in, out := l.x.Shape.C, l.x.Shape.dims(), l.y.Shape.dims()
	S, P := l.x.Shape.Spatial(), l.y.Shape.Spatial()
	for r := lo; r < hi; r++ {
		n, c := r/C, r%C
		dx, dy := l.x.GradSample(n)[c*S:(c+1)*S], l.y.GradSample(n)[c*P:(c+1)*P]
		if !l.accX {
			clear(dx)
		}
		o := 0
		for od := range out[0] {
			for oh := range out[1] {
				dst := dx[(od/l.k[0]*in[1]+oh/l.k[1])*in[2]:][:in[2]]
				for i := range dst {
					var s float32
					for range l.k[2] {
						s += dy[o]
						o++
					}
					dst[i] += s
				}
			}
		}
	}
}

func (l *upsample) forward() { l.be.Parallel(l.y.Shape.N*l.y.Shape.C, l.fwdFn) }

func (l *upsample) backward() {
	if l.x.needGrad {
		l.be.Parallel(l.y.Shape.N*l.y.Shape.C, l.bwdFn)
	}
}
