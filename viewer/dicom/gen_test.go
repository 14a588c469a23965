package dicom

import (
	"encoding/binary"
	"fmt"
)

// spec describes a small DICOM file written by gen, in explicit VR little endian unless ts
// says otherwise (the bytes stay explicit little endian: only the declared syntax changes).
type spec struct {
	ts                    string // transfer syntax UID; explicit VR little endian when empty
	rows, cols, frames    int
	spp                   int
	bitsAlloc, bitsStored int
	signed                bool
	photometric           string
	planar                int
	slope, intercept      string // Rescale Slope/Intercept as DS text, omitted when empty
	ipp, iop, spacing     string // as DS text (backslash-separated), omitted when empty
	series                string // Series Instance UID
	number                int    // Series Number, omitted when 0
	modality              string // OT when empty
	description           string // Series Description
	imageType             string // Image Type (backslash-separated), omitted when empty
	sopClass              string // Secondary Capture when empty
	padding               int    // Pixel Padding Value when hasPadding
	hasPadding            bool
	instance              int
	patientName           string
	patientID             string
	birthDate             string
	pixels                []byte   // raw pixel data; a ramp when nil
	fragments             [][]byte // encapsulated pixel data, one fragment each, after an empty offset table
	noPixels              bool
}

// defaults fills the fields left zero: a 4×3 16-bit unsigned MONOCHROME2 slice.
func (s spec) defaults() spec {
	if s.rows == 0 {
		s.rows = 3
	}
	if s.cols == 0 {
		s.cols = 4
	}
	if s.frames == 0 {
		s.frames = 1
	}
	if s.spp == 0 {
		s.spp = 1
	}
	if s.bitsAlloc == 0 {
		s.bitsAlloc = 16
	}
	if s.bitsStored == 0 {
		s.bitsStored = s.bitsAlloc
	}
	if s.photometric == "" {
		s.photometric = "MONOCHROME2"
	}
	if s.ts == "" {
		s.ts = ExplicitVRLittleEndian
	}
	if s.series == "" {
		s.series = "1.2.826.0.1.3680043.10.1.1"
	}
	if s.modality == "" {
		s.modality = "OT"
	}
	if s.sopClass == "" {
		s.sopClass = sopSecondaryCapture
	}
	return s
}

// ramp returns n samples of size bytes counting up from 0, little endian.
func ramp(n, size int) []byte {
	b := make([]byte, n*size)
	for i := 0; i < n; i++ {
		switch size {
		case 1:
			b[i] = byte(i)
		case 2:
			binary.LittleEndian.PutUint16(b[2*i:], uint16(i))
		case 4:
			binary.LittleEndian.PutUint32(b[4*i:], uint32(i))
		}
	}
	return b
}

type enc struct{ b []byte }

func (e *enc) elem(g, el uint16, vr string, val []byte) {
	if len(val)%2 == 1 {
		pad := byte(' ')
		if vr == "UI" || vr == "OB" {
			pad = 0
		}
		val = append(val, pad)
	}
	e.b = binary.LittleEndian.AppendUint16(e.b, g)
	e.b = binary.LittleEndian.AppendUint16(e.b, el)
	e.b = append(e.b, vr...)
	switch vr {
	case "OB", "OW", "SQ", "UN", "UT":
		e.b = append(e.b, 0, 0)
		e.b = binary.LittleEndian.AppendUint32(e.b, uint32(len(val)))
	default:
		e.b = binary.LittleEndian.AppendUint16(e.b, uint16(len(val)))
	}
	e.b = append(e.b, val...)
}

func (e *enc) str(g, el uint16, vr, s string) {
	if s != "" {
		e.elem(g, el, vr, []byte(s))
	}
}

func (e *enc) us(g, el uint16, v int) {
	e.elem(g, el, "US", binary.LittleEndian.AppendUint16(nil, uint16(v)))
}

