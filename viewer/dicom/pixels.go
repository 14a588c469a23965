package dicom

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"sync"

	"amid/viewer/volume"
)

// pixels are the frames of one file as stored values after the Bits Stored mask and sign
// extension, before rescale, channels fastest. Native grey data stays in the file's bytes
// and is converted frame by frame when the volume is filled; compressed and colour data is
// decoded into samples.
type pixels struct {
	samples  []int32 // frames × rows × cols × spp; nil when raw holds the data
	raw      []byte  // native grey pixel data, frames × rows × cols × bitsAlloc/8
	bo       binary.ByteOrder
	h        *header
	frameLen int     // rows × cols × spp
	min, max []int32 // per frame
	lazy     bool    // min and max are not measured yet (raw signed 16-bit data)
}

// signed16 reports whether p holds raw signed little-endian 16-bit samples that use all
// 16 bits: any of their values fits int16.
func (p *pixels) signed16() bool {
	return p.raw != nil && p.bo == binary.LittleEndian && p.h.bitsAlloc == 16 && p.h.bitsStored == 16 && p.h.signed
}

// measure returns the smallest and largest stored value of raw frame i.
func (p *pixels) measure(i int) (lo, hi int32, err error) {
	fb := p.frameLen * p.h.bitsAlloc / 8
	return p.h.measure(p.raw[i*fb:(i+1)*fb], p.frameLen, p.bo)
}

// frame returns the samples of frame i; raw data is converted into scratch, which must
// hold frameLen values.
func (p *pixels) frame(i int, scratch []int32) []int32 {
	if p.samples != nil {
		return p.samples[i*p.frameLen : (i+1)*p.frameLen]
	}
	n := p.frameLen * p.h.bitsAlloc / 8
	// Cannot fail: the same bytes were converted when the file was decoded.
	_, _, _ = p.h.samples(scratch[:p.frameLen], p.raw[i*n:(i+1)*n], p.bo)
	return scratch[:p.frameLen]
}

// checkImage validates the image description before anything is allocated from it; c is
// the codec of compressed pixel data, nil for native data.
func (h *header) checkImage(c *codec) error {
	if h.rows <= 0 || h.cols <= 0 {
		return fmt.Errorf("%w: image has %d rows and %d columns", volume.ErrFormat, h.rows, h.cols)
	}
	if h.frames <= 0 {
		return fmt.Errorf("%w: number of frames is %d", volume.ErrFormat, h.frames)
	}
	switch h.bitsAlloc {
	case 8, 16, 32:
	case 1:
		return fmt.Errorf("%w: %w: 1-bit pixel data (bitmaps, segmentations) is not supported", ErrUnsupported, volume.ErrDType)
	default:
		return fmt.Errorf("%w: Bits Allocated is %d", volume.ErrFormat, h.bitsAlloc)
	}
	if h.bitsStored <= 0 || h.bitsStored > h.bitsAlloc {
		return fmt.Errorf("%w: Bits Stored %d with Bits Allocated %d", volume.ErrFormat, h.bitsStored, h.bitsAlloc)
	}
	switch h.photometric {
	case "MONOCHROME1", "MONOCHROME2":
		if h.spp != 1 {
			return fmt.Errorf("%w: %s with %d samples per pixel", volume.ErrFormat, h.photometric, h.spp)
		}
	case "RGB":
		if h.spp != 3 {
			return fmt.Errorf("%w: RGB with %d samples per pixel", volume.ErrFormat, h.spp)
		}
		if h.bitsAlloc != 8 {
			return fmt.Errorf("%w: %w: RGB with %d bits per sample (only 8 is supported)", ErrUnsupported, volume.ErrDType, h.bitsAlloc)
		}
	case "YBR_FULL", "YBR_FULL_422", "YBR_RCT", "YBR_ICT":
		// Codecs that convert these to RGB say so; uncompressed YBR is not converted.
		if !c.converts(h.photometric) || h.spp != 3 {
			return fmt.Errorf("%w: photometric interpretation %s is only supported in compressed files whose decoder converts it to RGB", ErrUnsupported, h.photometric)
		}
		if h.bitsAlloc != 8 {
			return fmt.Errorf("%w: %w: %s with %d bits per sample (only 8 is supported)", ErrUnsupported, volume.ErrDType, h.photometric, h.bitsAlloc)
		}
	case "PALETTE COLOR":
		return fmt.Errorf("%w: palette colour images are not supported", ErrUnsupported)
	case "":
		return fmt.Errorf("%w: photometric interpretation is missing", volume.ErrFormat)
	default:
		return fmt.Errorf("%w: photometric interpretation %s is not supported", ErrUnsupported, h.photometric)
	}
	if c != nil && c.only8 && h.bitsAlloc != 8 {
		return fmt.Errorf("%w: %s with %d bits allocated", volume.ErrFormat, c.name, h.bitsAlloc)
	}
	return volume.CheckSize([4]int{h.cols, h.rows, h.frames, h.spp}, volume.Int32)
}

