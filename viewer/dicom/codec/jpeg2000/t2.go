package jpeg2000

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// errShort reports that packet data ran out: the codestream is truncated.
var errShort = errors.New("data ends")

// bitReader reads packet header bits (T.800 B.10.1): most significant bit first, and a
// byte after 0xFF holds only 7 bits.
type bitReader struct {
	b   []byte
	pos int
	buf byte
	ct  int
	ff  bool
}

func (r *bitReader) bit() (int, error) {
	if r.ct == 0 {
		if r.pos >= len(r.b) {
			return 0, errShort
		}
		r.buf = r.b[r.pos]
		r.pos++
		r.ct = 8
		if r.ff {
			r.ct = 7
		}
		r.ff = r.buf == 0xFF
	}
	r.ct--
	return int(r.buf>>r.ct) & 1, nil
}

func (r *bitReader) bits(n int) (int, error) {
	v := 0
	for range n {
		b, err := r.bit()
		if err != nil {
			return 0, err
		}
		v = v<<1 | b
	}
	return v, nil
}

// align ends the header: a header ending in 0xFF is followed by a stuffed byte.
func (r *bitReader) align() error {
	r.ct = 0
	if r.ff {
		if r.pos >= len(r.b) {
			return errShort
		}
		r.pos++
		r.ff = false
	}
	return nil
}

// numPasses reads the number of coding passes (T.800 Table B.4): 0 is 1 pass, 10 is 2,
// 11xx is 3 to 5, 1111 xxxxx is 6 to 36 and 1111 11111 xxxxxxx is 37 to 164.
func numPasses(br *bitReader) (int, error) {
	for _, f := range [...]struct{ bits, base int }{{1, 1}, {1, 2}, {2, 3}, {5, 6}, {7, 37}} {
		v, err := br.bits(f.bits)
		if err != nil {
			return 0, err
		}
		if v < 1<<f.bits-1 || f.bits == 7 {
			return f.base + v, nil
		}
	}
	panic("unreachable")
}

// segmentCap is the number of passes a codeword segment starting at pass first can hold
// (T.800 D.4.1 and Table D.9).
func segmentCap(style, first int) int {
	switch {
	case style&cbTermAll != 0:
		return 1
	case style&cbBypass != 0:
		if first < 10 {
			return 10 - first
		}
		if first%3 == 1 {
			return 2 // significance propagation and refinement, raw
		}
		return 1 // cleanup, MQ
	}
	return 1 << 30
}

// maxPlanes bounds the bit-planes of a code-block: coefficients are kept in 32 bits as
// magnitude·2 plus a midpoint bit (T.800 Annex E allows Mb up to 37 bits; real files use
// at most about 20).
const maxPlanes = 30

// contribution is what a packet header says about one codeword segment of a code-block.
type contribution struct {
	cb     *codeBlock
	first  bool // the code-block's first inclusion
	numbps int  // with first
	lblock int
	passes int
	newSeg bool
	length int
}

// t2 reads the packets of a tile (T.800 Annex B).
type t2 struct {
	t       *tile
	siz     *sizInfo
	tcs     []tileComp
	data    []byte
	pos     int
	hdr     []byte // packed packet headers (PPM, PPT), or nil
	hpos    int
	packed  bool
	contrib []contribution
	packets int
	// trunc, when set, says where the data ran out.
	trunc string
	// trace, when set, is told where each packet lies in data (tests use it to move
	// packet headers into PPM and PPT markers and to cut codestreams between layers).
	trace func(packetSpan)
}

// packetSpan locates a packet in a tile's data: [start, hdr) is its SOP marker, [hdr,
// body) its header when the header is in the data, [body, end) its body.
type packetSpan struct{ start, hdr, body, end int }

// decodePackets reads all packets of the tile in its progression order.
func (d *t2) decodePackets() error {
	p := d.t.p
	progs := p.poc
	if len(progs) == 0 {
		progs = []progression{{order: p.order, layerEnd: p.layers, resEnd: maxLevels + 1, compEnd: len(d.tcs)}}
	}
	for _, pg := range progs {
		pg.layerEnd = min(pg.layerEnd, p.layers)
		pg.compEnd = min(pg.compEnd, len(d.tcs))
		if err := d.progression(pg); err != nil {
			if errors.Is(err, errShort) {
				return nil // d.trunc says where
			}
			return err
		}
	}
	return nil
}

