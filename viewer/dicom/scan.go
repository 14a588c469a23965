package dicom

import (
	"amid/viewer/dicom/internal/encoding"

	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// undefined is the value length that marks a sequence, item or encapsulated pixel data of
// undefined length (PS3.5 §7.1.1).
const undefined = 0xFFFFFFFF

// maxDepth bounds the nesting of sequences the scanner follows, so a crafted file cannot
// exhaust the stack (real files nest a handful of levels: functional groups use three).
const maxDepth = 16

// errNotDICOM marks bytes that are not DICOM at all (neither the magic nor a data element
// at the start), as opposed to a DICOM file that is damaged.
var errNotDICOM = fmt.Errorf("%w: not a DICOM file", volume.ErrFormat)

// fileLimits bound what reading one file may allocate. The readers take [defaultLimits]; the
// fuzz tests pass lower ones, as an argument, so that what an input decodes to stays near
// its size and no test changes the package's limits.
type fileLimits struct {
	// inflated bounds a deflated data set once inflated (a guard against decompression
	// bombs).
	inflated int64
	// sparse bounds the samples of a file's frames in a sparse coding (codec.sparse).
	sparse int64
}

// defaultLimits are the readers' limits: 1 GiB inflated, far above any deflated DICOM
// image in practice, and the volume's own limit of samples.
var defaultLimits = fileLimits{inflated: 1 << 30, sparse: volume.MaxVoxels}

// layout is where the parts of a DICOM file lie, found by scanning its data elements
// without decoding their values.
type layout struct {
	ts       string           // transfer syntax UID from the file meta information
	bo       binary.ByteOrder // byte order of the data set
	implicit bool             // implicit VR data set
	// header holds copies of the top-level elements this package reads (see used), in
	// file order, from before the Pixel Data element.
	header []byte
	// pixels is the Pixel Data value of a native (uncompressed) file.
	pixels []byte
	// hasPixels reports whether a top-level Pixel Data element was found.
	hasPixels bool
	// encapsulated pixel data: the Basic Offset Table and the fragments that follow it.
	encapsulated bool
	offsets      []uint32
	fragments    [][]byte

	mode scanMode
	// pixelOffset is where the value of Pixel Data starts in the file (−1 when unknown:
	// a deflated data set), pixelLen its value length (undefined when encapsulated);
	// both are set when the scan stopped at the pixel data (headerOnly).
	pixelOffset int64
	pixelLen    uint32
}

// scanMode says what scan records.
type scanMode struct {
	// headerOnly stops the scan at the Pixel Data element, recording where its value
	// lies instead of reading it, so that only the head of a file need be read.
	headerOnly bool
	// keep are the top-level elements copied into the header; used when nil.
	keep map[tag.Tag]bool
	// lim bounds what the file may decode to; defaultLimits when zero.
	lim fileLimits
}

// scanner walks data elements, checking every length against the bytes that remain, so
// that the values handed to the parsing library are known to be well-formed in size.
type scanner struct {
	b        []byte
	bo       binary.ByteOrder
	implicit bool
}

// scan finds the transfer syntax, the header and the pixel data of a DICOM file's bytes.
func scan(b []byte, mode scanMode) (*layout, error) {
	l := &layout{bo: binary.LittleEndian, mode: mode, pixelOffset: -1}
	if l.mode.keep == nil {
		l.mode.keep = used
	}
	if l.mode.lim == (fileLimits{}) {
		l.mode.lim = defaultLimits
	}
	off, hasMeta := encoding.Start(b)
	if !hasMeta {
		// No meta information: guess the encoding from the first element.
		bo, implicit, ok := encoding.Guess(b)
		if !ok {
			return nil, fmt.Errorf("%w: no DICM magic at byte 128 and no recognisable data element at byte 0", errNotDICOM)
		}
		l.bo, l.implicit = bo, implicit
		l.ts = encoding.Syntax(bo, implicit)
		return l, l.scanDataSet(b, 0)
	}
	// File meta information: explicit VR little endian, group 0002.
	meta := scanner{b: b, bo: binary.LittleEndian}
	for off+8 <= len(b) && binary.LittleEndian.Uint16(b[off:]) == 0x0002 {
		t, _, vl, hl, err := meta.element(off, len(b))
		if err != nil {
			return nil, fmt.Errorf("file meta information: %w", err)
		}
		if vl == undefined {
			return nil, fmt.Errorf("%w: file meta element %v has undefined length", volume.ErrFormat, t)
		}
		if int64(vl) > int64(len(b)-off-hl) {
			return nil, fmt.Errorf("%w: file meta element %v claims %d bytes but only %d remain", volume.ErrTruncated, t, vl, len(b)-off-hl)
		}
		if t == tag.TransferSyntaxUID {
			l.ts = trimString(b[off+hl : off+hl+int(vl)])
		}
		off += hl + int(vl)
	}
	if l.ts == "" {
		// A meta group without a transfer syntax: guess from the data set itself.
		bo, implicit, ok := encoding.Guess(b[off:])
		if !ok {
			return nil, fmt.Errorf("%w: file meta information has no transfer syntax and the data set is not recognisable", volume.ErrFormat)
		}
		l.bo, l.implicit, l.ts = bo, implicit, encoding.Syntax(bo, implicit)
		return l, l.scanDataSet(b[off:], off)
	}
	s, err := lookupSyntax(l.ts)
	if err != nil {
		if !mode.headerOnly {
			return nil, err
		}
		// The header of a file whose pixel data this package cannot decode is still read
		// (to list its series); every encapsulated syntax is explicit VR little endian.
		s = syntax{bo: binary.LittleEndian}
	}
	l.bo, l.implicit = s.bo, s.implicit
	body, base := b[off:], off
	if s.deflate {
		base = -1
		r := flate.NewReader(bytes.NewReader(body))
		inflated, err := io.ReadAll(io.LimitReader(r, l.mode.lim.inflated+1))
		if err != nil {
			return nil, fmt.Errorf("%w: inflating the deflated data set: %v", volume.ErrFormat, err)
		}
		if int64(len(inflated)) > l.mode.lim.inflated {
			return nil, fmt.Errorf("%w: deflated data set inflates to more than %d bytes", volume.ErrTooLarge, l.mode.lim.inflated)
		}
		body = inflated
	}
	err = l.scanDataSet(body, base)
	var se *shortError
	if errors.As(err, &se) && !s.deflate {
		se.need += int64(off) // from the start of the data set to the start of the file
	}
	return l, err
}

// shortError is a file that ends inside its native pixel data; need is how many bytes
// from the start of the file the pixel data needs, so that a reader that read only the
// head of a file knows how much more to read.
type shortError struct {
	need int64
	msg  string
}

func (e *shortError) Error() string { return volume.ErrTruncated.Error() + ": " + e.msg }
func (e *shortError) Unwrap() error { return volume.ErrTruncated }

// scanDataSet walks the top level of the data set in b, which starts at byte base of the
// file (−1: not in the file, inflated), and records the header and the pixel data.
func (l *layout) scanDataSet(b []byte, base int) error {
	if !l.implicit && len(b) >= 8 && !encoding.IsVR(b[4:6]) {
		// Some writers declare explicit VR and write implicit; read what is there, as
		// pydicom does.
		l.implicit = true
	}
	s := scanner{b: b, bo: l.bo, implicit: l.implicit}
	off := 0
	for off < len(b) {
		if len(b)-off < 8 && encoding.AllZero(b[off:]) {
			// Some writers leave a few zero bytes of padding at the end.
			break
		}
		t, vr, vl, hl, err := s.element(off, len(b))
		if err != nil {
			return err
		}
		if t == tag.PixelData {
			l.hasPixels = true
			if l.mode.headerOnly {
				if base >= 0 {
					l.pixelOffset = int64(base + off + hl)
				}
				l.pixelLen = vl
				l.encapsulated = vl == undefined
				return nil
			}
			return l.scanPixels(&s, off+hl, vl)
		}
		next, err := s.value(t, vr, vl, off+hl, len(b), 0)
		if err != nil {
			return err
		}
		if l.mode.keep[t] {
			l.header = append(l.header, b[off:next]...)
		}
		off = next
	}
	return nil
}

// used are the top-level elements handed to the parsing library: those this package
// reads, and nothing else, so that identifying elements are never even parsed (and the
// library has less to do).
var used = map[tag.Tag]bool{
	tag.SpecificCharacterSet:             true,
	tag.Modality:                         true,
	tag.Manufacturer:                     true,
	tag.SeriesDescription:                true,
	tag.SliceThickness:                   true,
	tag.SpacingBetweenSlices:             true,
	tag.ImagerPixelSpacing:               true,
	tag.SeriesInstanceUID:                true,
	tag.SeriesNumber:                     true,
	tag.SOPClassUID:                      true,
	tag.ImageType:                        true,
	tag.PixelPaddingValue:                true,
	tag.InstanceNumber:                   true,
	tag.ImagePositionPatient:             true,
	tag.ImageOrientationPatient:          true,
	tag.SamplesPerPixel:                  true,
	tag.PhotometricInterpretation:        true,
	tag.PlanarConfiguration:              true,
	tag.NumberOfFrames:                   true,
	tag.Rows:                             true,
	tag.Columns:                          true,
	tag.PixelSpacing:                     true,
	tag.BitsAllocated:                    true,
	tag.BitsStored:                       true,
	tag.HighBit:                          true,
	tag.PixelRepresentation:              true,
	tag.WindowCenter:                     true,
	tag.WindowWidth:                      true,
	tag.RescaleIntercept:                 true,
	tag.RescaleSlope:                     true,
	tag.SharedFunctionalGroupsSequence:   true,
	tag.PerFrameFunctionalGroupsSequence: true,
}

// scanPixels records the native value or the encapsulated fragments of Pixel Data whose
// value starts at off.
func (l *layout) scanPixels(s *scanner, off int, vl uint32) error {
	b := s.b
	if vl != undefined {
		if int64(vl) > int64(len(b)-off) {
			return &shortError{need: int64(off) + int64(vl), msg: fmt.Sprintf("pixel data claims %d bytes but only %d remain", vl, len(b)-off)}
		}
		l.pixels = b[off : off+int(vl)]
		return nil
	}
	l.encapsulated = true
	first := true
	for {
		if len(b)-off < 8 {
			return fmt.Errorf("%w: encapsulated pixel data ends without its sequence delimiter", volume.ErrTruncated)
		}
		// Items of encapsulated pixel data are always little endian (PS3.5 §A.4).
		g, e := binary.LittleEndian.Uint16(b[off:]), binary.LittleEndian.Uint16(b[off+2:])
		n := binary.LittleEndian.Uint32(b[off+4:])
		off += 8
		if g == 0xFFFE && e == 0xE0DD {
			return nil
		}
		if g != 0xFFFE || e != 0xE000 {
			return fmt.Errorf("%w: encapsulated pixel data holds (%04X,%04X) where an item was expected", volume.ErrFormat, g, e)
		}
		if n == undefined || int64(n) > int64(len(b)-off) {
			return fmt.Errorf("%w: pixel data fragment claims %d bytes but only %d remain", volume.ErrTruncated, n, len(b)-off)
		}
		item := b[off : off+int(n)]
		off += int(n)
		if first {
			first = false
			for i := 0; i+4 <= len(item); i += 4 {
				l.offsets = append(l.offsets, binary.LittleEndian.Uint32(item[i:]))
			}
			continue
		}
		l.fragments = append(l.fragments, item)
	}
}

// element reads the header of the data element at off: its tag, VR (empty when implicit
// or for item tags), value length and header length.
func (s *scanner) element(off, end int) (t tag.Tag, vr string, vl uint32, hl int, err error) {
	b := s.b[:end]
	if len(b)-off < 8 {
		return t, "", 0, 0, fmt.Errorf("%w: data element header cut short at byte %d", volume.ErrTruncated, off)
	}
	t = tag.Tag{Group: s.bo.Uint16(b[off:]), Element: s.bo.Uint16(b[off+2:])}
	if s.implicit || t.Group == 0xFFFE {
		return t, "", s.bo.Uint32(b[off+4:]), 8, nil
	}
	vr = string(b[off+4 : off+6])
	switch vr {
	case "OB", "OD", "OF", "OL", "OV", "OW", "SQ", "SV", "UC", "UN", "UR", "UT", "UV":
		if len(b)-off < 12 {
			return t, vr, 0, 0, fmt.Errorf("%w: data element header cut short at byte %d", volume.ErrTruncated, off)
		}
		return t, vr, s.bo.Uint32(b[off+8:]), 12, nil
	}
	if !encoding.IsVR(b[off+4 : off+6]) {
		return t, vr, 0, 0, fmt.Errorf("%w: element %v has an invalid value representation %q", volume.ErrFormat, t, vr)
	}
	return t, vr, uint32(s.bo.Uint16(b[off+6:])), 8, nil
}

// value checks the value of element t starting at off and returns the offset after it.
// Sequences are followed so that every nested length is checked too.
func (s *scanner) value(t tag.Tag, vr string, vl uint32, off, end, depth int) (int, error) {
	if depth > maxDepth {
		return 0, fmt.Errorf("%w: sequences nested more than %d deep", volume.ErrFormat, maxDepth)
	}
	if t.Group == 0xFFFE {
		// Items and delimiters belong inside sequences, where items and itemsUntil
		// read them.
		return 0, fmt.Errorf("%w: %v outside a sequence", volume.ErrFormat, t)
	}
	seq := vr == "SQ" || (vr == "" && isSequence(t))
	if vl != undefined {
		if int64(vl) > int64(end-off) {
			return 0, fmt.Errorf("%w: element %v claims %d bytes but only %d remain", volume.ErrTruncated, t, vl, end-off)
		}
		stop := off + int(vl)
		if seq {
			if err := s.items(off, stop, depth, true); err != nil {
				return 0, err
			}
		}
		return stop, nil
	}
	// Undefined length: a sequence (SQ, or UN/implicit holding one) or an item list.
	if !seq && vr != "UN" && vr != "" && vr != "OB" && vr != "OW" {
		return 0, fmt.Errorf("%w: element %v of VR %s has undefined length", volume.ErrFormat, t, vr)
	}
	return s.itemsUntil(off, end, depth, vr != "OB" && vr != "OW")
}

// items walks the defined-length item list in [off, stop).
func (s *scanner) items(off, stop, depth int, nested bool) error {
	for off < stop {
		t, _, vl, hl, err := s.element(off, stop)
		if err != nil {
			return err
		}
		if t != tag.Item {
			return fmt.Errorf("%w: sequence holds %v where an item was expected", volume.ErrFormat, t)
		}
		if off, err = s.item(vl, off+hl, stop, depth, nested); err != nil {
			return err
		}
	}
	return nil
}

// itemsUntil walks an undefined-length item list up to its sequence delimiter and returns
// the offset after it.
func (s *scanner) itemsUntil(off, end, depth int, nested bool) (int, error) {
	for {
		t, _, vl, hl, err := s.element(off, end)
		if err != nil {
			return 0, err
		}
		if t == tag.SequenceDelimitationItem {
			return off + hl, nil
		}
		if t != tag.Item {
			return 0, fmt.Errorf("%w: sequence holds %v where an item was expected", volume.ErrFormat, t)
		}
		if off, err = s.item(vl, off+hl, end, depth, nested); err != nil {
			return 0, err
		}
	}
}

// item walks one item whose value starts at off and returns the offset after it.
func (s *scanner) item(vl uint32, off, end, depth int, nested bool) (int, error) {
	if vl != undefined {
		if int64(vl) > int64(end-off) {
			return 0, fmt.Errorf("%w: sequence item claims %d bytes but only %d remain", volume.ErrTruncated, vl, end-off)
		}
		stop := off + int(vl)
		if nested {
			if err := s.elements(off, stop, depth+1); err != nil {
				return 0, err
			}
		}
		return stop, nil
	}
	if !nested {
		return 0, fmt.Errorf("%w: fragment of undefined length", volume.ErrFormat)
	}
	for {
		t, vr, vl, hl, err := s.element(off, end)
		if err != nil {
			return 0, err
		}
		if t == tag.ItemDelimitationItem {
			return off + hl, nil
		}
		if off, err = s.value(t, vr, vl, off+hl, end, depth+1); err != nil {
			return 0, err
		}
	}
}

// elements walks the data elements in [off, stop).
func (s *scanner) elements(off, stop, depth int) error {
	for off < stop {
		t, vr, vl, hl, err := s.element(off, stop)
		if err != nil {
			return err
		}
		if off, err = s.value(t, vr, vl, off+hl, stop, depth); err != nil {
			return err
		}
	}
	return nil
}

// isSequence reports whether the data dictionary gives t the VR SQ (for implicit VR).
func isSequence(t tag.Tag) bool {
	info, err := tag.Find(t)
	return err == nil && len(info.VRs) > 0 && info.VRs[0] == "SQ"
}

// trimString removes the padding (spaces and NULs) of a DICOM string value.
func trimString(b []byte) string {
	return string(bytes.Trim(b, " \x00"))
}
