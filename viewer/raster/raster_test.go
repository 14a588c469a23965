package raster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/assets/realdata"
	ref "amid/viewer/internal/golden"
	"amid/viewer/volume"
)

// golden is one file's expected values, written by testdata/golden.py with Pillow and
// tifffile (the command is recorded in golden.json).
type golden = ref.Image

type goldenFile struct {
	Command   string
	Real      map[string]golden
	Generated map[string]golden
}

func loadGolden(t *testing.T) goldenFile {
	t.Helper()
	var g goldenFile
	ref.Load(t, "testdata/golden.json", &g)
	if len(g.Real) == 0 || len(g.Generated) == 0 {
		t.Fatal("golden.json holds no files")
	}
	return g
}

// check compares v with the golden values. Spacing is computed from the same tag values
// on both sides; 1e-12 allows for a different order of the division. A 2D image has origin
// 0 and the identity direction.
func check(t *testing.T, name string, v *volume.Volume, g golden) {
	t.Helper()
	ref.CheckValues(t, name, v, g)
	for i := range g.Spacing {
		if math.Abs(v.Spacing[i]-g.Spacing[i]) > 1e-12 {
			t.Errorf("%s: spacing %v, want %v", name, v.Spacing, g.Spacing)
		}
	}
	if v.Origin != [3]float64{} || v.Direction != volume.Identity {
		t.Errorf("%s: origin %v direction %v, want 0 and identity", name, v.Origin, v.Direction)
	}
}