// visit reads the packet of layer l, resolution r, component c and precinct p, unless
// an earlier progression already read it.
func (d *t2) visit(c, r, p, l int) error {
	res := &d.tcs[c].res[r]
	switch n := int(res.next[p]); {
	case l < n:
		return nil
	case l > n:
		return formatErr("tile %d: packet of layer %d before layer %d (component %d, resolution %d, precinct %d)", d.t.index, l, n, c, r, p)
	}
	res.next[p]++
	if err := d.packet(c, r, p, l); err != nil {
		if errors.Is(err, errShort) {
			d.trunc = fmt.Sprintf("tile %d: packet %d (layer %d, resolution %d, component %d, precinct %d) at byte %d of the tile's %d bytes of data (which start at byte %d)",
				d.t.index, d.packets, l, r, c, p, d.pos, len(d.data), d.t.offset)
		}
		return err
	}
	d.packets++
	return nil
}

type precinctRef struct{ y, x, c, r, p int }

// progression visits the packets of one progression (T.800 B.12).
func (d *t2) progression(pg progression) error {
	nres := func(c int) int { return len(d.tcs[c].res) }
	npre := func(c, r int) int { return len(d.tcs[c].res[r].next) }
	maxRes := 0
	for c := pg.compStart; c < pg.compEnd; c++ {
		maxRes = max(maxRes, nres(c))
	}
	resEnd := min(pg.resEnd, maxRes)
	switch pg.order {
	case orderLRCP:
		for l := range pg.layerEnd {
			for r := pg.resStart; r < resEnd; r++ {
				for c := pg.compStart; c < pg.compEnd; c++ {
					if r >= nres(c) {
						continue
					}
					for p := range npre(c, r) {
						if err := d.visit(c, r, p, l); err != nil {
							return err
						}
					}
				}
			}
		}
		return nil
	case orderRLCP:
		for r := pg.resStart; r < resEnd; r++ {
			for l := range pg.layerEnd {
				for c := pg.compStart; c < pg.compEnd; c++ {
					if r >= nres(c) {
						continue
					}
					for p := range npre(c, r) {
						if err := d.visit(c, r, p, l); err != nil {
							return err
						}
					}
				}
			}
		}
		return nil
	}
	// Position-driven orders: precincts sorted by where they start on the reference grid.
	var refs []precinctRef
	for c := pg.compStart; c < pg.compEnd; c++ {
		for r := pg.resStart; r < min(resEnd, nres(c)); r++ {
			for p := range npre(c, r) {
				y, x := d.precinctOrigin(c, r, p)
				refs = append(refs, precinctRef{y, x, c, r, p})
			}
		}
	}
	var key func(a, b precinctRef) int
	switch pg.order {
	case orderRPCL:
		key = func(a, b precinctRef) int {
			return cmp.Or(cmp.Compare(a.r, b.r), cmp.Compare(a.y, b.y), cmp.Compare(a.x, b.x), cmp.Compare(a.c, b.c))
		}
	case orderPCRL:
		key = func(a, b precinctRef) int {
			return cmp.Or(cmp.Compare(a.y, b.y), cmp.Compare(a.x, b.x), cmp.Compare(a.c, b.c), cmp.Compare(a.r, b.r))
		}
	default: // CPRL
		key = func(a, b precinctRef) int {
			return cmp.Or(cmp.Compare(a.c, b.c), cmp.Compare(a.y, b.y), cmp.Compare(a.x, b.x), cmp.Compare(a.r, b.r))
		}
	}
	slices.SortStableFunc(refs, key)
	for _, f := range refs {
		for l := range pg.layerEnd {
			if err := d.visit(f.c, f.r, f.p, l); err != nil {
				return err
			}
		}
	}
	return nil
}

// precinctOrigin is where precinct p of resolution r of component c is first met when
// the reference grid is scanned in the position-driven orders (T.800 B.12.1.3): its
// top-left corner, or the tile's for a precinct that starts before the tile.
func (d *t2) precinctOrigin(c, r, p int) (y, x int) {
	tc := &d.tcs[c]
	res := &tc.res[r]
	ci := d.siz.comps[c]
	lev := len(tc.res) - 1 - r
	px := (res.x0>>res.ppx + p%res.npx) << res.ppx
	py := (res.y0>>res.ppy + p/res.npx) << res.ppy
	x, y = d.t.x0, d.t.y0
	if px >= res.x0 {
		x = px << lev * ci.dx
	}
	if py >= res.y0 {
		y = py << lev * ci.dy
	}
	return y, x
}

