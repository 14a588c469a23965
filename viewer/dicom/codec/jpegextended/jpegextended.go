// Package jpegextended decodes sequential DCT JPEG with Huffman coding at 8 or 12 bits per
// sample (ITU T.81 processes 1, 2 and 4: baseline and extended), the coding of DICOM's
// transfer syntax JPEG Extended (1.2.840.10008.1.2.4.51). The standard library's
// image/jpeg stops at 8 bits; 12-bit images (CT, MR, nuclear medicine) are what this
// package is for.
//
// It returns the components as coded, without colour conversion, and refuses images
// whose components have different sampling factors (chroma subsampling), progressive,
// hierarchical and arithmetic-coded processes with an error wrapping ErrUnsupported.
// The inverse DCT is the integer Loeffler–Ligtenberg–Moschytz factorisation with 13-bit
// constants, the one libjpeg's default ("islow") method uses, so results agree with
// libjpeg-based decoders (GDCM, dcmtk) to within one grey level. As libjpeg does, a
// sequential scan whose header gives a spectral range other than 0…63 is decoded as the
// whole block, so that files written with that slip (one of pydicom's test files) still
// read as GDCM reads them.
//
// # Why our own decoder
//
// The program stays free of cgo, so libjpeg is out, and image/jpeg refuses 12-bit
// samples. Of the pure-Go decoders we found, only one decodes 12-bit DCT (to within one
// grey level of pydicom), inside a DICOM library of its own. The sequential DCT decoder is
// short once the JPEG framing and Huffman decoding are shared with the lossless decoder
// (viewer/dicom/internal/jpegstream), and is tested here against GDCM.
package jpegextended

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

// Config is what the frame header says about an image (Precision: 8 or 12 bits).
type Config = jpegstream.Config

// DecodeConfig reads the frame header of a sequential DCT JPEG stream without decoding it.
func DecodeConfig(data []byte) (Config, error) {
	return jpegstream.ReadConfig(data, &decoder{})
}

// Decode decodes a sequential DCT JPEG stream.
func Decode(data []byte) (*Image, error) {
	d := &decoder{}
	if err := jpegstream.Walk(data, jpegstream.T81, d); err != nil {
		return nil, err
	}
	return d.image(), nil
}

// decoder is a jpegstream.Handler.
type decoder struct {
	tables  jpegstream.Tables
	quant   [4]*[64]int32 // dequantisation tables in zig-zag order
	restart int
	frame   *jpegstream.Frame
	bits    jpegstream.Bits
	// Per component of the frame: the samples (blocks padded to whole MCUs), the blocks
	// across and down, and the quantisation table in use when its first scan started.
	planes []plane
}

type plane struct {
	pix    []uint16
	bw, bh int // blocks across and down, padded to whole MCUs
	q      *[64]int32
}

func (d *decoder) Frame() *jpegstream.Frame { return d.frame }