// gen writes the bytes of a DICOM file: preamble, DICM, file meta information and a data
// set with the elements of s in ascending tag order.
func gen(s spec) []byte {
	s = s.defaults()
	var meta enc
	meta.elem(0x0002, 0x0001, "OB", []byte{0, 1})
	meta.str(0x0002, 0x0002, "UI", s.sopClass)
	meta.str(0x0002, 0x0003, "UI", "1.2.826.0.1.3680043.10.1.2")
	meta.str(0x0002, 0x0010, "UI", s.ts)
	var f enc
	f.b = make([]byte, 128, 1024)
	f.b = append(f.b, "DICM"...)
	f.elem(0x0002, 0x0000, "UL", binary.LittleEndian.AppendUint32(nil, uint32(len(meta.b))))
	f.b = append(f.b, meta.b...)

	f.str(0x0008, 0x0008, "CS", s.imageType)
	f.str(0x0008, 0x0016, "UI", s.sopClass)
	f.str(0x0008, 0x0060, "CS", s.modality)
	f.str(0x0008, 0x0070, "LO", "AMID test generator")
	f.str(0x0008, 0x103E, "LO", s.description)
	f.str(0x0010, 0x0010, "PN", s.patientName)
	f.str(0x0010, 0x0020, "LO", s.patientID)
	f.str(0x0010, 0x0030, "DA", s.birthDate)
	f.str(0x0020, 0x000E, "UI", s.series)
	if s.number != 0 {
		f.str(0x0020, 0x0011, "IS", fmt.Sprint(s.number))
	}
	if s.instance != 0 {
		f.str(0x0020, 0x0013, "IS", fmt.Sprint(s.instance))
	}
	f.str(0x0020, 0x0032, "DS", s.ipp)
	f.str(0x0020, 0x0037, "DS", s.iop)
	f.us(0x0028, 0x0002, s.spp)
	f.str(0x0028, 0x0004, "CS", s.photometric)
	if s.spp > 1 {
		f.us(0x0028, 0x0006, s.planar)
	}
	if s.frames > 1 {
		f.str(0x0028, 0x0008, "IS", fmt.Sprint(s.frames))
	}
	f.us(0x0028, 0x0010, s.rows)
	f.us(0x0028, 0x0011, s.cols)
	f.str(0x0028, 0x0030, "DS", s.spacing)
	f.us(0x0028, 0x0100, s.bitsAlloc)
	f.us(0x0028, 0x0101, s.bitsStored)
	f.us(0x0028, 0x0102, s.bitsStored-1)
	rep := 0
	if s.signed {
		rep = 1
	}
	f.us(0x0028, 0x0103, rep)
	if s.hasPadding {
		if s.signed {
			f.elem(0x0028, 0x0120, "SS", binary.LittleEndian.AppendUint16(nil, uint16(int16(s.padding))))
		} else {
			f.us(0x0028, 0x0120, s.padding)
		}
	}
	f.str(0x0028, 0x1052, "DS", s.intercept)
	f.str(0x0028, 0x1053, "DS", s.slope)
	if s.fragments != nil {
		f.b = append(f.b, 0xE0, 0x7F, 0x10, 0x00, 'O', 'B', 0, 0, 0xFF, 0xFF, 0xFF, 0xFF)
		item := func(g uint16, v []byte) {
			f.b = binary.LittleEndian.AppendUint16(f.b, 0xFFFE)
			f.b = binary.LittleEndian.AppendUint16(f.b, g)
			f.b = binary.LittleEndian.AppendUint32(f.b, uint32(len(v)))
			f.b = append(f.b, v...)
		}
		item(0xE000, nil)
		for _, fr := range s.fragments {
			item(0xE000, fr)
		}
		item(0xE0DD, nil)
	} else if !s.noPixels {
		px := s.pixels
		if px == nil {
			px = ramp(s.rows*s.cols*s.spp*s.frames, s.bitsAlloc/8)
		}
		vr := "OW"
		if s.bitsAlloc == 8 {
			vr = "OB"
		}
		f.elem(0x7FE0, 0x0010, vr, px)
	}
	return f.b
}

// seeds are the generated files committed under testdata/fuzz-seeds for FuzzReadFile.
var seeds = map[string]spec{
	"mono2-u16.dcm": {},
	"mono1-u8.dcm":  {bitsAlloc: 8, photometric: "MONOCHROME1"},
	"signed-12bit.dcm": {bitsStored: 12, signed: true, slope: "0.5", intercept: "-100",
		pixels: []byte{0xFF, 0x0F, 0x00, 0x08, 0xFF, 0x07, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8, 0, 9, 0}},
	"rgb-planar.dcm": {bitsAlloc: 8, spp: 3, photometric: "RGB", planar: 1},
	"multiframe-positioned.dcm": {frames: 3, ipp: `-10\-20\30`, iop: `1\0\0\0\1\0`, spacing: `0.5\0.25`,
		slope: "2", intercept: "-1024"},
}
