package nifti

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"amid/viewer/volume"
)

// rot is a rotation of 30° about z followed by 20° about x, an oblique direction with
// no zero entries, so that a transposed or mis-signed row shows.
func rot() [9]float64 {
	c1, s1 := math.Cos(math.Pi/6), math.Sin(math.Pi/6)
	c2, s2 := math.Cos(math.Pi/9), math.Sin(math.Pi/9)
	rz := [9]float64{c1, -s1, 0, s1, c1, 0, 0, 0, 1}
	rx := [9]float64{1, 0, 0, 0, c2, -s2, 0, s2, c2}
	var m [9]float64
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			for k := 0; k < 3; k++ {
				m[3*i+j] += rx[3*i+k] * rz[3*k+j]
			}
		}
	}
	return m
}

// testVolume makes a volume whose every element differs, with oblique geometry.
func testVolume(t testing.TB, dt volume.DType, dims [4]int, dir [9]float64) *volume.Volume {
	t.Helper()
	v, err := volume.New(dt, dims)
	if err != nil {
		t.Fatal(err)
	}
	v.Spacing = [3]float64{0.7, 1.3, 2.5}
	v.Origin = [3]float64{-90.25, 12.5, 33.125}
	v.Direction = dir
	for i, n := 0, v.Len(); i < n; i++ {
		f := float64(i%251) - 100
		if dt == volume.Float32 || dt == volume.Float64 {
			f = float64(i)*0.37 - 1000.5
		}
		v.SetIndex(i, f)
	}
	return v
}

// sameGeometry compares to float32 precision: the sform holds Direction·Spacing and
// Origin as float32 (relative rounding 2⁻²⁴ ≈ 6e-8); 1e-6 allows for the norm and
// division that recover spacing and direction.
func sameGeometry(t *testing.T, got, want *volume.Volume) {
	t.Helper()
	if !volume.SameGrid(got, want, 1e-6*100) {
		t.Errorf("geometry\n got %v %v %v\nwant %v %v %v", got.Spacing, got.Origin, got.Direction, want.Spacing, want.Origin, want.Direction)
	}
	ga, wa := got.Affine(), want.Affine()
	for i := range ga {
		if math.Abs(ga[i]-wa[i]) > 1e-6*math.Max(1, math.Abs(wa[i])) {
			t.Errorf("affine[%d] = %v, want %v", i, ga[i], wa[i])
		}
	}
}

func TestRoundTrip(t *testing.T) {
	flip := rot()
	flip[2], flip[5], flip[8] = -flip[2], -flip[5], -flip[8] // left-handed: qfac -1
	dirs := map[string][9]float64{"identity": volume.Identity, "oblique": rot(), "left-handed": flip}
	types := []volume.DType{volume.Uint8, volume.Int8, volume.Uint16, volume.Int16, volume.Uint32, volume.Int32, volume.Float32, volume.Float64}
	dir := t.TempDir()
	for dname, d := range dirs {
		for _, dt := range types {
			for _, c := range []int{1, 3} {
				for _, ext := range []string{".nii", ".nii.gz"} {
					name := dname + "-" + dt.String() + "-c" + string(rune('0'+c)) + ext
					t.Run(name, func(t *testing.T) {
						v := testVolume(t, dt, [4]int{7, 5, 4, c}, d)
						p := filepath.Join(dir, name)
						if err := Write(p, v); err != nil {
							t.Fatal(err)
						}
						got, err := Read(p)
						if err != nil {
							t.Fatal(err)
						}
						if got.Dims != v.Dims || !reflect.DeepEqual(got.Data, v.Data) {
							t.Fatalf("data differ: dims %v, want %v", got.Dims, v.Dims)
						}
						sameGeometry(t, got, v)
					})
				}
			}
		}
	}
}

// encodeAs returns v encoded as a single-file NIfTI of the given version and byte order,
// built from the writer's header and data; edit, when not nil, changes the header first.
func encodeAs(t testing.TB, v *volume.Volume, version int, o binary.ByteOrder, edit func(*Header)) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Encode(&buf, v); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()[size1+4:]
	h, err := headerFor(v)
	if err != nil {
		t.Fatal(err)
	}
	h.Version, h.ByteOrder = version, o
	if version == 2 {
		h.Magic, h.VoxOffset = "n+2", size2+4
	}
	if edit != nil {
		edit(h)
	}
	out := append(h.marshal(), 0, 0, 0, 0)
	for len(out) < int(h.VoxOffset) {
		out = append(out, 0)
	}
	d := append([]byte(nil), data...)
	if o == binary.BigEndian {
		swapBytes(d, v.DType().Size())
	}
	return append(out, d...)
}

