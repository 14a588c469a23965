// Package jpegstream reads the marker-segment structure that JPEG (ITU T.81) and JPEG-LS
// (ITU T.87) streams share, for the decoders of the dicom package: markers and their
// segments, frame and scan headers, restart intervals, and the decoded image they all
// return. For the Huffman-coded T.81 processes it also holds the Huffman tables and the
// entropy-coded bit reader (T.81 Annex C and F.2.2).
package jpegstream

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Errors every decoder wraps: ErrFormat for data that breaks the standard, ErrTruncated
// for data that ends too early, ErrUnsupported for valid coding a decoder does not handle.
var (
	ErrFormat      = errors.New("invalid JPEG data")
	ErrTruncated   = errors.New("JPEG data ends early")
	ErrUnsupported = errors.New("unsupported JPEG coding")
)

// Marker codes (T.81 Table B.1, T.87 Table C.1): the byte after 0xFF.
const (
	SOF0  = 0xC0 // baseline DCT
	SOF1  = 0xC1 // extended sequential DCT, Huffman
	SOF2  = 0xC2 // progressive DCT, Huffman
	SOF3  = 0xC3 // lossless, Huffman
	DHT   = 0xC4
	SOF15 = 0xCF // last of the SOFn (differential, arithmetic)
	DAC   = 0xCC
	RST0  = 0xD0
	RST7  = 0xD7
	SOI   = 0xD8
	EOI   = 0xD9
	SOS   = 0xDA
	DQT   = 0xDB
	DNL   = 0xDC
	DRI   = 0xDD
	APP0  = 0xE0
	APP15 = 0xEF
	SOF55 = 0xF7 // JPEG-LS
	LSE   = 0xF8 // JPEG-LS preset parameters
	COM   = 0xFE
)

// Image is a decoded frame: Height rows of Width pixels of Components samples each,
// components fastest (pixel-interleaved, whatever the interleaving of the scans). Samples
// hold Precision bits (2…16), already scaled back by any point transform.
type Image struct {
	Width, Height int
	Components    int
	Precision     int
	Pix           []uint16
}

// Config is what a frame header says about an image.
type Config struct {
	Width, Height int
	Components    int
	Precision     int // bits per sample
}

// Samples returns the number of samples of an image of the given size, or an error when
// it is empty or would overflow.
func Samples(width, height, components int) (int, error) {
	if width <= 0 || height <= 0 || components <= 0 {
		return 0, fmt.Errorf("%w: image of %d×%d pixels and %d components", ErrFormat, width, height, components)
	}
	n := int64(width) * int64(height) * int64(components)
	if n > 1<<40 {
		return 0, fmt.Errorf("%w: image of %d×%d×%d samples", ErrFormat, width, height, components)
	}
	return int(n), nil
}

// Reader walks the markers of a stream. Entropy-coded data between markers is skipped by
// the decoder with SkipEntropy.
type Reader struct {
	b   []byte
	pos int
}

// NewReader returns a reader at the start of b, which must begin with SOI.
func NewReader(b []byte) (*Reader, error) {
	if len(b) < 2 || b[0] != 0xFF || b[1] != SOI {
		return nil, fmt.Errorf("%w: no start-of-image marker (FFD8) at the start of the stream", ErrFormat)
	}
	return &Reader{b: b, pos: 2}, nil
}

// Next returns the next marker and the payload of its segment (without the length field);
// markers without a segment (SOI, EOI, RSTn, TEM) have a nil payload. Fill bytes (0xFF)
// before a marker are skipped.
func (r *Reader) Next() (marker byte, seg []byte, err error) {
	if r.pos >= len(r.b) {
		return 0, nil, fmt.Errorf("%w: stream ends at byte %d without an end-of-image marker", ErrTruncated, r.pos)
	}
	if r.b[r.pos] != 0xFF {
		return 0, nil, fmt.Errorf("%w: byte %d is 0x%02X where a marker was expected", ErrFormat, r.pos, r.b[r.pos])
	}
	for r.pos < len(r.b) && r.b[r.pos] == 0xFF {
		r.pos++
	}
	if r.pos >= len(r.b) {
		return 0, nil, fmt.Errorf("%w: stream ends inside a marker", ErrTruncated)
	}
	marker = r.b[r.pos]
	r.pos++
	switch {
	case marker == 0:
		return 0, nil, fmt.Errorf("%w: stuffed byte at %d outside entropy-coded data", ErrFormat, r.pos-2)
	case marker == SOI || marker == EOI || marker == 0x01 || (marker >= RST0 && marker <= RST7):
		return marker, nil, nil
	}
	if len(r.b)-r.pos < 2 {
		return 0, nil, fmt.Errorf("%w: segment of marker FF%02X has no length", ErrTruncated, marker)
	}
	n := int(binary.BigEndian.Uint16(r.b[r.pos:]))
	if n < 2 {
		return 0, nil, fmt.Errorf("%w: segment of marker FF%02X has length %d", ErrFormat, marker, n)
	}
	if len(r.b)-r.pos < n {
		return 0, nil, fmt.Errorf("%w: segment of marker FF%02X claims %d bytes, %d remain", ErrTruncated, marker, n, len(r.b)-r.pos)
	}
	seg = r.b[r.pos+2 : r.pos+n]
	r.pos += n
	return marker, seg, nil
}

// Rest returns the bytes after the last segment read: the entropy-coded data of a scan.
func (r *Reader) Rest() []byte { return r.b[r.pos:] }

