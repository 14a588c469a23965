package engine

// geom is the geometry of a convolution window sliding over one sample: c channels of
// size in, kernel k, stride s, zero padding p, giving out positions per axis (D, H, W).
type geom struct {
	c                int
	in, k, s, p, out [3]int
	// lo and hi bound, for each axis and kernel offset, the output positions whose input
	// position lies inside the image.
	lo, hi [3][]int
}

func newGeom(c int, in, k, s, p [3]int) (geom, bool) {
	g := geom{c: c, in: in, k: k, s: s, p: p}
	for a := range 3 {
		if k[a] < 1 || s[a] < 1 || p[a] < 0 || in[a]+2*p[a] < k[a] {
			return g, false
		}
		g.out[a] = (in[a]+2*p[a]-k[a])/s[a] + 1
		g.lo[a] = make([]int, k[a])
		g.hi[a] = make([]int, k[a])
		for ko := range k[a] {
			lo, hi := 0, g.out[a]
			for lo < hi && lo*s[a]-p[a]+ko < 0 {
				lo++
			}
			for hi > lo && (hi-1)*s[a]-p[a]+ko >= in[a] {
				hi--
			}
			g.lo[a][ko], g.hi[a][ko] = lo, hi
		}
	}
	return g, true
}

func (g *geom) inS() int  { return g.in[0] * g.in[1] * g.in[2] }
func (g *geom) outS() int { return g.out[0] * g.out[1] * g.out[2] }
func (g *geom) kk() int   { return g.k[0] * g.k[1] * g.k[2] }
func (g *geom) rows() int { return g.c * g.kk() }

// im2col writes rows [r0,r1) of the column matrix (c·k³ rows, one per channel and kernel
// offset, each out³ long) of the image x (c·in³).
func (g *geom) im2col(x, col []float32, r0, r1 int) {
	P, inS, kk := g.outS(), g.inS(), g.kk()
	o1, o2 := g.out[1], g.out[2]
	for r := r0; r < r1; r++ {
		c, kr := r/kk, r%kk
		kd, kh, kw := kr/(g.k[1]*g.k[2]), kr/g.k[2]%g.k[1], kr%g.k[2]
		row := col[r*P : (r+1)*P]
		xc := x[c*inS : (c+1)*inS]
		dlo, dhi := g.lo[0][kd], g.hi[0][kd]
		hlo, hhi := g.lo[1][kh], g.hi[1][kh]
		wlo, whi := g.lo[2][kw], g.hi[2][kw]
		clear(row[:dlo*o1*o2])
		clear(row[dhi*o1*o2:])
		for od := dlo; od < dhi; od++ {
			id := od*g.s[0] - g.p[0] + kd
			plane := row[od*o1*o2 : (od+1)*o1*o2]
			clear(plane[:hlo*o2])
			clear(plane[hhi*o2:])
			for oh := hlo; oh < hhi; oh++ {
				ih := oh*g.s[1] - g.p[1] + kh
				src := xc[(id*g.in[1]+ih)*g.in[2]:]
				dst := plane[oh*o2 : (oh+1)*o2]
				clear(dst[:wlo])
				clear(dst[whi:])
				if g.s[2] == 1 {
					off := kw - g.p[2]
					copy(dst[wlo:whi], src[wlo+off:whi+off])
					continue
				}
				for ow := wlo; ow < whi; ow++ {
					dst[ow] = src[ow*g.s[2]-g.p[2]+kw]
				}
			}
		}
	}
}

// col2im adds the column matrix back into channels [c0,c1) of the image x, zeroing each
// channel first unless acc.
func (g *geom) col2im(col, x []float32, c0, c1 int, acc bool) {
	P, inS, kk := g.outS(), g.inS(), g.kk()
	o1, o2 := g.out[1], g.out[2]
	for c := c0; c < c1; c++ {
		xc := x[c*inS : (c+1)*inS]
		if !acc {
			clear(xc)
		}
		for kr := range kk {
			kd, kh, kw := kr/(g.k[1]*g.k[2]), kr/g.k[2]%g.k[1], kr%g.k[2]
			row := col[(c*kk+kr)*P : (c*kk+kr+1)*P]
			hlo, hhi := g.lo[1][kh], g.hi[1][kh]
			wlo, whi := g.lo[2][kw], g.hi[2][kw]
			for od := g.lo[0][kd]; od < g.hi[0][kd]; od++ {
				id := od*g.s[0] - g.p[0] + kd
				for oh := hlo; oh < hhi; oh++ {
					ih := oh*g.s[1] - g.p[1] + kh
					dst := xc[(id*g.in[1]+ih)*g.in[2]:]
					src := row[(od*o1+oh)*o2 : (od*o1+oh+1)*o2]
					if g.s[2] == 1 {
						off := kw - g.p[2]
						d := dst[wlo+off : whi+off]
						s := src[wlo:whi]
						for i := range d {
							d[i] += s[i]
						}
						continue
					}
					for ow := wlo; ow < whi; ow++ {
						dst[ow*g.s[2]-g.p[2]+kw] += src[ow]
					}
				}
			}
		}
	}
}
