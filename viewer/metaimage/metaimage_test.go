package metaimage

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/assets/realdata"
	ref "amid/viewer/internal/golden"
	"amid/viewer/volume"
)

// golden is one file's expected values, written by testdata/golden.py from its own numpy
// parser (the command is recorded in golden.json).
type golden = ref.Image

type goldenFile struct {
	Command   string
	ITK       map[string]golden
	Generated map[string]golden
	NRRDTwin  map[string][9]float64 `json:"nrrd_twin_direction"`
}

func loadGolden(t *testing.T) goldenFile {
	t.Helper()
	var g goldenFile
	ref.Load(t, "testdata/golden.json", &g)
	if len(g.ITK) == 0 || len(g.Generated) == 0 {
		t.Fatal("golden.json holds no files")
	}
	return g
}

// check compares v with the golden values. Geometry is parsed from the same decimal text
// by both sides, so it must match exactly.
func check(t *testing.T, name string, v *volume.Volume, g golden) {
	t.Helper()
	ref.CheckValues(t, name, v, g)
	ref.CheckGeometry(t, name, v, g, 0)
}

func TestGoldenITK(t *testing.T) {
	g := loadGolden(t)
	for name, want := range g.ITK {
		t.Run(name, func(t *testing.T) {
			v, err := Read(realdata.Path(t, filepath.Join(realdata.ITK, name)))
			if err != nil {
				t.Fatal(err)
			}
			check(t, name, v, want)
		})
	}
}

func TestGoldenGenerated(t *testing.T) {
	g := loadGolden(t)
	for name, want := range g.Generated {
		v, err := Read(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		check(t, name, v, want)
	}
}

// TestDirectionMatchesNRRDTwin checks the TransformMatrix convention against ITK's NRRD
// copy of the same image, whose space directions are per-axis vectors by definition. The
// NRRD rounds cos 30° to 6 digits (0.866025), hence the 1e-6.
func TestDirectionMatchesNRRDTwin(t *testing.T) {
	g := loadGolden(t)
	for name, want := range g.NRRDTwin {
		v, err := Read(realdata.Path(t, filepath.Join(realdata.ITK, name)))
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Abs(v.Direction[i]-want[i]) > 1e-6 {
				t.Fatalf("%s: direction %v, NRRD twin says %v", name, v.Direction, want)
			}
		}
		// +30°: axis 0 points to +x and +y (0.866, 0.5), per the file's name.
		if !(v.Direction[0] > 0.86 && v.Direction[3] > 0.49) {
			t.Errorf("%s: axis 0 is (%v, %v), want a +30° rotation", name, v.Direction[0], v.Direction[3])
		}
	}
}

