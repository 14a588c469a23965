package jpeg2000

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// tileSpans decodes the packets of each tile of a codestream (one tile-part per tile)
// and returns where each packet lies in its tile's data.
func tileSpans(tb testing.TB, cs []byte) (*codestream, [][]packetSpan) {
	tb.Helper()
	c, _, body, err := parseHeader(cs, defaults)
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.parseTileParts(body.b, body.pos); err != nil {
		tb.Fatal(err)
	}
	spans := make([][]packetSpan, len(c.tiles))
	for i, t := range c.tiles {
		if t.parts != 1 || len(t.ppt) > 0 || c.hasPPM {
			tb.Fatalf("tile %d has %d tile-parts (or packed headers already)", i, t.parts)
		}
		tcs, err := buildComps(c.siz, t)
		if err != nil {
			tb.Fatal(err)
		}
		d := &t2{t: t, siz: c.siz, tcs: tcs, data: t.data, trace: func(s packetSpan) { spans[i] = append(spans[i], s) }}
		if err := d.decodePackets(); err != nil || d.trunc != "" {
			tb.Fatalf("tile %d: %v %s", i, err, d.trunc)
		}
	}
	return c, spans
}

// markers splits data into marker segments of at most 65535 bytes: marker, length, an
// index byte (Zppm, Zppt), then the data.
func markers(marker int, data []byte) []byte {
	var out []byte
	for z := 0; len(data) > 0 || z == 0; z++ {
		n := min(len(data), 65535-3)
		out = binary.BigEndian.AppendUint16(out, uint16(marker))
		out = binary.BigEndian.AppendUint16(out, uint16(n+3))
		out = append(out, byte(z))
		out = append(out, data[:n]...)
		data = data[n:]
	}
	return out
}

// packHeaders rewrites a codestream (one tile-part per tile, headers in the packets) with
// its packet headers moved into PPM markers in the main header (ppm) or PPT markers in
// the tile-part headers (T.800 A.7.4, A.7.5): the bodies keep only SOP markers and
// packet bodies.
func packHeaders(tb testing.TB, cs []byte, ppm bool) []byte {
	tb.Helper()
	c, spans := tileSpans(tb, cs)
	_, first, err := parseMain(cs, defaults)
	if err != nil {
		tb.Fatal(err)
	}
	var parts [][]byte // tile-parts in codestream order
	var ppmData []byte
	for pos := first; binary.BigEndian.Uint16(cs[pos:]) == mSOT; {
		isot := int(binary.BigEndian.Uint16(cs[pos+4:]))
		psot := int(binary.BigEndian.Uint32(cs[pos+6:]))
		t := c.tiles[isot]
		sod := pos + psot - len(t.data) - 2
		var hdrs, bodies []byte
		for _, s := range spans[isot] {
			bodies = append(bodies, t.data[s.start:s.hdr]...)
			hdrs = append(hdrs, t.data[s.hdr:s.body]...)
			bodies = append(bodies, t.data[s.body:s.end]...)
		}
		head := append([]byte(nil), cs[pos+12:sod]...) // the tile-part header's markers
		if ppm {
			ppmData = binary.BigEndian.AppendUint32(ppmData, uint32(len(hdrs)))
			ppmData = append(ppmData, hdrs...)
		} else {
			head = append(head, markers(mPPT, hdrs)...)
		}
		part := append([]byte(nil), cs[pos:pos+12]...)
		binary.BigEndian.PutUint32(part[6:], uint32(12+len(head)+2+len(bodies)))
		part = append(part, head...)
		part = append(part, 0xFF, 0x93)
		parts = append(parts, append(part, bodies...))
		pos += psot
	}
	out := append([]byte(nil), cs[:first]...)
	if ppm {
		out = append(out, markers(mPPM, ppmData)...)
	}
	for _, p := range parts {
		out = append(out, p...)
	}
	return append(out, 0xFF, 0xD9)
}

// TestPackedHeaders decodes codestreams whose packet headers were moved into PPM or PPT
// markers: the decode must not change, and opj_decompress must agree on the rewritten
// codestream (which shows the rewriting is valid).
func TestPackedHeaders(t *testing.T) {
	ct := srcCT.load(t)
	rgb := srcRGB.load(t)
	cases := []struct {
		name string
		src  []plane
		opts string
	}{
		{"ct512", ct, ""},
		{"ct512-tiles-layers-sop-eph", ct, "-t 256,200 -r 20,5,1 -p PCRL -c [64,64],[32,32] -SOP -EPH"},
		{"ct512-lossy-bypass", ct, "-I -r 8 -M 1 -p RPCL"},
		{"rgb8-tiles", rgb, "-t 48,64 -p CPRL -EPH"},
	}
	for _, tc := range cases {
		for _, ppm := range []bool{false, true} {
			name := tc.name + map[bool]string{false: "/PPT", true: "/PPM"}[ppm]
			t.Run(name, func(t *testing.T) {
				cs := compress(t, tc.src, tc.opts)
				want, err := Decode(cs)
				if err != nil {
					t.Fatal(err)
				}
				packed := packHeaders(t, cs, ppm)
				got, err := Decode(packed)
				if err != nil {
					t.Fatal(err)
				}
				if d, n := diff(t, got, planesOf(want)); d != 0 {
					t.Errorf("with packed headers the decode differs in %d samples, by up to %d", n, d)
				}
				tol := int32(0)
				if strings.Contains(tc.opts, "-I") {
					tol = 1 // lossy: floating-point rounding, as everywhere
				}
				if d, n := diff(t, got, opjDecode(t, packed)); d > tol {
					t.Errorf("OpenJPEG decodes the packed codestream differently in %d samples, by up to %d", n, d)
				}
				t.Logf("%d bytes, %d with packed headers", len(cs), len(packed))
			})
		}
	}
}

