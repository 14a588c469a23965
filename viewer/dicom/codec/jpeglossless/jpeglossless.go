// Package jpeglossless decodes lossless JPEG (ITU T.81 Annex H, process 14: Huffman-coded,
// non-hierarchical), the coding of DICOM's transfer syntaxes JPEG Lossless
// (1.2.840.10008.1.2.4.57, any predictor) and JPEG Lossless SV1 (1.2.840.10008.1.2.4.70,
// predictor 1): selection values 1–7, 2 to 16 bits per sample (with the difference
// category 16 of H.1.2.2), a point transform, restart intervals, and up to four
// components, interleaved in one scan or in a scan each.
//
// Images whose components have different sampling factors, hierarchical and
// arithmetic-coded processes are refused with an error wrapping ErrUnsupported. Data that
// breaks the standard gives an error wrapping ErrFormat, data that ends early one wrapping
// ErrTruncated; neither ever panics.
//
// # Why our own decoder
//
// The program stays free of cgo, so libjpeg (which GDCM and dcmtk use) is out. Of the
// pure-Go decoders available, one mishandles the difference category 16 and restart
// intervals, one predicts wrongly at the image edges for several selection values and
// at restarts and has no licence file, and the most complete one is bound to its own
// DICOM object model and may not reset the prediction after a restart. Process 14 is a
// few hundred lines against Annex H; written here, it is tested against GDCM on every
// real file we have and on files made with dcmtk for each selection value, and it is fast
// enough to decode a series within GDCM's time (see the repository README).
package jpeglossless

import (
	"fmt"

	"amid/viewer/dicom/internal/jpegstream"
)

// Image is a decoded image: Pix holds Height × Width × Components samples, components
// fastest.
type Image = jpegstream.Image

// Errors the decoder wraps.
var (
	ErrFormat      = jpegstream.ErrFormat
	ErrTruncated   = jpegstream.ErrTruncated
	ErrUnsupported = jpegstream.ErrUnsupported
)

// Config is what the frame header says about an image (Precision: 2…16 bits).
type Config = jpegstream.Config

// DecodeConfig reads the frame header of a lossless JPEG stream without decoding it.
func DecodeConfig(data []byte) (Config, error) {
	return jpegstream.ReadConfig(data, &decoder{})
}

// Decode decodes a lossless JPEG stream.
func Decode(data []byte) (*Image, error) {
	d := &decoder{}
	if err := jpegstream.Walk(data, jpegstream.T81, d); err != nil {
		return nil, err
	}
	img, nc := d.img, d.img.Components
	for c := 0; c < nc; c++ {
		if sh := d.shift[c]; sh > 0 {
			for i := c; i < len(img.Pix); i += nc {
				img.Pix[i] <<= uint(sh)
			}
		}
	}
	return img, nil
}

// decoder is a jpegstream.Handler.
type decoder struct {
	tables  jpegstream.Tables
	restart int // restart interval in MCUs, 0 for none
	frame   *jpegstream.Frame
	bits    jpegstream.Bits
	img     *Image
	shift   [4]int // point transform of each component
}

func (d *decoder) Frame() *jpegstream.Frame { return d.frame }

// Marker handles one marker segment outside scans.
func (d *decoder) Marker(m byte, seg []byte) error {
	switch {
	case m == jpegstream.SOF3:
		if d.frame != nil {
			return fmt.Errorf("%w: a second frame header", ErrFormat)
		}
		f, err := jpegstream.ParseFrame(m, seg)
		if err != nil {
			return err
		}
		if f.Precision < 2 || f.Precision > 16 {
			return fmt.Errorf("%w: lossless JPEG with %d-bit samples (2 to 16 allowed)", ErrFormat, f.Precision)
		}
		if len(f.Components) > 4 {
			return fmt.Errorf("%w: lossless JPEG with %d components", ErrUnsupported, len(f.Components))
		}
		if len(f.Components) > 1 {
			for _, c := range f.Components {
				if c.H != f.Components[0].H || c.V != f.Components[0].V {
					return fmt.Errorf("%w: lossless JPEG with subsampled components", ErrUnsupported)
				}
			}
		}
		d.frame = f
	case m >= jpegstream.SOF0 && m <= jpegstream.SOF15 && m != jpegstream.DHT && m != jpegstream.DAC && m != 0xC8:
		return fmt.Errorf("%w: frame of process SOF%d, not lossless Huffman (SOF3)", ErrUnsupported, m-jpegstream.SOF0)
	case m == jpegstream.DHT:
		return d.tables.ParseDHT(seg)
	case m == jpegstream.DAC:
		return fmt.Errorf("%w: arithmetic coding", ErrUnsupported)
	case m == jpegstream.DRI:
		n, err := jpegstream.ParseDRI(seg)
		if err != nil {
			return err
		}
		d.restart = n
	case m == jpegstream.DNL:
		return fmt.Errorf("%w: number of lines set by a DNL marker", ErrUnsupported)
	case m == jpegstream.SOI:
		return fmt.Errorf("%w: a second start-of-image marker", ErrFormat)
	case m >= jpegstream.RST0 && m <= jpegstream.RST7:
		return fmt.Errorf("%w: restart marker RST%d outside a scan", ErrFormat, m-jpegstream.RST0)
	}
	// Other segments (APPn, COM, DQT, …) carry nothing a lossless decoder needs.
	return nil
}

