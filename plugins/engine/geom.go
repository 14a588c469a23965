package engine

// geom is the geometry of a convolution window sliding over one sample: c channels of
// size in, kernel k, stride s, zero padding p, giving out positions per axis (D, H, W).
//
// Column matrices are built in tiles of output rows: a row q is one (od, oh) pair
// (q = od·out[1] + oh) with its out[2] positions, so a tile [q0,q1) has (q1−q0)·out[2]
// columns and c·k³ rows, one per channel and kernel offset.
type geom struct {
	c                int
	in, k, s, p, out [3]int
	// wlo and whi bound, for each kernel offset along W, the output columns whose input
	// column lies inside the image.
	wlo, whi []int
	// colBudget, when positive, replaces the package's colBudget (budget).
	colBudget int
}

func newGeom(c int, in, k, s, p [3]int) (geom, bool) {
	g := geom{c: c, in: in, k: k, s: s, p: p}
	for a := range 3 {
		if k[a] < 1 || s[a] < 1 || p[a] < 0 || in[a]+2*p[a] < k[a] {
			return g, false
		}
		g.out[a] = (in[a]+2*p[a]-k[a])/s[a] + 1
	}
	g.wlo, g.whi = make([]int, k[2]), make([]int, k[2])
	for ko := range k[2] {
		lo, hi := 0, g.out[2]
		for lo < hi && lo*s[2]-p[2]+ko < 0 {
			lo++
		}
		for hi > lo && (hi-1)*s[2]-p[2]+ko >= in[2] {
			hi--
		}
		g.wlo[ko], g.whi[ko] = lo, hi
	}
	return g, true
}

func (g *geom) inS() int  { return g.in[0] * g.in[1] * g.in[2] }
func (g *geom) outS() int { return g.out[0] * g.out[1] * g.out[2] }
func (g *geom) kk() int   { return g.k[0] * g.k[1] * g.k[2] }
func (g *geom) rows() int { return g.c * g.kk() }

// outRows is the number of output rows (od, oh pairs).
func (g *geom) outRows() int { return g.out[0] * g.out[1] }

// colBudget bounds a column tile (values per worker): 8 MiB keeps a tile in the last-level
// cache between im2col and its SGEMM and the workspace small for 3D patches. A test lowers
// it for one network (withTiling) to exercise tiling.
const colBudget = 1 << 21

// budget is the geometry's column tile budget: colBudget unless the network was built
// with another (withTiling).
func (g *geom) budget() int {
	if g.colBudget > 0 {
		return g.colBudget
	}
	return colBudget
}

// tileRows is the number of output rows per column tile.
func (g *geom) tileRows() int {
	return min(g.outRows(), max(1, g.budget()/(g.rows()*g.out[2])))
}

// source maps kernel offsets (kd, kh) and output row q to the input row, or −1 outside.
func (g *geom) source(q, kd, kh int) int {
	od, oh := q/g.out[1], q%g.out[1]
	id, ih := od*g.s[0]-g.p[0]+kd, oh*g.s[1]-g.p[1]+kh
	if id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] {
		return -1
	}
	return id*g.in[1] + ih
}

// im2col writes the column tile of output rows [q0,q1) of the image x (c·in³).
func (g *geom) im2col(x, col []float32, q0, q1 int) {
	inS, kk, o2 := g.inS(), g.kk(), g.out[2]
	T := (q1 - q0) * o2
	for r := range g.rows() {
		c, kr := r/kk, r%kk
		kd, kh, kw := kr/(g.k[1]*g.k[2]), kr/g.k[2]%g.k[1], kr%g.k[2]
		row := col[r*T : (r+1)*T]
		xc := x[c*inS : (c+1)*inS]
		wlo, whi, off := g.wlo[kw], g.whi[kw], kw-g.p[2]
		od, oh := q0/g.out[1], q0%g.out[1]
		for q := q0; q < q1; q++ {
			dst := row[(q-q0)*o2 : (q-q0+1)*o2]
			id, ih := od*g.s[0]-g.p[0]+kd, oh*g.s[1]-g.p[1]+kh
			if oh++; oh == g.out[1] {
				oh, od = 0, od+1
			}
			if uint(id) >= uint(g.in[0]) || uint(ih) >= uint(g.in[1]) {
				clear(dst)
				continue
			}
			line := xc[(id*g.in[1]+ih)*g.in[2] : (id*g.in[1]+ih+1)*g.in[2]]
			for i := range wlo {
				dst[i] = 0
			}
			for i := whi; i < o2; i++ {
				dst[i] = 0
			}
			if g.s[2] == 1 {
				copy(dst[wlo:whi], line[wlo+off:whi+off])
				continue
			}
			for ow := wlo; ow < whi; ow++ {
				dst[ow] = line[ow*g.s[2]+off]
			}
		}
	}
}

// col2im adds the column tile of output rows [q0,q1) back into the image x.
func (g *geom) col2im(col, x []float32, q0, q1 int) {
	inS, kk, o2 := g.inS(), g.kk(), g.out[2]
	T := (q1 - q0) * o2
	for r := range g.rows() {
		c, kr := r/kk, r%kk
		kd, kh, kw := kr/(g.k[1]*g.k[2]), kr/g.k[2]%g.k[1], kr%g.k[2]
		row := col[r*T : (r+1)*T]
		xc := x[c*inS : (c+1)*inS]
		wlo, whi, off := g.wlo[kw], g.whi[kw], kw-g.p[2]
		for q := q0; q < q1; q++ {
			src := g.source(q, kd, kh)
			if src < 0 {
				continue
			}
			from := row[(q-q0)*o2 : (q-q0+1)*o2]
			line := xc[src*g.in[2] : (src+1)*g.in[2]]
			if g.s[2] == 1 {
				d, s := line[wlo+off:whi+off], from[wlo:whi]
				for i := range d {
					d[i] += s[i]
				}
				continue
			}
			for ow := wlo; ow < whi; ow++ {
				line[ow*g.s[2]+off] += from[ow]
			}
		}
	}
}
