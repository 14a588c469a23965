package jpeg2000

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestMarkerPrecedence checks the order in which coding styles and quantizations apply
// (T.800 A.6: a tile's COC over its COD over the main COC over the main COD, and the same
// for QCC and QCD), which opj_compress never exercises: into a real codestream it writes
// a wrong value (one decomposition level fewer, one guard bit more) where a higher-ranked
// marker should override it with the right one. The decode must not change, and
// opj_decompress must agree; where nothing overrides the wrong value, the decode changes.
func TestMarkerPrecedence(t *testing.T) {
	cs := compress(t, srcMR.load(t), "-n 4")
	want, err := Decode(cs)
	if err != nil {
		t.Fatal(err)
	}
	c, first, err := parseMain(cs, defaults)
	if err != nil || c.siz == nil {
		t.Fatal(err)
	}
	// The main header's COD and QCD payloads.
	var cod, qcd []byte
	for pos := 2; pos < first; {
		s, err := readSegment(cs, pos)
		if err != nil {
			t.Fatal(err)
		}
		switch s.marker {
		case mCOD:
			cod = s.data
		case mQCD:
			qcd = s.data
		}
		pos = s.off + 2 + len(s.data) + 2
	}
	seg := func(m int, data []byte) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(m))
		return append(binary.BigEndian.AppendUint16(b, uint16(len(data)+2)), data...)
	}
	badCOD := bytes.Clone(cod)
	badCOD[5]-- // decomposition levels
	badQCD := bytes.Clone(qcd)
	badQCD[0] += 1 << 5                                                                 // guard bits
	coc := func(cod []byte) []byte { return append([]byte{0, cod[0] & 1}, cod[5:]...) } // component 0
	qcc := func(qcd []byte) []byte { return append([]byte{0}, qcd...) }
	// build replaces the main header's COD and QCD and adds markers to the main header and
	// to the first tile-part's header.
	build := func(mainCOD, mainQCD []byte, main, tileHead [][]byte) []byte {
		out := append([]byte(nil), cs[:2]...)
		s, _ := readSegment(cs, 2)
		out = append(out, cs[2:s.off+4+len(s.data)]...) // SIZ
		out = append(out, seg(mCOD, mainCOD)...)
		out = append(out, seg(mQCD, mainQCD)...)
		for _, m := range main {
			out = append(out, m...)
		}
		psot := int(binary.BigEndian.Uint32(cs[first+6:]))
		extra := bytes.Join(tileHead, nil)
		sot := bytes.Clone(cs[first : first+12])
		binary.BigEndian.PutUint32(sot[6:], uint32(psot+len(extra)))
		out = append(out, sot...)
		out = append(out, extra...)
		return append(out, cs[first+12:]...)
	}
	cases := []struct {
		name  string
		data  []byte
		equal bool
		// notOpenJPEG: OpenJPEG lets a COD override the COCs before it in the same header
		// (it copies the COD to every component), where T.800 ranks markers by kind, not
		// order. Encoders write COD first, so real files do not tell the two apart.
		notOpenJPEG bool
	}{
		{"main COC over main COD", build(badCOD, qcd, [][]byte{seg(mCOC, coc(cod))}, nil), true, false},
		{"tile COD over main COC", build(cod, qcd, [][]byte{seg(mCOC, coc(badCOD))}, [][]byte{seg(mCOD, cod)}), true, false},
		{"tile COC over tile COD", build(cod, qcd, nil, [][]byte{seg(mCOD, badCOD), seg(mCOC, coc(cod))}), true, false},
		{"tile COC over a later tile COD", build(cod, qcd, nil, [][]byte{seg(mCOC, coc(cod)), seg(mCOD, badCOD)}), true, true},
		{"main QCC over main QCD", build(cod, badQCD, [][]byte{seg(mQCC, qcc(qcd))}, nil), true, false},
		{"tile QCD over main QCC", build(cod, qcd, [][]byte{seg(mQCC, qcc(badQCD))}, [][]byte{seg(mQCD, qcd)}), true, false},
		{"tile QCC over tile QCD", build(cod, qcd, nil, [][]byte{seg(mQCD, badQCD), seg(mQCC, qcc(qcd))}), true, false},
		// Controls: the wrong value alone changes the decode.
		{"wrong main COC", build(cod, qcd, [][]byte{seg(mCOC, coc(badCOD))}, nil), false, false},
		{"wrong tile QCD", build(cod, qcd, nil, [][]byte{seg(mQCD, badQCD)}), false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.data)
			same := err == nil
			if same {
				d, _ := diff(t, got, planesOf(want))
				same = d == 0
			}
			if same != tc.equal {
				t.Errorf("decode unchanged: %v, want %v (error: %v)", same, tc.equal, err)
			}
			if !tc.equal {
				t.Logf("as expected, the decode changed (error: %v)", err)
				return
			}
			if tc.notOpenJPEG {
				return
			}
			// OpenJPEG reads the rewritten codestream the same way.
			if d, n := diff(t, want, opjDecode(t, tc.data)); d != 0 {
				t.Errorf("opj_decompress differs in %d samples, by up to %d", n, d)
			}
		})
	}
}

// TestDerivedQuantization rewrites the QCD of a real irreversible codestream from
// expounded step sizes (what opj_compress writes) to derived ones (T.800 A.6.4: the LL
// step only, the others following from it), which changes every other sub-band's step
// size and bit-plane count: the decode must agree with opj_decompress's on the rewritten
// codestream.
func TestDerivedQuantization(t *testing.T) {
	cs := compress(t, srcCT.load(t), "-I -r 10 -n 4")
	_, first, err := parseMain(cs, defaults)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for pos := 2; pos < first; {
		s, err := readSegment(cs, pos)
		if err != nil {
			t.Fatal(err)
		}
		if s.marker == mQCD {
			if s.data[0]&31 != 2 {
				t.Fatalf("opj_compress wrote quantization style %d, not 2 (expounded)", s.data[0]&31)
			}
			q := append([]byte{s.data[0]&^31 | 1}, s.data[1:3]...) // derived: the LL step only
			out = append(out, 0xFF, 0x5C, 0, byte(len(q)+2))
			out = append(out, q...)
		} else {
			out = append(out, cs[pos:s.off+4+len(s.data)]...)
		}
		pos = s.off + 2 + len(s.data) + 2
	}
	out = append(append([]byte{0xFF, 0x4F}, out...), cs[first:]...) // SOC, main header, tile-parts
	img, err := Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	d, n := diff(t, img, opjDecode(t, out))
	t.Logf("QCD %d bytes shorter; against OpenJPEG: max %d (%d samples differ)", len(cs)-len(out), d, n)
	if d > 1 {
		t.Errorf("differs from OpenJPEG in %d samples, by up to %d", n, d)
	}
}
