package engine

import (
	"fmt"
	"math"
)

// HeadLoss is softmax cross-entropy over several classification heads that share one
// output vector per sample: head h owns channels [off_h, off_h+K_h) of the logits x
// (N×C with C = ΣK_h and one voxel). Each head's loss is PyTorch's weighted cross-entropy
// with mean reduction, Σ_n w[y_n]·(−log p_n[y_n]) / Σ_n w[y_n], over the samples whose
// label is not ignored (−1); the value is the mean over the heads with a labelled sample
// of positive weight. It is the last layer of a network.
type HeadLoss struct {
	x       *Tensor
	heads   []int
	off     []int
	weights [][]float64 // per head, per class
	labels  []int32     // N×H, −1 ignored
	prob    []float32   // N×C
	denom   []float64   // per head: Σ_n w[y_n] of the last forward pass
	ce      []float64   // per head: Σ_n w[y_n]·(−log p) of the last forward pass
	used    int         // heads with a positive denominator
	value   float64
	acc     bool
	dv      *headLossDev // on a Vulkan device
}

// HeadLoss adds the loss on logits x for heads of the given class counts (each at least
// 2); weights, when not nil, holds one non-negative weight per class of each head (nil for
// a head means weight 1 everywhere).
func (b *Builder) HeadLoss(x *Tensor, heads []int, weights [][]float64) *HeadLoss {
	l := &HeadLoss{x: x, heads: heads}
	total := 0
	for h, k := range heads {
		if k < 2 {
			b.fail("head %d has %d classes, at least 2", h, k)
		}
		l.off = append(l.off, total)
		total += k
	}
	if len(heads) == 0 || total != x.Shape.C || x.Shape.Spatial() != 1 {
		b.fail("heads %v on logits %v (want N×%d with one voxel)", heads, x.Shape, total)
	}
	if weights != nil && len(weights) != len(heads) {
		b.fail("%d class-weight lists for %d heads", len(weights), len(heads))
	}
	l.weights = make([][]float64, len(heads))
	for h, k := range heads {
		w := make([]float64, max(k, 0))
		for c := range w {
			w[c] = 1
		}
		if weights != nil && weights[h] != nil {
			if len(weights[h]) != k {
				b.fail("head %d has %d classes and %d class weights", h, k, len(weights[h]))
			} else {
				for c, v := range weights[h] {
					if !(v >= 0) || math.IsInf(v, 0) {
						b.fail("head %d class %d has weight %g", h, c, v)
					}
				}
				copy(w, weights[h])
			}
		}
		l.weights[h] = w
	}
	l.labels = make([]int32, x.Shape.N*len(heads))
	l.prob = make([]float32, x.Shape.N*max(total, 0))
	l.denom, l.ce = make([]float64, len(heads)), make([]float64, len(heads))
	b.use(x, &l.acc)
	b.layers = append(b.layers, l)
	return l
}

// SetLabels copies the class of every sample and head (N × heads, sample-major); −1 leaves
// a sample out of a head's loss.
func (l *HeadLoss) SetLabels(labels []int32) error {
	H := len(l.heads)
	if len(labels) != len(l.labels) {
		return fmt.Errorf("engine: %d labels for %d samples × %d heads", len(labels), l.x.Shape.N, H)
	}
	for i, v := range labels {
		if v < -1 || int(v) >= l.heads[i%H] {
			return fmt.Errorf("engine: label %d of sample %d head %d outside -1..%d", v, i/H, i%H, l.heads[i%H]-1)
		}
	}
	copy(l.labels, labels)
	return nil
}

// Value is the loss of the last forward pass.
func (l *HeadLoss) Value() float64 { return l.value }

// Prob is the softmax of every head from the last forward pass, N×C sample-major; head h
// of sample n is Prob()[n·C+off_h : n·C+off_h+K_h].
func (l *HeadLoss) Prob() []float32 { return l.prob }

func (l *HeadLoss) forward() {
	N, C, H := l.x.Shape.N, l.x.Shape.C, len(l.heads)
	ce := l.ce
	clear(ce)
	clear(l.denom)
	for n := range N {
		x, p := l.x.Sample(n), l.prob[n*C:(n+1)*C]
		for h, k := range l.heads {
			o := l.off[h]
			m := x[o]
			for c := 1; c < k; c++ {
				m = max(m, x[o+c])
			}
			var z float64
			for c := range k {
				z += math.Exp(float64(x[o+c] - m))
			}
			for c := range k {
				p[o+c] = float32(math.Exp(float64(x[o+c]-m)) / z)
			}
			if y := l.labels[n*H+h]; y >= 0 {
				w := l.weights[h][y]
				ce[h] += w * (math.Log(z) - float64(x[o+int(y)]-m))
				l.denom[h] += w
			}
		}
	}
	l.value, l.used = 0, 0
	for h := range H {
		if l.denom[h] > 0 {
			l.value += ce[h] / l.denom[h]
			l.used++
		}
	}
	if l.used > 0 {
		l.value /= float64(l.used)
	}
}

func (l *HeadLoss) backward() {
	if !l.x.needGrad {
		return
	}
	N, C, H := l.x.Shape.N, l.x.Shape.C, len(l.heads)
	for n := range N {
		p, dx := l.prob[n*C:(n+1)*C], l.x.GradSample(n)
		for h, k := range l.heads {
			o := l.off[h]
			y := l.labels[n*H+h]
			var s float32
			if y >= 0 && l.denom[h] > 0 {
				s = float32(l.weights[h][y] / l.denom[h] / float64(l.used))
			}
			for c := range k {
				g := s * p[o+c]
				if int32(c) == y {
					g -= s
				}
				if l.acc {
					dx[o+c] += g
				} else {
					dx[o+c] = g
				}
			}
		}
	}
}

