package jpegstream

import (
	"encoding/binary"
	"fmt"
)

// lutBits is how many leading bits the fast Huffman lookup decodes at once; longer codes
// take the canonical-code walk of T.81 F.2.2.3.
const lutBits = 9

// Huffman is a decoding table built from a DHT segment (T.81 Annex C).
type Huffman struct {
	// lut maps the next lutBits bits to length<<8 | symbol, or 0 for longer codes.
	lut     [1 << lutBits]uint16
	maxcode [18]int32 // largest code of each length, −1 when none; maxcode[17] is a sentinel
	valptr  [17]int32 // index in vals of the first code of each length, minus that code
	vals    [256]byte
}

// Tables are the Huffman tables of a stream by class (0: DC and lossless, 1: AC) and
// destination (0…3). A nil entry was never defined.
type Tables [2][4]*Huffman

// ParseDHT adds the tables of a DHT segment (T.81 B.2.4.2).
func (t *Tables) ParseDHT(seg []byte) error {
	for len(seg) > 0 {
		if len(seg) < 17 {
			return fmt.Errorf("%w: Huffman table of %d bytes", ErrFormat, len(seg))
		}
		class, dest := int(seg[0]>>4), int(seg[0]&15)
		if class > 1 || dest > 3 {
			return fmt.Errorf("%w: Huffman table of class %d and destination %d", ErrFormat, class, dest)
		}
		var counts [17]int
		total := 0
		for l := 1; l <= 16; l++ {
			counts[l] = int(seg[l])
			total += counts[l]
		}
		if total == 0 || total > 256 || len(seg) < 17+total {
			return fmt.Errorf("%w: Huffman table with %d codes in %d bytes", ErrFormat, total, len(seg)-17)
		}
		h := &Huffman{}
		copy(h.vals[:], seg[17:17+total])
		if err := h.build(&counts); err != nil {
			return err
		}
		t[class][dest] = h
		seg = seg[17+total:]
	}
	return nil
}

// build makes the decoding tables from the number of codes of each length.
func (h *Huffman) build(counts *[17]int) error {
	code, k := int32(0), int32(0)
	for l := 1; l <= 16; l++ {
		n := int32(counts[l])
		if code+n > 1<<l {
			return fmt.Errorf("%w: Huffman table has more codes of length %d than fit", ErrFormat, l)
		}
		if n == 0 {
			h.maxcode[l] = -1
		} else {
			h.valptr[l] = k - code
			for i := int32(0); i < n; i++ {
				if l <= lutBits {
					// Every lookup index that starts with this code.
					shift := uint(lutBits - l)
					base := int((code + i) << shift)
					for j := 0; j < 1<<shift; j++ {
						h.lut[base+j] = uint16(l)<<8 | uint16(h.vals[k+i])
					}
				}
			}
			code += n
			k += n
			h.maxcode[l] = code - 1
		}
		code <<= 1
	}
	h.maxcode[17] = 1 << 30
	return nil
}

// Bits reads entropy-coded data (T.81 F.2.2.5): most significant bit first, with each 0xFF
// byte followed by a stuffed 0x00. At a marker or at the end of the data it reads zero bits
// and counts them, so that Overrun can tell when a decoder used bits the data does not hold.
type Bits struct {
	data []byte
	pos  int    // next byte of data to load
	acc  uint64 // bits, most significant first
	n    int    // valid bits in acc
	pad  int    // of those, how many (the last) are zeros past the data
	err  error  // invalid data found by Decode or a decoder (Fail)
}

// Reset starts reading data, the entropy-coded bytes that follow a scan header.
func (b *Bits) Reset(data []byte) {
	*b = Bits{data: data}
}

// fill loads bytes until acc holds more than 56 bits.
func (b *Bits) fill() {
	// Fast path: eight bytes without 0xFF need no unstuffing.
	if b.pad == 0 && b.pos+8 <= len(b.data) {
		w := binary.BigEndian.Uint64(b.data[b.pos:])
		if !hasFF(w) {
			b.acc |= w >> uint(b.n)
			k := (63 - b.n) >> 3
			b.pos += k
			b.n += k << 3
			return
		}
	}
	for b.n <= 56 {
		if b.pad > 0 || b.pos >= len(b.data) {
			b.pad += 64 - b.n
			b.n = 64
			return
		}
		c := b.data[b.pos]
		if c == 0xFF {
			if b.pos+1 >= len(b.data) || b.data[b.pos+1] != 0 {
				// A marker (or the end): the data of this interval ends here.
				b.pad += 64 - b.n
				b.n = 64
				return
			}
			b.pos++
		}
		b.pos++
		b.acc |= uint64(c) << uint(56-b.n)
		b.n += 8
	}
}

