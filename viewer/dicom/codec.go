package dicom

import (
	"encoding/binary"
	"errors"
	"fmt"

	"amid/viewer/dicom/codec/jpeg2000"
	"amid/viewer/dicom/codec/jpegextended"
	"amid/viewer/dicom/codec/jpeglossless"
	"amid/viewer/dicom/codec/jpegls"
	"amid/viewer/dicom/internal/jpegstream"
	"amid/viewer/volume"
)

// A codec decodes the encapsulated pixel data of a compressed transfer syntax, one frame
// at a time.
type codec struct {
	name string
	// decode decodes one frame into dst as native little-endian pixel data: rows × cols
	// pixels of spp samples of Bits Allocated each, the samples of a pixel together.
	decode func(h *header, frame []byte, dst []byte) error
	// minBits is the fewest bits a valid frame of the header's size takes, so that a
	// frame too short for its image is refused before the image is allocated (nil: no
	// bound).
	minBits func(h *header) int64
	// sparse marks codings whose frames can be far smaller than their image (JPEG-LS
	// runs, JPEG 2000): their decoded size is bounded by limits.sparse.
	sparse bool
	// start is how a frame's first fragment begins, to split fragments into frames when
	// the offset table does not (nil: not used).
	start []byte
	// colour lists the photometric interpretations, besides MONOCHROME1/2 and RGB, that
	// decode delivers as RGB.
	colour []string
	// only8 restricts the codec to 8 bits allocated.
	only8 bool
}

// converts reports whether the codec delivers the photometric interpretation pi as RGB.
func (c *codec) converts(pi string) bool {
	if c == nil {
		return false
	}
	for _, s := range c.colour {
		if s == pi {
			return true
		}
	}
	return false
}

// jpegStart is the start-of-image marker every JPEG and JPEG-LS frame begins with.
var jpegStart = []byte{0xFF, 0xD8}

// The codecs of the compressed transfer syntaxes this package reads. A decoder that
// returns planes of samples (JPEG 2000) plugs in with planarCodec.
var (
	rleCodec = &codec{name: "RLE Lossless", decode: decodeRLEFrame,
		// PackBits expands 2 bytes to at most 128.
		minBits: func(h *header) int64 { return 8 * ceilDiv(frameSamples(h)*int64(h.bitsAlloc/8), 64) }}
	jpegBaselineCodec = &codec{name: "JPEG Baseline", decode: decodeJPEGFrame, minBits: dctMinBits, start: jpegStart,
		colour: []string{"YBR_FULL", "YBR_FULL_422"}, only8: true}
	jpegExtendedCodec = &codec{name: "JPEG Extended", decode: decodeJPEGExtendedFrame, minBits: dctMinBits, start: jpegStart,
		colour: []string{"YBR_FULL", "YBR_FULL_422"}}
	// Every lossless JPEG sample takes at least one bit (a one-bit Huffman code).
	jpegLosslessCodec = &codec{name: "JPEG Lossless",
		decode:  jpegDecoder("JPEG Lossless", jpeglossless.DecodeConfig, jpeglossless.Decode),
		minBits: frameSamples, start: jpegStart}
	// A JPEG-LS line of each component takes at least one bit (run mode can code a whole
	// line in one).
	jpegLSCodec = &codec{name: "JPEG-LS", decode: jpegDecoder("JPEG-LS", jpegls.DecodeConfig, jpegls.Decode),
		minBits: func(h *header) int64 { return int64(h.rows) * int64(h.spp) }, sparse: true, start: jpegStart}
	// JPEG 2000 codestreams (or JP2 files), lossless and lossy, through package jpeg2000.
	jpeg2000Codec = planarCodec("JPEG 2000", jpeg2000Config, jpeg2000Decode)
)

// jpeg2000Config reads a JPEG 2000 frame's size without decoding it; its precision is the
// largest of its components'.
func jpeg2000Config(b []byte) (jpegstream.Config, error) {
	img, err := jpeg2000.DecodeConfig(b)
	if err != nil {
		return jpegstream.Config{}, err
	}
	return jpegstream.Config{Width: img.Width, Height: img.Height, Components: len(img.Components), Precision: maxPrecision(img)}, nil
}