func TestVersionsAndByteOrders(t *testing.T) {
	for _, dt := range []volume.DType{volume.Uint8, volume.Int16, volume.Uint16, volume.Int32, volume.Float32, volume.Float64} {
		for _, version := range []int{1, 2} {
			for _, o := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
				v := testVolume(t, dt, [4]int{6, 4, 3, 2}, rot())
				b := encodeAs(t, v, version, o, nil)
				got, err := Decode(bytes.NewReader(b), "mem.nii")
				if err != nil {
					t.Fatalf("%v v%d %v: %v", dt, version, o, err)
				}
				if !reflect.DeepEqual(got.Data, v.Data) {
					t.Errorf("%v v%d %v: data differ", dt, version, o)
				}
				if version == 2 {
					// NIfTI-2 stores the sform in float64: exact.
					if got.Affine() != v.Affine() {
						t.Errorf("v2 %v: affine %v, want %v", o, got.Affine(), v.Affine())
					}
				}
			}
		}
	}
}

// TestQform reads the writer's qform alone (sform_code 0): the quaternion, qfac and
// pixdim must give back the geometry to float32 precision.
func TestQform(t *testing.T) {
	flip := rot()
	flip[2], flip[5], flip[8] = -flip[2], -flip[5], -flip[8]
	// A 180° turn about y: trace -1, the quaternion's a is 0 (the writer's other branch).
	turn := [9]float64{-1, 0, 0, 0, 1, 0, 0, 0, -1}
	for name, d := range map[string][9]float64{"identity": volume.Identity, "oblique": rot(), "left-handed": flip, "turn": turn} {
		v := testVolume(t, volume.Int16, [4]int{4, 3, 2, 1}, d)
		b := encodeAs(t, v, 1, binary.LittleEndian, func(h *Header) { h.SformCode = 0 })
		got, err := Decode(bytes.NewReader(b), name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) { sameGeometry(t, got, v) })
	}
}

func TestBaseAffine(t *testing.T) {
	// No sform, no qform: nibabel's base affine, diag(-px, py, pz) centred on the grid.
	// Here a 2D image whose pixdim[3] is 0, fixed to 1 as nibabel does.
	v := testVolume(t, volume.Uint8, [4]int{5, 3, 1, 1}, volume.Identity)
	b := encodeAs(t, v, 1, binary.LittleEndian, func(h *Header) {
		h.SformCode, h.QformCode = 0, 0
		h.Dim[0] = 2
		h.Pixdim = [8]float64{1, 0.5, 2, 0}
	})
	got, err := Decode(bytes.NewReader(b), "base.nii")
	if err != nil {
		t.Fatal(err)
	}
	// RAS affine [[-0.5,0,0,1],[0,2,0,-2],[0,0,1,0]] (x: -(5-1)/2·-0.5 = 1; y: -(3-1)/2·2),
	// negated first two rows for LPS.
	want := [16]float64{0.5, 0, 0, -1, 0, -2, 0, 2, 0, 0, 1, 0, 0, 0, 0, 1}
	if got.Affine() != want {
		t.Errorf("affine %v, want %v", got.Affine(), want)
	}
}

func TestScaling(t *testing.T) {
	for _, c := range []struct {
		raw  volume.DType
		dims [4]int
		want volume.DType
	}{
		{volume.Int16, [4]int{5, 4, 3, 1}, volume.Float32},
		{volume.Uint8, [4]int{5, 4, 3, 3}, volume.Float32}, // 4D: channels and scaling together
		{volume.Float64, [4]int{5, 4, 3, 2}, volume.Float64},
	} {
		v := testVolume(t, c.raw, c.dims, volume.Identity)
		b := encodeAs(t, v, 1, binary.BigEndian, func(h *Header) { h.SclSlope, h.SclInter = 0.5, -3 })
		got, err := Decode(bytes.NewReader(b), "scaled.nii")
		if err != nil {
			t.Fatal(err)
		}
		if got.DType() != c.want {
			t.Fatalf("%v scaled: dtype %v, want %v", c.raw, got.DType(), c.want)
		}
		for i, n := 0, v.Len(); i < n; i++ {
			want := v.AtIndex(i)*0.5 - 3
			if c.want == volume.Float32 {
				want = float64(float32(want))
			}
			if got.AtIndex(i) != want {
				t.Fatalf("%v scaled: [%d] = %v, want %v", c.raw, i, got.AtIndex(i), want)
			}
		}
	}
	// slope 1, inter 0 and slope 0 (unset) keep the native type, as nibabel's dataobj.
	for _, s := range []float64{0, 1, math.NaN()} {
		v := testVolume(t, volume.Int16, [4]int{3, 3, 3, 1}, volume.Identity)
		b := encodeAs(t, v, 1, binary.LittleEndian, func(h *Header) { h.SclSlope = s })
		got, err := Decode(bytes.NewReader(b), "unscaled.nii")
		if err != nil || got.DType() != volume.Int16 {
			t.Errorf("slope %v: %v, %v", s, got, err)
		}
	}
}

