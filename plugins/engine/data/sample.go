package data

import (
	"math"
	"math/rand/v2"
)

// Sampler cuts random patches from cases.
type Sampler struct {
	Patch [3]int // X, Y, Z; Z = 1 for 2D patches
	// FgProb is the probability that a patch is centred on a random foreground voxel of a
	// random class present in the case (nnU-Net forces a third of each batch).
	FgProb float64
	// Rotate is the largest in-plane rotation (about Z, radians) and Zoom the range of
	// isotropic scale factors (>1 shows a larger region, shrunk) of the spatial transform
	// applied with probability PSpatial; the patch is then resampled from the case,
	// trilinearly for the image and by nearest voxel for labels. Zero fields are off.
	Rotate   float64
	Zoom     [2]float64
	PSpatial float64
	// Stack makes the patch's Z slices a 2.5D stack around its centre slice (index
	// Patch[2]/2): the centre slice may be any slice of the case, a forced patch's centre
	// slice holds its foreground voxel, slices beyond the case are padded, and the spatial
	// transform stays in-plane (no zoom along Z).
	Stack bool
}

// Len is the number of voxels in a patch.
func (s *Sampler) Len() int { return s.Patch[0] * s.Patch[1] * s.Patch[2] }

// Sample cuts one patch of c into img (c.C planes of Len values) and lab (Len values; may
// be nil). It reports whether the patch was forced onto foreground; a case without
// foreground is sampled uniformly. Without foreground forcing, the patch lies inside the
// case along every axis the case is at least as long as the patch and covers the case
// otherwise; a forced patch is centred on its voxel and shifted inside the same bounds, so
// the voxel stays in the patch. Voxels outside the case are padded with the channel minimum
// and label 0.
func (s *Sampler) Sample(r *rand.Rand, c *Case, img []float32, lab []int32) (forced bool) {
	var lo [3]int
	fg := c.FgClasses()
	if len(fg) > 0 && r.Float64() < s.FgProb {
		forced = true
		f := c.fg[fg[r.IntN(len(fg))]]
		v := int(f[r.IntN(len(f))])
		pos := [3]int{v % c.Dims[0], v / c.Dims[0] % c.Dims[1], v / (c.Dims[0] * c.Dims[1])}
		for a := range 3 {
			l, h := s.bounds(a, c.Dims[a])
			lo[a] = min(max(pos[a]-s.Patch[a]/2, l), h)
		}
	} else {
		for a := range 3 {
			l, h := s.bounds(a, c.Dims[a])
			lo[a] = l + r.IntN(h-l+1)
		}
	}
	if (s.Rotate > 0 || s.Zoom != [2]float64{}) && r.Float64() < s.PSpatial {
		th := (2*r.Float64() - 1) * s.Rotate
		z := 1.0
		if s.Zoom != [2]float64{} {
			z = s.Zoom[0] + r.Float64()*(s.Zoom[1]-s.Zoom[0])
		}
		s.warp(c, lo, th, z, img, lab)
		return forced
	}
	s.crop(c, lo, img, lab)
	return forced
}

