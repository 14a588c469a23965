package nifti

import (
	"errors"
	"math"
	"path/filepath"
	"testing"

	"amid/assets/realdata"
	"amid/viewer/volume"

	ref "amid/viewer/internal/golden"
)

// golden is one file of testdata/golden.json, written by testdata/golden.py from
// nibabel's reading of the real files (the command is recorded in the JSON).
type golden struct {
	File   string `json:"file"`
	Error  string `json:"error"`
	Header struct {
		Version    int      `json:"version"`
		Datatype   int16    `json:"datatype"`
		Dim        [8]int64 `json:"dim"`
		SformCode  int32    `json:"sform_code"`
		QformCode  int32    `json:"qform_code"`
		IntentCode int32    `json:"intent_code"`
		XYZTUnits  int32    `json:"xyzt_units"`
		Descrip    string   `json:"descrip"`
		VoxOffset  float64  `json:"vox_offset"`
		SclSlope   *float64 `json:"scl_slope"`
		SclInter   *float64 `json:"scl_inter"`
		BigEndian  bool     `json:"big_endian"`
	} `json:"header"`
	Dims    [4]int        `json:"dims"`
	DType   string        `json:"dtype"`
	Affine  [16]float64   `json:"affine"`
	Spacing [3]float64    `json:"spacing"`
	Sum     float64       `json:"sum"`
	Min     float64       `json:"min"`
	Max     float64       `json:"max"`
	NaN     int           `json:"nan"`
	Voxels  [][2]*float64 `json:"voxels"` // [flat index, value]; null value is NaN
}

func loadGolden(t testing.TB) []golden {
	t.Helper()
	var g struct {
		Files []golden `json:"files"`
	}
	ref.Load(t, filepath.Join("testdata", "golden.json"), &g)
	if len(g.Files) == 0 {
		t.Fatal("golden.json lists no files")
	}
	return g.Files
}

// relTol is the agreement asked of every figure: nibabel computes scaled values in
// float64 while we store float32 (relative rounding 6e-8), and computes the qform in
// float32 while we use float64 (rounding 1.2e-7 of the affine's scale); 1e-6 covers both.
const relTol = 1e-6

// near reports whether got is within relTol of want, relative to max(|want|, 1) so that
// zeros compare absolutely.
func near(got, want float64) bool {
	return math.Abs(got-want) <= relTol*math.Max(math.Abs(want), 1)
}

func TestGolden(t *testing.T) {
	for _, g := range loadGolden(t) {
		t.Run(filepath.Base(g.File), func(t *testing.T) {
			path := realdata.Path(t, g.File)
			v, err := Read(path)
			if g.Error != "" {
				if err == nil {
					t.Fatalf("nibabel refuses it (%s) but Read returned a volume", g.Error)
				}
				if !errors.Is(err, volume.ErrFormat) {
					t.Errorf("error %v does not wrap ErrFormat", err)
				}
				t.Logf("refused as expected: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, v, g)
			h, err := ReadHeader(path)
			if err != nil {
				t.Fatal(err)
			}
			gh := g.Header
			if h.Version != gh.Version || h.Datatype != gh.Datatype || h.Dim != gh.Dim ||
				h.SformCode != gh.SformCode || h.QformCode != gh.QformCode || h.IntentCode != gh.IntentCode ||
				h.XYZTUnits != gh.XYZTUnits || h.Descrip != gh.Descrip || h.VoxOffset != gh.VoxOffset {
				t.Errorf("header %+v\ndiffers from nibabel's %+v", h, gh)
			}
			if (h.ByteOrder.String() == "BigEndian") != gh.BigEndian {
				t.Errorf("byte order %v, nibabel says big-endian=%v", h.ByteOrder, gh.BigEndian)
			}
		})
	}
}

func checkGolden(t *testing.T, v *volume.Volume, g golden) {
	t.Helper()
	if v.Dims != g.Dims {
		t.Fatalf("dims %v, nibabel %v", v.Dims, g.Dims)
	}
	if v.DType().String() != g.DType {
		t.Errorf("dtype %v, want %s", v.DType(), g.DType)
	}
	if err := v.Validate(); err != nil {
		t.Errorf("volume does not validate: %v", err)
	}
	a := v.Affine()
	for i := range a {
		if !near(a[i], g.Affine[i]) {
			t.Errorf("affine %v\nnibabel (LPS) %v", a, g.Affine)
			break
		}
	}
	for i := range v.Spacing {
		if !near(v.Spacing[i], g.Spacing[i]) {
			t.Errorf("spacing %v, nibabel %v", v.Spacing, g.Spacing)
		}
	}
	var sum float64
	lo, hi, nan := math.Inf(1), math.Inf(-1), 0
	for i, n := 0, v.Len(); i < n; i++ {
		x := v.AtIndex(i)
		if math.IsNaN(x) {
			nan++
			continue
		}
		sum += x
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	if !near(sum, g.Sum) || !near(lo, g.Min) || !near(hi, g.Max) || nan != g.NaN {
		t.Errorf("sum %v min %v max %v NaN %d, nibabel %v %v %v %d", sum, lo, hi, nan, g.Sum, g.Min, g.Max, g.NaN)
	}
	for _, vx := range g.Voxels {
		i := int(*vx[0])
		got := v.AtIndex(i)
		if vx[1] == nil {
			if !math.IsNaN(got) {
				t.Errorf("data[%d] = %v, nibabel NaN", i, got)
			}
			continue
		}
		if !near(got, *vx[1]) {
			t.Errorf("data[%d] = %v, nibabel %v", i, got, *vx[1])
		}
	}
}
