package dicom

import (
	"encoding/binary"
	"fmt"

	"amid/viewer/volume"
)

// decodeRLE decodes one RLE Lossless frame (PS3.5 Annex G) into dst as little-endian,
// pixel-interleaved samples: npix pixels of spp samples of size bytes each.
//
// The frame starts with a 64-byte header: the number of segments (at most 15) and the byte
// offset of each segment from the start of the frame. Segment s·size+k holds byte k of
// sample s of every pixel, most significant byte first (Annex G.2), each compressed with
// the PackBits scheme of G.3.1: a header byte n in [0,127] copies the next n+1 bytes, n in
// [-127,-1] repeats the next byte 1−n times, and −128 does nothing.
func decodeRLE(dst, frame []byte, npix, spp, size int) error {
	if len(frame) < 64 {
		return fmt.Errorf("%w: RLE frame of %d bytes has no 64-byte header", volume.ErrTruncated, len(frame))
	}
	nseg := int(binary.LittleEndian.Uint32(frame))
	if want := spp * size; nseg != want {
		return fmt.Errorf("%w: RLE frame has %d segments, %d samples of %d bytes need %d", volume.ErrFormat, nseg, spp, size, want)
	}
	if nseg > 15 {
		return fmt.Errorf("%w: RLE frame has %d segments (at most 15)", volume.ErrFormat, nseg)
	}
	var offs [16]int
	for i := 0; i < nseg; i++ {
		offs[i] = int(binary.LittleEndian.Uint32(frame[4+4*i:]))
	}
	offs[nseg] = len(frame)
	stride := spp * size
	for sg := 0; sg < nseg; sg++ {
		start, end := offs[sg], offs[sg+1]
		if start < 64 || start > end || end > len(frame) {
			return fmt.Errorf("%w: RLE segment %d spans bytes %d..%d of a %d-byte frame", volume.ErrFormat, sg+1, start, end, len(frame))
		}
		sample, k := sg/size, sg%size
		// Byte k counts from the most significant; dst is little endian.
		pos := sample*size + size - 1 - k
		if err := unpackBits(dst[pos:], stride, npix, frame[start:end]); err != nil {
			return fmt.Errorf("RLE segment %d: %w", sg+1, err)
		}
	}
	return nil
}

// unpackBits decodes a PackBits segment into n bytes written every stride bytes of dst.
// Bytes decoded beyond n (segments are padded to even length) are ignored.
func unpackBits(dst []byte, stride, n int, src []byte) error {
	o := 0
	for i := 0; i < len(src) && o < n; {
		h := int(int8(src[i]))
		i++
		switch {
		case h >= 0:
			c := h + 1
			if i+c > len(src) {
				return fmt.Errorf("%w: literal run of %d bytes overruns the segment", volume.ErrTruncated, c)
			}
			for _, b := range src[i : i+c] {
				if o >= n {
					break
				}
				dst[o*stride] = b
				o++
			}
			i += c
		case h != -128:
			if i >= len(src) {
				return fmt.Errorf("%w: replicate run without its byte", volume.ErrTruncated)
			}
			b := src[i]
			i++
			for c := 1 - h; c > 0 && o < n; c-- {
				dst[o*stride] = b
				o++
			}
		}
	}
	if o < n {
		return fmt.Errorf("%w: decodes to %d bytes, %d expected", volume.ErrTruncated, o, n)
	}
	return nil
}