func TestGoldenReal(t *testing.T) {
	g := loadGolden(t)
	for name, want := range g.Real {
		t.Run(filepath.Base(name), func(t *testing.T) {
			v, err := Read(realdata.Path(t, name))
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
			t.Fatalf("%s: %v", name, err)
		}
		check(t, name, v, want)
	}
}

var le = binary.LittleEndian

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	all := []volume.DType{volume.Uint8, volume.Int8, volume.Uint16, volume.Int16, volume.Uint32, volume.Int32, volume.Float32, volume.Float64}
	for i, typ := range all {
		for c := 1; c <= 4; c++ {
			for _, ext := range []string{".png", ".tif"} {
				v := ref.RandomValues(typ, [4]int{13, 7, 1, c}, uint64(10*i+c))
				v.Spacing = [3]float64{0.7, 1.25, 1}
				p := filepath.Join(dir, "rt"+ext)
				err := Write(p, v)
				pngOK := (typ == volume.Uint8 || typ == volume.Uint16) && c != 2
				if ext == ".png" && !pngOK {
					if !errors.Is(err, volume.ErrDType) || !strings.Contains(err.Error(), typ.String()) {
						t.Errorf("PNG %v C=%d: got %v, want a refusal naming the type", typ, c, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s %v C=%d: %v", ext, typ, c, err)
				}
				got, err := Read(p)
				if err != nil {
					t.Fatalf("%s %v C=%d: %v", ext, typ, c, err)
				}
				if !ref.SameValues(v, got) {
					t.Errorf("%s %v C=%d: values differ", ext, typ, c)
				}
				// PNG keeps the spacing as decimal text (exact); TIFF as pixels per cm with
				// denominator 10⁶, so to about 1e-7 relative.
				tol := map[string]float64{".png": 0, ".tif": 1e-6}[ext]
				if math.Abs(got.Spacing[0]-0.7) > tol || math.Abs(got.Spacing[1]-1.25) > tol {
					t.Errorf("%s: spacing %v, want 0.7 1.25", ext, got.Spacing)
				}
			}
		}
	}
}

// patchTag sets the inline value of a LONG or SHORT tag in the first IFD of a
// little-endian TIFF that encodeTIFF wrote.
func patchTag(b []byte, tag uint16, val uint32) []byte {
	b = bytes.Clone(b)
	off := le.Uint32(b[4:])
	n := le.Uint16(b[off:])
	for i := uint32(0); i < uint32(n); i++ {
		e := b[off+2+12*i:]
		if le.Uint16(e) == tag {
			if le.Uint16(e[2:]) == 3 {
				le.PutUint16(e[8:], uint16(val))
			} else {
				le.PutUint32(e[8:], val)
			}
		}
	}
	return b
}

func TestBadInput(t *testing.T) {
	var tif bytes.Buffer
	if err := encodeTIFF(&tif, ref.RandomValues(volume.Uint16, [4]int{8, 6, 1, 1}, 3)); err != nil {
		t.Fatal(err)
	}
	pngb, err := os.ReadFile("testdata/gen_u16.png")
	if err != nil {
		t.Fatal(err)
	}
	bmpb, err := os.ReadFile("testdata/gen_rgb.bmp")
	if err != nil {
		t.Fatal(err)
	}
	good := tif.Bytes()
	cases := []struct {
		name    string
		content []byte
		want    error
	}{
		{"trunc.png", pngb[:len(pngb)-30], volume.ErrTruncated},
		{"trunc.bmp", bmpb[:len(bmpb)-10], volume.ErrTruncated},
		{"trunc.tif", good[:40], volume.ErrTruncated},
		{"short.tif", good[:6], volume.ErrTruncated},
		{"magic.png", []byte("GIF89a this is not a supported image"), volume.ErrFormat},
		{"tiny.png", []byte("\x89P"), volume.ErrTruncated},
		{"absurd.tif", patchTag(patchTag(good, tWidth, 1<<20), tHeight, 1<<20), volume.ErrTooLarge},
		{"zero.tif", patchTag(good, tWidth, 0), volume.ErrFormat},
		{"offset.tif", patchTag(good, tStripOffsets, 1<<30), volume.ErrTruncated},
		{"bits.tif", patchTag(good, tSampleFormat, 3), volume.ErrDType},
		{"bigtiff.tif", append([]byte("II+\x00"), good[4:]...), volume.ErrFormat},
	}
	for _, c := range cases {
		p := filepath.Join(t.TempDir(), c.name)
		if err := os.WriteFile(p, c.content, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Read(p)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s: error %q does not name the file", c.name, err)
		}
	}
	dir := t.TempDir()
	if err := Write(filepath.Join(dir, "x.bmp"), ref.RandomValues(volume.Uint8, [4]int{2, 2, 1, 1}, 1)); err == nil {
		t.Error("Write accepted .bmp")
	}
	if err := Write(filepath.Join(dir, "x.png"), ref.RandomValues(volume.Uint8, [4]int{2, 2, 3, 1}, 1)); !errors.Is(err, volume.ErrGeometry) {
		t.Errorf("Write of 3 slices: %v", err)
	}
}

func FuzzRaster(f *testing.F) {
	names, _ := filepath.Glob("testdata/gen_*")
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	if d, err := realdata.Dir(); err == nil {
		for _, n := range []string{realdata.ITK + "/BrainProtonDensitySlice2x3.png", "root/usr/lib/python3/dist-packages/skimage/data/multipage_rgb.tif", "root/usr/lib/python3/dist-packages/skimage/data/palette_color.png"} {
			if b, err := os.ReadFile(filepath.Join(d, n)); err == nil {
				f.Add(b)
			}
		}
	}
	ref.FuzzDecode(f, func(b []byte, lim volume.Limits) (*volume.Volume, error) {
		return decode(bytes.NewReader(b), "fuzz", lim)
	})
}

// BenchmarkRead reads a 256×256×128 int16 volume stored as one deflate-compressed TIFF
// image of 256×(256·128) pixels (raster images are single slices).
func BenchmarkRead(b *testing.B) {
	v := ref.BenchVolume([4]int{256, 256 * 128, 1, 1})
	var buf bytes.Buffer
	if err := encodeTIFFWith(&buf, v, 8); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(buf.Len()), "file-bytes")
	b.SetBytes(int64(v.Len() * 2))
	for b.Loop() {
		if _, err := Decode(bytes.NewReader(buf.Bytes()), "bench.tif"); err != nil {
			b.Fatal(err)
		}
	}
}
