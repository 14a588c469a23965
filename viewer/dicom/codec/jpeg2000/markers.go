package jpeg2000

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
)

// Marker codes (T.800 Table A.2).
const (
	mSOC = 0xFF4F
	mCAP = 0xFF50
	mSIZ = 0xFF51
	mCOD = 0xFF52
	mCOC = 0xFF53
	mTLM = 0xFF55
	mPRF = 0xFF56
	mPLM = 0xFF57
	mPLT = 0xFF58
	mCPF = 0xFF59
	mQCD = 0xFF5C
	mQCC = 0xFF5D
	mRGN = 0xFF5E
	mPOC = 0xFF5F
	mPPM = 0xFF60
	mPPT = 0xFF61
	mCRG = 0xFF63
	mCOM = 0xFF64
	mSOT = 0xFF90
	mSOP = 0xFF91
	mEPH = 0xFF92
	mSOD = 0xFF93
	mEOC = 0xFFD9
)

func markerName(m int) string {
	switch m {
	case mSOC:
		return "SOC"
	case mCAP:
		return "CAP"
	case mSIZ:
		return "SIZ"
	case mCOD:
		return "COD"
	case mCOC:
		return "COC"
	case mTLM:
		return "TLM"
	case mPRF:
		return "PRF"
	case mPLM:
		return "PLM"
	case mPLT:
		return "PLT"
	case mCPF:
		return "CPF"
	case mQCD:
		return "QCD"
	case mQCC:
		return "QCC"
	case mRGN:
		return "RGN"
	case mPOC:
		return "POC"
	case mPPM:
		return "PPM"
	case mPPT:
		return "PPT"
	case mCRG:
		return "CRG"
	case mCOM:
		return "COM"
	case mSOT:
		return "SOT"
	case mSOP:
		return "SOP"
	case mEPH:
		return "EPH"
	case mSOD:
		return "SOD"
	case mEOC:
		return "EOC"
	}
	return fmt.Sprintf("0x%04X", m)
}

// Progression orders (T.800 Table A.16).
const (
	orderLRCP = iota
	orderRLCP
	orderRPCL
	orderPCRL
	orderCPRL
)

// Code-block style bits (T.800 Table A.19).
const (
	cbBypass  = 0x01 // selective arithmetic coding bypass
	cbReset   = 0x02 // reset context probabilities after each pass
	cbTermAll = 0x04 // terminate after each pass
	cbCausal  = 0x08 // vertically causal context
	cbPterm   = 0x10 // predictable termination
	cbSegSym  = 0x20 // segmentation symbols
	cbHT      = 0x40 // High-Throughput block coder (T.814), not supported
)

// maxLevels is the largest number of decomposition levels (T.800 Table A.20).
const maxLevels = 32

// sizInfo is the SIZ marker segment (T.800 A.5.1).
type sizInfo struct {
	x1, y1, x0, y0   int // Xsiz, Ysiz, XOsiz, YOsiz: the image area on the reference grid
	tw, th, tx0, ty0 int // XTsiz, YTsiz, XTOsiz, YTOsiz: the tiling
	ntx, nty         int // tiles across and down
	comps            []compInfo
	rsiz             int // capabilities
}

type compInfo struct {
	prec   int  // bit depth, 1..38
	signed bool // two's complement samples
	dx, dy int  // XRsiz, YRsiz subsampling
}

// codingStyle is the per-component part of COD and COC (T.800 A.6.1, A.6.2).
type codingStyle struct {
	levels     int  // decomposition levels NL
	cbw, cbh   int  // code-block width and height exponents (xcb, ycb)
	cbStyle    int  // code-block style bits
	reversible bool // 5-3 wavelet (else 9-7)
	// ppx, ppy are the precinct exponents per resolution level, 15 when COD/COC gives none.
	ppx, ppy [maxLevels + 1]uint8
}

// quantization is QCD or QCC (T.800 A.6.4, A.6.5).
type quantization struct {
	style int // 0 none, 1 scalar derived, 2 scalar expounded
	guard int // guard bits G
	// steps holds (exponent, mantissa) per sub-band in the order LL, then HL, LH, HH of
	// each resolution level from the lowest; one entry when style is 1.
	steps []step
}

type step struct{ exp, mant int }

// progression is one progression order, over layers [0, layerEnd), resolution levels
// [resStart, resEnd) and components [compStart, compEnd): the COD's, or a POC entry.
type progression struct {
	order              int
	layerEnd           int
	resStart, resEnd   int
	compStart, compEnd int
}

