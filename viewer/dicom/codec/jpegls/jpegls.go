// Package jpegls decodes JPEG-LS (ITU T.87 | ISO/IEC 14495-1), the coding of DICOM's
// transfer syntaxes JPEG-LS Lossless (1.2.840.10008.1.2.4.80) and JPEG-LS Near-Lossless
// (1.2.840.10008.1.2.4.81): regular and run modes, lossless and near-lossless (NEAR),
// preset coding parameters of an LSE segment (MAXVAL, T1, T2, T3, RESET), restart
// intervals, 2 to 16 bits per sample, and up to four components, one scan each or
// interleaved by line or by sample.
//
// Mapping tables (palettised images), a point transform, subsampled components and the
// colour transforms of HP's APP8 extension are refused with an error wrapping
// ErrUnsupported, as CharLS (the decoder behind GDCM and dcmtk) refuses most of them.
// Data that breaks the standard gives an error wrapping ErrFormat, data that ends early one
// wrapping ErrTruncated; neither ever panics.
//
// # Why our own decoder
//
// The program stays free of cgo, so CharLS itself is out. The pure-Go JPEG-LS decoders we
// found disable run mode, ignore NEAR, leave the LSE segment a placeholder, read only
// greyscale or only some interleave modes, or carry no licence file. T.87's decoder is
// small (a context model, Golomb codes and run mode, under a thousand lines), so it is
// written here against the standard, with CharLS read for how the field resolves its few
// ambiguities (run interruption in sample-interleaved scans, the order of the k = 0 error
// correction), tested against GDCM on real files and on files made with CharLS and dcmtk
// for every mode, and measured against GDCM's decode time (see the repository README).
package jpegls

import (
	"fmt"

	"amid/viewer/dicom/internal/jpegstream"
)

// Image is a decoded image: Pix holds Height × Width × Components samples, components
// fastest, whatever the interleaving of the scans.
type Image = jpegstream.Image

// Errors the decoder wraps.
var (
	ErrFormat      = jpegstream.ErrFormat
	ErrTruncated   = jpegstream.ErrTruncated
	ErrUnsupported = jpegstream.ErrUnsupported
)

// Config is what the frame header says about an image (Precision: 2…16 bits).
type Config = jpegstream.Config

// DecodeConfig reads the frame header of a JPEG-LS stream without decoding it.
func DecodeConfig(data []byte) (Config, error) {
	return jpegstream.ReadConfig(data, &decoder{})
}

// Decode decodes a JPEG-LS stream.
func Decode(data []byte) (*Image, error) {
	d := &decoder{}
	if err := jpegstream.Walk(data, jpegstream.T87, d); err != nil {
		return nil, err
	}
	return d.img, nil
}

// preset holds the preset coding parameters of an LSE segment (T.87 C.2.4.1.1); zero
// means the default.
type preset struct {
	maxval, t1, t2, t3, reset int
}

// decoder is a jpegstream.Handler.
type decoder struct {
	frame   *jpegstream.Frame
	preset  preset
	restart int // lines per restart interval, 0 for none
	br      bitReader
	s       scanState
	img     *Image
}

func (d *decoder) Frame() *jpegstream.Frame { return d.frame }

// Marker handles one marker segment outside scans.
func (d *decoder) Marker(m byte, seg []byte) error {
	switch {
	case m == jpegstream.SOF55:
		if d.frame != nil {
			return fmt.Errorf("%w: a second frame header", ErrFormat)
		}
		f, err := jpegstream.ParseFrame(m, seg)
		if err != nil {
			return err
		}
		if f.Precision < 2 || f.Precision > 16 {
			return fmt.Errorf("%w: JPEG-LS with %d-bit samples (2 to 16 allowed)", ErrFormat, f.Precision)
		}
		if f.HMax != 1 || f.VMax != 1 {
			return fmt.Errorf("%w: JPEG-LS with subsampled components", ErrUnsupported)
		}
		if len(f.Components) > 4 {
			return fmt.Errorf("%w: JPEG-LS with %d components", ErrUnsupported, len(f.Components))
		}
		d.frame = f
	case m >= jpegstream.SOF0 && m <= jpegstream.SOF15 && m != jpegstream.DHT && m != jpegstream.DAC && m != 0xC8:
		return fmt.Errorf("%w: frame of JPEG process SOF%d in a JPEG-LS stream", ErrUnsupported, m-jpegstream.SOF0)
	case m == jpegstream.LSE:
		return d.lse(seg)
	case m == jpegstream.DRI:
		n, err := jpegstream.ParseDRI(seg)
		if err != nil {
			return err
		}
		d.restart = n
	case m == 0xE8 && len(seg) >= 5 && string(seg[:4]) == "mrfx":
		// HP's colour transform extension (APP8 "mrfx"); 0 is none.
		if seg[4] != 0 {
			return fmt.Errorf("%w: HP colour transform %d", ErrUnsupported, seg[4])
		}
	case m == jpegstream.DNL:
		return fmt.Errorf("%w: number of lines set by a DNL marker", ErrUnsupported)
	case m == jpegstream.SOI:
		return fmt.Errorf("%w: a second start-of-image marker", ErrFormat)
	case m >= jpegstream.RST0 && m <= jpegstream.RST7:
		return fmt.Errorf("%w: restart marker RST%d outside a scan", ErrFormat, m-jpegstream.RST0)
	}
	// Other segments (APPn, COM) carry nothing the decoder needs.
	return nil
}

