package inv3

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"amid/assets/realdata"
	"amid/viewer/volume"

	ref "amid/viewer/internal/golden"
)

type golden struct {
	Dims    [3]int     `json:"dims_xyz"`
	Spacing [3]float64 `json:"spacing"`
	DType   string     `json:"dtype"`
	Sum     int64      `json:"sum"`
	Min     int64      `json:"min"`
	Max     int64      `json:"max"`
	Voxels  [][4]int64 `json:"voxels"`
	Masks   []struct {
		Name      string     `json:"name"`
		Threshold [2]float64 `json:"threshold"`
		Count     int64      `json:"count"`
	} `json:"masks"`
}

func loadGolden(t *testing.T) golden {
	t.Helper()
	var g golden
	ref.Load(t, "testdata/golden.json", &g)
	return g
}

// The InVesalius head CT, unpacked and as the .inv3 archive, against plistlib + numpy
// (testdata/golden.py).
func TestCraniumAgainstNumpy(t *testing.T) {
	g := loadGolden(t)
	for _, p := range []string{
		realdata.Path(t, realdata.InVesalius),
		realdata.Path(t, filepath.Join(realdata.Debian, "usr/share/doc/invesalius-examples/examples/Cranium.inv3")),
	} {
		proj, err := Read(p)
		if err != nil {
			t.Fatal(err)
		}
		ct := proj.CT
		if ct.Dims != [4]int{g.Dims[0], g.Dims[1], g.Dims[2], 1} || ct.DType().String() != g.DType || ct.Spacing != g.Spacing {
			t.Fatalf("%s: %v %v %v, want %v %v %v", p, ct.Dims, ct.DType(), ct.Spacing, g.Dims, g.DType, g.Spacing)
		}
		var sum int64
		for _, v := range ct.Data.([]int16) {
			sum += int64(v)
		}
		s := ct.Stats()
		if sum != g.Sum || int64(s.Min) != g.Min || int64(s.Max) != g.Max {
			t.Fatalf("sum/min/max %d/%v/%v, want %d/%d/%d", sum, s.Min, s.Max, g.Sum, g.Min, g.Max)
		}
		for _, v := range g.Voxels {
			if got := ct.At(int(v[0]), int(v[1]), int(v[2]), 0); got != float64(v[3]) {
				t.Errorf("voxel %v = %v", v[:3], got)
			}
		}
		if proj.Modality != "CT" || len(proj.Masks) != len(g.Masks) {
			t.Fatalf("modality %q, %d masks", proj.Modality, len(proj.Masks))
		}
		for i, m := range proj.Masks {
			var n int64
			for _, v := range m.Labels.Data.([]uint8) {
				n += int64(v)
			}
			if m.Name != g.Masks[i].Name || m.Threshold != g.Masks[i].Threshold || n != g.Masks[i].Count {
				t.Fatalf("mask %d: %q %v %d voxels, want %+v", i, m.Name, m.Threshold, n, g.Masks[i])
			}
		}
		// The bone mask (first) is the HU threshold [226, 3071] of the CT, except where
		// the user edited it in InVesalius: count the agreement.
		bone, hu := proj.Masks[0].Labels.Data.([]uint8), ct.Data.([]int16)
		agree := 0
		for i, v := range hu {
			if (v >= 226) == (bone[i] == 1) {
				agree++
			}
		}
		if frac := float64(agree) / float64(len(hu)); frac < 0.99 {
			t.Errorf("bone mask agrees with HU ≥ 226 on %.4f of voxels", frac)
		}
	}
}