// RegressionWeights are the terms of a [RegressionLoss]: MSE weighs the mean squared
// error; Rank a pairwise logistic ranking loss over the pairs of the batch whose targets
// differ, regSoftplus(−(p_i − p_j)/Temp) for t_i > t_j, averaged over those pairs; Corr the
// batch's 1 − Pearson correlation of predictions and targets. Temp is the ranking loss's
// temperature in target units (positive when Rank is).
type RegressionWeights struct {
	MSE, Rank, Corr, Temp float64
}

// corrEps keeps the correlation term finite when the predictions of a batch are equal.
const corrEps = 1e-6

// RegressionLoss is a weighted sum of mean squared error, a pairwise ranking loss and a
// correlation loss on one predicted value per sample (x is N×1 with one voxel). It is the
// last layer of a network.
type RegressionLoss struct {
	x       *Tensor
	w       RegressionWeights
	targets []float64
	pred    []float64
	grad    []float64
	terms   [3]float64 // MSE, rank, 1 − r of the last forward pass
	value   float64
	acc     bool
	dv      *regLossDev // on a Vulkan device
}

// RegressionLoss adds the loss on the predictions x with the weights w.
func (b *Builder) RegressionLoss(x *Tensor, w RegressionWeights) *RegressionLoss {
	if x.Shape.Sample() != 1 {
		b.fail("regression loss on %v, want one value per sample", x.Shape)
	}
	ok := func(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }
	if !ok(w.MSE) || !ok(w.Rank) || !ok(w.Corr) || (w.Rank > 0 && !(w.Temp > 0)) || w.MSE+w.Rank+w.Corr == 0 {
		b.fail("regression loss weights %+v", w)
	}
	l := &RegressionLoss{x: x, w: w, targets: make([]float64, x.Shape.N),
		pred: make([]float64, x.Shape.N), grad: make([]float64, x.Shape.N)}
	b.use(x, &l.acc)
	b.layers = append(b.layers, l)
	return l
}

// SetTargets copies one finite target per sample.
func (l *RegressionLoss) SetTargets(t []float32) error {
	if len(t) != len(l.targets) {
		return fmt.Errorf("engine: %d targets for %d samples", len(t), len(l.targets))
	}
	for i, v := range t {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("engine: target %v of sample %d is not finite", v, i)
		}
		l.targets[i] = float64(v)
	}
	if l.dv != nil {
		copy(l.dv.host, t)
	}
	return nil
}

// Value is the loss of the last forward pass.
func (l *RegressionLoss) Value() float64 { return l.value }

// Terms are the unweighted MSE, ranking and correlation (1 − r) terms of the last forward
// pass; a term whose weight is 0 is not computed.
func (l *RegressionLoss) Terms() (mse, rank, corr float64) { return l.terms[0], l.terms[1], l.terms[2] }

// Pred returns sample n's prediction from the last forward pass.
func (l *RegressionLoss) Pred(n int) float32 { return l.x.Sample(n)[0] }

func regSoftplus(v float64) float64 {
	if v > 30 {
		return v
	}
	return math.Log1p(math.Exp(v))
}

func regSigmoid(v float64) float64 { return 1 / (1 + math.Exp(-v)) }

// forward computes the value and, at once, the gradient that backward hands on.
func (l *RegressionLoss) forward() {
	N := l.x.Shape.N
	p := l.pred
	for n := range N {
		p[n] = float64(l.Pred(n))
	}
	t, g := l.targets, l.grad
	clear(g)
	l.terms = [3]float64{}
	if l.w.MSE > 0 {
		for n := range N {
			d := p[n] - t[n]
			l.terms[0] += d * d / float64(N)
			g[n] += l.w.MSE * 2 * d / float64(N)
		}
	}
	if l.w.Rank > 0 {
		pairs := 0
		for i := range N {
			for j := range N {
				if t[i] > t[j] {
					pairs++
				}
			}
		}
		for i := range N {
			for j := range N {
				if t[i] > t[j] {
					d := (p[i] - p[j]) / l.w.Temp
					l.terms[1] += regSoftplus(-d) / float64(pairs)
					k := l.w.Rank * regSigmoid(-d) / l.w.Temp / float64(pairs)
					g[i] -= k
					g[j] += k
				}
			}
		}
	}
	if l.w.Corr > 0 && N > 1 {
		var mp, mt float64
		for n := range N {
			mp += p[n] / float64(N)
			mt += t[n] / float64(N)
		}
		var saa, sbb, sab float64
		for n := range N {
			a, b := p[n]-mp, t[n]-mt
			saa += a * a
			sbb += b * b
			sab += a * b
		}
		if sbb > 0 { // targets all equal: no correlation to learn from this batch
			A, B := math.Sqrt(saa+corrEps), math.Sqrt(sbb)
			r := sab / (A * B)
			l.terms[2] = 1 - r
			for n := range N {
				a, b := p[n]-mp, t[n]-mt
				g[n] -= l.w.Corr * (b/(A*B) - r*a/(A*A))
			}
		}
	}
	l.value = l.w.MSE*l.terms[0] + l.w.Rank*l.terms[1] + l.w.Corr*l.terms[2]
}

func (l *RegressionLoss) backward() {
	if !l.x.needGrad {
		return
	}
	for n := range l.x.Shape.N {
		dx := l.x.GradSample(n)
		if l.acc {
			dx[0] += float32(l.grad[n])
		} else {
			dx[0] = float32(l.grad[n])
		}
	}
}