// Marker handles one marker segment outside scans.
func (d *decoder) Marker(m byte, seg []byte) error {
	switch {
	case m == jpegstream.SOF0 || m == jpegstream.SOF1:
		if d.frame != nil {
			return fmt.Errorf("%w: a second frame header", ErrFormat)
		}
		f, err := jpegstream.ParseFrame(m, seg)
		if err != nil {
			return err
		}
		if f.Precision != 8 && f.Precision != 12 {
			return fmt.Errorf("%w: DCT JPEG with %d-bit samples (8 or 12 allowed)", ErrFormat, f.Precision)
		}
		if len(f.Components) > 4 {
			return fmt.Errorf("%w: %d components in a DCT frame", ErrFormat, len(f.Components))
		}
		for _, c := range f.Components {
			if c.Tq > 3 {
				return fmt.Errorf("%w: quantisation table %d", ErrFormat, c.Tq)
			}
		}
		d.frame = f
	case m >= jpegstream.SOF0 && m <= jpegstream.SOF15 && m != jpegstream.DHT && m != jpegstream.DAC && m != 0xC8:
		return fmt.Errorf("%w: frame of process SOF%d, not sequential Huffman DCT (SOF0 or SOF1)", ErrUnsupported, m-jpegstream.SOF0)
	case m == jpegstream.DHT:
		return d.tables.ParseDHT(seg)
	case m == jpegstream.DQT:
		return d.parseDQT(seg)
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
	return nil
}

// parseDQT reads quantisation tables (T.81 B.2.4.1) of 8- or 16-bit values.
func (d *decoder) parseDQT(seg []byte) error {
	for len(seg) > 0 {
		pq, tq := int(seg[0]>>4), int(seg[0]&15)
		if pq > 1 || tq > 3 {
			return fmt.Errorf("%w: quantisation table of precision %d and destination %d", ErrFormat, pq, tq)
		}
		n := 64 * (pq + 1)
		if len(seg) < 1+n {
			return fmt.Errorf("%w: quantisation table of %d bytes", ErrFormat, len(seg)-1)
		}
		q := new([64]int32)
		for k := range q {
			if pq == 0 {
				q[k] = int32(seg[1+k])
			} else {
				q[k] = int32(seg[1+2*k])<<8 | int32(seg[2+2*k])
			}
		}
		d.quant[tq] = q
		seg = seg[1+n:]
	}
	return nil
}

// Scan decodes one scan.
func (d *decoder) Scan(s *jpegstream.Scan, data []byte) (int, error) {
	if err := d.setup(); err != nil {
		return 0, err
	}
	d.bits.Reset(data)
	if err := d.scan(s); err != nil {
		return 0, err
	}
	return d.bits.Consumed(), nil
}

// setup allocates the component planes at the first scan.
func (d *decoder) setup() error {
	if d.planes != nil {
		return nil
	}
	f := d.frame
	if _, err := jpegstream.Samples(f.Width, f.Height, len(f.Components)); err != nil {
		return err
	}
	for _, c := range f.Components {
		if c.H != f.Components[0].H || c.V != f.Components[0].V {
			return fmt.Errorf("%w: DCT JPEG with subsampled components", ErrUnsupported)
		}
	}
	d.planes = make([]plane, len(f.Components))
	// Every component has the same sampling factors; an MCU of an interleaved scan is
	// H×V blocks of each.
	h, v := f.Components[0].H, f.Components[0].V
	mcuX, mcuY := ceilDiv(f.Width, 8*h), ceilDiv(f.Height, 8*v)
	for i := range d.planes {
		p := &d.planes[i]
		p.bw, p.bh = mcuX*h, mcuY*v
		p.pix = make([]uint16, p.bw*8*p.bh*8)
	}
	return nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// image crops the planes to the frame and interleaves them.
func (d *decoder) image() *Image {
	f := d.frame
	nc := len(d.planes)
	img := &Image{Width: f.Width, Height: f.Height, Components: nc, Precision: f.Precision,
		Pix: make([]uint16, f.Width*f.Height*nc)}
	for c, p := range d.planes {
		stride := p.bw * 8
		for y := 0; y < f.Height; y++ {
			src := p.pix[y*stride : y*stride+f.Width]
			if nc == 1 {
				copy(img.Pix[y*f.Width:], src)
				continue
			}
			row := img.Pix[y*f.Width*nc:]
			for x, v := range src {
				row[x*nc+c] = v
			}
		}
	}
	return img
}

// zigzag maps the position of a coefficient in zig-zag order to its row-major index in
// the 8×8 block (T.81 Figure A.6).
var zigzag = [64 + 16]int{
	0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5,
	12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28,
	35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
	58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
	// A corrupt run may step past the end; these absorb it (as in libjpeg).
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
}

// scan decodes one scan (T.81 F.2): interleaved MCUs when it holds several components,
// else the component's blocks in raster order.
func (d *decoder) scan(s *jpegstream.Scan) error {
	f := d.frame
	type comp struct {
		p      *plane
		h, v   int
		dc, ac *jpegstream.Huffman
		pred   int32
	}
	comps := make([]comp, len(s.Components))
	for i, sc := range s.Components {
		p := &d.planes[sc.Index]
		fc := f.Components[sc.Index]
		if sc.Td > 3 || sc.Ta > 3 || d.tables[0][sc.Td] == nil || d.tables[1][sc.Ta] == nil {
			return fmt.Errorf("%w: scan uses Huffman tables %d and %d, which are not both defined", ErrFormat, sc.Td, sc.Ta)
		}
		if d.quant[fc.Tq] == nil {
			return fmt.Errorf("%w: quantisation table %d is not defined", ErrFormat, fc.Tq)
		}
		p.q = d.quant[fc.Tq]
		comps[i] = comp{p: p, h: fc.H, v: fc.V, dc: d.tables[0][sc.Td], ac: d.tables[1][sc.Ta]}
	}
	// The units of the scan: MCUs of every component's H×V blocks, or, for one component,
	// single blocks covering only the component's own extent (T.81 A.2.2, A.2.3).
	var unitsX, unitsY int
	if len(comps) == 1 {
		h, v := f.Components[0].H, f.Components[0].V
		unitsX = ceilDiv(ceilDiv(f.Width*comps[0].h, h), 8)
		unitsY = ceilDiv(ceilDiv(f.Height*comps[0].v, v), 8)
		comps[0].h, comps[0].v = 1, 1
	} else {
		unitsX, unitsY = ceilDiv(f.Width, 8*f.HMax), ceilDiv(f.Height, 8*f.VMax)
	}
	b := &d.bits
	level := int32(1) << uint(f.Precision-1)
	maxv := int32(1)<<uint(f.Precision) - 1
	pass1 := 2 // extra bits kept between the passes of the inverse DCT (libjpeg's PASS1_BITS)
	if f.Precision == 12 {
		pass1 = 1
	}
	var blk [64]int32
	left := d.restart
	rst := 0
	for my := 0; my < unitsY; my++ {
		for mx := 0; mx < unitsX; mx++ {
			if d.restart > 0 {
				if left == 0 {
					if err := b.Restart(rst); err != nil {
						return fmt.Errorf("block row %d: %w", my+1, err)
					}
					rst = (rst + 1) & 7
					left = d.restart
					for i := range comps {
						comps[i].pred = 0
					}
				}
				left--
			}
			for i := range comps {
				c := &comps[i]
				stride := c.p.bw * 8
				for by := 0; by < c.v; by++ {
					for bx := 0; bx < c.h; bx++ {
						// Decode the coefficients (F.2.2.1, F.2.2.2).
						blk = [64]int32{}
						q := c.p.q
						t := b.Decode(c.dc)
						if t > 16 {
							b.Fail(fmt.Errorf("%w: DC difference category %d", ErrFormat, t))
						} else if t > 0 {
							c.pred += b.ReceiveExtend(t)
						}
						blk[0] = c.pred * q[0]
						for k := 1; k < 64; k++ {
							rs := b.Decode(c.ac)
							r, sz := rs>>4, rs&15
							if sz == 0 {
								if r != 15 {
									break
								}
								k += 15
								continue
							}
							k += r
							if k > 63 {
								b.Fail(fmt.Errorf("%w: AC coefficient run past the end of a block", ErrFormat))
								break
							}
							blk[zigzag[k]] = b.ReceiveExtend(sz) * q[k]
						}
						x0 := (mx*c.h + bx) * 8
						y0 := (my*c.v + by) * 8
						idct(&blk, c.p.pix[y0*stride+x0:], stride, pass1, level, maxv)
					}
				}
			}
		}
		if err := b.Err(); err != nil {
			return fmt.Errorf("block row %d: %w", my+1, err)
		}
	}
	return nil
}