// tinyProject builds a valid 3×2×2 project archive in memory.
func tinyProject(t testing.TB, mutate func(map[string][]byte)) []byte {
	files := map[string][]byte{
		"main.plist": []byte(`<?xml version="1.0"?><plist version="1.0"><dict>
<key>modality</key><string>CT</string>
<key>matrix</key><dict><key>dtype</key><string>int16</string><key>filename</key><string>matrix.dat</string>
<key>shape</key><array><integer>2</integer><integer>2</integer><integer>3</integer></array></dict>
<key>spacing</key><array><real>0.5</real><real>0.5</real><real>2</real></array>
<key>masks</key><dict><key>0</key><string>mask_0.plist</string></dict>
</dict></plist>`),
		"mask_0.plist": []byte(`<plist><dict><key>name</key><string>m</string><key>mask_file</key><string>mask_0.dat</string>
<key>mask_shape</key><array><integer>3</integer><integer>3</integer><integer>4</integer></array>
<key>threshold_range</key><array><integer>0</integer><integer>10</integer></array><key>visible</key><true/></dict></plist>`),
		"matrix.dat": make([]byte, 3*2*2*2),
		"mask_0.dat": make([]byte, 4*3*3),
	}
	files["mask_0.dat"][len(files["mask_0.dat"])-1] = 255 // voxel (2,1,1)
	if mutate != nil {
		mutate(files)
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range []string{"main.plist", "mask_0.plist", "matrix.dat", "mask_0.dat"} {
		b, ok := files[name]
		if !ok {
			continue
		}
		tw.WriteHeader(&tar.Header{Name: "tmp/" + name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg})
		tw.Write(b)
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func writeTemp(t *testing.T, b []byte) string {
	p := filepath.Join(t.TempDir(), "p.inv3")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTinyProject(t *testing.T) {
	proj, err := Read(writeTemp(t, tinyProject(t, nil)))
	if err != nil {
		t.Fatal(err)
	}
	m := proj.Masks[0].Labels
	if proj.CT.Dims != [4]int{3, 2, 2, 1} || m.At(2, 1, 1, 0) != 1 || m.At(0, 0, 0, 0) != 0 {
		t.Fatalf("dims %v, mask %v", proj.CT.Dims, m.Data)
	}
}

func TestBadProjects(t *testing.T) {
	cases := map[string]struct {
		mutate func(map[string][]byte)
		want   error
	}{
		"short matrix":  {func(f map[string][]byte) { f["matrix.dat"] = f["matrix.dat"][:5] }, volume.ErrTruncated},
		"no main plist": {func(f map[string][]byte) { delete(f, "main.plist") }, nil},
		"not xml":       {func(f map[string][]byte) { f["main.plist"] = []byte("garbage") }, volume.ErrFormat},
		"bad mask shape": {func(f map[string][]byte) {
			f["mask_0.plist"] = bytes.Replace(f["mask_0.plist"], []byte("<integer>4</integer>"), []byte("<integer>9</integer>"), 1)
		}, volume.ErrGeometry},
		"absurd shape": {func(f map[string][]byte) {
			f["main.plist"] = bytes.Replace(f["main.plist"], []byte("<integer>3</integer>"), []byte("<integer>9999999999</integer>"), 1)
		}, volume.ErrTooLarge},
		"unknown dtype": {func(f map[string][]byte) {
			f["main.plist"] = bytes.Replace(f["main.plist"], []byte("int16"), []byte("complex"), 1)
		}, volume.ErrDType},
	}
	for name, c := range cases {
		_, err := Read(writeTemp(t, tinyProject(t, c.mutate)))
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if _, err := Read(writeTemp(t, []byte("not gzip"))); !errors.Is(err, volume.ErrFormat) {
		t.Errorf("not gzip: %v", err)
	}
}

func FuzzPlist(f *testing.F) {
	f.Add([]byte(`<plist><dict><key>a</key><array><integer>1</integer><real>2.5</real><true/></array></dict></plist>`))
	f.Add([]byte(`<plist><dict><key>a</key></dict></plist>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		src := memSource{"main.plist": b, "matrix.dat": make([]byte, 24), "mask_0.plist": b, "mask_0.dat": make([]byte, 36)}
		decode(src) // must not panic
	})
}
