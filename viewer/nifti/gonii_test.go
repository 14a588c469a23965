package nifti

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/okieraised/gonii"

	"amid/assets/realdata"
	"amid/viewer/volume"
)

// goniiVerdict is what gonii v0.9.0 makes of each real file, compared with nibabel's
// golden values (checked by TestGoniiComparison, summarised in the package
// documentation): "ok" when its dims, values at the golden indices and affine agree.
var goniiVerdict = map[string]string{
	"ascm_out_test.nii.gz": "value at", // float64 data read as garbage
	"test_piesno.nii.gz":   "value at", // float64 too
	"int16.nii.gz":         "affine differs",
	"rgb24.nii.gz":         "affine differs", // qform only: gonii's Affine is the zero sform
	"tensor_rgb.nii.gz":    "no typed access",
}

// goniiCheck reads one golden file with gonii and says how it compares with nibabel.
func goniiCheck(path string, g golden) (verdict string) {
	defer func() {
		if r := recover(); r != nil {
			verdict = fmt.Sprintf("panic: %v", r)
		}
	}()
	rd, err := gonii.NewNiiReader(gonii.WithReadImageFile(path))
	if err != nil {
		return "error: " + err.Error()
	}
	if err := rd.Parse(); err != nil {
		return "error: " + err.Error()
	}
	n := rd.GetNiiData()
	if n.Nx != int64(g.Dims[0]) || n.Ny != int64(g.Dims[1]) || n.Nz != int64(g.Dims[2]) {
		return fmt.Sprintf("dims %d×%d×%d", n.Nx, n.Ny, n.Nz)
	}
	// gonii's Affine is the sform rows whatever the codes say; compare in LPS.
	for r := 0; r < 3; r++ {
		for c := 0; c < 4; c++ {
			a := n.Affine.M[r][c]
			if r < 2 {
				a = -a
			}
			if !near(a, g.Affine[4*r+c]) {
				return "affine differs"
			}
		}
	}
	if g.Header.Datatype == dtRGB24 || g.Header.Datatype == dtRGBA32 || n.Dim[5] > 1 {
		return "no typed access to RGB or vector data"
	}
	C := g.Dims[3]
	for _, vx := range g.Voxels {
		i := int(*vx[0])
		c, p := i%C, i/C
		x, y, z := p%g.Dims[0], p/g.Dims[0]%g.Dims[1], p/(g.Dims[0]*g.Dims[1])
		got := n.GetAt(int64(x), int64(y), int64(z), int64(c))
		if vx[1] != nil && !near(got, *vx[1]) {
			return fmt.Sprintf("value at %d is %v, nibabel %v", i, got, *vx[1])
		}
	}
	return "ok"
}

// TestGoniiComparison records how gonii v0.9.0 reads the real files next to nibabel, so
// that the verdict in the package documentation stays true.
func TestGoniiComparison(t *testing.T) {
	ok, n := 0, 0
	for _, g := range loadGolden(t) {
		if g.Error != "" {
			continue
		}
		path := realdata.Path(t, g.File)
		v := goniiCheck(path, g)
		t.Logf("%-45s %s", filepath.Base(g.File), v)
		want, listed := goniiVerdict[filepath.Base(g.File)]
		if !listed {
			want = "ok"
		}
		if !strings.HasPrefix(v, want) {
			t.Errorf("%s: gonii %q, documented %q", g.File, v, want)
		}
		if v == "ok" {
			ok++
		}
		n++
	}
	t.Logf("gonii agrees with nibabel on %d of %d files", ok, n)
}

// TestGoniiBadInput records what gonii does with damaged files (this package returns a
// shared error for each, see TestErrors). Absurd dims are left out: gonii allocates what
// the header asks for before reading, which would exhaust the test machine's memory.
func TestGoniiBadInput(t *testing.T) {
	v := testVolume(t, volume.Int16, [4]int{8, 6, 4, 1}, volume.Identity)
	good := encodeAs(t, v, 1, binary.LittleEndian, nil)
	badMagic := append([]byte(nil), good...)
	copy(badMagic[344:], "n+9\x00")
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "error"},
		{"short header", good[:200], "error"},
		{"data cut short", good[:len(good)-10], "error"},
		{"gzip cut short", gz(good)[:len(gz(good))/2], "error"},
		{"wrong magic", badMagic, "error"},
		{"negative dim", encodeAs(t, v, 1, binary.LittleEndian, func(h *Header) { h.Dim[1] = -8 }), "panic"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".nii")
		if err := os.WriteFile(p, c.b, 0o644); err != nil {
			t.Fatal(err)
		}
		got := func() (s string) {
			defer func() {
				if r := recover(); r != nil {
					s = fmt.Sprint("panic: ", r)
				}
			}()
			rd, err := gonii.NewNiiReader(gonii.WithReadImageFile(p))
			if err != nil {
				return "error: " + err.Error()
			}
			if err := rd.Parse(); err != nil {
				return "error: " + err.Error()
			}
			return "ok"
		}()
		t.Logf("%-15s %s", c.name, got)
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: gonii %q, documented %q", c.name, got, c.want)
		}
	}
}