// Precedence of the sources of a component's coding style or quantization (T.800 A.6):
// a tile-part COC over a tile-part COD over a main COC over a main COD.
const (
	levelMain = iota
	levelMainComp
	levelTile
	levelTileComp
)

// params are the coding parameters in force for a tile: the main header's, overridden by
// the tile's first tile-part header.
type params struct {
	order  int
	layers int
	mct    bool
	sop    bool
	eph    bool
	comps  []compParams
	poc    []progression
	pocSet bool // the tile's own POC replaces the main header's
}

// compParams are a component's coding parameters. Coding styles and quantizations are
// shared by the components a COD or QCD marker sets, so that a tile's copy of the
// parameters costs little however many components there are.
type compParams struct {
	cs      *codingStyle
	csLevel int
	q       *quantization
	qLevel  int
	roi     int // ROI upshift (RGN), 0 if none
}

func (p *params) clone() *params {
	c := *p
	c.comps = slices.Clone(p.comps)
	c.poc = slices.Clone(p.poc)
	return &c
}

// segment is one marker segment: its marker, offset in the codestream and payload (after
// the length field).
type segment struct {
	marker int
	off    int
	data   []byte
	ctx    string // where, for errors: "" in the main header, "tile 3 tile-part 0: " in a tile's
}

// readSegment reads the marker segment at b[off:].
func readSegment(b []byte, off int) (segment, error) {
	if off+4 > len(b) {
		return segment{}, fmt.Errorf("%w: marker segment at byte %d: codestream ends", ErrTruncated, off)
	}
	m := int(binary.BigEndian.Uint16(b[off:]))
	if m>>8 != 0xFF {
		return segment{}, formatErr("expected a marker at byte %d, found 0x%04X", off, m)
	}
	n := int(binary.BigEndian.Uint16(b[off+2:]))
	if n < 2 {
		return segment{}, formatErr("%s marker at byte %d: length %d", markerName(m), off, n)
	}
	if off+2+n > len(b) {
		return segment{}, fmt.Errorf("%w: %s marker at byte %d declares %d bytes, %d left", ErrTruncated, markerName(m), off, n, len(b)-off-2)
	}
	return segment{marker: m, off: off, data: b[off+4 : off+2+n]}, nil
}

func (s segment) errorf(format string, a ...any) error {
	return formatErr("%s%s marker at byte %d: %s", s.ctx, markerName(s.marker), s.off, fmt.Sprintf(format, a...))
}

func (s segment) unsupported(format string, a ...any) error {
	return fmt.Errorf("%w: %s%s marker at byte %d: %s", ErrUnsupported, s.ctx, markerName(s.marker), s.off, fmt.Sprintf(format, a...))
}

// reader reads big-endian fields from a marker segment's payload.
type reader struct {
	s   segment
	pos int
	err error
}

func (r *reader) need(n int) bool {
	if r.err != nil {
		return false
	}
	if r.pos+n > len(r.s.data) {
		r.err = r.s.errorf("segment of %d bytes is too short", len(r.s.data)+2)
		return false
	}
	return true
}

func (r *reader) u8() int {
	if !r.need(1) {
		return 0
	}
	v := r.s.data[r.pos]
	r.pos++
	return int(v)
}

func (r *reader) u16() int {
	if !r.need(2) {
		return 0
	}
	v := binary.BigEndian.Uint16(r.s.data[r.pos:])
	r.pos += 2
	return int(v)
}

func (r *reader) u32() int {
	if !r.need(4) {
		return 0
	}
	v := binary.BigEndian.Uint32(r.s.data[r.pos:])
	r.pos += 4
	return int(v)
}

// comp reads a component index, one byte when there are fewer than 257 components.
func (r *reader) comp(ncomp int) int {
	if ncomp < 257 {
		return r.u8()
	}
	return r.u16()
}

func (r *reader) left() int { return len(r.s.data) - r.pos }

// parseSIZ reads the SIZ marker segment.
func parseSIZ(s segment) (*sizInfo, error) {
	r := reader{s: s}
	z := &sizInfo{}
	z.rsiz = r.u16()
	z.x1, z.y1, z.x0, z.y0 = r.u32(), r.u32(), r.u32(), r.u32()
	z.tw, z.th, z.tx0, z.ty0 = r.u32(), r.u32(), r.u32(), r.u32()
	n := r.u16()
	if r.err != nil {
		return nil, r.err
	}
	switch {
	case n < 1 || n > 16384:
		return nil, s.errorf("%d components (1 to 16384)", n)
	case z.x1 <= z.x0 || z.y1 <= z.y0:
		return nil, s.errorf("empty image area %d×%d at (%d, %d)", z.x1-z.x0, z.y1-z.y0, z.x0, z.y0)
	case z.tw == 0 || z.th == 0:
		return nil, s.errorf("tile size %d×%d", z.tw, z.th)
	case z.tx0 > z.x0 || z.ty0 > z.y0 || z.tx0+z.tw <= z.x0 || z.ty0+z.th <= z.y0:
		return nil, s.errorf("first tile at (%d, %d) of %d×%d misses the image origin (%d, %d)", z.tx0, z.ty0, z.tw, z.th, z.x0, z.y0)
	}
	z.ntx = ceilDiv(z.x1-z.tx0, z.tw)
	z.nty = ceilDiv(z.y1-z.ty0, z.th)
	if z.ntx*z.nty > 65535 {
		return nil, s.errorf("%d×%d tiles of %d×%d for a %d×%d image (at most 65535 tiles)", z.ntx, z.nty, z.tw, z.th, z.x1-z.x0, z.y1-z.y0)
	}
	z.comps = make([]compInfo, n)
	for i := range z.comps {
		ssiz, dx, dy := r.u8(), r.u8(), r.u8()
		if r.err != nil {
			return nil, r.err
		}
		c := compInfo{prec: ssiz&0x7F + 1, signed: ssiz&0x80 != 0, dx: dx, dy: dy}
		if c.prec > 38 || dx == 0 || dy == 0 {
			return nil, s.errorf("component %d: precision %d, subsampling %d×%d", i, c.prec, dx, dy)
		}
		if c.prec > 31 {
			return nil, s.unsupported("component %d has %d-bit samples (at most 31)", i, c.prec)
		}
		z.comps[i] = c
	}
	return z, nil
}

// parseCodingStyle reads SPcod/SPcoc into cs; precincts says whether precinct sizes follow.
func parseCodingStyle(r *reader, cs *codingStyle, precincts bool) error {
	cs.levels = r.u8()
	cbw, cbh := r.u8(), r.u8()
	cs.cbStyle = r.u8()
	t := r.u8()
	if r.err != nil {
		return r.err
	}
	switch {
	case cs.levels > maxLevels:
		return r.s.errorf("%d decomposition levels (at most %d)", cs.levels, maxLevels)
	case cbw > 8 || cbh > 8 || cbw+cbh > 8:
		return r.s.errorf("code-block size 2^%d×2^%d (exponents 2 to 10, sum at most 12)", cbw+2, cbh+2)
	case t > 1:
		return r.s.errorf("wavelet transform %d (0: 9-7, 1: 5-3)", t)
	}
	if cs.cbStyle&cbHT != 0 {
		return r.s.unsupported("High-Throughput code-blocks (Part 15)")
	}
	if cs.cbStyle&^0x3F != 0 {
		return r.s.errorf("code-block style 0x%02X", cs.cbStyle)
	}
	cs.cbw, cs.cbh = cbw+2, cbh+2
	cs.reversible = t == 1
	for i := 0; i <= cs.levels; i++ {
		cs.ppx[i], cs.ppy[i] = 15, 15
		if precincts {
			v := r.u8()
			if r.err != nil {
				return r.err
			}
			cs.ppx[i], cs.ppy[i] = uint8(v&15), uint8(v>>4)
			if i > 0 && (v&15 == 0 || v>>4 == 0) {
				return r.s.errorf("precinct size 2^%d×2^%d at resolution level %d (exponents at least 1)", v&15, v>>4, i)
			}
		}
	}
	return nil
}

// parseCOD applies a COD marker segment at the given precedence level.
func (p *params) parseCOD(s segment, level int) error {
	r := reader{s: s}
	scod := r.u8()
	p.order = r.u8()
	p.layers = r.u16()
	mct := r.u8()
	cs := &codingStyle{}
	if err := parseCodingStyle(&r, cs, scod&1 != 0); err != nil {
		return err
	}
	switch {
	case scod&^7 != 0:
		return s.errorf("coding style 0x%02X", scod)
	case p.order > orderCPRL:
		return s.errorf("progression order %d", p.order)
	case p.layers == 0:
		return s.errorf("no quality layers")
	case mct > 1:
		return s.unsupported("multiple component transform %d (Part 2)", mct)
	}
	p.sop, p.eph, p.mct = scod&2 != 0, scod&4 != 0, mct == 1
	for i := range p.comps {
		if c := &p.comps[i]; c.csLevel <= level {
			c.cs, c.csLevel = cs, level
		}
	}
	return nil
}

// parseCOC applies a COC marker segment at the given precedence level.
func (p *params) parseCOC(s segment, level int) error {
	r := reader{s: s}
	c := r.comp(len(p.comps))
	scoc := r.u8()
	if r.err != nil {
		return r.err
	}
	if c >= len(p.comps) {
		return s.errorf("component %d of %d", c, len(p.comps))
	}
	cs := &codingStyle{}
	if err := parseCodingStyle(&r, cs, scoc&1 != 0); err != nil {
		return err
	}
	if cc := &p.comps[c]; cc.csLevel <= level {
		cc.cs, cc.csLevel = cs, level
	}
	return nil
}

func parseQuant(r *reader) (*quantization, error) {
	sq := r.u8()
	q := &quantization{style: sq & 31, guard: sq >> 5}
	switch q.style {
	case 0:
		for r.left() > 0 {
			q.steps = append(q.steps, step{exp: r.u8() >> 3})
		}
	case 1, 2:
		if r.left()%2 != 0 {
			return q, r.s.errorf("%d bytes of step sizes, not a whole number of 2-byte steps", r.left())
		}
		for r.left() > 0 {
			v := r.u16()
			q.steps = append(q.steps, step{exp: v >> 11, mant: v & 0x7FF})
		}
	default:
		return q, r.s.errorf("quantization style %d", q.style)
	}
	if r.err != nil {
		return q, r.err
	}
	if len(q.steps) == 0 || q.style == 1 && len(q.steps) != 1 || len(q.steps) > 3*maxLevels+1 {
		return q, r.s.errorf("%d step sizes for quantization style %d", len(q.steps), q.style)
	}
	return q, nil
}

func (p *params) parseQCD(s segment, level int) error {
	r := reader{s: s}
	q, err := parseQuant(&r)
	if err != nil {
		return err
	}
	for i := range p.comps {
		if c := &p.comps[i]; c.qLevel <= level {
			c.q, c.qLevel = q, level
		}
	}
	return nil
}

func (p *params) parseQCC(s segment, level int) error {
	r := reader{s: s}
	c := r.comp(len(p.comps))
	if r.err != nil {
		return r.err
	}
	if c >= len(p.comps) {
		return s.errorf("component %d of %d", c, len(p.comps))
	}
	q, err := parseQuant(&r)
	if err != nil {
		return err
	}
	if cc := &p.comps[c]; cc.qLevel <= level {
		cc.q, cc.qLevel = q, level
	}
	return nil
}

func (p *params) parseRGN(s segment) error {
	r := reader{s: s}
	c := r.comp(len(p.comps))
	style, shift := r.u8(), r.u8()
	if r.err != nil {
		return r.err
	}
	switch {
	case c >= len(p.comps):
		return s.errorf("component %d of %d", c, len(p.comps))
	case style != 0:
		return s.unsupported("ROI style %d (Part 2)", style)
	case shift > 29:
		return s.errorf("ROI shift %d (at most 29 here)", shift)
	}
	p.comps[c].roi = shift
	return nil
}

// parsePOC appends the progression order changes of a POC marker segment.
func (p *params) parsePOC(s segment) error {
	r := reader{s: s}
	n := len(p.comps)
	size := 7
	if n >= 257 {
		size = 9
	}
	if len(s.data)%size != 0 || len(s.data) == 0 {
		return s.errorf("%d bytes are not a whole number of %d-byte entries", len(s.data), size)
	}
	for r.left() > 0 {
		var e progression
		e.resStart = r.u8()
		e.compStart = r.comp(n)
		e.layerEnd = r.u16()
		e.resEnd = r.u8()
		e.compEnd = r.comp(n)
		e.order = r.u8()
		if r.err != nil {
			return r.err
		}
		if e.compEnd == 0 {
			e.compEnd = 256
			if n >= 257 {
				e.compEnd = 16384
			}
		}
		e.compEnd = min(e.compEnd, n)
		e.resEnd = min(e.resEnd, maxLevels+1)
		if e.order > orderCPRL {
			return s.errorf("progression order %d", e.order)
		}
		p.poc = append(p.poc, e)
	}
	return nil
}

// zchunk is a PPM or PPT payload with its index Zppm/Zppt.
type zchunk struct {
	z    int
	data []byte
}

// joinChunks concatenates PPM or PPT payloads in index order.
func joinChunks(cs []zchunk) []byte {
	slices.SortStableFunc(cs, func(a, b zchunk) int { return cmp.Compare(a.z, b.z) })
	var n int
	for _, c := range cs {
		n += len(c.data)
	}
	out := make([]byte, 0, n)
	for _, c := range cs {
		out = append(out, c.data...)
	}
	return out
}
