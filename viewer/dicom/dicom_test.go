package dicom

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"

	"amid/assets/realdata"
	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

var update = flag.Bool("update", false, "rewrite the generated fuzz seeds in testdata/fuzz-seeds")

func write(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSeeds keeps the committed fuzz seeds equal to what the generator writes.
func TestSeeds(t *testing.T) {
	for name, s := range seeds {
		p := filepath.Join("testdata", "fuzz-seeds", name)
		b := gen(s)
		if *update {
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v (run go test -run TestSeeds -update)", err)
		}
		if !bytes.Equal(got, b) {
			t.Errorf("%s differs from the generator's output (run go test -run TestSeeds -update)", p)
		}
		if _, _, err := ReadFile(p); err != nil {
			t.Errorf("seed %s: %v", name, err)
		}
	}
}

func TestGeneratedValues(t *testing.T) {
	dir := t.TempDir()
	read := func(name string, s spec) *volume.Volume {
		t.Helper()
		v, m, err := ReadFile(write(t, dir, name, gen(s)))
		if err != nil {
			t.Fatal(err)
		}
		if m.Files != 1 || m.Slices != v.Dims[2] {
			t.Errorf("%s: meta %+v", name, m)
		}
		return v
	}
	// 12-bit signed: 0x0FFF is −1, 0x0800 is −2048, 0x07FF is 2047; bits above 12 are
	// ignored (0xF001 is 1). Rescale 0.5·v − 100 is not integer: float32.
	px := []byte{0xFF, 0x0F, 0x00, 0x08, 0xFF, 0x07, 0x01, 0xF0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8, 0, 9, 0}
	v := read("s12.dcm", spec{bitsStored: 12, signed: true, slope: "0.5", intercept: "-100", pixels: px})
	want := []float32{-100.5, -1124, 923.5, -99.5, -99, -98.5, -98, -97.5, -97, -96.5, -96, -95.5}
	if got, ok := v.Data.([]float32); !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("signed 12-bit: %v, want %v", v.Data, want)
	}
	// 12-bit unsigned: the high nibble is masked away (0xF123 → 0x123 = 291).
	v = read("u12.dcm", spec{bitsStored: 12, pixels: append([]byte{0x23, 0xF1}, make([]byte, 22)...)})
	if d, ok := v.Data.([]int16); !ok || d[0] != 0x123 {
		t.Errorf("unsigned 12-bit: %v", v.Data)
	}
	// MONOCHROME1 ramp 0…11 is inverted to 11…0 (max + min − v).
	v = read("m1.dcm", spec{bitsAlloc: 8, photometric: "MONOCHROME1"})
	if d, ok := v.Data.([]uint8); !ok || d[0] != 11 || d[11] != 0 {
		t.Errorf("MONOCHROME1: %v", v.Data)
	}
	// Planar RGB ramp: R plane 0…11, G 12…23, B 24…35; pixel 0 is (0, 12, 24).
	v = read("rgb.dcm", spec{bitsAlloc: 8, spp: 3, photometric: "RGB", planar: 1})
	if d, ok := v.Data.([]uint8); !ok || v.Dims[3] != 3 || d[0] != 0 || d[1] != 12 || d[2] != 24 || d[3] != 1 {
		t.Errorf("planar RGB: dims %v data %v", v.Dims, v.Data)
	}
	// Interleaved RGB keeps its order.
	v = read("rgbi.dcm", spec{bitsAlloc: 8, spp: 3, photometric: "RGB"})
	if d := v.Data.([]uint8); d[0] != 0 || d[1] != 1 || d[2] != 2 {
		t.Errorf("interleaved RGB: %v", d)
	}
	// Multi-frame without per-frame positions: one origin, Z spacing 1 mm, Pixel Spacing
	// (rows 0.5, columns 0.25) as (X 0.25, Y 0.5); 2v − 1024 fits int16.
	v = read("mf.dcm", seeds["multiframe-positioned.dcm"])
	if v.Dims != [4]int{4, 3, 3, 1} || v.Spacing != [3]float64{0.25, 0.5, 1} || v.Origin != [3]float64{-10, -20, 30} {
		t.Errorf("multi-frame geometry: dims %v spacing %v origin %v", v.Dims, v.Spacing, v.Origin)
	}
	if d, ok := v.Data.([]int16); !ok || d[0] != -1024 || d[35] != 2*35-1024 {
		t.Errorf("multi-frame values: %T", v.Data)
	}
}

