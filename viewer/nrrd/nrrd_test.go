package nrrd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
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
type golden struct {
	ref.Image
	Segments []struct {
		Index, Label, Layer int
		ID, Name            string
	}
}

type goldenFile struct {
	Command   string
	ITK       map[string]golden
	Generated map[string]golden
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

// geomTol bounds the difference in spacing and direction between Go and numpy, which
// both divide a space direction by its length but may round the length differently in
// the last place (2.2e-16 relative); 1e-12 leaves room for a few such roundings.
const geomTol = 1e-12

// check compares v with the golden values.
func check(t *testing.T, name string, v *volume.Volume, g golden) {
	t.Helper()
	ref.CheckValues(t, name, v, g.Image)
	ref.CheckGeometry(t, name, v, g.Image, geomTol)
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
		im, err := ReadImage(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		check(t, name, im.Volume, want)
		if len(im.Segments) != len(want.Segments) {
			t.Fatalf("%s: %d segments, want %d", name, len(im.Segments), len(want.Segments))
		}
		for i, w := range want.Segments {
			s := im.Segments[i]
			if s.Index != w.Index || s.ID != w.ID || s.Name != w.Name || s.LabelValue != w.Label || s.Layer != w.Layer {
				t.Errorf("%s: segment %+v, want %+v", name, s, w)
			}
		}
	}
}

// TestSegmentation checks the labels of the generated 3D Slicer file against its segments:
// golden.py paints "liver" (label 1) and "tumor" (label 2) in one layer.
func TestSegmentation(t *testing.T) {
	im, err := ReadImage("testdata/gen_seg.seg.nrrd")
	if err != nil {
		t.Fatal(err)
	}
	counts, ok := im.Volume.Labels(10)
	if !ok || len(counts) != 3 {
		t.Fatalf("labels %v", counts)
	}
	for _, s := range im.Segments {
		if counts[s.LabelValue].Value != int64(s.LabelValue) || counts[s.LabelValue].Count == 0 {
			t.Errorf("segment %s: label %d has no voxels (%v)", s.Name, s.LabelValue, counts)
		}
	}
	if im.Segments[0].Color != [3]float64{0.847059, 0.396078, 0.309804} {
		t.Errorf("colour %v", im.Segments[0].Color)
	}
	if im.KeyValues["Segmentation_MasterRepresentation"] != "Binary labelmap" {
		t.Errorf("key/values %v", im.KeyValues)
	}
}

func TestDecodeMatchesRead(t *testing.T) {
	for _, name := range []string{"gen_gzip_ras.nrrd", "gen_time_last.nrrd", "gen_ascii.nrrd", "gen_hex.nrrd", "gen_bzip2.nrrd", "gen_layers.seg.nrrd"} {
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
	shapes := [][4]int{{7, 5, 3, 1}, {6, 4, 1, 3}, {3, 2, 2, 5}}
	for i, typ := range types {
		for j, dims := range shapes {
			for _, raw := range []bool{false, true} {
				v := ref.Random(typ, dims, uint64(10*i+j))
				p := filepath.Join(dir, "rt.nrrd")
				if err := WriteWith(p, v, Options{Raw: raw, KeyValues: map[string]string{"note": "a\nb"}}); err != nil {
					t.Fatal(err)
				}
				im, err := ReadImage(p)
				if err != nil {
					t.Fatalf("%v %v raw=%v: %v", typ, dims, raw, err)
				}
				got := im.Volume
				if !bytes.Equal(volume.EncodeBytes(v.Data, le), volume.EncodeBytes(got.Data, le)) || got.Dims != v.Dims {
					t.Errorf("%v %v raw=%v: values differ", typ, dims, raw)
				}
				// NRRD stores direction·spacing; see the package documentation.
				if !volume.SameGrid(got, v, geomTol) {
					t.Errorf("%v %v: geometry %v %v %v, want %v %v %v", typ, dims, got.Spacing, got.Origin, got.Direction, v.Spacing, v.Origin, v.Direction)
				}
				if im.KeyValues["note"] != "a\nb" {
					t.Errorf("key/value %q", im.KeyValues["note"])
				}
			}
		}
	}
	// Axis-aligned geometry round-trips bit for bit.
	v := ref.Random(volume.Int16, [4]int{4, 3, 2, 1}, 7)
	v.Direction = [9]float64{-1, 0, 0, 0, 0, 1, 0, -1, 0}
	p := filepath.Join(dir, "aligned.nrrd")
	if err := Write(p, v); err != nil {
		t.Fatal(err)
	}
	got, err := Read(p)
	if err != nil || !ref.Same(v, got) {
		t.Fatalf("axis-aligned round trip: %v %v", err, got)
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
	good, err := os.ReadFile("testdata/gen_gzip_ras.nrrd")
	if err != nil {
		t.Fatal(err)
	}
	hdr := func(lines ...string) string { return "NRRD0004\n" + strings.Join(lines, "\n") + "\n\n" }
	cases := []struct {
		name, content string
		want          error
	}{
		{"truncated.nrrd", string(good[:len(good)-20]), volume.ErrTruncated},
		{"header_only.nrrd", string(good[:60]), volume.ErrTruncated},
		{"empty.nrrd", "", volume.ErrFormat},
		{"magic.nrrd", "NRRD9999\ntype: uchar\n", volume.ErrFormat},
		{"png.nrrd", "\x89PNG\r\n\x1a\n binary", volume.ErrFormat},
		{"sizes.nrrd", hdr("type: uchar", "dimension: 3", "sizes: 4 4", "encoding: raw") + strings.Repeat("x", 16), volume.ErrFormat},
		{"short.nrrd", hdr("type: uchar", "dimension: 2", "sizes: 4 4", "encoding: raw") + "x", volume.ErrTruncated},
		{"absurd.nrrd", hdr("type: short", "dimension: 3", "sizes: 100000 100000 100000", "encoding: raw"), volume.ErrTooLarge},
		{"bomb.nrrd", hdr("type: uchar", "dimension: 3", "sizes: 1000 1000 1000", "encoding: gzip") + "0123456789", volume.ErrTruncated},
		{"zerodir.nrrd", hdr("type: uchar", "dimension: 2", "space dimension: 2", "sizes: 2 2", "space directions: (0,0) (0,1)", "encoding: raw") + "abcd", volume.ErrGeometry},
		{"nandir.nrrd", hdr("type: uchar", "dimension: 2", "space dimension: 2", "sizes: 2 2", "space directions: (nan,0) (0,1)", "encoding: raw") + "abcd", volume.ErrFormat},
		{"zerospacing.nrrd", hdr("type: uchar", "dimension: 2", "sizes: 2 2", "spacings: 0 1", "encoding: raw") + "abcd", volume.ErrGeometry},
		{"type.nrrd", hdr("type: long long", "dimension: 1", "sizes: 2", "encoding: raw"), volume.ErrDType},
		{"block.nrrd", hdr("type: block", "dimension: 1", "sizes: 2", "encoding: raw"), volume.ErrDType},
		{"encoding.nrrd", hdr("type: uchar", "dimension: 1", "sizes: 2", "encoding: zrl"), volume.ErrFormat},
		{"space.nrrd", hdr("type: uchar", "dimension: 1", "sizes: 2", "space: right-anterior-superior-time", "encoding: raw"), volume.ErrGeometry},
		{"twochan.nrrd", hdr("type: uchar", "dimension: 4", "space: LPS", "sizes: 2 2 2 2", "space directions: none (1,0,0) (0,1,0) none", "encoding: raw") + strings.Repeat("x", 16), volume.ErrGeometry},
		{"list.nhdr", hdr("type: uchar", "dimension: 1", "sizes: 2", "encoding: raw", "data file: LIST"), volume.ErrFormat},
		{"pattern.nhdr", hdr("type: uchar", "dimension: 3", "sizes: 2 2 2", "encoding: raw", "data file: s%03d.raw 1 2 1"), volume.ErrFormat},
		{"badgzip.nrrd", hdr("type: uchar", "dimension: 1", "sizes: 2", "encoding: gzip") + "not gzip", volume.ErrFormat},
		{"skipgzip.nrrd", hdr("type: uchar", "dimension: 1", "sizes: 2", "encoding: gzip", "byte skip: -1") + "xx", volume.ErrFormat},
		{"ascii.nrrd", hdr("type: uchar", "dimension: 1", "sizes: 2", "encoding: ascii") + "1 300", volume.ErrFormat},
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
		if _, err := Decode(strings.NewReader(c.content), c.name); err == nil {
			t.Errorf("%s: Decode accepted it", c.name)
		}
	}
	p := writeTemp(t, "orphan.nhdr", "NRRD0004\ntype: uchar\ndimension: 1\nsizes: 2\nencoding: raw\ndata file: orphan.raw\n")
	if _, err := Read(p); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "orphan.raw") {
		t.Errorf("missing data file: %v", err)
	}
	if err := Write(filepath.Join(t.TempDir(), "x.mha"), ref.Random(volume.Uint8, [4]int{2, 2, 2, 1}, 1)); err == nil {
		t.Error("Write accepted a .mha path")
	}
}

func FuzzNRRD(f *testing.F) {
	for _, name := range []string{"gen_gzip_ras.nrrd", "gen_rgb2d.nrrd", "gen_time_last.nrrd", "gen_ascii.nrrd", "gen_hex.nrrd", "gen_bzip2.nrrd", "gen_seg.seg.nrrd", "gen_layers.seg.nrrd"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	if d, err := realdata.Dir(); err == nil {
		// ITK's .nhdr headers, with their raw data appended after a blank line.
		for _, name := range []string{"BrainProtonDensitySliceBorder20DirectionPlus30"} {
			h, err1 := os.ReadFile(filepath.Join(d, realdata.ITK, name+".nhdr"))
			raw, err2 := os.ReadFile(filepath.Join(d, realdata.ITK, name+".raw"))
			if err1 == nil && err2 == nil {
				h = []byte(strings.Replace(string(h), "data file: "+name+".raw\n", "", 1))
				f.Add(append(append(h, '\n'), raw...))
			}
		}
	}
	ref.FuzzDecode(f, func(b []byte, lim volume.Limits) (*volume.Volume, error) {
		im, err := decode(bytes.NewReader(b), "fuzz.nrrd", -1, "", lim)
		if err != nil {
			return nil, err
		}
		return im.Volume, nil
	})
}

func BenchmarkRead(b *testing.B) {
	ref.BenchRead(b, "bench.nrrd", Write, Read)
}

var le = binary.LittleEndian

func TestWriteSegmentation(t *testing.T) {
	in, err := ReadImage("testdata/gen_layers.seg.nrrd")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "out.seg.nrrd")
	if err := WriteSegmentation(p, in.Volume, in.Segments); err != nil {
		t.Fatal(err)
	}
	out, err := ReadImage(p)
	if err != nil {
		t.Fatal(err)
	}
	if !ref.Same(in.Volume, out.Volume) {
		t.Error("labels differ after the round trip")
	}
	if len(out.Segments) != len(in.Segments) {
		t.Fatalf("segments %+v, want %+v", out.Segments, in.Segments)
	}
	for i := range in.Segments {
		if out.Segments[i] != in.Segments[i] {
			t.Errorf("segment %+v, want %+v", out.Segments[i], in.Segments[i])
		}
	}
	if out.KeyValues["Segment0_Extent"] != "0 5 0 4 0 3" {
		t.Errorf("extent %q", out.KeyValues["Segment0_Extent"])
	}
	bad := in.Segments[0]
	bad.Layer = 2
	if err := WriteSegmentation(p, in.Volume, []Segment{bad}); err == nil {
		t.Error("a segment in a missing layer was written")
	}
	if err := WriteSegmentation(p, ref.Random(volume.Float32, [4]int{2, 2, 2, 1}, 1), nil); !errors.Is(err, volume.ErrDType) {
		t.Errorf("float labels: %v", err)
	}
}
