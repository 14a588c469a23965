package engine

import (
	"fmt"
	"math"
)

// ImageLossConfig weighs the terms of an [ImageLoss].
type ImageLossConfig struct {
	// L1 and SSIM are the weights of the mean absolute error and of 1 − mean SSIM
	// (Zhao et al., "Loss functions for image restoration with neural networks", 2017:
	// 0.16 and 0.84).
	L1, SSIM float64
	// Window is the side of SSIM's square box window (skimage's default 7).
	Window int
	// Range is the data range of the images, which sets SSIM's constants
	// C1 = (0.01·Range)² and C2 = (0.03·Range)² (1 for images scaled to [0, 1]).
	Range float64
}

// ImageLoss is the loss of an image-to-image network: L1·mean|y − t| + SSIM·(1 − mean
// SSIM(y, t)) of the output y against a target t of the same shape. SSIM is computed in
// each channel and slice of each sample as skimage computes it: a Window×Window box
// window, sample covariances (factor n/(n−1), n = Window²), constants from Range; its mean
// runs over the window positions that lie wholly inside the image ("valid"), which is
// skimage's mean without its border. Sums are formed in float64. It is the last layer of
// a network.
type ImageLoss struct {
	be     Backend
	y      *Tensor
	cfg    ImageLossConfig
	target []float32
	// coef holds per plane (sample, channel, slice) of H×W the SSIM coefficient maps A,
	// B, C over its P = (H−k+1)·(W−k+1) window positions; rows is each sample's scratch
	// (rowLen values) for row sums: of the five window moments (5·H·(W−k+1)) forward, of
	// the three maps (3·(H−k+1)·W) backward.
	coef, rows     []float64
	rowLen         int
	abs, ssim      []float64 // per sample: Σ|y − t| and Σ SSIM
	acc            bool
	fwdFn, bwdFn   func(part, lo, hi int)
	value, l1, sim float64
	dv             *imageLossDev // on a Vulkan device
}

// ImageLoss adds the loss on y (N×C×D×H×W, H and W at least cfg.Window). Each weight must
// be non-negative and one positive; Window at least 2; Range positive.
func (b *Builder) ImageLoss(y *Tensor, cfg ImageLossConfig) *ImageLoss {
	k := cfg.Window
	if !(cfg.L1 >= 0 && cfg.SSIM >= 0 && cfg.L1+cfg.SSIM > 0) || k < 2 || !(cfg.Range > 0) || math.IsInf(cfg.Range, 0) ||
		y.Shape.H < k || y.Shape.W < k {
		b.fail("image loss on %v with weights %g, %g, window %d and range %g", y.Shape, cfg.L1, cfg.SSIM, k, cfg.Range)
		cfg.Window, k = 1, 1
	}
	s := y.Shape
	planes := s.C * s.D // per sample
	Hp, Wp := s.H-k+1, s.W-k+1
	l := &ImageLoss{be: b.be, y: y, cfg: cfg, target: make([]float32, s.Len()),
		coef: make([]float64, s.N*planes*3*Hp*Wp), rowLen: max(5*s.H*Wp, 3*Hp*s.W),
		abs: make([]float64, s.N), ssim: make([]float64, s.N)}
	l.rows = make([]float64, s.N*l.rowLen)
	l.fwdFn, l.bwdFn = l.fwdRange, l.bwdRange
	b.use(y, &l.acc)
	b.layers = append(b.layers, l)
	return l
}

// SetTarget copies the target images (the output's layout, N × C·D·H·W sample-major).
func (l *ImageLoss) SetTarget(t []float32) error {
	if len(t) != len(l.target) {
		return fmt.Errorf("engine: %d target values for an output of %d", len(t), len(l.target))
	}
	for i, v := range t {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("engine: target value %v at %d is not finite", v, i)
		}
	}
	copy(l.target, t)
	return nil
}

// Value is the loss of the last forward pass.
func (l *ImageLoss) Value() float64 { return l.value }

// Parts are the mean absolute error and the mean SSIM of the last forward pass.
func (l *ImageLoss) Parts() (l1, ssim float64) { return l.l1, l.sim }

// Output is the tensor the loss is computed on.
func (l *ImageLoss) Output() *Tensor { return l.y }

// dims is the geometry of one plane: its size, the window, and the valid window
// positions per row, per column and in all.
func (l *ImageLoss) dims() (H, W, k, Wp, Hp, P int) {
	s := l.y.Shape
	k = l.cfg.Window
	Wp, Hp = s.W-k+1, s.H-k+1
	return s.H, s.W, k, Wp, Hp, Hp * Wp
}

