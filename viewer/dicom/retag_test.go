package dicom

import (
	"encoding/binary"
	"fmt"
	"sort"
	"testing"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// retag returns a copy of the DICOM file b (native little endian, implicit or explicit VR)
// with the top-level string elements in vals set to the given values: replaced where
// present, inserted in tag order where not (explicit VR takes the dictionary's VR). It is
// how tests make tilted and unevenly spaced series from real slices: the pixel data and
// every other element stay as they were.
func retag(t testing.TB, b []byte, vals map[tag.Tag]string) []byte {
	t.Helper()
	l, err := scan(b, scanMode{headerOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if l.bo != binary.LittleEndian || l.pixelOffset < 0 {
		t.Fatalf("retag: %s is not native little endian", l.ts)
	}
	// The data set starts after the file meta information.
	start := 0
	if len(b) >= 132 && string(b[128:132]) == "DICM" {
		start = 132
		for start+8 <= len(b) && binary.LittleEndian.Uint16(b[start:]) == 0x0002 {
			ms := scanner{b: b, bo: binary.LittleEndian}
			_, _, vl, hl, err := ms.element(start, len(b))
			if err != nil {
				t.Fatal(err)
			}
			start += hl + int(vl)
		}
	}
	implicit := l.implicit
	s := scanner{b: b, bo: binary.LittleEndian, implicit: implicit}
	encode := func(tg tag.Tag, v string) []byte {
		if len(v)%2 == 1 {
			v += " "
		}
		out := binary.LittleEndian.AppendUint16(nil, tg.Group)
		out = binary.LittleEndian.AppendUint16(out, tg.Element)
		if implicit {
			out = binary.LittleEndian.AppendUint32(out, uint32(len(v)))
		} else {
			info, err := tag.Find(tg)
			if err != nil {
				t.Fatalf("retag: %v: %v", tg, err)
			}
			out = append(out, info.VRs[0]...)
			out = binary.LittleEndian.AppendUint16(out, uint16(len(v)))
		}
		return append(out, v...)
	}
	pending := make([]tag.Tag, 0, len(vals))
	for tg := range vals {
		pending = append(pending, tg)
	}
	sort.Slice(pending, func(i, j int) bool { return less(pending[i], pending[j]) })
	out := append([]byte(nil), b[:start]...)
	off := start
	for off < len(b) {
		tg, vr, vl, hl, err := s.element(off, len(b))
		if err != nil {
			t.Fatal(err)
		}
		for len(pending) > 0 && less(pending[0], tg) {
			out = append(out, encode(pending[0], vals[pending[0]])...)
			pending = pending[1:]
		}
		if tg == tag.PixelData {
			out = append(out, b[off:]...)
			return out
		}
		next, err := s.value(tg, vr, vl, off+hl, len(b), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(pending) > 0 && pending[0] == tg {
			out = append(out, encode(tg, vals[tg])...)
			pending = pending[1:]
		} else {
			out = append(out, b[off:next]...)
		}
		off = next
	}
	t.Fatal("retag: no pixel data")
	return nil
}

func less(a, b tag.Tag) bool { return a.Group < b.Group || a.Group == b.Group && a.Element < b.Element }

// ds writes numbers as a DS value (backslash-separated, each within the 16 characters DS
// allows).
func ds(fs ...float64) string {
	s := ""
	for i, f := range fs {
		if i > 0 {
			s += `\`
		}
		v := fmt.Sprintf("%.10g", f)
		for p := 9; len(v) > 16; p-- {
			v = fmt.Sprintf("%.*g", p, f)
		}
		s += v
	}
	return s
}