// jpeg2000Decode decodes a JPEG 2000 frame into planes. A truncated codestream is refused,
// lossy or not: its partial decode is not the image the file claims to hold.
func jpeg2000Decode(b []byte) (planes, error) {
	img, err := jpeg2000.Decode(b)
	if err != nil {
		return planes{}, err
	}
	p := planes{width: img.Width, height: img.Height, precision: maxPrecision(img)}
	for _, c := range img.Components {
		if c.Width != img.Width || c.Height != img.Height {
			return planes{}, fmt.Errorf("%w: component of %d×%d in a %d×%d image (subsampled components are not DICOM)", jpeg2000.ErrUnsupported, c.Width, c.Height, img.Width, img.Height)
		}
		p.signed = p.signed || c.Signed
		p.data = append(p.data, c.Samples)
	}
	return p, nil
}

func maxPrecision(img *jpeg2000.Image) int {
	p := 0
	for _, c := range img.Components {
		p = max(p, c.Precision)
	}
	return p
}

// dctMinBits: a DCT-coded 8×8 block takes at least two bits (a DC and an end-of-block
// code), so one byte covers at most 256 samples; 512 allows for subsampled colour.
func dctMinBits(h *header) int64 {
	return 8 * ceilDiv(frameSamples(h)*int64(h.bitsAlloc/8), 512)
}