// warp fills the patch whose unwarped first voxel is lo by sampling the case at
// centre + zoom·R(th)·(p - centre), R a rotation in the X–Y plane; Z is zoomed only for
// 3D patches.
func (s *Sampler) warp(c *Case, lo [3]int, th, zoom float64, img []float32, lab []int32) {
	P, D := s.Patch, c.Dims
	S, PS := D[0]*D[1]*D[2], s.Len()
	var ctr [3]float64
	for a := range 3 {
		ctr[a] = float64(lo[a]) + float64(P[a]-1)/2
	}
	cs, sn := math.Cos(th)*zoom, math.Sin(th)*zoom
	zz := 1.0
	if P[2] > 1 && !s.Stack {
		zz = zoom
	}
	i := 0
	for z := range P[2] {
		for y := range P[1] {
			for x := range P[0] {
				dx, dy := float64(x)-float64(P[0]-1)/2, float64(y)-float64(P[1]-1)/2
				sx := ctr[0] + cs*dx - sn*dy
				sy := ctr[1] + sn*dx + cs*dy
				sz := ctr[2] + zz*(float64(z)-float64(P[2]-1)/2)
				x0, y0, z0 := int(math.Floor(sx)), int(math.Floor(sy)), int(math.Floor(sz))
				fx, fy, fz := float32(sx-float64(x0)), float32(sy-float64(y0)), float32(sz-float64(z0))
				inside := x0 >= 0 && y0 >= 0 && z0 >= 0 && x0+1 < D[0] && y0+1 < D[1] && z0+1 < D[2]
				for ch := range c.C {
					src := c.Image[ch*S : (ch+1)*S]
					var v [8]float32 // corners, x fastest
					if inside {
						o := (z0*D[1]+y0)*D[0] + x0
						o1 := o + D[0]*D[1]
						v = [8]float32{src[o], src[o+1], src[o+D[0]], src[o+D[0]+1], src[o1], src[o1+1], src[o1+D[0]], src[o1+D[0]+1]}
					} else {
						for j := range 8 {
							x, y, z := x0+j&1, y0+j>>1&1, z0+j>>2
							v[j] = c.Min[ch]
							if x >= 0 && y >= 0 && z >= 0 && x < D[0] && y < D[1] && z < D[2] {
								v[j] = src[(z*D[1]+y)*D[0]+x]
							}
						}
					}
					c0 := (v[0]*(1-fx)+v[1]*fx)*(1-fy) + (v[2]*(1-fx)+v[3]*fx)*fy
					c1 := (v[4]*(1-fx)+v[5]*fx)*(1-fy) + (v[6]*(1-fx)+v[7]*fx)*fy
					img[ch*PS+i] = c0*(1-fz) + c1*fz
				}
				if lab != nil {
					nx, ny, nz := int(math.Round(sx)), int(math.Round(sy)), int(math.Round(sz))
					if c.Label == nil || nx < 0 || ny < 0 || nz < 0 || nx >= D[0] || ny >= D[1] || nz >= D[2] {
						lab[i] = 0
					} else {
						lab[i] = c.Label[(nz*D[1]+ny)*D[0]+nx]
					}
				}
				i++
			}
		}
	}
}

// bounds is the range of the patch's first index along axis a of n voxels; a stack's
// first slice ranges so that its centre slice covers 0..n-1.
func (s *Sampler) bounds(a, n int) (lo, hi int) {
	p := s.Patch[a]
	if a == 2 && s.Stack {
		return -(p / 2), n - 1 - p/2
	}
	return bounds(n, p)
}

// bounds is the range of a patch's first index along an axis of n voxels.
func bounds(n, p int) (lo, hi int) {
	if n >= p {
		return 0, n - p
	}
	return n - p, 0
}

// crop copies the patch whose first voxel is lo, padding outside the case.
func (s *Sampler) crop(c *Case, lo [3]int, img []float32, lab []int32) {
	P, D := s.Patch, c.Dims
	S, PS := D[0]*D[1]*D[2], s.Len()
	x0, x1 := max(0, -lo[0]), min(P[0], D[0]-lo[0]) // patch x range inside the case
	for ch := range c.C {
		src, dst, pad := c.Image[ch*S:(ch+1)*S], img[ch*PS:(ch+1)*PS], c.Min[ch]
		for z := range P[2] {
			for y := range P[1] {
				row := dst[(z*P[1]+y)*P[0] : (z*P[1]+y+1)*P[0]]
				sz, sy := lo[2]+z, lo[1]+y
				if sz < 0 || sz >= D[2] || sy < 0 || sy >= D[1] || x0 >= x1 {
					fill(row, pad)
					continue
				}
				fill(row[:x0], pad)
				o := (sz*D[1]+sy)*D[0] + lo[0]
				copy(row[x0:x1], src[o+x0:o+x1])
				fill(row[x1:], pad)
			}
		}
	}
	if lab == nil {
		return
	}
	for z := range P[2] {
		for y := range P[1] {
			row := lab[(z*P[1]+y)*P[0] : (z*P[1]+y+1)*P[0]]
			sz, sy := lo[2]+z, lo[1]+y
			if c.Label == nil || sz < 0 || sz >= D[2] || sy < 0 || sy >= D[1] || x0 >= x1 {
				clear(row)
				continue
			}
			clear(row[:x0])
			o := (sz*D[1]+sy)*D[0] + lo[0]
			copy(row[x0:x1], c.Label[o+x0:o+x1])
			clear(row[x1:])
		}
	}
}

func fill(s []float32, v float32) {
	for i := range s {
		s[i] = v
	}
}