// TestRGB builds RGB24 and RGBA32 files (3 or 4 bytes per voxel on disk), one of them
// with 2 time points, which become 6 channels: RGB of t=0, then RGB of t=1.
func TestRGB(t *testing.T) {
	for _, c := range []struct {
		code int16
		k, t int
	}{{dtRGB24, 3, 1}, {dtRGBA32, 4, 1}, {dtRGB24, 3, 2}} {
		x, y, z := 4, 3, 2
		v, _ := volume.New(volume.Uint8, [4]int{x, y, z, c.k * c.t})
		for i := range v.Data.([]uint8) {
			v.Data.([]uint8)[i] = uint8(i * 7)
		}
		// Disk order: per time point, per voxel, k bytes.
		var data []byte
		for tt := 0; tt < c.t; tt++ {
			for p := 0; p < x*y*z; p++ {
				for k := 0; k < c.k; k++ {
					data = append(data, v.Data.([]uint8)[p*c.k*c.t+tt*c.k+k])
				}
			}
		}
		h, _ := headerFor(testVolume(t, volume.Uint8, [4]int{x, y, z, 1}, volume.Identity))
		h.Datatype, h.Bitpix = c.code, int16(8*c.k)
		if c.t > 1 {
			h.Dim[0], h.Dim[4] = 4, int64(c.t)
		}
		b := append(append(h.marshal(), 0, 0, 0, 0), data...)
		got, err := Decode(bytes.NewReader(b), "rgb.nii")
		if err != nil {
			t.Fatal(err)
		}
		if got.Dims != v.Dims || !reflect.DeepEqual(got.Data, v.Data) {
			t.Errorf("datatype %d, %d time points: dims %v, want %v, or data differ", c.code, c.t, got.Dims, v.Dims)
		}
	}
}

func TestGzipByContent(t *testing.T) {
	v := testVolume(t, volume.Int16, [4]int{8, 8, 8, 1}, rot())
	p := filepath.Join(t.TempDir(), "a.nii.gz")
	if err := Write(p, v); err != nil {
		t.Fatal(err)
	}
	q := filepath.Join(t.TempDir(), "named-plain.nii")
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(q, b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Read(q)
	if err != nil || !reflect.DeepEqual(got.Data, v.Data) {
		t.Fatalf("gzip content under a .nii name: %v", err)
	}
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func TestErrors(t *testing.T) {
	v := testVolume(t, volume.Int16, [4]int{8, 6, 4, 1}, volume.Identity)
	good := encodeAs(t, v, 1, binary.LittleEndian, nil)
	edit := func(f func(h *Header)) []byte { return encodeAs(t, v, 1, binary.LittleEndian, f) }
	badMagic := append([]byte(nil), good...)
	copy(badMagic[344:], "n+9\x00")
	badSize := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(badSize, 349)
	badCRC := gz(good)
	badCRC[len(badCRC)-8] ^= 0xff // the CRC-32 in the gzip trailer
	farOffset := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(farOffset[108:], math.Float32bits(1<<20))
	edit2GiB := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(edit2GiB[108:], math.Float32bits(1<<31))
	gzCut := gz(good)
	gzCut = gzCut[:len(gzCut)/2]
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, volume.ErrTruncated},
		{"short header", good[:200], volume.ErrTruncated},
		{"wrong sizeof_hdr", badSize, volume.ErrFormat},
		{"wrong magic", badMagic, volume.ErrFormat},
		{"pair header", edit(func(h *Header) { h.Magic = "ni1" }), volume.ErrFormat},
		{"Analyze header", edit(func(h *Header) { h.Magic = "" }), volume.ErrFormat},
		{"data cut short", good[:len(good)-10], volume.ErrTruncated},
		{"gzip cut short", gzCut, volume.ErrTruncated},
		{"gzip checksum", badCRC, volume.ErrFormat},
		{"absurd dims", edit(func(h *Header) { h.Dim = [8]int64{3, 32767, 32767, 32767, 1, 1, 1, 1} }), volume.ErrTooLarge},
		{"zero dim", edit(func(h *Header) { h.Dim[2] = 0 }), volume.ErrGeometry},
		{"negative dim", edit(func(h *Header) { h.Dim[1] = -8 }), volume.ErrGeometry},
		{"dim[0] 9", edit(func(h *Header) { h.Dim[0] = 9 }), volume.ErrFormat},
		{"6 dimensions", edit(func(h *Header) { h.Dim[0], h.Dim[6] = 6, 2 }), volume.ErrFormat},
		{"int64", edit(func(h *Header) { h.Datatype = dtInt64 }), volume.ErrDType},
		{"complex64", edit(func(h *Header) { h.Datatype = 32 }), volume.ErrDType},
		{"NaN pixdim", edit(func(h *Header) { h.SformCode = 0; h.Pixdim[2] = math.NaN() }), volume.ErrGeometry},
		{"zero pixdim", edit(func(h *Header) { h.SformCode = 0; h.Pixdim[1] = 0 }), volume.ErrGeometry},
		{"zero sform column", edit(func(h *Header) { h.SrowX[0], h.SrowY[0], h.SrowZ[0] = 0, 0, 0 }), volume.ErrGeometry},
		{"NaN sform", edit(func(h *Header) { h.SrowY[3] = math.NaN() }), volume.ErrGeometry},
		{"long quaternion", edit(func(h *Header) { h.SformCode = 0; h.QuaternB = 2 }), volume.ErrGeometry},
		{"vox_offset beyond the file", farOffset, volume.ErrTruncated},
		{"vox_offset inside the header", edit(func(h *Header) { h.VoxOffset = 100 }), volume.ErrFormat},
		{"vox_offset 2 GiB", edit2GiB, volume.ErrFormat},
		{"infinite scl_inter", edit(func(h *Header) { h.SclSlope, h.SclInter = 2, math.Inf(1) }), volume.ErrFormat},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := "case-" + strings.ReplaceAll(c.name, " ", "-") + ".nii"
			_, err := Decode(bytes.NewReader(c.b), name)
			check := func(how string, err error) {
				if !errors.Is(err, c.want) {
					t.Errorf("%s: error %v, want %v", how, err, c.want)
				} else if !strings.Contains(err.Error(), name) {
					t.Errorf("%s: error %q does not name the file", how, err)
				}
			}
			check("Decode", err)
			// The same through a stream that hides its length, and through Read.
			_, err = Decode(struct{ *bytes.Reader }{bytes.NewReader(c.b)}, name)
			check("Decode (stream)", err)
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, c.b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = Read(p)
			check("Read", err)
		})
	}
}