// hasFF reports whether any byte of w is 0xFF.
func hasFF(w uint64) bool {
	x := ^w
	return (x-0x0101010101010101)&^x&0x8080808080808080 != 0
}

// Decode reads one Huffman-coded symbol. An invalid code returns 0 and makes Err report it.
func (b *Bits) Decode(h *Huffman) int {
	if b.n < 16 {
		b.fill()
	}
	if v := h.lut[b.acc>>(64-lutBits)]; v != 0 {
		l := int(v >> 8)
		b.acc <<= uint(l)
		b.n -= l
		return int(v & 0xFF)
	}
	return b.decodeSlow(h)
}

func (b *Bits) decodeSlow(h *Huffman) int {
	top := int32(b.acc >> 48)
	for l := lutBits + 1; l <= 16; l++ {
		code := top >> uint(16-l)
		if code <= h.maxcode[l] {
			b.acc <<= uint(l)
			b.n -= l
			return int(h.vals[(h.valptr[l]+code)&0xFF])
		}
	}
	b.Fail(fmt.Errorf("%w: invalid Huffman code in the entropy-coded data", ErrFormat))
	return 0
}

// Fail records that the data is invalid; Err reports the first such error. The bits left
// read as zeros, so a decoder that goes on until it checks Err does no harm.
func (b *Bits) Fail(err error) {
	if b.err == nil {
		b.err = err
	}
	b.acc, b.pad = 0, b.pad+b.n
}

// Receive reads s bits (0…16) as an unsigned number.
func (b *Bits) Receive(s int) int32 {
	if s == 0 {
		return 0
	}
	if b.n < s {
		b.fill()
	}
	v := int32(b.acc >> uint(64-s))
	b.acc <<= uint(s)
	b.n -= s
	return v
}

// ReceiveExtend reads s bits (1…16) and extends them to a signed difference (T.81 F.2.2.1).
func (b *Bits) ReceiveExtend(s int) int32 {
	v := b.Receive(s)
	if v < 1<<uint(s-1) {
		v += -1<<uint(s) + 1
	}
	return v
}

// Difference reads one lossless JPEG difference (T.81 H.1.2.2, Table H.2): a Huffman-coded
// category SSSS and SSSS extra bits, except category 16, which is 32768 with no extra
// bits. It is Decode and ReceiveExtend in one, with one check of the buffered bits.
func (b *Bits) Difference(h *Huffman) int32 {
	if b.n < 32 {
		b.fill()
	}
	var s int
	if v := h.lut[b.acc>>(64-lutBits)]; v != 0 {
		l := int(v >> 8)
		b.acc <<= uint(l)
		b.n -= l
		s = int(v & 0xFF)
	} else {
		s = b.decodeSlow(h)
	}
	switch {
	case s == 0:
		return 0
	case s < 16:
		d := int32(b.acc >> uint(64-s))
		b.acc <<= uint(s)
		b.n -= s
		if d < 1<<uint(s-1) {
			d += -1<<uint(s) + 1
		}
		return d
	case s == 16:
		return 32768
	}
	b.Fail(fmt.Errorf("%w: difference category %d (at most 16)", ErrFormat, s))
	return 0
}

// Err reports an invalid Huffman code or the use of more bits than the data holds.
func (b *Bits) Err() error {
	switch {
	case b.err != nil:
		return b.err
	case b.pad > b.n:
		return fmt.Errorf("%w: entropy-coded data ends %d bits early", ErrTruncated, b.pad-b.n)
	}
	return nil
}

// Restart ends a restart interval: it checks the interval's data, drops the bits left of
// its last byte and reads the marker RSTm (m = 0…7) that must follow.
func (b *Bits) Restart(m int) error {
	if err := b.Err(); err != nil {
		return err
	}
	// Bytes left over at the end of the interval (beyond the fill bits of its last byte)
	// are skipped, as other decoders do; a marker other than RSTm is an error.
	p := b.pos
	for p+1 < len(b.data) && !(b.data[p] == 0xFF && b.data[p+1] != 0 && b.data[p+1] != 0xFF) {
		p++
	}
	if p+1 >= len(b.data) {
		return fmt.Errorf("%w: restart marker RST%d missing", ErrTruncated, m)
	}
	if got := b.data[p+1]; got != byte(RST0+m) {
		return fmt.Errorf("%w: marker FF%02X where restart marker RST%d was expected", ErrFormat, got, m)
	}
	b.pos = p + 2
	b.acc, b.n, b.pad = 0, 0, 0
	return nil
}

// Consumed returns how many bytes of the data have been read, at most.
func (b *Bits) Consumed() int { return b.pos }
