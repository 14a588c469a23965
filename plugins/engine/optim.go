package engine

import "math"

// Adam is the Adam optimizer (Kingma and Ba) with PyTorch's update rule; with Decoupled
// set it is AdamW (weight decay applied to the weights directly, PyTorch's AdamW), else
// weight decay is added to the gradient as in torch.optim.Adam. Decay applies only to
// parameters whose Decay field is set.
type Adam struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
	Decoupled                          bool

	be     Backend
	params []*Param
	m, v   [][]float32
	t      int

	cur        int
	lr, c1, c2 float32
	stepFn     func(part, lo, hi int)
}

// NewAdam returns Adam with β = (0.9, 0.999) and ε = 1e-8, PyTorch's defaults.
func NewAdam(be Backend, params []*Param, lr float64) *Adam {
	a := &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, be: be, params: params}
	for _, p := range params {
		a.m = append(a.m, make([]float32, len(p.Data)))
		a.v = append(a.v, make([]float32, len(p.Data)))
	}
	a.stepFn = a.stepRange
	return a
}

// NewAdamW returns AdamW with decoupled weight decay wd.
func NewAdamW(be Backend, params []*Param, lr, wd float64) *Adam {
	a := NewAdam(be, params, lr)
	a.WeightDecay, a.Decoupled = wd, true
	return a
}

// Step updates every parameter from its gradient.
func (a *Adam) Step() {
	a.t++
	a.lr = float32(a.LR)
	a.c1 = float32(1 - math.Pow(a.Beta1, float64(a.t)))
	a.c2 = float32(math.Sqrt(1 - math.Pow(a.Beta2, float64(a.t))))
	for i, p := range a.params {
		a.cur = i
		a.be.Parallel(len(p.Data), a.stepFn)
	}
}

func (a *Adam) stepRange(_, lo, hi int) {
	p := a.params[a.cur]
	m, v := a.m[a.cur], a.v[a.cur]
	b1, b2, eps := float32(a.Beta1), float32(a.Beta2), float32(a.Eps)
	wd := float32(0)
	if p.Decay {
		wd = float32(a.WeightDecay)
	}
	step := a.lr / a.c1
	for i := lo; i < hi; i++ {
		g := p.Grad[i]
		if a.Decoupled {
			p.Data[i] *= 1 - a.lr*wd
		} else {
			g += wd * p.Data[i]
		}
		m[i] = b1*m[i] + (1-b1)*g
		v[i] = b2*v[i] + (1-b2)*g*g
		p.Data[i] -= step * m[i] / (float32(math.Sqrt(float64(v[i])))/a.c2 + eps)
	}
}

// ClipGradNorm scales all gradients so that their joint L2 norm is at most maxNorm, as
// torch.nn.utils.clip_grad_norm_ does (nnU-Net: 12), and returns the norm before clipping.
// A norm that is not finite leaves the gradients as they are: the step is skipped
// ([Finite]).
func ClipGradNorm(params []*Param, maxNorm float64) float64 {
	norm := gradNorm(params)
	if !Finite(norm) {
		return norm
	}
	if k := maxNorm / (norm + 1e-6); k < 1 {
		for _, p := range params {
			for i := range p.Grad {
				p.Grad[i] *= float32(k)
			}
		}
	}
	return norm
}

// PolyLR is nnU-Net's learning-rate schedule: base·(1 − step/total)^exponent (0.9).
func PolyLR(base float64, step, total int, exponent float64) float64 {
	if total <= 0 || step >= total {
		return 0
	}
	return base * math.Pow(1-float64(step)/float64(total), exponent)
}

// SGD is stochastic gradient descent with momentum as torch.optim.SGD computes it
// (dampening 0; Nesterov optional); weight decay is added to the gradient of parameters
// whose Decay field is set. nnU-Net trains with lr 1e-2, momentum 0.99, Nesterov, weight
// decay 3e-5 and PolyLR.
type SGD struct {
	LR, Momentum, WeightDecay float64
	Nesterov                  bool

	be     Backend
	params []*Param
	buf    [][]float32
	t      int
	cur    int
	stepFn func(part, lo, hi int)
}

// NewSGD returns SGD with nnU-Net's momentum 0.99, Nesterov and weight decay 3e-5.
func NewSGD(be Backend, params []*Param, lr float64) *SGD {
	s := &SGD{LR: lr, Momentum: 0.99, WeightDecay: 3e-5, Nesterov: true, be: be, params: params}
	for _, p := range params {
		s.buf = append(s.buf, make([]float32, len(p.Data)))
	}
	s.stepFn = s.stepRange
	return s
}

// Step updates every parameter from its gradient.
func (s *SGD) Step() {
	s.t++
	for i, p := range s.params {
		s.cur = i
		s.be.Parallel(len(p.Data), s.stepFn)
	}
}

func (s *SGD) stepRange(_, lo, hi int) {
	p, buf := s.params[s.cur], s.buf[s.cur]
	lr, mu := float32(s.LR), float32(s.Momentum)
	wd := float32(0)
	if p.Decay {
		wd = float32(s.WeightDecay)
	}
	for i := lo; i < hi; i++ {
		d := p.Grad[i] + wd*p.Data[i]
		if mu != 0 {
			if s.t == 1 {
				buf[i] = d // PyTorch starts the momentum buffer at the first gradient
			} else {
				buf[i] = mu*buf[i] + d
			}
			if s.Nesterov {
				d += mu * buf[i]
			} else {
				d = buf[i]
			}
		}
		p.Data[i] -= lr * d
	}
}
