package engine

import (
	"fmt"
	"math"
)

// Loss is softmax over channels followed by a weighted sum of cross-entropy (mean over
// voxels and samples) and soft Dice loss (nnU-Net's SoftDiceLoss: per sample, background
// excluded, smooth 1e-5, loss 1 − mean Dice). It is the last layer of a network.
type Loss struct {
	be           Backend
	x            *Tensor
	wCE, wDice   float64
	labels       []int32
	prob         []float32
	ce           []float64 // per sample: sum of −log p
	inter, sums  []float64 // per (sample, class): Σ p·g and Σ p + Σ g
	acc          bool
	fwdFn, bwdFn func(part, lo, hi int)
	value        float64
	dv           *lossDev // on a Vulkan device
}

// SoftmaxLoss adds the loss on logits x with the given weights of cross-entropy and Dice
// (nnU-Net: 1 and 1). Dice needs at least two classes.
func (b *Builder) SoftmaxLoss(x *Tensor, wCE, wDice float64) *Loss {
	if x.Shape.C < 2 || x.Shape.C > maxClasses || wCE < 0 || wDice < 0 {
		b.fail("softmax loss on %v with weights %g, %g", x.Shape, wCE, wDice)
	}
	N, C := x.Shape.N, x.Shape.C
	l := &Loss{be: b.be, x: x, wCE: wCE, wDice: wDice,
		labels: make([]int32, N*x.Shape.Spatial()), prob: make([]float32, x.Shape.Len()),
		ce: make([]float64, N), inter: make([]float64, N*C), sums: make([]float64, N*C)}
	l.fwdFn, l.bwdFn = l.fwdRange, l.bwdRange
	b.use(x, &l.acc)
	b.layers = append(b.layers, l)
	return l
}

// SetLabels copies the class of every voxel (N × D·H·W, sample-major), checking the range.
func (l *Loss) SetLabels(labels []int32) error {
	if len(labels) != len(l.labels) {
		return fmt.Errorf("engine: %d labels for %d voxels", len(labels), len(l.labels))
	}
	C := int32(l.x.Shape.C)
	for i, v := range labels {
		if v < 0 || v >= C {
			return fmt.Errorf("engine: label %d at voxel %d outside 0..%d", v, i, C-1)
		}
	}
	copy(l.labels, labels)
	return nil
}

// Value is the loss of the last forward pass.
func (l *Loss) Value() float64 { return l.value }

// Prob is the softmax of the last forward pass, in the logits' layout.
func (l *Loss) Prob() []float32 { return l.prob }

const (
	diceSmooth = 1e-5
	maxClasses = 64 // per-voxel scratch lives on the stack
)

func (l *Loss) fwdRange(_, lo, hi int) {
	C, S := l.x.Shape.C, l.x.Shape.Spatial()
	for n := lo; n < hi; n++ {
		x, p, lab := l.x.Sample(n), l.prob[n*C*S:(n+1)*C*S], l.labels[n*S:(n+1)*S]
		inter, sums := l.inter[n*C:(n+1)*C], l.sums[n*C:(n+1)*C]
		clear(inter)
		clear(sums)
		var ce float64
		for i := range S {
			m := x[i]
			for c := 1; c < C; c++ {
				m = max(m, x[c*S+i])
			}
			var z float64
			for c := range C {
				e := math.Exp(float64(x[c*S+i] - m))
				p[c*S+i] = float32(e)
				z += e
			}
			k := lab[i]
			ce += math.Log(z) - float64(x[int(k)*S+i]-m)
			for c := range C {
				v := float64(p[c*S+i]) / z
				p[c*S+i] = float32(v)
				sums[c] += v
			}
			inter[k] += float64(p[int(k)*S+i])
			sums[k]++
		}
		l.ce[n] = ce
	}
}

func (l *Loss) forward() {
	l.be.Parallel(l.x.Shape.N, l.fwdFn)
	N, C, S := l.x.Shape.N, l.x.Shape.C, l.x.Shape.Spatial()
	var ce, dc float64
	for n := range N {
		ce += l.ce[n]
		for c := 1; c < C; c++ {
			dc += (2*l.inter[n*C+c] + diceSmooth) / (l.sums[n*C+c] + diceSmooth)
		}
	}
	l.value = l.wCE*ce/float64(N*S) + l.wDice*(1-dc/float64(N*(C-1)))
}

func (l *Loss) bwdRange(_, lo, hi int) {
	N, C, S := l.x.Shape.N, l.x.Shape.C, l.x.Shape.Spatial()
	kce := float32(l.wCE / float64(N*S))
	kdc := l.wDice / float64(N*(C-1))
	var dpBuf [maxClasses]float32
	for n := lo; n < hi; n++ {
		p, lab, dx := l.prob[n*C*S:(n+1)*C*S], l.labels[n*S:(n+1)*S], l.x.GradSample(n)
		// dDice/dp_c = (2·g_c·D − (2I+s)) / D², D = Σp + Σg + s: coefficients per class.
		var a, bc [maxClasses]float32
		for c := 1; c < C; c++ {
			d := l.sums[n*C+c] + diceSmooth
			a[c] = float32(-kdc * 2 / d)
			bc[c] = float32(kdc * (2*l.inter[n*C+c] + diceSmooth) / (d * d))
		}
		for i := range S {
			k := int(lab[i])
			var dot float32
			dp := dpBuf[:C]
			for c := range C {
				var v float32
				if c > 0 {
					v = bc[c]
					if c == k {
						v += a[c]
					}
				}
				dp[c] = v
				dot += v * p[c*S+i]
			}
			for c := range C {
				pc := p[c*S+i]
				g := pc*(dp[c]-dot) + kce*pc
				if c == k {
					g -= kce
				}
				if l.acc {
					dx[c*S+i] += g
				} else {
					dx[c*S+i] = g
				}
			}
		}
	}
}

func (l *Loss) backward() {
	if l.x.needGrad {
		l.be.Parallel(l.x.Shape.N, l.bwdFn)
	}
}