func TestWriteErrors(t *testing.T) {
	v := testVolume(t, volume.Int16, [4]int{4, 4, 4, 1}, volume.Identity)
	if err := Write(filepath.Join(t.TempDir(), "x.mha"), v); !errors.Is(err, volume.ErrFormat) {
		t.Errorf("wrong extension: %v", err)
	}
	v.Spacing[1] = 0
	p := filepath.Join(t.TempDir(), "bad.nii")
	if err := Write(p, v); !errors.Is(err, volume.ErrGeometry) {
		t.Errorf("zero spacing: %v", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("a failed write left %s behind", p)
	}
	big := &volume.Volume{Dims: [4]int{40000, 1, 1, 1}, Spacing: [3]float64{1, 1, 1}, Direction: volume.Identity, Data: make([]uint8, 40000)}
	if err := Encode(&bytes.Buffer{}, big); !errors.Is(err, volume.ErrTooLarge) {
		t.Errorf("dim above 32767: %v", err)
	}
}

// TestMemory checks the peak-memory promise with the bytes allocated while reading: at
// most 1.3× the decoded volume (the bound the package documents), for the direct path
// (3D int16), the chunked path (4D float32 with channels interleaved) and scaling
// (int16 → float32), each gzip-compressed.
func TestMemory(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name  string
		dt    volume.DType
		dims  [4]int
		slope float64
	}{
		{"int16-3d", volume.Int16, [4]int{128, 128, 128, 1}, 1},
		{"float32-4d", volume.Float32, [4]int{96, 96, 64, 4}, 1},
		{"int16-scaled", volume.Int16, [4]int{128, 128, 96, 1}, 0.25},
	} {
		v := testVolume(t, c.dt, c.dims, volume.Identity)
		b := gz(encodeAs(t, v, 1, binary.LittleEndian, func(h *Header) { h.SclSlope = c.slope }))
		p := filepath.Join(dir, c.name+".nii.gz")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := Read(p)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		decoded := float64(got.Len() * got.DType().Size())
		alloc := float64(after.TotalAlloc - before.TotalAlloc)
		t.Logf("%s: allocated %.0f bytes for a %.0f-byte volume (%.3f×)", c.name, alloc, decoded, alloc/decoded)
		if alloc > 1.3*decoded {
			t.Errorf("%s: allocated %.2f× the decoded volume, more than 1.3×", c.name, alloc/decoded)
		}
	}
}