// packet reads one packet: its header, then its body (T.800 B.9, B.10).
func (d *t2) packet(c, r, p, l int) error {
	tc := &d.tcs[c]
	res := &tc.res[r]
	pr := res.precinct(p, r)
	params := d.t.p
	span := packetSpan{start: d.pos}
	if params.sop && d.pos+6 <= len(d.data) && d.data[d.pos] == 0xFF && d.data[d.pos+1] == 0x91 {
		d.pos += 6
	}
	span.hdr = d.pos
	br := bitReader{b: d.data, pos: d.pos}
	if d.packed {
		br = bitReader{b: d.hdr, pos: d.hpos}
	}
	d.contrib = d.contrib[:0]
	present, err := br.bit()
	if err != nil {
		return err
	}
	style := tc.cp.cs.cbStyle
	if present != 0 {
		for bi := range res.bands {
			b, pb := &res.bands[bi], &pr.bands[bi]
			for k := range pb.cbs {
				cb := &pb.cbs[k]
				first := cb.npasses == 0
				var incl bool
				if first {
					incl, err = pb.incl.decode(&br, k%pb.ncx, k/pb.ncx, int32(l+1))
				} else {
					var bit int
					bit, err = br.bit()
					incl = bit != 0
				}
				if err != nil {
					return err
				}
				if !incl {
					continue
				}
				numbps, lblock := cb.numbps, cb.lblock
				if first {
					zbp, ok, err := pb.zbp.value(&br, k%pb.ncx, k/pb.ncx, 64)
					if err != nil {
						return err
					}
					if !ok {
						return formatErr("tile %d: code-block %d of precinct %d (resolution %d, component %d): 64 or more missing bit-planes", d.t.index, k, p, r, c)
					}
					numbps, lblock = b.mb-int(zbp), 3
				}
				np, err := numPasses(&br)
				if err != nil {
					return err
				}
				for {
					bit, err := br.bit()
					if err != nil {
						return err
					}
					if bit == 0 {
						break
					}
					if lblock++; lblock > 32 {
						return formatErr("tile %d: code-block length indicator above 32 bits", d.t.index)
					}
				}
				// Passes beyond the last bit-plane are ignored, as OpenJPEG does (its encoder
				// writes one more bit-plane than Mb when the guard bits are too few), but no
				// code-block has more passes than 30 bit-planes allow.
				if cb.npasses+np > 3*maxPlanes-2 {
					return formatErr("tile %d: code-block %d of precinct %d (resolution %d, component %d) has %d coding passes (at most %d)",
						d.t.index, k, p, r, c, cb.npasses+np, 3*maxPlanes-2)
				}
				// Split the passes into codeword segments, a length for each.
				segFirst, segPasses := -1, 0
				if n := len(cb.segs); n > 0 {
					segFirst, segPasses = cb.segs[n-1].first, cb.segs[n-1].passes
				}
				done := cb.npasses
				for np > 0 {
					newSeg := segFirst < 0 || segPasses == segmentCap(style, segFirst)
					if newSeg {
						segFirst, segPasses = done, 0
					}
					take := min(np, segmentCap(style, segFirst)-segPasses)
					nb := lblock + bits.Len(uint(take)) - 1
					if nb > 31 {
						return formatErr("tile %d: a %d-bit codeword segment length", d.t.index, nb)
					}
					n, err := br.bits(nb)
					if err != nil {
						return err
					}
					d.contrib = append(d.contrib, contribution{cb: cb, first: first, numbps: numbps, lblock: lblock, passes: take, newSeg: newSeg, length: n})
					first = false
					segPasses += take
					done += take
					np -= take
				}
			}
		}
	}
	if err := br.align(); err != nil {
		return err
	}
	if params.eph && br.pos+2 <= len(br.b) && br.b[br.pos] == 0xFF && br.b[br.pos+1] == 0x92 {
		br.pos += 2
	}
	if d.packed {
		d.hpos = br.pos
	} else {
		d.pos = br.pos
	}
	span.body = d.pos
	// The body: each contribution's bytes, in header order. A contribution cut by the end
	// of the data is dropped, with what follows it.
	for _, ct := range d.contrib {
		cb := ct.cb
		if ct.length > len(d.data)-d.pos {
			return errShort
		}
		if ct.first {
			cb.numbps = ct.numbps
		}
		cb.lblock = ct.lblock
		if ct.newSeg {
			cb.segs = append(cb.segs, codeword{first: cb.npasses})
		}
		s := &cb.segs[len(cb.segs)-1]
		s.passes += ct.passes
		cb.npasses += ct.passes
		if ct.length > 0 {
			s.chunks = append(s.chunks, chunk{int32(d.pos), int32(ct.length)})
		}
		d.pos += ct.length
	}
	if d.trace != nil {
		span.end = d.pos
		d.trace(span)
	}
	return nil
}
