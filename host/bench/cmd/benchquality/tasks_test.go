package main

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"amid/viewer/volume"
)

// A slab cut along any axis holds the scan's voxels at the same places in the patient
// frame: voxel (x, y, z) of the slab is voxel (x, y, z) + z0 along the axis of the scan,
// and both map to the same world point.
func TestCutKeepsPatientFrame(t *testing.T) {
	v, err := volume.New(volume.Float32, [4]int{5, 6, 7, 1})
	if err != nil {
		t.Fatal(err)
	}
	v.Spacing = [3]float64{0.5, 1, 1.5}
	v.Origin = [3]float64{-10, 20, 3}
	for i := range v.Len() {
		v.SetIndex(i, float64(i))
	}
	for axis := range 3 {
		const z0, n = 2, 3
		s, err := cut(v, volume.Float32, axis, z0, n)
		if err != nil {
			t.Fatal(err)
		}
		if s.Dims[axis] != n {
			t.Fatalf("axis %d: slab dims %v", axis, s.Dims)
		}
		each(s.Dims, func(i, x, y, z int) {
			c := [3]int{x, y, z}
			sw := s.VoxelToWorld([3]float64{float64(x), float64(y), float64(z)})
			c[axis] += z0
			j := c[0] + 5*(c[1]+6*c[2])
			if s.AtIndex(i) != v.AtIndex(j) {
				t.Fatalf("axis %d: slab voxel %v holds %v, the scan's %v holds %v", axis, [3]int{x, y, z}, s.AtIndex(i), c, v.AtIndex(j))
			}
			vw := v.VoxelToWorld([3]float64{float64(c[0]), float64(c[1]), float64(c[2])})
			for a := range 3 {
				if math.Abs(sw[a]-vw[a]) > 1e-9 {
					t.Fatalf("axis %d: slab voxel %v lies at %v, the scan's at %v", axis, [3]int{x, y, z}, sw, vw)
				}
			}
		})
	}
}

// The nine slabs are centred on the labels' extent, within the scan.
func TestSlabRange(t *testing.T) {
	lab, err := volume.New(volume.Uint8, [4]int{4, 4, 40, 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ lo, hi, want int }{
		{10, 29, 2}, // extent 10–29, centre 20: 9 × 4 = 36 slices from 2
		{0, 5, 0},   // near the start: clamped to 0
		{30, 39, 4}, // near the end: clamped to 40 − 36
	} {
		for i := range lab.Len() {
			z := i / 16
			on := 0.0
			if z >= c.lo && z <= c.hi {
				on = 1
			}
			lab.SetIndex(i, on)
		}
		got, err := slabRange(taskDef{Axis: 2, Slices: 4}, lab)
		if err != nil || got != c.want {
			t.Errorf("labels on slices %d–%d: slabs from %d (%v), want %d", c.lo, c.hi, got, err, c.want)
		}
	}
}

// The two drivers' sources, written into the tree as the bench writes them, build: they
// are Go programs kept as text (the old loop's tree builds driverSource too).
func TestDriversBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs")
	}
	for name, src := range map[string]string{"driver": driverSource, "improve": improveSource} {
		// Inside the module (the repository's ignored cache), as the bench writes them.
		if err := os.MkdirAll("../../../../.cache", 0o755); err != nil {
			t.Fatal(err)
		}
		dir, err := os.MkdirTemp("../../../../.cache", "driver-test-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(t.TempDir(), name), ".")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
}