func TestDecodeMatchesRead(t *testing.T) {
	for _, name := range []string{"gen_short_msb.mha", "gen_4d_float.mha", "gen_char.mha"} {
		p := filepath.Join("testdata", name)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		a, err := Read(p)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Decode(bytes.NewReader(b), name)
		if err != nil {
			t.Fatal(err)
		}
		if !ref.Same(a, d) {
			t.Errorf("%s: Decode differs from Read", name)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	types := []volume.DType{volume.Uint8, volume.Int8, volume.Uint16, volume.Int16, volume.Uint32, volume.Int32, volume.Float32, volume.Float64}
	shapes := [][4]int{{7, 5, 3, 1}, {6, 4, 1, 3}}
	for i, typ := range types {
		for j, dims := range shapes {
			for _, ext := range []string{".mha", ".mhd"} {
				for _, comp := range []bool{false, true} {
					v := ref.Random(typ, dims, uint64(10*i+j))
					p := filepath.Join(dir, "rt"+ext)
					if err := WriteWith(p, v, Options{Compress: comp}); err != nil {
						t.Fatal(err)
					}
					got, err := Read(p)
					if err != nil {
						t.Fatalf("%v %v %s %v: %v", typ, dims, ext, comp, err)
					}
					if !ref.Same(v, got) {
						t.Errorf("%v %v %s compress=%v: round trip differs", typ, dims, ext, comp)
					}
				}
			}
		}
	}
	// A plain 2D image is written with NDims = 2.
	v := ref.Random(volume.Uint8, [4]int{4, 3, 1, 1}, 99)
	v.Spacing[2], v.Origin[2], v.Direction = 1, 0, volume.Identity
	p := filepath.Join(dir, "flat.mha")
	if err := Write(p, v); err != nil {
		t.Fatal(err)
	}
	h, err := ReadHeader(p)
	if err != nil || h.NDims != 2 {
		t.Fatalf("2D image written with NDims %v (%v)", h, err)
	}
}

func writeTemp(t *testing.T, name string, parts ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(strings.Join(parts, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBadInput(t *testing.T) {
	good, err := os.ReadFile("testdata/gen_short_msb.mha")
	if err != nil {
		t.Fatal(err)
	}
	hdr := func(lines ...string) string { return strings.Join(lines, "\n") + "\n" }
	cases := []struct {
		name, content string
		want          error
	}{
		{"truncated.mha", string(good[:len(good)-7]), volume.ErrTruncated},
		{"header_only.mha", string(good[:40]), volume.ErrTruncated},
		{"empty.mha", "", volume.ErrTruncated},
		{"magic.mha", "\x89PNG\r\n\x1a\n binary", volume.ErrFormat},
		{"ndims.mha", hdr("NDims = 3", "DimSize = 4 4", "ElementType = MET_UCHAR", "ElementDataFile = LOCAL") + strings.Repeat("x", 16), volume.ErrFormat},
		{"ndims9.mha", hdr("NDims = 9", "ElementDataFile = LOCAL"), volume.ErrFormat},
		{"absurd.mha", hdr("NDims = 3", "DimSize = 100000 100000 100000", "ElementType = MET_SHORT", "ElementDataFile = LOCAL"), volume.ErrTooLarge},
		{"nanspacing.mha", hdr("NDims = 2", "DimSize = 2 2", "ElementSpacing = nan 1", "ElementType = MET_UCHAR", "ElementDataFile = LOCAL") + "abcd", volume.ErrGeometry},
		{"zerospacing.mha", hdr("NDims = 2", "DimSize = 2 2", "ElementSpacing = 1 0", "ElementType = MET_UCHAR", "ElementDataFile = LOCAL") + "abcd", volume.ErrGeometry},
		{"singular.mha", hdr("NDims = 2", "DimSize = 2 2", "TransformMatrix = 1 0 1 0", "ElementType = MET_UCHAR", "ElementDataFile = LOCAL") + "abcd", volume.ErrGeometry},
		{"type.mha", hdr("NDims = 2", "DimSize = 2 2", "ElementType = MET_LONG_LONG", "ElementDataFile = LOCAL"), volume.ErrDType},
		{"notype.mha", hdr("NDims = 2", "DimSize = 2 2", "ElementDataFile = LOCAL"), volume.ErrFormat},
		{"list.mhd", hdr("NDims = 3", "DimSize = 2 2 2", "ElementType = MET_UCHAR", "ElementDataFile = LIST"), volume.ErrFormat},
		{"pattern.mhd", hdr("NDims = 3", "DimSize = 2 2 2", "ElementType = MET_UCHAR", "ElementDataFile = s%03d.raw 1 2 1"), volume.ErrFormat},
		{"ascii.mha", hdr("NDims = 2", "BinaryData = False", "DimSize = 2 2", "ElementType = MET_UCHAR", "ElementDataFile = LOCAL"), volume.ErrFormat},
		{"badzlib.mha", hdr("NDims = 2", "CompressedData = True", "DimSize = 2 2", "ElementType = MET_UCHAR", "ElementDataFile = LOCAL") + "not zlib data", volume.ErrFormat},
		{"bomb.mha", hdr("NDims = 3", "CompressedData = True", "CompressedDataSize = 10", "DimSize = 1000 1000 1000", "ElementType = MET_UCHAR", "ElementDataFile = LOCAL") + "0123456789", volume.ErrTruncated},
		{"tail.mha", hdr("NDims = 2", "HeaderSize = -1", "DimSize = 20 20", "ElementType = MET_UCHAR", "ElementDataFile = LOCAL") + "short", volume.ErrTruncated},
	}
	for _, c := range cases {
		p := writeTemp(t, c.name, c.content)
		_, err := Read(p)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s: error %q does not name the file", c.name, err)
		}
		// The stream decoder refuses the same input.
		if _, err := Decode(strings.NewReader(c.content), c.name); err == nil {
			t.Errorf("%s: Decode accepted it", c.name)
		}
	}
	// A missing data file is named in the error.
	p := writeTemp(t, "orphan.mhd", hdr("NDims = 2", "DimSize = 2 2", "ElementType = MET_UCHAR", "ElementDataFile = orphan.raw"))
	if _, err := Read(p); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "orphan.raw") {
		t.Errorf("missing data file: %v", err)
	}
	// Writers refuse what MetaImage cannot name.
	if err := Write(filepath.Join(t.TempDir(), "x.nii"), ref.Random(volume.Uint8, [4]int{2, 2, 2, 1}, 1)); err == nil {
		t.Error("Write accepted a .nii path")
	}
}

func FuzzMetaImage(f *testing.F) {
	for _, name := range []string{"gen_short_msb.mha", "gen_4d_float.mha", "gen_char.mha"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	if d, err := realdata.Dir(); err == nil {
		for _, name := range []string{"CorpusCallosumMeanShape.mha", "itkBrainSliceComplex.mha"} {
			if b, err := os.ReadFile(filepath.Join(d, realdata.ITK, name)); err == nil {
				f.Add(b)
			}
		}
	}
	ref.FuzzDecode(f, func(b []byte, lim volume.Limits) (*volume.Volume, error) {
		return decode(bytes.NewReader(b), "fuzz.mha", -1, "", lim)
	})
}

func BenchmarkRead(b *testing.B) {
	ref.BenchRead(b, "bench.mha", Write, Read)
}
