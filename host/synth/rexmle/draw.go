package rexmle

import (
	"math"
	"math/rand/v2"

	"amid/host/synth"
	"amid/viewer/volume"
)

// grid is a 3D voxel grid in the LPS patient frame (mm), identity direction.
type grid struct {
	dims [3]int
	sp   [3]float64
	org  [3]float64 // world position of voxel (0, 0, 0)
}

// newGrid spans fov (mm) with dims voxels, centred on centre.
func newGrid(dims [3]int, fov, centre [3]float64) grid {
	g := grid{dims: dims}
	for a := range 3 {
		g.sp[a] = fov[a] / float64(dims[a])
		g.org[a] = centre[a] - 0.5*float64(dims[a]-1)*g.sp[a]
	}
	return g
}

func (g grid) n() int { return g.dims[0] * g.dims[1] * g.dims[2] }

// world is the position of voxel (x, y, z).
func (g grid) world(x, y, z int) [3]float64 {
	return [3]float64{g.org[0] + float64(x)*g.sp[0], g.org[1] + float64(y)*g.sp[1], g.org[2] + float64(z)*g.sp[2]}
}

// maxSpacing is the largest voxel side.
func (g grid) maxSpacing() float64 { return math.Max(g.sp[0], math.Max(g.sp[1], g.sp[2])) }

// volume allocates a zeroed single-channel volume of type t on the grid.
func (g grid) volume(t volume.DType) (*volume.Volume, error) {
	v, err := volume.New(t, [4]int{g.dims[0], g.dims[1], g.dims[2], 1})
	if err != nil {
		return nil, err
	}
	v.Spacing, v.Origin = g.sp, g.org
	return v, nil
}

// each calls fn with every voxel's index and position.
func (g grid) each(fn func(i int, p [3]float64)) {
	i := 0
	for z := 0; z < g.dims[2]; z++ {
		for y := 0; y < g.dims[1]; y++ {
			for x := 0; x < g.dims[0]; x++ {
				fn(i, g.world(x, y, z))
				i++
			}
		}
	}
}

// box calls fn with the index and position of every voxel whose centre lies in the
// axis-aligned box [lo, hi] (mm).
func (g grid) box(lo, hi [3]float64, fn func(i int, p [3]float64)) {
	var a, b [3]int
	for k := range 3 {
		a[k] = max(0, int(math.Ceil((lo[k]-g.org[k])/g.sp[k])))
		b[k] = min(g.dims[k]-1, int(math.Floor((hi[k]-g.org[k])/g.sp[k])))
		if a[k] > b[k] {
			return
		}
	}
	for z := a[2]; z <= b[2]; z++ {
		for y := a[1]; y <= b[1]; y++ {
			i := (z*g.dims[1]+y)*g.dims[0] + a[0]
			for x := a[0]; x <= b[0]; x++ {
				fn(i, g.world(x, y, z))
				i++
			}
		}
	}
}

// tube calls fn for every voxel within r mm of the polyline pts.
func (g grid) tube(pts [][3]float64, r float64, fn func(i int)) {
	for k := 0; k+1 < len(pts); k++ {
		a, b := pts[k], pts[k+1]
		var lo, hi [3]float64
		for j := range 3 {
			lo[j] = math.Min(a[j], b[j]) - r
			hi[j] = math.Max(a[j], b[j]) + r
		}
		g.box(lo, hi, func(i int, p [3]float64) {
			if segDist(p, a, b) <= r {
				fn(i)
			}
		})
	}
}

// blob calls fn for every voxel inside a lumpy blob: the union of spheres of radii r
// around centre c (the first sphere at c, the others offset by up to r/2).
func (g grid) blob(c [3]float64, r float64, lumps int, rng *rand.Rand, fn func(i int)) {
	type sphere struct {
		c [3]float64
		r float64
	}
	s := []sphere{{c, r}}
	for range lumps {
		var o [3]float64
		for k := range 3 {
			o[k] = c[k] + r*0.5*(2*rng.Float64()-1)
		}
		s = append(s, sphere{o, r * (0.5 + 0.4*rng.Float64())})
	}
	for _, q := range s {
		lo := [3]float64{q.c[0] - q.r, q.c[1] - q.r, q.c[2] - q.r}
		hi := [3]float64{q.c[0] + q.r, q.c[1] + q.r, q.c[2] + q.r}
		g.box(lo, hi, func(i int, p [3]float64) {
			if dist(p, q.c) <= q.r {
				fn(i)
			}
		})
	}
}

func dist(a, b [3]float64) float64 {
	return math.Sqrt(sq(a[0]-b[0]) + sq(a[1]-b[1]) + sq(a[2]-b[2]))
}

// segDist is the distance from p to the segment [a, b].
func segDist(p, a, b [3]float64) float64 {
	var ab, ap [3]float64
	var l2, t float64
	for k := range 3 {
		ab[k], ap[k] = b[k]-a[k], p[k]-a[k]
		l2 += ab[k] * ab[k]
		t += ab[k] * ap[k]
	}
	if l2 > 0 {
		t = math.Max(0, math.Min(1, t/l2))
	} else {
		t = 0
	}
	return dist(p, [3]float64{a[0] + t*ab[0], a[1] + t*ab[1], a[2] + t*ab[2]})
}

