package infer

import (
	"slices"
	"testing"
)

// FuzzPostProcess: on any small label map, KeepLargest and RemoveSmall only clear voxels,
// FillHoles only fills background voxels, and a second FillHoles changes nothing.
func FuzzPostProcess(f *testing.F) {
	f.Add(uint8(3), uint8(3), []byte{0, 1, 0, 1, 0, 1, 0, 1, 0, 2, 2, 2, 2, 0, 2, 2, 2, 2, 0, 1, 0, 1, 0, 1, 0, 1, 0}, uint8(2))
	f.Add(uint8(5), uint8(1), []byte{1, 1, 0, 1, 1}, uint8(3))
	f.Fuzz(func(t *testing.T, x, y uint8, raw []byte, minSize uint8) {
		X, Y := int(x%8)+1, int(y%8)+1
		if len(raw) < X*Y || len(raw) > 512 {
			return
		}
		Z := len(raw) / (X * Y)
		dims := [3]int{X, Y, Z}
		lab := make([]int32, X*Y*Z)
		for i := range lab {
			lab[i] = int32(raw[i] % 4)
		}
		for _, op := range []func([]int32){
			func(l []int32) { KeepLargest(l, dims) },
			func(l []int32) { RemoveSmall(l, dims, int(minSize)) },
		} {
			got := slices.Clone(lab)
			op(got)
			for i := range got {
				if got[i] != lab[i] && got[i] != 0 {
					t.Fatalf("voxel %d: %d became %d", i, lab[i], got[i])
				}
			}
		}
		got := slices.Clone(lab)
		FillHoles(got, dims)
		for i := range got {
			if got[i] != lab[i] && lab[i] != 0 {
				t.Fatalf("voxel %d: %d became %d", i, lab[i], got[i])
			}
		}
		again := slices.Clone(got)
		FillHoles(again, dims)
		if !slices.Equal(again, got) {
			t.Fatal("FillHoles not idempotent")
		}
	})
}
