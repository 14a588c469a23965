package engine

import "math"

// NormKind selects instance or batch normalisation.
type NormKind int

const (
	// Instance normalises each sample's channel over its voxels (nnU-Net's default).
	Instance NormKind = iota
	// Batch normalises each channel over the batch and voxels, keeping running statistics
	// for inference.
	Batch
)

// Norm adds an affine normalisation (eps 1e-5, PyTorch's default) followed, when slope
// ≥ 0, by LeakyReLU with that negative slope (nnU-Net: 0.01). A negative slope means no
// activation. The parameters are "weight" (γ, ones) and "bias" (β, zeros).
func (b *Builder) Norm(x *Tensor, kind NormKind, slope float64) *Tensor {
	l := &norm{be: b.be, x: x, kind: kind, act: slope >= 0, slope: float32(slope), eps: 1e-5, training: true}
	l.y = b.tensor(x.Shape, true)
	name := b.name("norm")
	c := x.Shape.C
	l.gamma = b.param(name+".weight", []int{c}, false)
	for i := range l.gamma.Data {
		l.gamma.Data[i] = 1
	}
	l.beta = b.param(name+".bias", []int{c}, false)
	rows := c
	if kind == Instance {
		rows = x.Shape.N * c
	} else {
		l.runMean, l.runVar = make([]float32, c), make([]float32, c)
		for i := range l.runVar {
			l.runVar[i] = 1
		}
	}
	l.mean, l.istd = make([]float32, rows), make([]float32, rows)
	l.dg, l.db = make([]float64, rows), make([]float64, rows)
	l.fwdFn, l.bwdFn = l.fwdRange, l.bwdRange
	b.use(x, &l.accX)
	b.layers = append(b.layers, l)
	return l.y
}

type norm struct {
	be              Backend
	x, y            *Tensor
	gamma, beta     *Param
	kind            NormKind
	act             bool
	slope, eps      float32
	training, accX  bool
	mean, istd      []float32
	dg, db          []float64 // per-row parts of the γ and β gradients
	runMean, runVar []float32
	fwdFn, bwdFn    func(part, lo, hi int)
	dv              *normDev // on a Vulkan device
}

func (l *norm) setTraining(on bool) { l.training = on }

// k1 is slope − 1 for leaky, 0 without activation.
func (l *norm) k1() float32 {
	if !l.act {
		return 0
	}
	return l.slope - 1
}

// rowSamples maps row r to its channel and the samples it spans: one sample for instance
// norm, the whole batch for batch norm.
func (l *norm) rowSamples(r int) (c, n0, n1 int) {
	C := l.x.Shape.C
	if l.kind == Instance {
		return r % C, r / C, r/C + 1
	}
	return r, 0, l.x.Shape.N
}

func (l *norm) fwdRange(_, lo, hi int) {
	S := l.x.Shape.Spatial()
	for r := lo; r < hi; r++ {
		c, n0, n1 := l.rowSamples(r)
		var mean, istd float32
		if l.kind == Instance || l.training {
			var s float64
			for n := n0; n < n1; n++ {
				s += sum32(l.x.Sample(n)[c*S : (c+1)*S])
			}
			m := float64((n1 - n0) * S)
			mu := s / m
			var q float64
			for n := n0; n < n1; n++ {
				q += sqDev32(l.x.Sample(n)[c*S:(c+1)*S], float32(mu))
			}
			vr := q / m
			mean, istd = float32(mu), float32(1/math.Sqrt(vr+float64(l.eps)))
			l.mean[r], l.istd[r] = mean, istd
			if l.kind == Batch {
				// PyTorch: momentum 0.1, running variance unbiased.
				l.runMean[c] = 0.9*l.runMean[c] + 0.1*float32(mu)
				l.runVar[c] = 0.9*l.runVar[c] + 0.1*float32(q/max(m-1, 1))
			}
		} else {
			mean, istd = l.runMean[c], float32(1/math.Sqrt(float64(l.runVar[c]+l.eps)))
		}
		g, bt, k1 := l.gamma.Data[c]*istd, l.beta.Data[c], l.k1()
		for n := n0; n < n1; n++ {
			xs, ys := l.x.Sample(n)[c*S:(c+1)*S], l.y.Sample(n)[c*S:(c+1)*S]
			ys = ys[:len(xs)]
			for i, v := range xs {
				o := (v-mean)*g + bt
				ys[i] = o * leaky(o, k1)
			}
		}
	}
}

func (l *norm) bwdRange(_, lo, hi int) {
	S := l.x.Shape.Spatial()
	for r := lo; r < hi; r++ {
		c, n0, n1 := l.rowSamples(r)
		mean, istd := l.mean[r], l.istd[r]
		var sd, sdx float64
		for n := n0; n < n1; n++ {
			a, b := normSums(l.x.Sample(n)[c*S:(c+1)*S], l.y.Sample(n)[c*S:(c+1)*S],
				l.y.GradSample(n)[c*S:(c+1)*S], mean, l.k1())
			sd += a
			sdx += b
		}
		sdx *= float64(istd)
		l.dg[r], l.db[r] = sdx, sd
		if !l.x.needGrad {
			continue
		}
		m := float64((n1 - n0) * S)
		k := l.gamma.Data[c] * istd
		a, bb, k1 := float32(sd/m), float32(sdx/m), l.k1()
		for n := n0; n < n1; n++ {
			xs, ys, dys := l.x.Sample(n)[c*S:(c+1)*S], l.y.Sample(n)[c*S:(c+1)*S], l.y.GradSample(n)[c*S:(c+1)*S]
			dxs := l.x.GradSample(n)[c*S : (c+1)*S]
			ys, dys, dxs = ys[:len(xs)], dys[:len(xs)], dxs[:len(xs)]
			for i, v := range xs {
				g := k * (dys[i]*leaky(ys[i], k1) - a - (v-mean)*istd*bb)
				if l.accX {
					dxs[i] += g
				} else {
					dxs[i] = g
				}
			}
		}
	}
}

func (l *norm) forward() { l.be.Parallel(len(l.mean), l.fwdFn) }

func (l *norm) backward() {
	l.be.Parallel(len(l.mean), l.bwdFn)
	C := l.x.Shape.C
	for c := range C {
		var g, bt float64
		for r := c; r < len(l.dg); r += C {
			g += l.dg[r]
			bt += l.db[r]
		}
		l.gamma.Grad[c], l.beta.Grad[c] = float32(g), float32(bt)
	}
}