// lse reads a JPEG-LS preset parameters segment (T.87 C.2.4.1).
func (d *decoder) lse(seg []byte) error {
	if len(seg) < 1 {
		return fmt.Errorf("%w: empty LSE segment", ErrFormat)
	}
	u16 := func(i int) int { return int(seg[i])<<8 | int(seg[i+1]) }
	switch seg[0] {
	case 1:
		if len(seg) != 11 {
			return fmt.Errorf("%w: preset coding parameters of %d bytes", ErrFormat, len(seg))
		}
		d.preset = preset{maxval: u16(1), t1: u16(3), t2: u16(5), t3: u16(7), reset: u16(9)}
	case 2, 3:
		// Mapping tables are only refused when a scan uses one.
	case 4:
		// Oversize image dimensions: width and height in Wxy bytes each.
		if len(seg) < 2 {
			return fmt.Errorf("%w: oversize dimensions segment of %d bytes", ErrFormat, len(seg))
		}
		wxy := int(seg[1])
		if wxy < 2 || wxy > 4 || len(seg) != 2+2*wxy {
			return fmt.Errorf("%w: oversize dimensions of %d bytes in %d", ErrFormat, wxy, len(seg))
		}
		num := func(p []byte) int {
			v := 0
			for _, c := range p {
				v = v<<8 | int(c)
			}
			return v
		}
		if d.frame == nil {
			return fmt.Errorf("%w: oversize dimensions before the frame header", ErrFormat)
		}
		h, w := num(seg[2:2+wxy]), num(seg[2+wxy:])
		if h == 0 || w == 0 || h > 1<<24 || w > 1<<24 {
			return fmt.Errorf("%w: oversize dimensions %d×%d", ErrUnsupported, w, h)
		}
		d.frame.Height, d.frame.Width = h, w
	default:
		return fmt.Errorf("%w: LSE segment of type %d (JPEG-LS part 2)", ErrUnsupported, seg[0])
	}
	return nil
}

// Scan decodes one scan.
func (d *decoder) Scan(sc *jpegstream.Scan, data []byte) (int, error) {
	f := d.frame
	if d.img == nil {
		n, err := jpegstream.Samples(f.Width, f.Height, len(f.Components))
		if err != nil {
			return 0, err
		}
		d.img = &Image{Width: f.Width, Height: f.Height, Components: len(f.Components), Precision: f.Precision, Pix: make([]uint16, n)}
	}
	comps := make([]int, len(sc.Components))
	for i, c := range sc.Components {
		if c.Td<<4|c.Ta != 0 {
			return 0, fmt.Errorf("%w: mapping table %d (palettised JPEG-LS)", ErrUnsupported, c.Td<<4|c.Ta)
		}
		comps[i] = c.Index
	}
	if sc.Al != 0 {
		return 0, fmt.Errorf("%w: JPEG-LS point transform %d", ErrUnsupported, sc.Al)
	}
	ilv := sc.Se
	switch {
	case ilv > 2:
		return 0, fmt.Errorf("%w: interleave mode %d", ErrFormat, ilv)
	case ilv == 0 && len(comps) > 1:
		return 0, fmt.Errorf("%w: a non-interleaved scan of %d components", ErrFormat, len(comps))
	case len(comps) == 1:
		ilv = 0
	}
	if err := d.s.init(f.Precision, sc.Ss, d.preset); err != nil {
		return 0, err
	}
	d.br.reset(data)
	if err := d.scan(d.img, comps, ilv); err != nil {
		return 0, err
	}
	return d.br.pos, nil
}

// scan decodes one scan of the components comps (indices into the frame) with interleave
// mode ilv into img.
func (d *decoder) scan(img *Image, comps []int, ilv int) error {
	w, h, nc := img.Width, img.Height, img.Components
	s, b := &d.s, &d.br
	// Line buffers: for each component of the scan (one for ilv 2, where a line holds
	// whole pixels) a previous and a current line, with an edge sample either side.
	per := 1
	lines := len(comps)
	if ilv == 2 {
		per, lines = len(comps), 1
	}
	stride := (w + 2) * per
	buf := make([]int32, 2*lines*stride)
	var runIndex [4]int
	interval := h
	if d.restart > 0 {
		interval = d.restart
	}
	rst := 0
	for y := 0; y < h; y++ {
		if y > 0 && y%interval == 0 {
			if err := b.restart(rst); err != nil {
				return fmt.Errorf("line %d: %w", y+1, err)
			}
			rst = (rst + 1) & 7
			// A restart starts afresh (T.87 D.2): contexts, run indices, and lines of 0.
			s.resetContexts()
			runIndex = [4]int{}
			clear(buf)
		}
		for l := 0; l < lines; l++ {
			base := 2 * l * stride
			prev, cur := buf[base:base+stride], buf[base+stride:base+2*stride]
			if y&1 == 1 {
				prev, cur = cur, prev
			}
			// Edges (T.87 A.2.1): the sample after the previous line's end repeats its
			// last, and the sample before the current line's start is the one above it
			// (so that Rc, two lines up, comes from the line before).
			copy(prev[(w+1)*per:(w+2)*per], prev[w*per:(w+1)*per])
			copy(cur[:per], prev[per:2*per])
			s.runIndex = runIndex[l]
			if per == 1 {
				s.line(b, prev, cur, w)
			} else {
				s.linePixels(b, prev, cur, w, per)
			}
			runIndex[l] = s.runIndex
			if err := b.err(); err != nil {
				return fmt.Errorf("line %d: %w", y+1, err)
			}
			// Copy out, components fastest.
			row := img.Pix[y*w*nc : (y+1)*w*nc]
			if per == 1 {
				ci := comps[l]
				for x := 0; x < w; x++ {
					row[x*nc+ci] = uint16(cur[x+1])
				}
			} else {
				for x := 0; x < w; x++ {
					for k, ci := range comps {
						row[x*nc+ci] = uint16(cur[(x+1)*per+k])
					}
				}
			}
		}
	}
	return nil
}
