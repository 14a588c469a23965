package dataset

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"slices"

	"amid/assets/fileio"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// Implementation identifies the writer in the file meta information of the files
// Encode writes (PS3.7 §D.3.3.2): UIDFrom("AMID implementation"), and the version name.
const (
	ImplementationClassUID    = "2.25.271427433700419152256947014390834776831"
	ImplementationVersionName = "AMID"
)

// outputSyntax is the transfer syntax Encode writes a file of syntax ts in.
func outputSyntax(ts string) string {
	switch ts {
	case "", ExplicitVRBigEndian:
		return ExplicitVRLittleEndian
	}
	return ts
}

// Encode writes f as a DICOM file (see the package documentation): the preamble, a
// rebuilt file meta group and the data set in f's transfer syntax: implicit VR little
// endian, deflated explicit VR little endian, or explicit VR little endian for every
// other (big endian is written as explicit VR little endian; the encapsulated syntaxes
// keep their UID, their pixel data its fragments).
func Encode(f *File) ([]byte, error) {
	ts := outputSyntax(f.TransferSyntax)
	ds := f.DataSet
	if ds == nil {
		ds = &DataSet{}
	}
	meta := &DataSet{}
	if f.Meta != nil {
		for _, e := range f.Meta.Elements {
			meta.Put(e)
		}
	}
	meta.Put(&Element{Tag: tag.FileMetaInformationVersion, VR: "OB", Value: []byte{0, 1}})
	if c := ds.String(tag.SOPClassUID); c != "" {
		meta.Put(Text(tag.MediaStorageSOPClassUID, "UI", c))
	}
	if i := ds.String(tag.SOPInstanceUID); i != "" {
		meta.Put(Text(tag.MediaStorageSOPInstanceUID, "UI", i))
	}
	meta.Put(Text(tag.TransferSyntaxUID, "UI", ts))
	meta.Put(Text(tag.ImplementationClassUID, "UI", ImplementationClassUID))
	meta.Put(Text(tag.ImplementationVersionName, "SH", ImplementationVersionName))
	var body []byte
	var err error
	for _, e := range sorted(meta.Elements) {
		if e.Tag.Group != 0x0002 || e.Tag.Element == 0 {
			continue
		}
		if body, err = appendElement(body, e, 0, false); err != nil {
			return nil, err
		}
	}
	out := make([]byte, 128, 128+4+12+len(body))
	out = append(out, "DICM"...)
	out = append(out, 0x02, 0x00, 0x00, 0x00, 'U', 'L', 4, 0)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(body)))
	out = append(out, body...)
	implicit := ts == ImplicitVRLittleEndian
	var data []byte
	for _, e := range sorted(ds.Elements) {
		if e.Tag.Group == 0x0002 || e.Tag.Element == 0 {
			continue
		}
		if data, err = appendElement(data, e, 0, implicit); err != nil {
			return nil, err
		}
	}
	if ts == DeflatedExplicitVRLE {
		var z bytes.Buffer
		w, _ := flate.NewWriter(&z, flate.DefaultCompression)
		if _, err := w.Write(data); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		data = z.Bytes()
	}
	return append(out, data...), nil
}

// appendElement appends e in explicit VR little endian, or implicit VR little endian
// (PS3.5 §7.1.3: no VR, 4-byte lengths). Sequences and items are written with undefined
// lengths, encapsulated pixel data (explicit VR only) as its items.
func appendElement(out []byte, e *Element, depth int, implicit bool) ([]byte, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("sequences nested more than %d deep", MaxDepth)
	}
	vr := e.VR
	switch {
	case !knownVRs[vr]:
		vr = "UN"
	case e.Items != nil && vr == "UN":
		vr = "SQ"
	case e.Encapsulated:
		vr = "OB"
	}
	le := binary.LittleEndian
	out = le.AppendUint16(out, e.Tag.Group)
	out = le.AppendUint16(out, e.Tag.Element)
	if !implicit {
		out = append(out, vr...)
	}
	n := len(e.Value) + len(e.Value)%2
	switch {
	case vr == "SQ":
		out = undefinedLength(out, implicit)
		var err error
		for _, it := range e.Items {
			out = append(out, 0xFE, 0xFF, 0x00, 0xE0, 0xFF, 0xFF, 0xFF, 0xFF)
			if it != nil {
				for _, x := range sorted(it.Elements) {
					if x.Tag.Element == 0 {
						continue
					}
					if out, err = appendElement(out, x, depth+1, implicit); err != nil {
						return nil, err
					}
				}
			}
			out = append(out, 0xFE, 0xFF, 0x0D, 0xE0, 0, 0, 0, 0)
		}
		return append(out, 0xFE, 0xFF, 0xDD, 0xE0, 0, 0, 0, 0), nil
	case e.Encapsulated:
		if implicit {
			return nil, fmt.Errorf("encapsulated pixel data cannot be written in implicit VR little endian")
		}
		out = undefinedLength(out, false)
		frags := e.Fragments
		if len(frags) == 0 {
			frags = [][]byte{nil} // an empty Basic Offset Table
		}
		for _, f := range frags {
			out = append(out, 0xFE, 0xFF, 0x00, 0xE0)
			out = le.AppendUint32(out, uint32(len(f)+len(f)%2))
			out = append(out, f...)
			if len(f)%2 == 1 {
				out = append(out, 0)
			}
		}
		return append(out, 0xFE, 0xFF, 0xDD, 0xE0, 0, 0, 0, 0), nil
	case implicit:
		out = le.AppendUint32(out, uint32(n))
	case longVRs[vr]:
		out = append(out, 0, 0)
		out = le.AppendUint32(out, uint32(n))
	case n > 0xFFFF:
		return nil, fmt.Errorf("element %s (VR %s) is %d bytes, more than its VR can hold", Name(e.Tag), vr, n)
	default:
		out = le.AppendUint16(out, uint16(n))
	}
	out = append(out, e.Value...)
	if len(e.Value)%2 == 1 {
		if stringVRs[vr] {
			out = append(out, ' ')
		} else {
			out = append(out, 0)
		}
	}
	return out, nil
}

// undefinedLength appends the length field of a sequence or encapsulated pixel data of
// undefined length (after the VR's two reserved bytes in explicit VR).
func undefinedLength(out []byte, implicit bool) []byte {
	if !implicit {
		out = append(out, 0, 0)
	}
	return append(out, 0xFF, 0xFF, 0xFF, 0xFF)
}

// WriteFile encodes f into path atomically and durably, through fileio.Write: a reader
// sees the old file or the new one, never half of one, and a write that returned survives
// a crash.
func WriteFile(path string, f *File) error {
	b, err := Encode(f)
	if err != nil {
		return fmt.Errorf("dicom: %s: %w", path, err)
	}
	if err := fileio.Write(path, b); err != nil {
		return fmt.Errorf("dicom: %w", err)
	}
	return nil
}

func sorted(es []*Element) []*Element {
	out := slices.Clone(es)
	slices.SortStableFunc(out, func(a, b *Element) int { return compareTags(a.Tag, b.Tag) })
	return out
}