func (l *ImageLoss) fwdRange(_, lo, hi int) {
	H, W, k, Wp, _, P := l.dims()
	planes := l.y.Shape.C * l.y.Shape.D
	n := float64(k * k)
	cn := n / (n - 1)
	c1 := (0.01 * l.cfg.Range) * (0.01 * l.cfg.Range)
	c2 := (0.03 * l.cfg.Range) * (0.03 * l.cfg.Range)
	for s := lo; s < hi; s++ {
		ys := l.y.Sample(s)
		ts := l.target[s*len(ys) : (s+1)*len(ys)]
		var ab float64
		for i, v := range ys {
			ab += math.Abs(float64(v) - float64(ts[i]))
		}
		l.abs[s] = ab
		rows := l.rows[s*l.rowLen : (s+1)*l.rowLen]
		var sum float64
		for p := range planes {
			y, t := ys[p*H*W:(p+1)*H*W], ts[p*H*W:(p+1)*H*W]
			coef := l.coef[(s*planes+p)*3*P : (s*planes+p+1)*3*P]
			// Row sums of y, t, y², t², y·t over k columns, by a running sum per row.
			for r := range H {
				yr, tr := y[r*W:(r+1)*W], t[r*W:(r+1)*W]
				var m [5]float64
				for x := range W {
					a, b := float64(yr[x]), float64(tr[x])
					m[0], m[1], m[2], m[3], m[4] = m[0]+a, m[1]+b, m[2]+a*a, m[3]+b*b, m[4]+a*b
					if x >= k {
						a, b = float64(yr[x-k]), float64(tr[x-k])
						m[0], m[1], m[2], m[3], m[4] = m[0]-a, m[1]-b, m[2]-a*a, m[3]-b*b, m[4]-a*b
					}
					if x >= k-1 {
						for q := range 5 {
							rows[(q*H+r)*Wp+x-k+1] = m[q]
						}
					}
				}
			}
			// Column sums over k rows, then SSIM and its coefficients per position.
			for x := range Wp {
				var m [5]float64
				for r := range H {
					for q := range 5 {
						m[q] += rows[(q*H+r)*Wp+x]
						if r >= k {
							m[q] -= rows[(q*H+r-k)*Wp+x]
						}
					}
					if r < k-1 {
						continue
					}
					mx, mt := m[0]/n, m[1]/n
					vx := cn * (m[2]/n - mx*mx)
					vt := cn * (m[3]/n - mt*mt)
					vxt := cn * (m[4]/n - mx*mt)
					a1, a2 := 2*mx*mt+c1, 2*vxt+c2
					b1, b2 := mx*mx+mt*mt+c1, vx+vt+c2
					S := a1 * a2 / (b1 * b2)
					sum += S
					dmx := 2*mt*a2/(b1*b2) - S*2*mx/b1
					dvx := -S / b2
					dvxt := 2 * a1 / (b1 * b2)
					i := (r-k+1)*Wp + x
					coef[i] = dmx - 2*cn*mx*dvx - cn*mt*dvxt
					coef[P+i] = 2 * cn * dvx
					coef[2*P+i] = cn * dvxt
				}
			}
		}
		l.ssim[s] = sum
	}
}

func (l *ImageLoss) forward() {
	l.be.Parallel(l.y.Shape.N, l.fwdFn)
	_, _, _, _, _, P := l.dims()
	var ab, sm float64
	for s := range l.y.Shape.N {
		ab += l.abs[s]
		sm += l.ssim[s]
	}
	l.l1 = ab / float64(l.y.Shape.Len())
	l.sim = sm / float64(l.y.Shape.N*l.y.Shape.C*l.y.Shape.D*P)
	l.value = l.cfg.L1*l.l1 + l.cfg.SSIM*(1-l.sim)
}

// bwdRange forms dL/dy = L1/M·sign(y − t) − SSIM/(Pₜ·n)·(Aᵀ + y·Bᵀ + t·Cᵀ), where Xᵀ is
// the sum of map X over the window positions that cover a pixel (the adjoint of the valid
// box filter), M the number of outputs and Pₜ the number of window positions in the batch.
func (l *ImageLoss) bwdRange(_, lo, hi int) {
	H, W, k, Wp, Hp, P := l.dims()
	planes := l.y.Shape.C * l.y.Shape.D
	kl1 := l.cfg.L1 / float64(l.y.Shape.Len())
	ks := -l.cfg.SSIM / (float64(l.y.Shape.N*planes*P) * float64(k*k))
	for s := lo; s < hi; s++ {
		ys, dys := l.y.Sample(s), l.y.GradSample(s)
		ts := l.target[s*len(ys) : (s+1)*len(ys)]
		// rows holds, per coefficient map, its sums over the k positions left of each
		// column: 3 maps of Hp × W.
		rows := l.rows[s*l.rowLen : (s+1)*l.rowLen]
		for p := range planes {
			y, t, dy := ys[p*H*W:(p+1)*H*W], ts[p*H*W:(p+1)*H*W], dys[p*H*W:(p+1)*H*W]
			coef := l.coef[(s*planes+p)*3*P : (s*planes+p+1)*3*P]
			for q := range 3 {
				for r := range Hp {
					src := coef[q*P+r*Wp : q*P+(r+1)*Wp]
					dst := rows[(q*Hp+r)*W : (q*Hp+r+1)*W]
					var m float64
					for x := range W {
						if x < Wp {
							m += src[x]
						}
						if x >= k {
							m -= src[x-k]
						}
						dst[x] = m
					}
				}
			}
			for x := range W {
				var m [3]float64
				for r := range H {
					for q := range 3 {
						if r < Hp {
							m[q] += rows[(q*Hp+r)*W+x]
						}
						if r >= k {
							m[q] -= rows[(q*Hp+r-k)*W+x]
						}
					}
					i := r*W + x
					a, b := float64(y[i]), float64(t[i])
					g := ks * (m[0] + a*m[1] + b*m[2])
					switch {
					case a > b:
						g += kl1
					case a < b:
						g -= kl1
					}
					if l.acc {
						dy[i] += float32(g)
					} else {
						dy[i] = float32(g)
					}
				}
			}
		}
	}
}

func (l *ImageLoss) backward() {
	if l.y.needGrad {
		l.be.Parallel(l.y.Shape.N, l.bwdFn)
	}
}
