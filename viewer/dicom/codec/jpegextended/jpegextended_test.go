package jpegextended_test

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"amid/assets/realdata"
	"amid/viewer/dicom/codec/jpegextended"
	"amid/viewer/dicom/internal/codectest"
)

// realFiles are the JPEG Extended files of the real-image cache: pydicom's 12-bit NM
// image and its original, whose scan header gives a spectral range of 0…0 (GDCM warns
// and decodes it as a sequential scan, and so do we).
var realFiles = []string{
	realdata.Pydicom + "/JPGExtended.dcm",
	realdata.Pydicom + "/JPEG-lossy.dcm",
}

// TestRealFiles decodes the real files and compares them with GDCM's decode.
func TestRealFiles(t *testing.T) {
	codectest.Need(t, "gdcmconv", "gdcmraw")
	dir := t.TempDir()
	for _, rel := range realFiles {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			check(t, codectest.Copy(t, dir, rel))
		})
	}
}

// TestQualities transcodes the real greyscale inputs with dcmtk's extended sequential
// encoder (12 bits, and 8 where the input has 8) at several qualities and compares with
// GDCM's decode.
func TestQualities(t *testing.T) {
	codectest.Need(t, "gdcmconv", "gdcmraw", "dcmcjpeg")
	dir := t.TempDir()
	for _, in := range codectest.Inputs {
		if in.Name == "us-rgb-u8" {
			continue // colour: the dicom package decodes 8-bit colour with image/jpeg
		}
		src := codectest.Copy(t, dir, in.Path)
		for _, q := range []int{50, 90, 100} {
			name := fmt.Sprintf("%s-q%d", in.Name, q)
			t.Run(name, func(t *testing.T) {
				out := filepath.Join(dir, name+".dcm")
				codectest.Run(t, "dcmcjpeg", "+ee", "+bt", "+q", fmt.Sprint(q), src, out)
				check(t, out)
			})
		}
	}
	t.Run("8-bit", func(t *testing.T) {
		src := codectest.Copy(t, dir, realdata.DicomTCIA+"/3.dcm")
		out := filepath.Join(dir, "8bit.dcm")
		codectest.Run(t, "dcmcjpeg", "+ee", "+be", src, out)
		check(t, out)
	})
}

// check decodes the codestream of a single-frame DICOM file and compares it with GDCM.
// Our inverse DCT is libjpeg's integer one, so we expect exact agreement; the tolerance
// of one grey level the DICOM tests allow lossy syntaxes is not used.
func check(t *testing.T, dcm string) {
	t.Helper()
	img, err := jpegextended.Decode(codectest.Codestream(t, dcm))
	if err != nil {
		t.Fatal(err)
	}
	want, err := codectest.GDCM(t, dcm)
	if err != nil {
		t.Fatal(err)
	}
	codectest.Equal(t, filepath.Base(dcm), img.Pix, img.Precision, want, 0)
}

// TestBadStreams checks that truncated and corrupted streams give errors of the right
// kind and never panic.
func TestBadStreams(t *testing.T) {
	codectest.Need(t, "gdcmraw")
	good := codectest.Codestream(t, codectest.Copy(t, t.TempDir(), realFiles[0]))
	if _, err := jpegextended.Decode(good); err != nil {
		t.Fatal(err)
	}
	// The file's codestream ends with zero padding after its end-of-image marker.
	eoi := bytes.LastIndex(good, []byte{0xFF, 0xD9})
	// Cuts every few bytes (the image is 256×1024: each decode takes a while under the
	// race detector), and at each of the last 64.
	for n := 0; n < eoi-2; n += max(1, min(eoi/400, eoi-2-64-n)) {
		_, err := jpegextended.Decode(good[:n])
		if err == nil {
			t.Errorf("stream cut to %d of %d bytes decoded without error", n, eoi+2)
		} else if !errors.Is(err, jpegextended.ErrTruncated) && !errors.Is(err, jpegextended.ErrFormat) {
			t.Errorf("cut to %d bytes: %v wraps neither ErrTruncated nor ErrFormat", n, err)
		}
	}
	sof := bytes.Index(good, []byte{0xFF, 0xC1})
	for _, c := range []struct {
		name string
		edit func([]byte)
		is   error
	}{
		{"progressive", func(b []byte) { b[sof+1] = 0xC2 }, jpegextended.ErrUnsupported},
		{"precision-16", func(b []byte) { b[sof+4] = 16 }, jpegextended.ErrFormat},
		{"no-quant-table", func(b []byte) { b[sof+12] = 3 }, jpegextended.ErrFormat},
	} {
		b := append([]byte(nil), good...)
		c.edit(b)
		if _, err := jpegextended.Decode(b); !errors.Is(err, c.is) {
			t.Errorf("%s: %v, want %v", c.name, err, c.is)
		}
	}
}

// FuzzDecode feeds the decoder mutations of the real stream; it must return an image or
// an error, never panic or hang, with allocations bounded by the frame header.
func FuzzDecode(f *testing.F) {
	for _, rel := range realFiles {
		if b, ok := codectest.Seed(f, rel); ok {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := jpegextended.DecodeConfig(b)
		if err != nil || cfg.Width*cfg.Height*cfg.Components > 1<<22 {
			return
		}
		img, err := jpegextended.Decode(b)
		if err == nil && len(img.Pix) != img.Width*img.Height*img.Components {
			t.Fatalf("%d samples for %d×%d×%d", len(img.Pix), img.Width, img.Height, img.Components)
		}
	})
}
