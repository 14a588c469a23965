package data

import (
	"math"
	"math/rand/v2"
)

// Augment is a set of random transforms applied to a patch in place. Zero fields are off.
type Augment struct {
	Flip  [3]bool // axes (X, Y, Z) flipped each with probability 1/2
	Rot90 bool    // rotate by a random multiple of 90° in the X–Y plane (square patches only)
	// Scale multiplies each channel by a factor uniform in [Scale[0], Scale[1]].
	Scale [2]float64
	// Shift adds to each channel a value drawn from N(0, Shift²).
	Shift float64
	// Gamma raises each channel, rescaled to [0,1], to a power uniform in
	// [Gamma[0], Gamma[1]], then restores its range (nnU-Net's gamma transform). The power
	// is read from a table of 4096 intervals, linearly interpolated: within 1e-3 of the range
	// near 0 for powers below 1, within 1e-7 elsewhere.
	Gamma [2]float64
	// Noise adds Gaussian noise with a standard deviation uniform in [0, Noise].
	Noise float64
	// P is the probability of each intensity transform (1 when zero).
	P float64
}

// Apply transforms one sample: img holds C planes of the patch, lab its labels (may be
// nil). Spatial transforms move labels with the image; intensity ones touch the image only.
func (a *Augment) Apply(r *rand.Rand, patch [3]int, C int, img []float32, lab []int32) {
	n := patch[0] * patch[1] * patch[2]
	for ax := range 3 {
		if a.Flip[ax] && patch[ax] > 1 && r.IntN(2) == 1 {
			for ch := range C {
				flip(img[ch*n:(ch+1)*n], patch, ax)
			}
			if lab != nil {
				flip(lab, patch, ax)
			}
		}
	}
	if a.Rot90 && patch[0] == patch[1] {
		k := r.IntN(4)
		rot := func(fn func(ax int)) {
			switch k {
			case 1:
				fn(-1)
				fn(0)
			case 2:
				fn(0)
				fn(1)
			case 3:
				fn(-1)
				fn(1)
			}
		}
		for ch := range C {
			s := img[ch*n : (ch+1)*n]
			rot(func(ax int) { turn(s, patch, ax) })
		}
		if lab != nil {
			rot(func(ax int) { turn(lab, patch, ax) })
		}
	}
	p := a.P
	if p == 0 {
		p = 1
	}
	for ch := range C {
		s := img[ch*n : (ch+1)*n]
		if a.Scale != [2]float64{} && r.Float64() < p {
			f := float32(a.Scale[0] + r.Float64()*(a.Scale[1]-a.Scale[0]))
			for i := range s {
				s[i] *= f
			}
		}
		if a.Shift > 0 && r.Float64() < p {
			d := float32(r.NormFloat64() * a.Shift)
			for i := range s {
				s[i] += d
			}
		}
		if a.Gamma != [2]float64{} && r.Float64() < p {
			g := a.Gamma[0] + r.Float64()*(a.Gamma[1]-a.Gamma[0])
			lo, hi := s[0], s[0]
			for _, v := range s {
				lo, hi = min(lo, v), max(hi, v)
			}
			if rg := hi - lo; rg > 0 {
				gammaLUT(s, lo, rg, g)
			}
		}
		if a.Noise > 0 && r.Float64() < p {
			sd := r.Float64() * a.Noise
			for i := range s {
				s[i] += float32(r.NormFloat64() * sd)
			}
		}
	}
}

// flip reverses a patch along axis ax in place.
func flip[T any](s []T, p [3]int, ax int) {
	switch ax {
	case 0:
		for r := 0; r < len(s); r += p[0] {
			row := s[r : r+p[0]]
			for i, j := 0, len(row)-1; i < j; i, j = i+1, j-1 {
				row[i], row[j] = row[j], row[i]
			}
		}
	case 1:
		for z := range p[2] {
			pl := s[z*p[0]*p[1] : (z+1)*p[0]*p[1]]
			for i, j := 0, p[1]-1; i < j; i, j = i+1, j-1 {
				for x := range p[0] {
					pl[i*p[0]+x], pl[j*p[0]+x] = pl[j*p[0]+x], pl[i*p[0]+x]
				}
			}
		}
	case 2:
		pl := p[0] * p[1]
		for i, j := 0, p[2]-1; i < j; i, j = i+1, j-1 {
			for x := range pl {
				s[i*pl+x], s[j*pl+x] = s[j*pl+x], s[i*pl+x]
			}
		}
	}
}

// turn applies flip along ax, or for ax = -1 transposes X and Y of every plane (square).
func turn[T any](s []T, p [3]int, ax int) {
	if ax >= 0 {
		flip(s, p, ax)
		return
	}
	n := p[0]
	for z := range p[2] {
		pl := s[z*n*n : (z+1)*n*n]
		for y := range n {
			for x := y + 1; x < n; x++ {
				pl[y*n+x], pl[x*n+y] = pl[x*n+y], pl[y*n+x]
			}
		}
	}
}

// gammaSteps is the number of intervals of the gamma table.
const gammaSteps = 4096

// gammaLUT maps s from [lo, lo+rg] through t ↦ t^g on [0,1] and back.
func gammaLUT(s []float32, lo, rg float32, g float64) {
	var lut [gammaSteps + 2]float32
	for i := range gammaSteps + 1 {
		lut[i] = float32(math.Pow(float64(i)/gammaSteps, g))
	}
	lut[gammaSteps+1] = lut[gammaSteps]
	k := gammaSteps / rg
	for i, v := range s {
		u := (v - lo) * k
		j := min(int(u), gammaSteps)
		f := u - float32(j)
		s[i] = lo + (lut[j]+f*(lut[j+1]-lut[j]))*rg
	}
}