// writeSlices writes a series of 4×3 slices at the given z positions (file order shuffled by
// naming) whose pixels all equal the slice's z.
func writeSlices(t *testing.T, dir, uid string, zs ...float64) {
	t.Helper()
	for i, z := range zs {
		px := make([]byte, 24)
		for j := 0; j < 12; j++ {
			px[2*j] = byte(z)
		}
		name := fmt.Sprintf("%s-%02d.dcm", uid[len(uid)-1:], (i*7)%len(zs))
		write(t, dir, name, gen(spec{pixels: px, series: uid, ipp: fmt.Sprintf(`5\6\%g`, z), iop: `1\0\0\0\1\0`, spacing: `1\1`}))
	}
}

func TestSeries(t *testing.T) {
	dir := t.TempDir()
	writeSlices(t, dir, "1.2.3.1", 8, 0, 4, 2, 6)
	v, m, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v.Dims != [4]int{4, 3, 5, 1} || v.Spacing != [3]float64{1, 1, 2} || v.Origin != [3]float64{5, 6, 0} || m.Files != 5 {
		t.Fatalf("dims %v spacing %v origin %v files %d", v.Dims, v.Spacing, v.Origin, m.Files)
	}
	for z := 0; z < 5; z++ {
		if got := v.At(0, 0, z, 0); got != float64(2*z) {
			t.Errorf("slice %d holds %v, want %d (sorted by position)", z, got, 2*z)
		}
	}
	// A second series in the same folder.
	writeSlices(t, dir, "1.2.3.2", 0, 3)
	if _, _, err := ReadDir(dir); !errors.Is(err, ErrSeries) || !strings.Contains(err.Error(), `1.2.3.1 "" (OT, axial, 5 slices, 1 × 1 × 2 mm)`) ||
		!strings.Contains(err.Error(), `1.2.3.2 "" (OT, axial, 2 slices, 1 × 1 × 3 mm)`) {
		t.Errorf("two series: %v", err)
	}
	ss, err := ReadSeries(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 2 || ss[0].UID != "1.2.3.1" || ss[0].Files != 5 || ss[1].Files != 2 || ss[1].Volume.Spacing[2] != 3 {
		t.Errorf("ReadSeries: %+v", ss)
	}
}

func TestBadSeries(t *testing.T) {
	for _, c := range []struct {
		name string
		zs   []float64
		want []string
	}{
		{"missing", []float64{0, 2, 4, 8, 10}, []string{"series 1.2.3.9", "missing slice", "gap of 4.000 mm", "slice 3, 4.000 mm", "more than 1.5× the median step of 2.000 mm"}},
		{"repeated", []float64{0, 2, 2, 4}, []string{"same position"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeSlices(t, dir, "1.2.3.9", c.zs...)
			_, _, err := ReadDir(dir)
			if !errors.Is(err, volume.ErrGeometry) {
				t.Fatalf("got %v, want ErrGeometry", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestMixedPixelSpacing checks that slices with different pixel spacings are refused.
func TestMixedPixelSpacing(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.dcm", gen(spec{ipp: `0\0\0`, iop: `1\0\0\0\1\0`, spacing: `1\1`}))
	write(t, dir, "b.dcm", gen(spec{ipp: `0\0\1`, iop: `1\0\0\0\1\0`, spacing: `2\2`}))
	if _, _, err := ReadDir(dir); !errors.Is(err, volume.ErrGeometry) || !strings.Contains(err.Error(), "pixel spacings") {
		t.Errorf("mixed pixel spacings: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	good := gen(spec{})
	cases := []struct {
		name string
		data []byte
		is   error
		want string
	}{
		{"empty", nil, volume.ErrFormat, "no DICM magic"},
		{"text", []byte(strings.Repeat("this is not a DICOM file\n", 20)), volume.ErrFormat, "no DICM magic"},
		{"preamble-only", good[:132], volume.ErrFormat, "no transfer syntax"},
		{"cut-in-meta", good[:140], volume.ErrTruncated, "meta"},
		{"cut-in-header", good[:len(good)-40], volume.ErrTruncated, "cut short"},
		{"cut-in-pixels", good[:len(good)-1], volume.ErrTruncated, "pixel data claims"},
		{"short-pixels", gen(spec{pixels: []byte{1, 0, 2, 0}}), volume.ErrTruncated, "need 24"},
		{"no-pixels", gen(spec{noPixels: true}), volume.ErrFormat, "no pixel data element (7FE0,0010)"},
		{"mpeg2", gen(spec{ts: "1.2.840.10008.1.2.4.100"}), ErrUnsupported, "(1.2.840.10008.1.2.4.100)"},
		{"unknown-syntax", gen(spec{ts: "1.2.3.4.5"}), ErrUnsupported, "unknown transfer syntax (1.2.3.4.5)"},
		{"absurd-size", gen(spec{rows: 65535, cols: 65535, frames: 100000, pixels: []byte{0, 0}}), volume.ErrTooLarge, "exceed the limit"},
		{"huge-frame", gen(spec{rows: 0xFFFF, cols: 0xFFFF, pixels: []byte{}}), volume.ErrTooLarge, "exceed the limit"},
		{"palette", gen(spec{bitsAlloc: 8, photometric: "PALETTE COLOR"}), ErrUnsupported, "palette colour"},
		{"bits", gen(spec{bitsAlloc: 12}), volume.ErrFormat, "Bits Allocated is 12"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := write(t, dir, c.name+".dcm", c.data)
			_, _, err := ReadFile(p)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, c.is) {
				t.Errorf("error %q does not wrap %v", err, c.is)
			}
			if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q lacks the path or %q", err, c.want)
			}
		})
	}
	// Every truncation of a valid file is an error, never a panic.
	for n := 0; n < len(good); n++ {
		if _, _, err := decode(good[:n], "cut.dcm", defaultLimits); err == nil {
			t.Errorf("file cut to %d of %d bytes read without error", n, len(good))
		}
	}
	if _, _, err := ReadDir(filepath.Join(dir, "absent")); err == nil {
		t.Error("missing folder read without error")
	}
	if _, _, err := ReadDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no files") {
		t.Errorf("empty folder: %v", err)
	}
	// A bad file in a folder names that file.
	sd := t.TempDir()
	writeSlices(t, sd, "1.2.3.4", 0, 1)
	p := write(t, sd, "broken.dcm", good[:200])
	if _, err := ReadSeries(sd); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("folder with a broken file: %v", err)
	}
	// Many bad files: the first maxErrors are listed, the rest counted.
	md := t.TempDir()
	for i := 0; i < maxErrors+3; i++ {
		write(t, md, fmt.Sprintf("notes%d.txt", i), []byte("not DICOM"))
	}
	if _, err := ReadSeries(md); !errors.Is(err, volume.ErrFormat) || !strings.Contains(err.Error(), md) || !strings.Contains(err.Error(), "no image series") {
		t.Errorf("folder of non-DICOM files: %v", err)
	}
	if _, _, err := ReadDir(md); !errors.Is(err, ErrSeries) || !strings.Contains(err.Error(), "the folder holds no image series; 8 skipped: notes0.txt skipped: not a DICOM file;") {
		t.Errorf("folder of non-DICOM files: %v", err)
	}
	// Many damaged DICOM files: the first maxErrors are listed, the rest counted.
	for i := 0; i < maxErrors+3; i++ {
		write(t, md, fmt.Sprintf("cut%d.dcm", i), good[:200])
	}
	if _, err := ReadSeries(md); !errors.Is(err, volume.ErrTruncated) || !strings.Contains(err.Error(), "3 more files could not be read") {
		t.Errorf("folder of damaged files: %v", err)
	}
}

func TestUnsupportedRealSyntax(t *testing.T) {
	p := realdata.Path(t, realdata.Octave+"/dicom-0.5.1/imdata/US-PAL-8-10x-echo.dcm")
	if _, _, err := ReadFile(p); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "palette") {
		t.Errorf("palette colour: %v", err)
	}
}

// TestPrivacy checks that identifying elements of the file never reach Meta, the only
// values this package copies out of a file.
func TestPrivacy(t *testing.T) {
	secrets := []string{"Doe^Jane", "PID-31415", "19700101"}
	p := write(t, t.TempDir(), "p.dcm", gen(spec{patientName: secrets[0], patientID: secrets[1], birthDate: secrets[2]}))
	_, m, err := ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(m)
	for _, s := range secrets {
		if bytes.Contains(b, []byte(s)) || strings.Contains(fmt.Sprintf("%+v", *m), s) {
			t.Errorf("Meta carries %q: %s", s, b)
		}
	}
	// Every string field of Meta is either on the non-identifying list or named by
	// IdentifyingFields; a new field must be classified here.
	safe := map[string]bool{"Modality": true, "Manufacturer": true, "SeriesDescription": true,
		"PhotometricInterpretation": true, "TransferSyntaxUID": true, "TransferSyntax": true}
	ident := map[string]bool{}
	for _, f := range IdentifyingFields {
		ident[f] = true
	}
	rt := reflect.TypeOf(Meta{})
	var fields []string
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		fields = append(fields, f.Name)
		if f.Type.Kind() == reflect.String && !safe[f.Name] && !ident[f.Name] {
			t.Errorf("Meta.%s is not classified as identifying or not", f.Name)
		}
	}
	sort.Strings(fields)
	r := m.Redacted()
	if m.SeriesInstanceUID == "" || r.SeriesInstanceUID != "" || r.Modality != m.Modality {
		t.Errorf("Redacted: %+v from %+v", r, m)
	}
	// Identifying elements are not even handed to the parsing library.
	for _, tg := range []tag.Tag{tag.PatientName, tag.PatientID, tag.PatientBirthDate, tag.StudyInstanceUID,
		tag.AccessionNumber, tag.InstitutionName, tag.StudyDate, tag.ReferringPhysicianName} {
		if used[tg] {
			t.Errorf("%v is parsed", tg)
		}
	}
	// A real file with a patient name: pydicom's CT_small.dcm names "CompressedSamples^CT1".
	t.Run("CT_small", func(t *testing.T) {
		_, m, err := ReadFile(realdata.Path(t, realdata.Pydicom+"/CT_small.dcm"))
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(m); bytes.Contains(b, []byte("CompressedSamples")) || !bytes.Contains(b, []byte(`"modality":"CT"`)) {
			t.Errorf("Meta of CT_small.dcm: %s", b)
		}
	})
}

func TestUnpackBits(t *testing.T) {
	// The PackBits example of Apple Technical Note TN1023, which PS3.5 Annex G.3.1
	// follows: FE AA → 3×AA; 02 → 3 literals; FD AA → 4×AA; 03 → 4 literals; F7 AA → 10×AA.
	src := []byte{0xFE, 0xAA, 0x02, 0x80, 0x00, 0x2A, 0xFD, 0xAA, 0x03, 0x80, 0x00, 0x2A, 0x22, 0xF7, 0xAA}
	want := []byte{0xAA, 0xAA, 0xAA, 0x80, 0x00, 0x2A, 0xAA, 0xAA, 0xAA, 0xAA, 0x80, 0x00, 0x2A, 0x22,
		0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA}
	got := make([]byte, len(want))
	if err := unpackBits(got, 1, len(want), src); err != nil || !bytes.Equal(got, want) {
		t.Errorf("unpackBits = %X, %v; want %X", got, err, want)
	}
	// −128 is a no-op; a segment that ends early is an error.
	if err := unpackBits(got, 1, 2, []byte{0x80, 0xFF, 7}); err != nil || got[0] != 7 || got[1] != 7 {
		t.Errorf("no-op header: %X %v", got[:2], err)
	}
	if err := unpackBits(got, 1, 5, []byte{0x01, 7, 8}); !errors.Is(err, volume.ErrTruncated) {
		t.Errorf("short segment: %v", err)
	}
}

// fuzzLimits keep what a fuzz input decodes to near its size: a deflate stream inflates
// at most 1032-fold, so 16 MiB inflated; a JPEG-LS frame can code a line in one bit, so
// 2²² samples in a sparse coding.
var fuzzLimits = fileLimits{inflated: 16 << 20, sparse: 1 << 22}

func FuzzReadFile(f *testing.F) {
	seedFiles, _ := filepath.Glob("testdata/fuzz-seeds/*.dcm")
	if d, err := realdata.Dir(); err == nil {
		for _, rel := range []string{realdata.Pydicom + "/MR_small.dcm", realdata.Pydicom + "/MR_small_RLE.dcm",
			realdata.Pydicom + "/MR_small_bigendian.dcm", realdata.Pydicom + "/rtdose.dcm", realdata.Pydicom + "/image_dfl.dcm",
			realdata.Pydicom + "/SC_rgb_rle_2frame.dcm", realdata.Pydicom + "/SC_rgb_small_odd_jpeg.dcm",
			realdata.Pydicom + "/liver_1frame.dcm", realdata.DicomTCIA + "/1.dcm",
			realdata.Pydicom + "/MR_small_jpeg_ls_lossless.dcm", realdata.Pydicom + "/JPGExtended.dcm",
			realdata.Pydicom + "/SC_rgb_jpeg_gdcm.dcm"} {
			seedFiles = append(seedFiles, filepath.Join(d, rel))
		}
	}
	for _, p := range seedFiles {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		v, m, err := decode(b, "fuzz.dcm", fuzzLimits)
		runtime.ReadMemStats(&after)
		// Allocation must stay proportional to the input: at most 4 KiB per input byte
		// (a JPEG byte may decode to 512 pixels held as int32 and then as output) plus
		// 128 MiB (a deflated data set may inflate to fuzzLimits.inflated).
		if n := after.TotalAlloc - before.TotalAlloc; n > 128<<20+4096*uint64(len(b)) {
			t.Fatalf("%d input bytes made the reader allocate %d MiB", len(b), n>>20)
		}
		if err != nil {
			return
		}
		if err := v.Validate(); err != nil || m == nil {
			t.Fatalf("decoded volume is invalid: %v", err)
		}
	})
}