// decodePixels decodes every frame of a file; c is the codec of compressed pixel data,
// nil for native data.
func decodePixels(h *header, l *layout, c *codec) (*pixels, error) {
	if err := h.checkImage(c); err != nil {
		return nil, err
	}
	n := h.rows * h.cols * h.spp
	size := h.bitsAlloc / 8
	// The pixel data must be able to hold the image before the image is allocated, so
	// that a small file cannot make the reader allocate gigabytes.
	var frames [][]byte
	switch {
	case !l.encapsulated && c != nil:
		return nil, fmt.Errorf("%w: transfer syntax %s needs encapsulated pixel data, found native", volume.ErrFormat, l.ts)
	case l.encapsulated && c == nil:
		return nil, fmt.Errorf("%w: encapsulated pixel data in a native transfer syntax", volume.ErrFormat)
	case !l.encapsulated:
		if need := int64(n) * int64(h.frames) * int64(size); int64(len(l.pixels)) < need {
			return nil, fmt.Errorf("%w: pixel data holds %d bytes, %d frames of %d×%d×%d at %d bits need %d",
				volume.ErrTruncated, len(l.pixels), h.frames, h.cols, h.rows, h.spp, h.bitsAlloc, need)
		}
	default:
		var err error
		if frames, err = l.frameFragments(h.frames, c); err != nil {
			return nil, err
		}
		var need int64
		if c.minBits != nil {
			need = c.minBits(h)
		}
		for i, f := range frames {
			if int64(len(f))*8 < need {
				return nil, fmt.Errorf("%w: %s frame %d of %d bytes cannot hold %d×%d×%d samples",
					volume.ErrFormat, c.name, i+1, len(f), h.cols, h.rows, h.spp)
			}
		}
		if c.sparse && int64(n)*int64(h.frames) > l.mode.lim.sparse {
			return nil, fmt.Errorf("%w: %d frames of %d×%d×%d samples exceed the limit of %d", volume.ErrTooLarge, h.frames, h.cols, h.rows, h.spp, l.mode.lim.sparse)
		}
	}
	p := &pixels{h: h, bo: l.bo, frameLen: n, min: make([]int32, h.frames), max: make([]int32, h.frames)}
	raw, planar := l.pixels, h.planar
	if l.encapsulated {
		// Compressed frames decode to native little-endian pixel data with the samples of
		// a pixel together; from there on they take the native path.
		raw, planar, p.bo = make([]byte, n*h.frames*size), 0, binary.LittleEndian
		if err := h.decodeFrames(raw, frames, c); err != nil {
			return nil, err
		}
	}
	var err error
	if h.spp == 1 {
		// Measure each frame now (which also checks every value); convert again when
		// the volume is filled. Signed 16-bit little-endian data is measured only if
		// the volume needs its range (see fill).
		p.raw = raw[:n*h.frames*size]
		if p.lazy = p.signed16(); !p.lazy {
			for i := 0; i < h.frames && err == nil; i++ {
				p.min[i], p.max[i], err = p.measure(i)
			}
		}
	} else {
		p.samples = make([]int32, n*h.frames)
		err = h.decodeNative(p, raw, p.bo, planar)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// decodeNative converts native colour data to samples, pixel-interleaving planar data
// (planar = 1).
func (h *header) decodeNative(p *pixels, raw []byte, bo binary.ByteOrder, planar int) error {
	size := h.bitsAlloc / 8
	for i := 0; i < h.frames; i++ {
		f := p.frame(i, nil)
		var err error
		if p.min[i], p.max[i], err = h.samples(f, raw[i*len(f)*size:(i+1)*len(f)*size], bo); err != nil {
			return err
		}
	}
	if h.spp == 3 && planar == 1 {
		tmp := make([]int32, p.frameLen)
		for i := 0; i < h.frames; i++ {
			f := p.frame(i, nil)
			copy(tmp, f)
			np := h.rows * h.cols
			for j := 0; j < np; j++ {
				f[3*j], f[3*j+1], f[3*j+2] = tmp[j], tmp[np+j], tmp[2*np+j]
			}
		}
	}
	return nil
}

// scratchPool holds frame-sized buffers for measure.
var scratchPool sync.Pool

// measure returns the smallest and largest stored value of a native frame of n samples.
func (h *header) measure(raw []byte, n int, bo binary.ByteOrder) (lo, hi int32, err error) {
	if h.bitsAlloc == 16 && h.bitsStored == 16 && bo == binary.LittleEndian {
		// The common case, without converting into memory.
		raw = raw[:2*n]
		if h.signed {
			l, u := int16(math.MaxInt16), int16(math.MinInt16)
			for i := 0; i < n; i++ {
				v := int16(binary.LittleEndian.Uint16(raw[2*i:]))
				l, u = min(l, v), max(u, v)
			}
			return int32(l), int32(u), nil
		}
		l, u := uint16(math.MaxUint16), uint16(0)
		for i := 0; i < n; i++ {
			v := binary.LittleEndian.Uint16(raw[2*i:])
			l, u = min(l, v), max(u, v)
		}
		return int32(l), int32(u), nil
	}
	bp, _ := scratchPool.Get().(*[]int32)
	if bp == nil || cap(*bp) < n {
		b := make([]int32, n)
		bp = &b
	}
	defer scratchPool.Put(bp)
	return h.samples((*bp)[:n], raw, bo)
}

// samples converts raw stored values to int32, masking to Bits Stored or sign-extending
// from it. The High Bit is taken to be Bits Stored − 1, as in nearly all files and in
// pydicom.
func (h *header) samples(dst []int32, raw []byte, bo binary.ByteOrder) (lo, hi int32, err error) {
	bs := uint(h.bitsStored)
	shift := 32 - bs
	mask := uint32(1)<<bs - 1
	if bs == 32 {
		mask = math.MaxUint32
	}
	conv := func(u uint32) int32 {
		if h.signed {
			return int32(u<<shift) >> shift
		}
		return int32(u & mask)
	}
	switch h.bitsAlloc {
	case 8:
		for i := range dst {
			dst[i] = conv(uint32(raw[i]))
		}
	case 16:
		if bs == 16 && bo == binary.LittleEndian {
			// The common case, converted and measured in one pass.
			raw = raw[:2*len(dst)]
			lo, hi = math.MaxInt32, math.MinInt32
			for i := range dst {
				u := uint16(raw[2*i]) | uint16(raw[2*i+1])<<8
				v := int32(u)
				if h.signed {
					v = int32(int16(u))
				}
				dst[i] = v
				lo, hi = min(lo, v), max(hi, v)
			}
			return lo, hi, nil
		}
		for i := range dst {
			dst[i] = conv(uint32(bo.Uint16(raw[2*i:])))
		}
	case 32:
		for i := range dst {
			u := bo.Uint32(raw[4*i:])
			if !h.signed && u&mask > math.MaxInt32 {
				return 0, 0, fmt.Errorf("%w: unsigned 32-bit value %d above 2³¹−1", volume.ErrDType, u&mask)
			}
			dst[i] = conv(u)
		}
	}
	lo, hi = minMax(dst)
	return lo, hi, nil
}

// frameFragments groups the fragments of encapsulated pixel data into frames (PS3.5 §A.4):
// one frame takes every fragment; otherwise the Basic Offset Table, one fragment per
// frame, or (JPEG, JPEG-LS) a fragment starting with a start-of-image marker starts a
// frame.
func (l *layout) frameFragments(frames int, c *codec) ([][]byte, error) {
	fr := l.fragments
	if len(fr) == 0 {
		return nil, fmt.Errorf("%w: encapsulated pixel data has no fragments", volume.ErrTruncated)
	}
	join := func(parts [][]byte) []byte {
		if len(parts) == 1 {
			return parts[0]
		}
		return bytes.Join(parts, nil)
	}
	switch {
	case frames == 1:
		return [][]byte{join(fr)}, nil
	case len(fr) == frames:
		return fr, nil
	case len(l.offsets) == frames && l.offsets[0] == 0:
		// Offsets count bytes from the first fragment's item tag; each item has an
		// 8-byte header.
		var starts []int
		var pos uint64
		for i := range fr {
			if k := len(starts); k < frames && pos == uint64(l.offsets[k]) {
				starts = append(starts, i)
			}
			pos += uint64(len(fr[i])) + 8
		}
		if len(starts) == frames {
			out := make([][]byte, frames)
			for k, s := range starts {
				e := len(fr)
				if k+1 < frames {
					e = starts[k+1]
				}
				out[k] = join(fr[s:e])
			}
			return out, nil
		}
	case c.start != nil:
		var out [][]byte
		start := 0
		for i := 1; i <= len(fr); i++ {
			if i == len(fr) || bytes.HasPrefix(fr[i], c.start) {
				out = append(out, join(fr[start:i]))
				start = i
			}
		}
		if len(out) == frames {
			return out, nil
		}
	}
	return nil, fmt.Errorf("%w: %d fragments cannot be split into %d frames", volume.ErrFormat, len(fr), frames)
}

// decodeJPEGFrame decodes one 8-bit DCT JPEG frame with the standard library into dst, one
// byte per sample. Colour frames (YCbCr or RGB coded) come out as RGB.
func decodeJPEGFrame(h *header, data []byte, dst []byte) error {
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%w: JPEG: %v", volume.ErrFormat, err)
	}
	if cfg.Width != h.cols || cfg.Height != h.rows {
		return fmt.Errorf("%w: JPEG frame is %d×%d, the header says %d×%d", volume.ErrFormat, cfg.Width, cfg.Height, h.cols, h.rows)
	}
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%w: JPEG: %v", volume.ErrFormat, err)
	}
	w := h.cols
	switch m := img.(type) {
	case *image.Gray:
		if h.spp != 1 {
			return fmt.Errorf("%w: grey JPEG frame for %d samples per pixel", volume.ErrFormat, h.spp)
		}
		for y := 0; y < h.rows; y++ {
			row := m.Pix[y*m.Stride : y*m.Stride+w]
			for x, v := range row {
				dst[y*w+x] = v
			}
		}
	case *image.YCbCr:
		if h.spp != 3 {
			return fmt.Errorf("%w: colour JPEG frame for %d samples per pixel", volume.ErrFormat, h.spp)
		}
		for y := 0; y < h.rows; y++ {
			for x := 0; x < w; x++ {
				yi, ci := m.YOffset(x, y), m.COffset(x, y)
				r, g, b := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
				o := 3 * (y*w + x)
				dst[o], dst[o+1], dst[o+2] = r, g, b
			}
		}
	case *image.RGBA:
		if h.spp != 3 {
			return fmt.Errorf("%w: colour JPEG frame for %d samples per pixel", volume.ErrFormat, h.spp)
		}
		for y := 0; y < h.rows; y++ {
			for x := 0; x < w; x++ {
				s := m.Pix[y*m.Stride+4*x:]
				o := 3 * (y*w + x)
				dst[o], dst[o+1], dst[o+2] = s[0], s[1], s[2]
			}
		}
	default:
		return fmt.Errorf("%w: JPEG colour model %T is not supported", ErrUnsupported, img)
	}
	return nil
}

func minMax(s []int32) (lo, hi int32) {
	if len(s) == 0 {
		return 0, 0
	}
	lo, hi = s[0], s[0]
	for _, v := range s[1:] {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}
