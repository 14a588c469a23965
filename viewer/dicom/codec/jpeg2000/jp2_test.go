package jpeg2000

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
)

// jp2Box is a JP2 box: its length, type and contents.
func jp2Box(typ string, data ...[]byte) []byte {
	body := bytes.Join(data, nil)
	return append(append(binary.BigEndian.AppendUint32(nil, uint32(8+len(body))), typ...), body...)
}

// TestJP2ChannelDefinition wraps a real RGB codestream in a JP2 file whose channel
// definition box says the codestream holds blue, green, red: the components come out in
// colour order, as opj_decompress puts them.
func TestJP2ChannelDefinition(t *testing.T) {
	cs := compress(t, srcRGB.load(t), "")
	inner, err := Decode(cs)
	if err != nil {
		t.Fatal(err)
	}
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(inner.Height))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(inner.Width))
	ihdr = append(binary.BigEndian.AppendUint16(ihdr, 3), 7, 7, 0, 0) // 3 components of 8 bits, JPEG 2000
	colr := []byte{1, 0, 0, 0, 0, 0, 16}                              // enumerated: sRGB
	cdef := binary.BigEndian.AppendUint16(nil, 3)
	for ch, colour := range []uint16{3, 2, 1} { // channel 0 is colour 3 (blue)
		cdef = binary.BigEndian.AppendUint16(cdef, uint16(ch))
		cdef = binary.BigEndian.AppendUint16(cdef, 0) // a colour channel
		cdef = binary.BigEndian.AppendUint16(cdef, colour)
	}
	ftyp := append([]byte("jp2 "), 0, 0, 0, 0, 'j', 'p', '2', ' ')
	file := bytes.Join([][]byte{jp2Signature, jp2Box("ftyp", ftyp),
		jp2Box("jp2h", jp2Box("ihdr", ihdr), jp2Box("colr", colr), jp2Box("cdef", cdef)), jp2Box("jp2c", cs)}, nil)
	img, err := Decode(file)
	if err != nil {
		t.Fatal(err)
	}
	for c := range 3 {
		if !slices.Equal(img.Components[c].Samples, inner.Components[2-c].Samples) {
			t.Errorf("component %d is not the codestream's component %d", c, 2-c)
		}
	}
	if d, n := diff(t, img, opjDecode(t, file)); d != 0 {
		t.Errorf("differs from opj_decompress in %d samples, by up to %d", n, d)
	}
}
