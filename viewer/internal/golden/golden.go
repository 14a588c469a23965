// Package golden holds the test helpers the format packages share: reference values
// written by their testdata/golden.py scripts (an image's dims, type, geometry, sum, range
// and sampled voxels, loaded from JSON and compared with a decoded volume), and random
// volumes with bit-exact comparison for round-trip tests.
package golden

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"amid/viewer/volume"
)

// Image is one file's expected values.
type Image struct {
	Dims      [4]int
	DType     string
	Spacing   [3]float64
	Origin    [3]float64
	Direction [9]float64
	Sum       float64
	Min, Max  float64
	Voxels    [][5]float64 // x, y, z, c, value
}

// Load decodes the JSON file at path into dst, failing the test on error.
func Load(tb testing.TB, path string, dst any) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
}

// sumTol is the relative tolerance of the sum: for float data numpy sums pairwise, which
// can differ from a running sum in the last bits.
const sumTol = 1e-12

// CheckValues compares v's dims, element type, sum, min, max and sampled voxels with g.
func CheckValues(tb testing.TB, name string, v *volume.Volume, g Image) {
	tb.Helper()
	if v.Dims != g.Dims || v.DType().String() != g.DType {
		tb.Fatalf("%s: dims %v %v, want %v %s", name, v.Dims, v.DType(), g.Dims, g.DType)
	}
	sum, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
	for i := 0; i < v.Len(); i++ {
		x := v.AtIndex(i)
		sum += x
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	if math.Abs(sum-g.Sum) > sumTol*math.Max(1, math.Abs(g.Sum)) || lo != g.Min || hi != g.Max {
		tb.Errorf("%s: sum %v min %v max %v, want %v %v %v", name, sum, lo, hi, g.Sum, g.Min, g.Max)
	}
	for _, p := range g.Voxels {
		if got := v.At(int(p[0]), int(p[1]), int(p[2]), int(p[3])); got != p[4] {
			tb.Errorf("%s: voxel %v = %v, want %v", name, p[:4], got, p[4])
		}
	}
}

// CheckGeometry compares v's spacing, origin and direction with g, each within tol
// relative to max(1, |expected|); tol 0 asks for equality.
func CheckGeometry(tb testing.TB, name string, v *volume.Volume, g Image, tol float64) {
	tb.Helper()
	if !near(v.Spacing[:], g.Spacing[:], tol) || !near(v.Origin[:], g.Origin[:], tol) || !near(v.Direction[:], g.Direction[:], tol) {
		tb.Errorf("%s: geometry %v %v %v, want %v %v %v", name, v.Spacing, v.Origin, v.Direction, g.Spacing, g.Origin, g.Direction)
	}
}

func near(a, b []float64, tol float64) bool {
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol*math.Max(1, math.Abs(b[i])) {
			return false
		}
	}
	return true
}

// RandomValues returns a volume of type t whose bytes are random (NaN and infinities
// included for floats, to prove bit-exact storage), with unit spacing, zero origin and the
// identity direction.
func RandomValues(t volume.DType, dims [4]int, seed uint64) *volume.Volume {
	r := rand.New(rand.NewPCG(seed, 1))
	v, _ := volume.New(t, dims)
	raw := make([]byte, v.Len()*t.Size())
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	v.Data = volume.DecodeBytes(raw, t, binary.LittleEndian)
	return v
}

// Random is RandomValues with an oblique, anisotropic geometry (a 0.3 rad rotation about
// z and a flipped z axis) that tests a writer's geometry.
func Random(t volume.DType, dims [4]int, seed uint64) *volume.Volume {
	v := RandomValues(t, dims, seed)
	r := rand.New(rand.NewPCG(seed, 2))
	v.Spacing = [3]float64{0.7 + r.Float64(), 0.1 * (1 + r.Float64()), 3.3}
	v.Origin = [3]float64{-123.456789, r.NormFloat64() * 100, 1e-7}
	c, s := math.Cos(0.3), math.Sin(0.3)
	v.Direction = [9]float64{c, -s, 0, s, c, 0, 0, 0, -1}
	return v
}

// SameValues reports whether a and b have the same dims, element type and bit-identical
// data.
func SameValues(a, b *volume.Volume) bool {
	if a.Dims != b.Dims || a.DType() != b.DType() {
		return false
	}
	le := binary.LittleEndian
	return bytes.Equal(volume.EncodeBytes(a.Data, le), volume.EncodeBytes(b.Data, le))
}

// Same is SameValues plus exactly equal spacing, origin and direction.
func Same(a, b *volume.Volume) bool {
	return SameValues(a, b) && a.Spacing == b.Spacing && a.Origin == b.Origin && a.Direction == b.Direction
}

// FuzzLimits keep a fuzzed image to 64 MiB, so that the fuzzer explores parsing, not
// allocation.
var FuzzLimits = volume.Limits{Voxels: volume.MaxVoxels, Bytes: 64 << 20}

// FuzzDecode runs f's fuzz target on decode: an input decode refuses gives no volume, and
// one it accepts gives a volume that validates. decode is given FuzzLimits.
func FuzzDecode(f *testing.F, decode func(b []byte, lim volume.Limits) (*volume.Volume, error)) {
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decode(b, FuzzLimits)
		if err != nil {
			if v != nil {
				t.Fatal("volume with error")
			}
			return
		}
		if err := v.Validate(); err != nil {
			t.Fatalf("decoded an invalid volume: %v", err)
		}
	})
}

// BenchVolume is the format packages' read benchmark image: 256 × 256 × 128 int16 voxels
// of a paraboloid (smooth, so that compression pays), laid out in dims (256 × 256 × 128,
// or 256 × 32768 for a single-slice format).
func BenchVolume(dims [4]int) *volume.Volume {
	v, _ := volume.New(volume.Int16, dims)
	d := v.Data.([]int16)
	for i := range d {
		x, y, z := i%256, (i/256)%256, i/65536
		d[i] = int16((x-128)*(x-128)+(y-128)*(y-128)+(z-64)*(z-64)) / 4
	}
	return v
}

// BenchRead writes BenchVolume to a file named name with write and benchmarks read on it,
// reporting the file's size.
func BenchRead(b *testing.B, name string, write func(string, *volume.Volume) error, read func(string) (*volume.Volume, error)) {
	v := BenchVolume([4]int{256, 256, 128, 1})
	p := filepath.Join(b.TempDir(), name)
	if err := write(p, v); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(st.Size()), "file-bytes")
	b.SetBytes(int64(v.Len() * 2))
	for b.Loop() {
		if _, err := read(p); err != nil {
			b.Fatal(err)
		}
	}
}
