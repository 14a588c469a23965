// Package codectest runs the reference tools the dicom package's decoders are tested
// against: GDCM's command-line tools (Debian libgdcm-tools: gdcmconv, gdcmraw, gdcmimg)
// to decode, extract and wrap codestreams, and dcmtk's encoders (dcmcjpeg, dcmcjpls) to
// make compressed files from real uncompressed ones. It is for tests only.
//
// A missing tool skips the test, except in CI (ci.On), where `make test` installs
// them (the Makefile's APT_PKGS) and a missing one is a failure.
package codectest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"amid/assets/ci"
	"amid/assets/realdata"
)

// Real uncompressed images the tests transcode, relative to the real-image cache: a
// spread of sample types (SOURCES.md in assets/realdata says where each comes from).
var Inputs = []struct {
	Name, Path string
}{
	{"ankle-ct-s16", realdata.Octave + "/dicom-0.5.1/imdata/CT-MONO2-16-ankle.dcm"}, // 512², signed 16-bit CT
	{"ct-small-s16", realdata.Pydicom + "/CT_small.dcm"},                            // 128², signed 16-bit CT
	{"mr-small-s16", realdata.Pydicom + "/MR_small.dcm"},                            // 64², signed 16-bit MR
	{"mr-dwi-u12", realdata.DicomTCIA + "/3.dcm"},                                   // 176², unsigned 12-bit MR
	{"us-rgb-u8", realdata.AMI + "/dicom/US-RGB-8-esopecho.dcm"},                    // 256×120 RGB ultrasound
}

// Need fails (under CI) or skips the test when one of the tools is not on the PATH.
func Need(tb testing.TB, tools ...string) {
	tb.Helper()
	for _, name := range tools {
		if _, err := exec.LookPath(name); err != nil {
			ci.Missing(tb, name+" is missing: apt-get install libgdcm-tools dcmtk (the Makefile's APT_PKGS installs them)")
		}
	}
}

// Run runs a tool and fails the test with its output when it fails.
func Run(tb testing.TB, name string, args ...string) {
	tb.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		tb.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// Codestream returns the encapsulated pixel data of a single-frame DICOM file, as gdcmraw
// extracts it: the frame's codestream.
func Codestream(tb testing.TB, dcm string) []byte {
	tb.Helper()
	out := dcm + ".codestream"
	Run(tb, "gdcmraw", "-i", dcm, "-o", out)
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// Seed returns the codestream of a real single-frame file for a fuzz target's corpus, and
// false when the cache or gdcmraw is missing (fuzz seeds are optional).
func Seed(f *testing.F, rel string) ([]byte, bool) {
	d, err := realdata.Dir()
	if err != nil {
		return nil, false
	}
	if _, err := exec.LookPath("gdcmraw"); err != nil {
		return nil, false
	}
	out := filepath.Join(f.TempDir(), filepath.Base(rel)+".codestream")
	if err := exec.Command("gdcmraw", "-i", filepath.Join(d, rel), "-o", out).Run(); err != nil {
		f.Fatalf("gdcmraw %s: %v", rel, err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		f.Fatal(err)
	}
	return b, true
}

// GDCM returns the pixel data GDCM decodes from a DICOM file (gdcmconv --raw, then
// gdcmraw): every frame's samples in the file's order, little endian. The error is GDCM's
// own when it refuses the file.
func GDCM(tb testing.TB, dcm string) ([]byte, error) {
	tb.Helper()
	raw := dcm + ".raw.dcm"
	if out, err := exec.Command("gdcmconv", "--raw", dcm, raw).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("gdcmconv --raw: %w: %s", err, bytes.TrimSpace(out))
	}
	out := dcm + ".raw"
	Run(tb, "gdcmraw", "-i", raw, "-o", out)
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	return b, nil
}

// Wrap writes a codestream into a DICOM file with gdcmimg, which reads its header; ext
// names the coding (".jpg" for JPEG, ".jls" for JPEG-LS).
func Wrap(tb testing.TB, dir, name string, codestream []byte, ext string) string {
	tb.Helper()
	in := filepath.Join(dir, name+ext)
	if err := os.WriteFile(in, codestream, 0o644); err != nil {
		tb.Fatal(err)
	}
	out := filepath.Join(dir, name+".dcm")
	Run(tb, "gdcmimg", "-i", in, "-o", out)
	return out
}

// Native writes samples (width × height × spp, little endian, bits 8 or 16 per sample)
// into an uncompressed DICOM file with gdcmimg, for the encoders to compress.
func Native(tb testing.TB, dir, name string, samples []byte, width, height, spp, bits int) string {
	tb.Helper()
	in := filepath.Join(dir, name+".raw")
	if err := os.WriteFile(in, samples, 0o644); err != nil {
		tb.Fatal(err)
	}
	out := filepath.Join(dir, name+".dcm")
	Run(tb, "gdcmimg", "-i", in, "-o", out, "--size", fmt.Sprintf("%d,%d", width, height),
		"--depth", fmt.Sprint(bits), "--spp", fmt.Sprint(spp))
	return out
}

// Copy copies a real input into dir, so that tools write their outputs beside it.
func Copy(tb testing.TB, dir, rel string) string {
	tb.Helper()
	b, err := os.ReadFile(realdata.Path(tb, rel))
	if err != nil {
		tb.Fatal(err)
	}
	p := filepath.Join(dir, filepath.Base(rel))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// Equal compares decoded samples with GDCM's raw pixel data, whose samples take one byte
// when precision ≤ 8 and two (little endian) otherwise; it reports the first differences
// and the largest.
func Equal(tb testing.TB, name string, got []uint16, precision int, want []byte, tol int) {
	tb.Helper()
	size := 2
	if precision <= 8 {
		size = 1
	}
	if len(want) != size*len(got) {
		tb.Errorf("%s: %d samples decoded, GDCM's pixel data holds %d bytes at %d per sample", name, len(got), len(want), size)
		return
	}
	bad, worst := 0, 0
	for i, g := range got {
		w := int(want[i])
		if size == 2 {
			w = int(binary.LittleEndian.Uint16(want[2*i:]))
		}
		d := max(int(g)-w, w-int(g))
		if d > tol {
			if bad < 3 {
				tb.Errorf("%s: sample %d is %d, GDCM %d", name, i, g, w)
			}
			bad++
		}
		worst = max(worst, d)
	}
	if bad > 0 {
		tb.Errorf("%s: %d of %d samples differ from GDCM's by more than %d (at most %d)", name, bad, len(got), tol, worst)
	}
}

// BenchStream returns the codestream of the real 512×512 CT slice of Inputs transcoded
// with the tool and arguments given (for benchmarks), and its samples.
func BenchStream(b *testing.B, tool string, args ...string) []byte {
	b.Helper()
	Need(b, tool, "gdcmraw")
	dir := b.TempDir()
	src := Copy(b, dir, Inputs[0].Path)
	out := filepath.Join(dir, "bench.dcm")
	Run(b, tool, append(args, src, out)...)
	return Codestream(b, out)
}
