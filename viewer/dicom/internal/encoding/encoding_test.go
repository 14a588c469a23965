package encoding

import (
	"encoding/binary"
	"testing"
)

func TestStart(t *testing.T) {
	preamble := make([]byte, 140)
	copy(preamble[128:], "DICM")
	// (0002,0000) UL, explicit VR little endian: the meta group without a preamble.
	bare := []byte{0x02, 0x00, 0x00, 0x00, 'U', 'L', 4, 0}
	// (0008,0005) CS: a data set with no meta information.
	dataSet := []byte{0x08, 0x00, 0x05, 0x00, 'C', 'S', 0, 0}
	for _, c := range []struct {
		name string
		b    []byte
		off  int
		meta bool
	}{{"preamble", preamble, 132, true}, {"meta without preamble", bare, 0, true}, {"bare data set", dataSet, 0, false}, {"empty", nil, 0, false}} {
		if off, meta := Start(c.b); off != c.off || meta != c.meta {
			t.Errorf("%s: Start = %d, %v; want %d, %v", c.name, off, meta, c.off, c.meta)
		}
	}
}

func TestGuess(t *testing.T) {
	for _, c := range []struct {
		name     string
		b        []byte
		bo       binary.ByteOrder
		implicit bool
		ok       bool
		syntax   string
	}{
		{"explicit little", []byte{0x08, 0x00, 0x05, 0x00, 'C', 'S', 0, 0}, binary.LittleEndian, false, true, ExplicitVRLittleEndian},
		{"implicit little", []byte{0x08, 0x00, 0x05, 0x00, 10, 0, 0, 0}, binary.LittleEndian, true, true, ImplicitVRLittleEndian},
		{"explicit big", []byte{0x00, 0x08, 0x00, 0x05, 'C', 'S', 0, 0}, binary.BigEndian, false, true, ExplicitVRBigEndian},
		{"big endian needs explicit VR", []byte{0x00, 0x08, 0x00, 0x05, 0, 10, 0, 0}, nil, false, false, ""},
		{"group out of range", []byte{0x00, 0x7f, 0x10, 0x00, 'O', 'W', 0, 0}, nil, false, false, ""},
		{"short", []byte{0x08, 0x00}, nil, false, false, ""},
	} {
		bo, implicit, ok := Guess(c.b)
		if bo != c.bo || implicit != c.implicit || ok != c.ok {
			t.Errorf("%s: Guess = %v, %v, %v; want %v, %v, %v", c.name, bo, implicit, ok, c.bo, c.implicit, c.ok)
		}
		if ok && Syntax(bo, implicit) != c.syntax {
			t.Errorf("%s: Syntax = %s, want %s", c.name, Syntax(bo, implicit), c.syntax)
		}
	}
	if !AllZero(make([]byte, 5)) || AllZero([]byte{0, 1}) {
		t.Error("AllZero")
	}
}