// SkipEntropy moves past the entropy-coded data of a T.81 scan (and the restart markers
// inside it) to the next marker that is neither a stuffed zero nor RSTn, starting n bytes
// into Rest (where the decoder stopped; 0 when it does not know).
func (r *Reader) SkipEntropy(n int) {
	r.skip(n, func(m byte) bool { return m != 0 })
}

// SkipEntropyLS does the same for a JPEG-LS scan, where 0xFF followed by a byte below 0x80
// is data (T.87 A.1).
func (r *Reader) SkipEntropyLS(n int) {
	r.skip(n, func(m byte) bool { return m >= 0x80 })
}

func (r *Reader) skip(n int, marker func(byte) bool) {
	p := min(r.pos+max(n, 0), len(r.b))
	for ; p+1 < len(r.b); p++ {
		if r.b[p] != 0xFF {
			continue
		}
		m := r.b[p+1]
		if marker(m) && m != 0xFF && (m < RST0 || m > RST7) {
			break
		}
	}
	if p+1 >= len(r.b) {
		p = len(r.b)
	}
	r.pos = p
}

// Component is one component of a frame header.
type Component struct {
	ID   byte
	H, V int // sampling factors, 1…4
	Tq   int // quantisation table (DCT only)
}

// Frame is a frame header (SOFn, T.81 B.2.2; SOF55, T.87 C.2.2).
type Frame struct {
	Marker        byte
	Precision     int
	Height, Width int
	Components    []Component
	HMax, VMax    int
}

// ParseFrame parses the segment of a start-of-frame marker.
func ParseFrame(marker byte, seg []byte) (*Frame, error) {
	if len(seg) < 6 {
		return nil, fmt.Errorf("%w: frame header of %d bytes", ErrFormat, len(seg))
	}
	f := &Frame{Marker: marker, Precision: int(seg[0]), Height: int(binary.BigEndian.Uint16(seg[1:])),
		Width: int(binary.BigEndian.Uint16(seg[3:])), HMax: 1, VMax: 1}
	nf := int(seg[5])
	if nf == 0 || len(seg) != 6+3*nf {
		return nil, fmt.Errorf("%w: frame header of %d bytes for %d components", ErrFormat, len(seg), nf)
	}
	for i := 0; i < nf; i++ {
		c := seg[6+3*i:]
		comp := Component{ID: c[0], H: int(c[1] >> 4), V: int(c[1] & 15), Tq: int(c[2])}
		if comp.H < 1 || comp.H > 4 || comp.V < 1 || comp.V > 4 {
			return nil, fmt.Errorf("%w: component %d has sampling factors %d×%d", ErrFormat, i+1, comp.H, comp.V)
		}
		for _, o := range f.Components {
			if o.ID == comp.ID {
				return nil, fmt.Errorf("%w: component identifier %d appears twice in the frame header", ErrFormat, comp.ID)
			}
		}
		f.HMax, f.VMax = max(f.HMax, comp.H), max(f.VMax, comp.V)
		f.Components = append(f.Components, comp)
	}
	if f.Width == 0 {
		return nil, fmt.Errorf("%w: frame width is 0", ErrFormat)
	}
	if f.Height == 0 {
		return nil, fmt.Errorf("%w: frame height is 0 (a DNL marker is not supported)", ErrUnsupported)
	}
	return f, nil
}

// ScanComponent is one component of a scan header: its index in the frame, and the
// table selectors (T.81: DC/lossless and AC Huffman tables; T.87: the mapping table).
type ScanComponent struct {
	Index  int
	Td, Ta int
}

// Scan is a scan header (SOS, T.81 B.2.3 and T.87 C.2.3). For JPEG-LS, Ss is NEAR, Se the
// interleave mode and Al the point transform.
type Scan struct {
	Components     []ScanComponent
	Ss, Se, Ah, Al int
}

// ParseScan parses the segment of a start-of-scan marker against its frame.
func ParseScan(seg []byte, f *Frame) (*Scan, error) {
	if len(seg) < 1 {
		return nil, fmt.Errorf("%w: empty scan header", ErrFormat)
	}
	ns := int(seg[0])
	if ns < 1 || ns > 4 || len(seg) != 4+2*ns {
		return nil, fmt.Errorf("%w: scan header of %d bytes for %d components", ErrFormat, len(seg), ns)
	}
	s := &Scan{}
	for i := 0; i < ns; i++ {
		id, t := seg[1+2*i], seg[2+2*i]
		idx := -1
		for k, c := range f.Components {
			if c.ID == id {
				idx = k
			}
		}
		if idx < 0 {
			return nil, fmt.Errorf("%w: scan names component %d, which the frame does not have", ErrFormat, id)
		}
		for _, o := range s.Components {
			if o.Index == idx {
				return nil, fmt.Errorf("%w: scan names component %d twice", ErrFormat, id)
			}
		}
		s.Components = append(s.Components, ScanComponent{Index: idx, Td: int(t >> 4), Ta: int(t & 15)})
	}
	p := seg[1+2*ns:]
	s.Ss, s.Se, s.Ah, s.Al = int(p[0]), int(p[1]), int(p[2]>>4), int(p[2]&15)
	return s, nil
}

// ParseDRI parses a define-restart-interval segment (two bytes in T.81; T.87 also allows
// three and four).
func ParseDRI(seg []byte) (int, error) {
	switch len(seg) {
	case 2:
		return int(binary.BigEndian.Uint16(seg)), nil
	case 3:
		return int(seg[0])<<16 | int(seg[1])<<8 | int(seg[2]), nil
	case 4:
		return int(binary.BigEndian.Uint32(seg)), nil
	}
	return 0, fmt.Errorf("%w: restart interval segment of %d bytes", ErrFormat, len(seg))
}
