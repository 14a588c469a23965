package jpeg2000

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// The JP2 file format (T.800 Annex I): a sequence of boxes, one of which holds the
// codestream. GDCM and some modalities store JP2 files instead of bare codestreams.

var jp2Signature = []byte{0, 0, 0, 12, 'j', 'P', ' ', ' ', 0x0D, 0x0A, 0x87, 0x0A}

// jp2Info is what the JP2 header says beyond the codestream.
type jp2Info struct {
	// order lists the codestream component for each output component when a channel
	// definition box reorders the colours; nil otherwise.
	order []int
}

// box is a JP2 box: its type, its contents and its offset in the file.
type box struct {
	typ  string
	data []byte
	off  int
}

// boxes splits b into boxes; base is b's offset in the file.
func boxes(b []byte, base int) ([]box, error) {
	var out []box
	for pos := 0; pos < len(b); {
		if pos+8 > len(b) {
			// Fewer bytes than a box header: padding (DICOM pads fragments to even
			// lengths), not a box.
			break
		}
		n := int(binary.BigEndian.Uint32(b[pos:]))
		typ := string(b[pos+4 : pos+8])
		head := 8
		switch n {
		case 0:
			n = len(b) - pos
		case 1:
			if pos+16 > len(b) {
				return nil, fmt.Errorf("%w: JP2 box %q at byte %d: file ends inside its header", ErrTruncated, typ, base+pos)
			}
			x := binary.BigEndian.Uint64(b[pos+8:])
			if x > uint64(len(b)-pos) {
				n = len(b) - pos + 1 // reported as truncated below
			} else {
				n = int(x)
			}
			head = 16
		}
		if n < head {
			return nil, formatErr("JP2 box %q at byte %d: length %d", typ, base+pos, n)
		}
		if pos+n > len(b) {
			if typ == "jp2c" {
				// A cut codestream box: decode what is there, Decode reports the truncation.
				out = append(out, box{typ, b[pos+head:], base + pos})
				return out, nil
			}
			return nil, fmt.Errorf("%w: JP2 box %q at byte %d declares %d bytes, %d are left", ErrTruncated, typ, base+pos, n, len(b)-pos)
		}
		out = append(out, box{typ, b[pos+head : pos+n], base + pos})
		pos += n
	}
	return out, nil
}

// codestreamOf returns the codestream in b: b itself when it starts with SOC, the
// contiguous codestream box of a JP2 file otherwise.
func codestreamOf(b []byte) ([]byte, *jp2Info, error) {
	if len(b) >= 2 && binary.BigEndian.Uint16(b) == mSOC {
		return b, nil, nil
	}
	if !bytes.HasPrefix(b, jp2Signature) {
		return nil, nil, formatErr("neither a codestream (SOC marker) nor a JP2 file (signature box)")
	}
	bs, err := boxes(b[len(jp2Signature):], len(jp2Signature))
	if err != nil {
		return nil, nil, err
	}
	info := &jp2Info{}
	for _, bx := range bs {
		switch bx.typ {
		case "jp2h":
			sub, err := boxes(bx.data, bx.off+8)
			if err != nil {
				return nil, nil, err
			}
			for _, s := range sub {
				switch s.typ {
				case "pclr":
					return nil, nil, fmt.Errorf("%w: JP2 palette (pclr box at byte %d)", ErrUnsupported, s.off)
				case "cdef":
					if info.order, err = channelOrder(s); err != nil {
						return nil, nil, err
					}
				}
			}
		case "jp2c":
			return bx.data, info, nil
		}
	}
	return nil, nil, formatErr("JP2 file has no codestream box")
}

// channelOrder reads a channel definition box: for each colour i (1-based Asoc), the
// channel that holds it. Channels that are not colours keep their place after them.
func channelOrder(s box) ([]int, error) {
	if len(s.data) < 2 {
		return nil, formatErr("JP2 cdef box at byte %d is too short", s.off)
	}
	n := int(binary.BigEndian.Uint16(s.data))
	if len(s.data) != 2+6*n {
		return nil, formatErr("JP2 cdef box at byte %d: %d bytes for %d channels", s.off, len(s.data), n)
	}
	order := make([]int, n)
	used := make([]bool, n)
	for i := range order {
		order[i] = -1
	}
	var rest []int
	for i := range n {
		e := s.data[2+6*i:]
		cn, typ, asoc := int(binary.BigEndian.Uint16(e)), binary.BigEndian.Uint16(e[2:]), int(binary.BigEndian.Uint16(e[4:]))
		if cn >= n {
			return nil, formatErr("JP2 cdef box at byte %d: channel %d of %d", s.off, cn, n)
		}
		if typ == 0 && asoc >= 1 && asoc <= n && order[asoc-1] < 0 && !used[cn] {
			order[asoc-1], used[cn] = cn, true
		} else {
			rest = append(rest, cn)
		}
	}
	k := 0
	for i := range order {
		if order[i] < 0 {
			for k < len(rest) && used[rest[k]] {
				k++
			}
			if k == len(rest) {
				return nil, formatErr("JP2 cdef box at byte %d maps channels twice", s.off)
			}
			order[i], used[rest[k]] = rest[k], true
		}
	}
	for i, c := range order {
		if i != c {
			return order, nil
		}
	}
	return nil, nil
}