// Scan decodes one scan.
func (d *decoder) Scan(s *jpegstream.Scan, data []byte) (int, error) {
	f := d.frame
	if d.img == nil {
		n, err := jpegstream.Samples(f.Width, f.Height, len(f.Components))
		if err != nil {
			return 0, err
		}
		d.img = &Image{Width: f.Width, Height: f.Height, Components: len(f.Components), Precision: f.Precision, Pix: make([]uint16, n)}
	}
	if err := d.checkScan(s); err != nil {
		return 0, err
	}
	d.bits.Reset(data)
	if err := d.scan(d.img, s); err != nil {
		return 0, err
	}
	for _, c := range s.Components {
		d.shift[c.Index] = s.Al
	}
	return d.bits.Consumed(), nil
}

// checkScan checks a scan header against the frame and the tables defined so far.
func (d *decoder) checkScan(s *jpegstream.Scan) error {
	f := d.frame
	// T.81 H.2.3 asks for Se and Ah to be 0; like libjpeg, tolerate other values, which
	// have no use.
	if s.Ss < 1 || s.Ss > 7 {
		return fmt.Errorf("%w: predictor selection value %d (1 to 7 allowed outside hierarchical mode)", ErrFormat, s.Ss)
	}
	if s.Al >= f.Precision {
		return fmt.Errorf("%w: point transform %d for %d-bit samples", ErrFormat, s.Al, f.Precision)
	}
	for _, c := range s.Components {
		if c.Td > 3 || d.tables[0][c.Td] == nil {
			return fmt.Errorf("%w: scan uses Huffman table %d, which is not defined", ErrFormat, c.Td)
		}
	}
	if d.restart > 0 && d.restart%f.Width != 0 {
		// libjpeg refuses these too: the prediction rules after a restart are only defined
		// for intervals of whole lines.
		return fmt.Errorf("%w: restart interval of %d samples is not a whole number of %d-sample lines", ErrUnsupported, d.restart, f.Width)
	}
	return nil
}

// scan decodes the entropy-coded data of one scan into img (T.81 H.1.2 and H.2).
func (d *decoder) scan(img *Image, s *jpegstream.Scan) error {
	f := d.frame
	w, h, nc := f.Width, f.Height, len(f.Components)
	stride := w * nc
	comps := make([]int, len(s.Components))
	tabs := make([]*jpegstream.Huffman, len(s.Components))
	for i, c := range s.Components {
		comps[i] = c.Index
		tabs[i] = d.tables[0][c.Td]
	}
	initial := int32(1) << uint(f.Precision-s.Al-1)
	linesPerInterval := h
	if d.restart > 0 {
		linesPerInterval = d.restart / w
	}
	b := &d.bits
	rst := 0
	for y := 0; y < h; y++ {
		first := y%linesPerInterval == 0 // first line of the image or of a restart interval
		if first && y > 0 {
			if err := b.Restart(rst); err != nil {
				return fmt.Errorf("line %d: %w", y+1, err)
			}
			rst = (rst + 1) & 7
		}
		row := img.Pix[y*stride : (y+1)*stride]
		var up []uint16
		if !first {
			up = img.Pix[(y-1)*stride : y*stride]
		}
		if len(comps) == 1 {
			decodeLine1(b, tabs[0], row, up, comps[0], nc, s.Ss, initial)
		} else {
			decodeLineN(b, tabs, row, up, comps, nc, s.Ss, initial)
		}
		if err := b.Err(); err != nil {
			return fmt.Errorf("line %d: %w", y+1, err)
		}
	}
	return nil
}

// predict returns the prediction of selection value sv (T.81 Table H.1) from the samples
// to the left (a), above (b) and above-left (c).
func predict(sv int, a, b, c int32) int32 {
	switch sv {
	case 1:
		return a
	case 2:
		return b
	case 3:
		return c
	case 4:
		return a + b - c
	case 5:
		return a + (b-c)>>1
	case 6:
		return b + (a-c)>>1
	}
	return (a + b) >> 1
}

// decodeLine1 decodes one line of the single component ci of a scan; up is the line
// above, nil on the first line of the image or of a restart interval.
func decodeLine1(b *jpegstream.Bits, t *jpegstream.Huffman, row, up []uint16, ci, nc, sv int, initial int32) {
	w := len(row) / nc
	if up == nil {
		// First line: the initial prediction, then the sample to the left (H.1.2.1).
		prev := initial
		for x := 0; x < w; x++ {
			v := uint16(prev + b.Difference(t))
			row[x*nc+ci] = v
			prev = int32(v)
		}
		return
	}
	// Other lines: the sample above at the start, then the selected predictor.
	v := uint16(int32(up[ci]) + b.Difference(t))
	row[ci] = v
	if nc == 1 && sv == 1 {
		// The common case (transfer syntax .70, one component).
		for x := 1; x < w; x++ {
			v = uint16(int32(v) + b.Difference(t))
			row[x] = v
		}
		return
	}
	for x := 1; x < w; x++ {
		i := x*nc + ci
		p := predict(sv, int32(row[i-nc]), int32(up[i]), int32(up[i-nc]))
		row[i] = uint16(p + b.Difference(t))
	}
}

// decodeLineN decodes one line of a scan that interleaves several components: each
// pixel holds one sample of each, in scan order.
func decodeLineN(b *jpegstream.Bits, tabs []*jpegstream.Huffman, row, up []uint16, comps []int, nc, sv int, initial int32) {
	w := len(row) / nc
	for x := 0; x < w; x++ {
		for k, ci := range comps {
			i := x*nc + ci
			var p int32
			switch {
			case up == nil && x == 0:
				p = initial
			case up == nil:
				p = int32(row[i-nc])
			case x == 0:
				p = int32(up[i])
			default:
				p = predict(sv, int32(row[i-nc]), int32(up[i]), int32(up[i-nc]))
			}
			row[i] = uint16(p + b.Difference(tabs[k]))
		}
	}
}