func frameSamples(h *header) int64 { return int64(h.rows) * int64(h.cols) * int64(h.spp) }

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// decodeFrames decodes the frames of a file into raw, one after the other, in parallel
// when there are several. An error names the first frame that failed.
func (h *header) decodeFrames(raw []byte, frames [][]byte, c *codec) error {
	fb := len(raw) / len(frames)
	errs := make([]error, len(frames))
	one := func(i int) {
		if err := c.decode(h, frames[i], raw[i*fb:(i+1)*fb]); err != nil {
			errs[i] = fmt.Errorf("frame %d of %d: %w", i+1, len(frames), err)
		}
	}
	if len(frames) == 1 {
		one(0) // inside ReadSeries's workers, without a goroutine of its own
	} else {
		parallel(len(frames), one)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// decodeRLEFrame decodes an RLE Lossless frame.
func decodeRLEFrame(h *header, frame []byte, dst []byte) error {
	return decodeRLE(dst, frame, h.rows*h.cols, h.spp, h.bitsAlloc/8)
}

// decodeJPEGExtendedFrame decodes a JPEG Extended frame: 12-bit and greyscale 8-bit ones
// with jpegextended (whose inverse DCT is libjpeg's), 8-bit colour with the standard
// library, which converts YCbCr to RGB and upsamples subsampled chroma.
func decodeJPEGExtendedFrame(h *header, frame []byte, dst []byte) error {
	cfg, err := jpegextended.DecodeConfig(frame)
	if err != nil {
		return codecError("JPEG Extended", err)
	}
	if cfg.Precision == 8 && cfg.Components > 1 {
		return decodeJPEGFrame(h, frame, dst)
	}
	if cfg.Components > 1 {
		return fmt.Errorf("%w: %w: %d-bit colour JPEG", ErrUnsupported, volume.ErrFormat, cfg.Precision)
	}
	return jpegDecoder("JPEG Extended", jpegextended.DecodeConfig, jpegextended.Decode)(h, frame, dst)
}

// jpegDecoder makes the decode function of a codec from a JPEG-family decoder: the frame
// header is checked against the DICOM header before the decoder allocates the image.
func jpegDecoder(name string, config func([]byte) (jpegstream.Config, error), decode func([]byte) (*jpegstream.Image, error)) func(*header, []byte, []byte) error {
	return func(h *header, frame []byte, dst []byte) error {
		cfg, err := config(frame)
		if err != nil {
			return codecError(name, err)
		}
		if err := h.checkDecoded(name, cfg.Width, cfg.Height, cfg.Components, cfg.Precision); err != nil {
			return err
		}
		img, err := decode(frame)
		if err != nil {
			return codecError(name, err)
		}
		putSamples(dst, img.Pix, h.bitsAlloc/8)
		return nil
	}
}

// planes is a frame decoded into one plane of samples per component, as JPEG 2000
// decoders return it.
type planes struct {
	width, height int
	precision     int  // bits per sample
	signed        bool // samples are two's complement
	data          [][]int32
}

// planarCodec makes the codec of a decoder that returns planes (JPEG 2000); config reads
// the frame's size (width, height, components, precision) without decoding it.
func planarCodec(name string, config func([]byte) (jpegstream.Config, error), decode func([]byte) (planes, error)) *codec {
	// A JPEG 2000 codestream starts with SOC and SIZ (FF4F FF51).
	return &codec{name: name, sparse: true, colour: []string{"YBR_RCT", "YBR_ICT"}, start: []byte{0xFF, 0x4F},
		decode: func(h *header, frame []byte, dst []byte) error {
			cfg, err := config(frame)
			if err != nil {
				return codecError(name, err)
			}
			if err := h.checkDecoded(name, cfg.Width, cfg.Height, cfg.Components, cfg.Precision); err != nil {
				return err
			}
			p, err := decode(frame)
			if err != nil {
				return codecError(name, err)
			}
			if err := h.checkDecoded(name, p.width, p.height, len(p.data), p.precision); err != nil {
				return err
			}
			for c, pl := range p.data {
				if len(pl) != p.width*p.height {
					return fmt.Errorf("%w: %s component %d has %d samples for %d×%d pixels", volume.ErrFormat, name, c+1, len(pl), p.width, p.height)
				}
				size := h.bitsAlloc / 8
				for i, v := range pl {
					o := (i*h.spp + c) * size
					switch size {
					case 1:
						dst[o] = byte(v)
					case 2:
						binary.LittleEndian.PutUint16(dst[o:], uint16(v))
					default:
						binary.LittleEndian.PutUint32(dst[o:], uint32(v))
					}
				}
			}
			return nil
		}}
}

// checkDecoded checks a decoded frame's size against the DICOM header.
func (h *header) checkDecoded(name string, width, height, components, precision int) error {
	switch {
	case width != h.cols || height != h.rows:
		return fmt.Errorf("%w: %s frame is %d×%d, the header says %d×%d", volume.ErrFormat, name, width, height, h.cols, h.rows)
	case components != h.spp:
		return fmt.Errorf("%w: %s frame has %d components, the header says %d samples per pixel", volume.ErrFormat, name, components, h.spp)
	case precision > h.bitsAlloc:
		return fmt.Errorf("%w: %s frame has %d-bit samples, the header allocates %d bits", volume.ErrFormat, name, precision, h.bitsAlloc)
	}
	return nil
}

// putSamples writes decoded samples as little-endian values of size bytes.
func putSamples(dst []byte, src []uint16, size int) {
	switch size {
	case 1:
		dst = dst[:len(src)]
		for i, v := range src {
			dst[i] = byte(v)
		}
	case 2:
		dst = dst[:2*len(src)]
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], v)
		}
	default:
		dst = dst[:4*len(src)]
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], uint32(v))
		}
	}
}

// codecErr is a decoder's error, classified for errors.Is (volume.ErrFormat,
// ErrTruncated, or ErrUnsupported) without repeating the class in its message.
type codecErr struct {
	msg string
	is  []error
}

func (e *codecErr) Error() string   { return e.msg }
func (e *codecErr) Unwrap() []error { return e.is }

// codecError classifies an error of the named decoder.
func codecError(name string, err error) error {
	e := &codecErr{msg: name + ": " + err.Error(), is: []error{err}}
	switch {
	case errors.Is(err, jpegstream.ErrUnsupported), errors.Is(err, jpeg2000.ErrUnsupported):
		e.is = append(e.is, ErrUnsupported, volume.ErrFormat)
	case errors.Is(err, jpegstream.ErrTruncated), errors.Is(err, jpeg2000.ErrTruncated):
		e.is = append(e.is, volume.ErrTruncated)
	case errors.Is(err, jpeg2000.ErrTooLarge):
		e.is = append(e.is, volume.ErrTooLarge)
	default:
		e.is = append(e.is, volume.ErrFormat)
	}
	return e
}
