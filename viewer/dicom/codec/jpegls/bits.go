package jpegls

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// bitReader reads a JPEG-LS scan's bits (T.87 A.1): most significant bit first, where the
// byte after each 0xFF carries only 7 bits (its top bit is a stuffed 0), and 0xFF followed
// by a byte with the top bit set is a marker. At a marker or the end of the data it reads
// zero bits and counts them, so that err can tell when the decoder used bits the data
// does not hold.
type bitReader struct {
	data []byte
	pos  int    // next byte to load
	acc  uint64 // bits, most significant first
	n    int    // valid bits in acc
	pad  int    // of those, how many (the last) are zeros past the data
	fail error
}

func (b *bitReader) reset(data []byte) {
	*b = bitReader{data: data}
}

// fill loads bytes until acc holds more than 56 bits.
func (b *bitReader) fill() {
	if b.pad == 0 && b.pos+8 <= len(b.data) {
		w := binary.BigEndian.Uint64(b.data[b.pos:])
		if x := ^w; (x-0x0101010101010101)&^x&0x8080808080808080 == 0 {
			// No 0xFF among the next eight bytes: no stuffed bits. (After a 0xFF consumed
			// before, its stuffed 0 lands on the 0xFF's last bit, as below.)
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
		if c == 0xFF && (b.pos+1 >= len(b.data) || b.data[b.pos+1]&0x80 != 0) {
			// A marker: the scan (or restart interval) ends here.
			b.pad += 64 - b.n
			b.n = 64
			return
		}
		b.acc |= uint64(c) << uint(56-b.n)
		b.pos++
		b.n += 8
		if c == 0xFF {
			// The next byte's top bit is stuffed: let it fall on this byte's last bit
			// (a 1, which OR keeps).
			b.n--
		}
	}
}

// read returns the next k bits (0…32).
func (b *bitReader) read(k int) int {
	if k == 0 {
		return 0
	}
	if b.n < k {
		b.fill()
	}
	v := int(b.acc >> uint(64-k))
	b.acc <<= uint(k)
	b.n -= k
	return v
}

// bit returns the next bit.
func (b *bitReader) bit() int {
	if b.n < 1 {
		b.fill()
	}
	v := int(b.acc >> 63)
	b.acc <<= 1
	b.n--
	return v
}

// unary counts the 0 bits before the next 1 bit and consumes them and the 1, giving up
// (with an error) after max zeros.
func (b *bitReader) unary(max int) int {
	count := 0
	for {
		if b.n < 32 {
			b.fill()
		}
		z := bits.LeadingZeros64(b.acc)
		if z < b.n {
			b.acc <<= uint(z + 1)
			b.n -= z + 1
			count += z
			if count > max {
				b.setErr(fmt.Errorf("%w: a Golomb code has more than %d leading zeros", ErrFormat, max))
			}
			return count
		}
		// Every buffered bit is 0.
		count += b.n
		b.acc, b.n = 0, 0
		if count > max || b.pad > 0 {
			b.setErr(fmt.Errorf("%w: a Golomb code has more than %d leading zeros", ErrFormat, max))
			return 0
		}
	}
}

// setErr records that the data is invalid; the bits left read as zeros.
func (b *bitReader) setErr(err error) {
	if b.fail == nil {
		b.fail = err
	}
	b.acc, b.pad = 0, b.pad+b.n
}

func (b *bitReader) err() error {
	switch {
	case b.fail != nil:
		return b.fail
	case b.pad > b.n:
		return fmt.Errorf("%w: scan data ends %d bits early", ErrTruncated, b.pad-b.n)
	}
	return nil
}

// restart ends a restart interval: it reads the marker RSTm (m = 0…7) that must follow
// the interval's data, skipping the fill bits of its last byte.
func (b *bitReader) restart(m int) error {
	if err := b.err(); err != nil {
		return err
	}
	p := b.pos
	for p+1 < len(b.data) && !(b.data[p] == 0xFF && b.data[p+1]&0x80 != 0 && b.data[p+1] != 0xFF) {
		p++
	}
	if p+1 >= len(b.data) {
		return fmt.Errorf("%w: restart marker RST%d missing", ErrTruncated, m)
	}
	if got := b.data[p+1]; got != byte(0xD0+m) {
		return fmt.Errorf("%w: marker FF%02X where restart marker RST%d was expected", ErrFormat, got, m)
	}
	b.pos = p + 2
	b.acc, b.n, b.pad = 0, 0, 0
	return nil
}
