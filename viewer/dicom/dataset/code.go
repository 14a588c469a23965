package dataset

import (
	"encoding/binary"
	"math"
	"strings"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// Code is a coded concept: one item of a DICOM code sequence (PS3.3 §8.8), as the objects
// that name concepts (segments, structured reports) write and read them.
type Code struct {
	Value   string `json:"value" yaml:"value"`
	Scheme  string `json:"scheme" yaml:"scheme"` // Coding Scheme Designator: SCT, DCM, …
	Meaning string `json:"meaning,omitempty" yaml:"meaning"`
}

// IsZero reports whether c names no concept.
func (c Code) IsZero() bool { return c.Value == "" && c.Scheme == "" }

// String writes c as SCHEME:VALUE (Meaning).
func (c Code) String() string {
	s := c.Scheme + ":" + c.Value
	if c.Meaning != "" {
		s += " (" + c.Meaning + ")"
	}
	return s
}

// Item is c as a code sequence item; a code value longer than 16 characters goes into
// Long Code Value (PS3.3 §8.8), a scheme and a meaning longer than their VRs allow are
// clipped.
func (c Code) Item() *DataSet {
	d := New(
		Text(tag.CodingSchemeDesignator, "SH", Clip(c.Scheme, 16)),
		Text(tag.CodeMeaning, "LO", Clip(c.Meaning, 64)),
	)
	if len(c.Value) > 16 {
		d.Put(Text(tag.LongCodeValue, "UC", c.Value))
	} else {
		d.Put(Text(tag.CodeValue, "SH", c.Value))
	}
	return d
}

// CodeOf reads a code sequence item (Code Value, else Long Code Value).
func CodeOf(d *DataSet) Code {
	v := d.String(tag.CodeValue)
	if v == "" {
		v = d.String(tag.LongCodeValue)
	}
	return Code{Value: v, Scheme: d.String(tag.CodingSchemeDesignator), Meaning: d.String(tag.CodeMeaning)}
}

// Clip cuts s to at most n bytes (a VR's length limit), never inside a UTF-8 sequence.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// ASCII reports whether every one of texts is ASCII, so that a derived object that adds
// them to a source without a Specific Character Set needs none (else ISO_IR 192).
func ASCII(texts ...string) bool {
	for _, s := range texts {
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 {
				return false
			}
		}
	}
	return true
}

// FL makes a float element.
func FL(t tag.Tag, values ...float32) *Element {
	b := make([]byte, 0, 4*len(values))
	for _, v := range values {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return &Element{Tag: t, VR: "FL", Value: b}
}