func planesOf(img *Image) []plane {
	var ps []plane
	for _, c := range img.Components {
		ps = append(ps, plane{width: c.Width, height: c.Height, prec: c.Precision, signed: c.Signed, samples: c.Samples})
	}
	return ps
}

// TestLayerTruncation cuts a layered LRCP codestream after the last packet of each
// quality layer: the decode must report ErrTruncated and equal opj_decompress decoding
// only that many layers of the whole codestream.
func TestLayerTruncation(t *testing.T) {
	ct := srcCT.load(t)
	for _, opts := range []string{"-r 80,20,5,1 -p LRCP", "-I -r 80,20,5 -p LRCP"} {
		t.Run(opts, func(t *testing.T) {
			cs := compress(t, ct, opts)
			c, spans := tileSpans(t, cs)
			t0 := c.tiles[0]
			layers := t0.p.layers
			perLayer := len(spans[0]) / layers
			start := len(cs) - 2 - len(t0.data) // the body's offset: the codestream ends with EOC
			for l := 1; l < layers; l++ {
				cut := cs[:start+spans[0][l*perLayer-1].end]
				img, err := Decode(cut)
				if !errors.Is(err, ErrTruncated) || img == nil {
					t.Fatalf("cut after layer %d: got %v", l, err)
				}
				d, n := diff(t, img, opjDecode(t, cs, "-l", fmt.Sprint(l)))
				t.Logf("after layer %d of %d (%d of %d bytes): against OpenJPEG's first %d layers: max %d (%d samples); %v",
					l, layers, len(cut), len(cs), l, d, n, err)
				tol := int32(0)
				if strings.HasPrefix(opts, "-I") {
					tol = 1
				}
				if d > tol {
					t.Errorf("after layer %d: differs from OpenJPEG in %d samples, by up to %d", l, n, d)
				}
			}
		})
	}
}

// TestTruncated cuts real codestreams anywhere: Decode reports ErrTruncated (or, cut in
// the main header, ErrTruncated or ErrFormat) and never panics; the image it returns gets
// closer to the whole decode as more data is kept.
func TestTruncated(t *testing.T) {
	ct := srcCT.load(t)
	cs := compress(t, ct, "-r 40,10,1 -p LRCP")
	whole, err := Decode(cs)
	if err != nil {
		t.Fatal(err)
	}
	prev := -1.0
	for _, frac := range []float64{0.1, 0.3, 0.5, 0.7, 0.9, 0.99} {
		cut := cs[:int(frac*float64(len(cs)))]
		img, err := Decode(cut)
		if !errors.Is(err, ErrTruncated) || img == nil {
			t.Fatalf("cut at %.0f%%: got %v", 100*frac, err)
		}
		e := meanAbsError(img, planesOf(whole))
		t.Logf("%.0f%% of %d bytes: mean absolute error %.3f from the whole decode; %v", 100*frac, len(cs), e, err)
		if prev >= 0 && e > prev {
			t.Errorf("more data, larger error: %.3f after %.3f", e, prev)
		}
		prev = e
	}
	// Without its EOC marker a codestream is whole.
	if _, err := Decode(cs[:len(cs)-2]); err != nil {
		t.Errorf("without EOC: %v", err)
	}
	for n := range 200 {
		if _, err := Decode(cs[:n]); err == nil || !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrFormat) {
			t.Fatalf("cut at byte %d: %v", n, err)
		}
	}
}

// TestIncompleteEncoder decodes what opj_compress writes for a progression order change
// naming a tile that does not exist: only the first progression's packets, though the
// header declares two layers. OpenJPEG decodes it silently; Decode decodes the same
// samples and says the rest is missing.
func TestIncompleteEncoder(t *testing.T) {
	cs := compress(t, srcCT.load(t), "-POC T1=0,0,1,3,1,LRCP/T1=0,0,2,6,1,RLCP -r 4,1")
	img, err := Decode(cs)
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("got %v, want ErrTruncated", err)
	}
	t.Log(err)
	if d, n := diff(t, img, opjDecode(t, cs)); d != 0 {
		t.Errorf("differs from OpenJPEG in %d samples, by up to %d", n, d)
	}
}