func sq(f float64) float64 { return f * f }

// ellipsoidR is the normalised radius of p in the axis-aligned ellipsoid at c with
// semi-axes s: < 1 inside.
func ellipsoidR(p, c, s [3]float64) float64 {
	return math.Sqrt(sq((p[0]-c[0])/s[0]) + sq((p[1]-c[1])/s[1]) + sq((p[2]-c[2])/s[2]))
}

// addNoise adds Gaussian noise of standard deviation sigma to every voxel of v (values
// are rounded and clamped by the element type); abs folds negative results (a
// magnitude image, as MR is).
func addNoise(v *volume.Volume, sigma float64, abs bool, rng *rand.Rand) {
	n := v.Len()
	for i := range n {
		f := v.AtIndex(i) + sigma*rng.NormFloat64()
		if abs {
			f = math.Abs(f)
		}
		v.SetIndex(i, f)
	}
}

// plane is a 2D float image, row-major.
type plane struct {
	w, h int
	pix  []float64
}

func newPlane(w, h int, fill float64) *plane {
	p := &plane{w: w, h: h, pix: make([]float64, w*h)}
	for i := range p.pix {
		p.pix[i] = fill
	}
	return p
}

// fillPolygon calls fn for every pixel whose centre lies inside the polygon (even-odd
// rule, x right, y down, pixel (x, y) centred at (x+0.5, y+0.5)).
func fillPolygon(w, h int, pts [][2]float64, fn func(i int)) {
	if len(pts) < 3 {
		return
	}
	ylo, yhi := math.Inf(1), math.Inf(-1)
	for _, q := range pts {
		ylo, yhi = math.Min(ylo, q[1]), math.Max(yhi, q[1])
	}
	y0, y1 := max(0, int(math.Floor(ylo))), min(h-1, int(math.Ceil(yhi)))
	var xs []float64
	for y := y0; y <= y1; y++ {
		cy := float64(y) + 0.5
		xs = xs[:0]
		for k := range pts {
			a, b := pts[k], pts[(k+1)%len(pts)]
			if (a[1] <= cy) != (b[1] <= cy) {
				xs = append(xs, a[0]+(cy-a[1])*(b[0]-a[0])/(b[1]-a[1]))
			}
		}
		sortFloats(xs)
		for k := 0; k+1 < len(xs); k += 2 {
			x0 := max(0, int(math.Ceil(xs[k]-0.5)))
			x1 := min(w-1, int(math.Ceil(xs[k+1]-0.5))-1)
			for x := x0; x <= x1; x++ {
				fn(y*w + x)
			}
		}
	}
}

func sortFloats(a []float64) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// ellipsePoly is a polygon of n vertices approximating the ellipse at (cx, cy) with
// semi-axes (rx, ry) rotated by angle, each radius jittered by up to jitter (a fraction).
func ellipsePoly(cx, cy, rx, ry, angle, jitter float64, n int, rng *rand.Rand) [][2]float64 {
	pts := make([][2]float64, n)
	ca, sa := math.Cos(angle), math.Sin(angle)
	for k := range n {
		t := 2 * math.Pi * float64(k) / float64(n)
		f := 1.0
		if jitter > 0 {
			f += jitter * (2*rng.Float64() - 1)
		}
		x, y := rx*f*math.Cos(t), ry*f*math.Sin(t)
		pts[k] = [2]float64{cx + x*ca - y*sa, cy + x*sa + y*ca}
	}
	return pts
}

// blur is a separable Gaussian blur of standard deviation sigma pixels (edges clamped).
func (p *plane) blur(sigma float64) {
	if sigma <= 0 {
		return
	}
	k := synth.GaussianKernel(sigma)
	r := len(k) / 2
	tmp := make([]float64, len(p.pix))
	for y := 0; y < p.h; y++ {
		for x := 0; x < p.w; x++ {
			var a float64
			for j, kv := range k {
				xx := min(p.w-1, max(0, x+j-r))
				a += kv * p.pix[y*p.w+xx]
			}
			tmp[y*p.w+x] = a
		}
	}
	for y := 0; y < p.h; y++ {
		for x := 0; x < p.w; x++ {
			var a float64
			for j, kv := range k {
				yy := min(p.h-1, max(0, y+j-r))
				a += kv * tmp[yy*p.w+x]
			}
			p.pix[y*p.w+x] = a
		}
	}
}

// image2D returns a 2D volume (Z = 1) of type t with c channels.
func image2D(t volume.DType, w, h, c int) (*volume.Volume, error) {
	return volume.New(t, [4]int{w, h, 1, c})
}

// fromPlanes packs channel planes into a 2D volume of type t (values rounded and clamped).
func fromPlanes(t volume.DType, ch ...*plane) (*volume.Volume, error) {
	w, h, c := ch[0].w, ch[0].h, len(ch)
	v, err := image2D(t, w, h, c)
	if err != nil {
		return nil, err
	}
	for i := 0; i < w*h; i++ {
		for k, p := range ch {
			v.SetIndex(i*c+k, p.pix[i])
		}
	}
	return v, nil
}

// uniform is a value uniformly drawn in [lo, hi).
func uniform(rng *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }
