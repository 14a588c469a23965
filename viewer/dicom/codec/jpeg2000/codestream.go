package jpeg2000

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// MaxSamples bounds the samples of all components together that Decode accepts (2^28, a
// gibibyte of int32 samples): every allocation of the decoder is proportional to the
// samples its header declares, so this bounds its memory.
const MaxSamples = 1 << 28

// limits bound what one decode accepts. Decode and DecodeConfig take [defaults]; the fuzz
// and corruption tests pass lower ones, as an argument, so no test changes the package's.
type limits struct {
	samples int // the samples of all components together, MaxSamples by default
}

// defaults are the limits of Decode and DecodeConfig.
var defaults = limits{samples: MaxSamples}

// Limits on the resolution levels a codestream may declare, counted over components and
// tiles: the decoder keeps a few hundred bytes for each, so a small image declaring
// thousands of components in thousands of tiles must not cost gigabytes. Real images
// declare a few dozen (one tile of three components at six levels: 18).
const (
	maxTileResolutions  = 1 << 17 // in one tile
	maxTotalResolutions = 1 << 21 // in all tiles
	maxTileComps        = 1 << 18 // tiles × components
)

// codestream is a parsed codestream: the main header and the tile-parts of each tile.
type codestream struct {
	siz   *sizInfo
	main  *params
	tiles []*tile
	// ppm holds the packed packet headers of the main header's PPM markers, if any.
	ppm    []byte
	hasPPM bool
	// trunc describes where the codestream ended early ("" when it did not).
	trunc string
}

// tile holds a tile's parameters and data as read from its tile-parts.
type tile struct {
	index          int
	x0, y0, x1, y1 int // on the reference grid
	p              *params
	parts          int    // tile-parts read
	data           []byte // the bodies of its tile-parts, concatenated
	ppt            []zchunk
	ppm            []byte // packet headers from PPM, concatenated over its tile-parts
	offset         int    // codestream offset of the first tile-part's body, for errors
}

// parseMain reads SOC, SIZ and the main header up to the first SOT, refusing an image of
// more samples than lim allows; it returns the offset of that SOT.
func parseMain(b []byte, lim limits) (*codestream, int, error) {
	if len(b) < 2 || binary.BigEndian.Uint16(b) != mSOC {
		return nil, 0, formatErr("no SOC marker at the start of the codestream")
	}
	s, err := readSegment(b, 2)
	if err != nil {
		return nil, 0, err
	}
	if s.marker != mSIZ {
		return nil, 0, formatErr("expected SIZ after SOC, found %s", markerName(s.marker))
	}
	siz, err := parseSIZ(s)
	if err != nil {
		return nil, 0, err
	}
	total := 0
	for _, c := range siz.comps {
		w, h := ceilDiv(siz.x1, c.dx)-ceilDiv(siz.x0, c.dx), ceilDiv(siz.y1, c.dy)-ceilDiv(siz.y0, c.dy)
		if h > lim.samples/max(w, 1) { // w·h would overflow
			total = lim.samples + 1
			break
		}
		total += w * h
	}
	if total > lim.samples {
		return nil, 0, fmt.Errorf("%w: SIZ declares %d×%d with %d components, %d samples (at most %d)", ErrTooLarge,
			siz.x1-siz.x0, siz.y1-siz.y0, len(siz.comps), total, lim.samples)
	}
	cs := &codestream{siz: siz, main: &params{comps: make([]compParams, len(siz.comps))}}
	for i := range cs.main.comps {
		cs.main.comps[i].csLevel, cs.main.comps[i].qLevel = -1, -1
	}
	var ppm []zchunk
	seenCOD, seenQCD := false, false
	pos := s.off + 2 + len(s.data) + 2
	for {
		if pos+2 <= len(b) && (binary.BigEndian.Uint16(b[pos:]) == mSOT || binary.BigEndian.Uint16(b[pos:]) == mEOC) {
			break // an EOC here ends a codestream without tiles, reported as truncated
		}
		s, err := readSegment(b, pos)
		if err != nil {
			return nil, 0, err
		}
		pos = s.off + 2 + len(s.data) + 2
		switch s.marker {
		case mCOD:
			err, seenCOD = cs.main.parseCOD(s, levelMain), true
		case mCOC:
			err = cs.main.parseCOC(s, levelMainComp)
		case mQCD:
			err, seenQCD = cs.main.parseQCD(s, levelMain), true
		case mQCC:
			err = cs.main.parseQCC(s, levelMainComp)
		case mRGN:
			err = cs.main.parseRGN(s)
		case mPOC:
			err = cs.main.parsePOC(s)
		case mPPM:
			if len(s.data) < 1 {
				return nil, 0, s.errorf("no Zppm")
			}
			ppm = append(ppm, zchunk{int(s.data[0]), s.data[1:]})
		case mSOD, mEOC, mSOC:
			return nil, 0, formatErr("main header: unexpected %s marker at byte %d", markerName(s.marker), s.off)
		default:
			// TLM, PLM, CRG, COM, CAP, CPF and unknown segments carry nothing we need.
		}
		if err != nil {
			return nil, 0, err
		}
	}
	if !seenCOD || !seenQCD {
		return nil, 0, formatErr("main header has no COD or no QCD marker")
	}
	for i, c := range cs.main.comps {
		if c.csLevel < 0 || c.qLevel < 0 {
			return nil, 0, formatErr("main header: component %d has no coding style or quantization", i)
		}
	}
	if n := siz.ntx * siz.nty * len(siz.comps); n > maxTileComps {
		return nil, 0, fmt.Errorf("%w: %d tiles of %d components (at most %d tile-components)", ErrTooLarge, siz.ntx*siz.nty, len(siz.comps), maxTileComps)
	}
	var res int
	for _, c := range cs.main.comps {
		res += c.cs.levels + 1
	}
	if n := res * siz.ntx * siz.nty; n > maxTotalResolutions {
		return nil, 0, fmt.Errorf("%w: %d tiles of %d components declare %d resolution levels (at most %d)", ErrTooLarge,
			siz.ntx*siz.nty, len(siz.comps), n, maxTotalResolutions)
	}
	cs.tiles = make([]*tile, siz.ntx*siz.nty)
	for i := range cs.tiles {
		tx, ty := i%siz.ntx, i/siz.ntx
		cs.tiles[i] = &tile{
			index: i,
			x0:    max(siz.tx0+tx*siz.tw, siz.x0), y0: max(siz.ty0+ty*siz.th, siz.y0),
			x1: min(siz.tx0+(tx+1)*siz.tw, siz.x1), y1: min(siz.ty0+(ty+1)*siz.th, siz.y1),
		}
	}
	if ppm != nil {
		cs.ppm, cs.hasPPM = joinChunks(ppm), true
	}
	return cs, pos, nil
}

// parseTileParts reads the tile-parts from the SOT at b[pos:] to EOC or the end of b.
func (cs *codestream) parseTileParts(b []byte, pos int) error {
	ppmPos := 0
	for pos+2 <= len(b) {
		m := int(binary.BigEndian.Uint16(b[pos:]))
		if m == mEOC {
			return nil
		}
		if m != mSOT {
			return formatErr("expected SOT or EOC at byte %d, found %s", pos, markerName(m))
		}
		s, err := readSegment(b, pos)
		if err != nil {
			cs.trunc = strings.TrimPrefix(err.Error(), ErrTruncated.Error()+": ")
			return nil
		}
		if len(s.data) != 8 {
			return s.errorf("length %d (10 expected)", len(s.data)+2)
		}
		r := reader{s: s}
		isot, psot, tpsot := r.u16(), r.u32(), r.u8()
		if isot >= len(cs.tiles) {
			return s.errorf("tile %d of %d", isot, len(cs.tiles))
		}
		t := cs.tiles[isot]
		end := pos + psot
		switch {
		case psot == 0:
			end = len(b)
			if end-2 > pos && binary.BigEndian.Uint16(b[end-2:]) == mEOC {
				end -= 2
			}
		case psot < 14:
			return s.errorf("tile-part length %d", psot)
		case end > len(b):
			cs.trunc = fmt.Sprintf("tile %d tile-part %d at byte %d declares %d bytes, %d are left", isot, tpsot, pos, psot, len(b)-pos)
			end = len(b)
		}
		if t.parts == 0 {
			t.p = cs.main.clone()
		}
		hp := s.off + 12
		for {
			if hp+2 > end {
				if cs.trunc != "" {
					return nil
				}
				return formatErr("tile %d tile-part %d at byte %d: no SOD marker", isot, tpsot, pos)
			}
			if binary.BigEndian.Uint16(b[hp:]) == mSOD {
				hp += 2
				break
			}
			h, err := readSegment(b[:end], hp)
			if err != nil {
				if cs.trunc != "" {
					return nil
				}
				return err
			}
			h.ctx = fmt.Sprintf("tile %d tile-part %d: ", isot, tpsot)
			hp = h.off + 2 + len(h.data) + 2
			switch h.marker {
			case mCOD:
				err = t.p.parseCOD(h, levelTile)
			case mCOC:
				err = t.p.parseCOC(h, levelTileComp)
			case mQCD:
				err = t.p.parseQCD(h, levelTile)
			case mQCC:
				err = t.p.parseQCC(h, levelTileComp)
			case mRGN:
				err = t.p.parseRGN(h)
			case mPOC:
				if !t.p.pocSet {
					t.p.poc, t.p.pocSet = nil, true
				}
				err = t.p.parsePOC(h)
			case mPPT:
				if cs.hasPPM {
					return h.errorf("PPT in a codestream with PPM")
				}
				if len(h.data) < 1 {
					return h.errorf("no Zppt")
				}
				t.ppt = append(t.ppt, zchunk{int(h.data[0]), h.data[1:]})
			case mSOT, mEOC, mSOC, mSIZ:
				err = h.errorf("inside a tile-part header")
			}
			if err != nil {
				return err
			}
		}
		body := b[hp:end]
		if t.parts == 0 {
			t.data = body[:len(body):len(body)]
			t.offset = hp
		} else {
			t.data = append(t.data, body...)
		}
		if cs.hasPPM {
			if ppmPos+4 > len(cs.ppm) {
				return formatErr("PPM markers hold no packet headers for tile %d tile-part %d", isot, tpsot)
			}
			n := int(binary.BigEndian.Uint32(cs.ppm[ppmPos:]))
			ppmPos += 4
			if n > len(cs.ppm)-ppmPos {
				return formatErr("PPM packet headers for tile %d tile-part %d declare %d bytes, %d are left", isot, tpsot, n, len(cs.ppm)-ppmPos)
			}
			t.ppm = append(t.ppm, cs.ppm[ppmPos:ppmPos+n]...)
			ppmPos += n
		}
		t.parts++
		pos = end
		if cs.trunc != "" {
			return nil
		}
	}
	return nil
}
