package jpeg2000

import (
	"fmt"
	"math"
)

// tileComp is one component of a tile: its resolution levels and its coefficients, kept
// in the Mallat layout (each resolution's LL in the top-left corner of the next one).
type tileComp struct {
	x0, y0, x1, y1 int // on the component's grid
	cp             *compParams
	prec           int
	res            []resolution
	icoef          []int32   // 5-3 coefficients, then samples (w×h)
	fcoef          []float32 // 9-7 coefficients, then samples
}

func (tc *tileComp) w() int { return tc.x1 - tc.x0 }
func (tc *tileComp) h() int { return tc.y1 - tc.y0 }

// resolution is a resolution level of a tile-component (T.800 B.5).
type resolution struct {
	x0, y0, x1, y1 int
	ppx, ppy       int // precinct size exponents
	npx, npy       int // precincts across and down
	bands          []band
	precincts      []*precinct // built when their first packet is read
	next           []uint16    // next layer expected per precinct
}

// Sub-band orientations.
const (
	bandLL = iota
	bandHL // horizontally high-pass
	bandLH // vertically high-pass
	bandHH
)

// band is a sub-band of a resolution level (T.800 B.5).
type band struct {
	orient         int
	x0, y0, x1, y1 int // on the sub-band's grid
	cbw, cbh       int // code-block size exponents in this band
	mb             int // magnitude bit-planes Mb (T.800 E.1)
	delta          float32
	offx, offy     int // of the sub-band's top-left sample in the tile-component's buffer
}

// precinct holds the code-blocks of a precinct, per sub-band of its resolution.
type precinct struct {
	bands [3]precinctBand
}

type precinctBand struct {
	ncx, ncy  int
	cbs       []codeBlock
	incl, zbp tagTree
}

// codeBlock is a code-block with the codeword segments its packets brought.
type codeBlock struct {
	x0, y0, x1, y1 int // on the sub-band's grid
	numbps         int // Mb minus the zero bit-planes
	lblock         int
	npasses        int
	segs           []codeword
}

// codeword is a codeword segment: passes coded together in one MQ or raw run (T.800
// D.4.1), possibly spread over several packets.
type codeword struct {
	first, passes int
	chunks        []chunk
}

// chunk is a span of the tile's data.
type chunk struct{ off, n int32 }

// buildComps computes the resolution levels and sub-bands of each component of t.
func buildComps(siz *sizInfo, t *tile) ([]tileComp, error) {
	var nres int
	for _, cp := range t.p.comps {
		nres += cp.cs.levels + 1
	}
	if nres > maxTileResolutions {
		return nil, fmt.Errorf("%w: tile %d: %d components declare %d resolution levels (at most %d)", ErrTooLarge, t.index, len(siz.comps), nres, maxTileResolutions)
	}
	tcs := make([]tileComp, len(siz.comps))
	for c := range tcs {
		ci, cp := siz.comps[c], &t.p.comps[c]
		tc := &tcs[c]
		tc.cp, tc.prec = cp, ci.prec
		tc.x0, tc.y0 = ceilDiv(t.x0, ci.dx), ceilDiv(t.y0, ci.dy)
		tc.x1, tc.y1 = ceilDiv(t.x1, ci.dx), ceilDiv(t.y1, ci.dy)
		cs, q := cp.cs, cp.q
		nl := cs.levels
		if q.style != 1 && len(q.steps) < 3*nl+1 {
			return nil, formatErr("tile %d component %d: %d quantization step sizes for %d sub-bands", t.index, c, len(q.steps), 3*nl+1)
		}
		tc.res = make([]resolution, nl+1)
		for r := range tc.res {
			res := &tc.res[r]
			sh := nl - r
			res.x0, res.y0 = ceilDivPow2(tc.x0, sh), ceilDivPow2(tc.y0, sh)
			res.x1, res.y1 = ceilDivPow2(tc.x1, sh), ceilDivPow2(tc.y1, sh)
			res.ppx, res.ppy = int(cs.ppx[r]), int(cs.ppy[r])
			if res.x1 > res.x0 && res.y1 > res.y0 {
				res.npx = ceilDivPow2(res.x1, res.ppx) - res.x0>>res.ppx
				res.npy = ceilDivPow2(res.y1, res.ppy) - res.y0>>res.ppy
			}
			res.precincts = make([]*precinct, res.npx*res.npy)
			res.next = make([]uint16, res.npx*res.npy)
			orients := []int{bandLL}
			if r > 0 {
				orients = []int{bandHL, bandLH, bandHH}
			}
			res.bands = make([]band, len(orients))
			for i, o := range orients {
				b := &res.bands[i]
				b.orient = o
				nb := nl // decomposition levels from the image to this band
				if r > 0 {
					nb = nl - r + 1
				}
				if r == 0 {
					b.x0, b.y0, b.x1, b.y1 = res.x0, res.y0, res.x1, res.y1
				} else {
					xo, yo := o&1, o>>1
					b.x0 = ceilDivPow2(tc.x0-xo<<(nb-1), nb)
					b.y0 = ceilDivPow2(tc.y0-yo<<(nb-1), nb)
					b.x1 = ceilDivPow2(tc.x1-xo<<(nb-1), nb)
					b.y1 = ceilDivPow2(tc.y1-yo<<(nb-1), nb)
					lo := &tc.res[r-1]
					b.offx, b.offy = xo*(lo.x1-lo.x0), yo*(lo.y1-lo.y0)
				}
				var eps, mant int
				switch q.style {
				case 0, 2:
					idx := 0
					if r > 0 {
						idx = 3*(r-1) + o
					}
					eps, mant = q.steps[idx].exp, q.steps[idx].mant
				case 1:
					eps, mant = q.steps[0].exp-nl+nb, q.steps[0].mant
				}
				if eps < 0 {
					return nil, formatErr("tile %d component %d: derived quantization exponent %d for %d levels", t.index, c, eps, nl)
				}
				b.mb = q.guard + eps - 1
				if b.mb+cp.roi > maxPlanes {
					return nil, fmt.Errorf("%w: tile %d component %d: %d bit-planes in a sub-band (at most %d)", ErrUnsupported, t.index, c, b.mb+cp.roi, maxPlanes)
				}
				gain := [4]int{0, 1, 1, 2}[o]
				b.delta = float32(math.Ldexp(1+float64(mant)/2048, ci.prec+gain-eps))
				px, py := res.ppx, res.ppy
				if r > 0 {
					px, py = px-1, py-1
				}
				b.cbw, b.cbh = min(cs.cbw, px), min(cs.cbh, py)
			}
		}
	}
	return tcs, nil
}

// precinct returns precinct p of resolution level r, building it on first use.
func (res *resolution) precinct(p, r int) *precinct {
	if pr := res.precincts[p]; pr != nil {
		return pr
	}
	pr := &precinct{}
	pi, pj := p%res.npx, p/res.npx
	ex, ey := res.ppx, res.ppy
	if r > 0 {
		ex, ey = ex-1, ey-1
	}
	gx0 := (res.x0>>res.ppx + pi) << ex
	gy0 := (res.y0>>res.ppy + pj) << ey
	for i := range res.bands {
		b, pb := &res.bands[i], &pr.bands[i]
		bx0, bx1 := max(gx0, b.x0), min(gx0+1<<ex, b.x1)
		by0, by1 := max(gy0, b.y0), min(gy0+1<<ey, b.y1)
		if bx0 >= bx1 || by0 >= by1 {
			continue
		}
		cx0, cy0 := bx0>>b.cbw, by0>>b.cbh
		pb.ncx, pb.ncy = ceilDivPow2(bx1, b.cbw)-cx0, ceilDivPow2(by1, b.cbh)-cy0
		pb.cbs = make([]codeBlock, pb.ncx*pb.ncy)
		for j := range pb.ncy {
			for k := range pb.ncx {
				cb := &pb.cbs[j*pb.ncx+k]
				cb.x0, cb.x1 = max(bx0, (cx0+k)<<b.cbw), min(bx1, (cx0+k+1)<<b.cbw)
				cb.y0, cb.y1 = max(by0, (cy0+j)<<b.cbh), min(by1, (cy0+j+1)<<b.cbh)
			}
		}
		pb.incl.init(pb.ncx, pb.ncy)
		pb.zbp.init(pb.ncx, pb.ncy)
	}
	res.precincts[p] = pr
	return pr
}

// tagTree is a tag tree (T.800 B.10.2): a quadtree of minima, decoded a bit at a time.
type tagTree struct {
	levels []ttLevel // from the leaves up to the root
	nodes  []ttNode
}

type ttLevel struct{ w, off int }

type ttNode struct{ value, low int32 }

const ttUnknown = math.MaxInt32

func (t *tagTree) init(w, h int) {
	n := 0
	for {
		t.levels = append(t.levels, ttLevel{w: w, off: n})
		n += w * h
		if w == 1 && h == 1 {
			break
		}
		w, h = (w+1)/2, (h+1)/2
	}
	t.nodes = make([]ttNode, n)
	for i := range t.nodes {
		t.nodes[i].value = ttUnknown
	}
}

// decode reads bits until it knows whether leaf (x, y) is below threshold, and says so.
func (t *tagTree) decode(br *bitReader, x, y int, threshold int32) (bool, error) {
	var low int32
	var n *ttNode
	for k := len(t.levels) - 1; k >= 0; k-- {
		lv := t.levels[k]
		n = &t.nodes[lv.off+(y>>k)*lv.w+x>>k]
		if low > n.low {
			n.low = low
		} else {
			low = n.low
		}
		for low < threshold && low < n.value {
			bit, err := br.bit()
			if err != nil {
				return false, err
			}
			if bit != 0 {
				n.value = low
			} else {
				low++
			}
		}
		n.low = low
	}
	return n.value < threshold, nil
}

// value decodes leaf (x, y) completely; it fails when the value reaches limit.
func (t *tagTree) value(br *bitReader, x, y int, limit int32) (int32, bool, error) {
	ok, err := t.decode(br, x, y, limit)
	if err != nil || !ok {
		return 0, false, err
	}
	return t.nodes[(y*t.levels[0].w + x)].value, true, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// ceilDivPow2 is ⌈a / 2^n⌉ for any sign of a.
func ceilDivPow2(a, n int) int { return -(-a >> n) }
