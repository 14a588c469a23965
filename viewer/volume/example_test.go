package volume_test

import (
	"fmt"

	"amid/viewer/volume"
)

// A 4×3×2 CT-like volume: flat row-major int16 voxels (x fastest, then y, then z), 0.5 mm
// in-plane and 2 mm slices, placed in the LPS patient frame. The voxel at index (3, 2, 1)
// sits at Origin + Spacing·index, since the direction is the identity.
func Example() {
	v, err := volume.New(volume.Int16, [4]int{4, 3, 2, 1})
	if err != nil {
		panic(err)
	}
	v.Spacing = [3]float64{0.5, 0.5, 2}
	v.Origin = [3]float64{-100, -80, 30}
	hu := v.Data.([]int16)
	for i := range hu {
		hu[i] = -1000 // air
	}
	hu[v.Index(1, 1, 0, 0)] = 40 // soft tissue
	v.SetIndex(v.Index(3, 2, 1, 0), 700)

	st := v.Stats()
	fmt.Println("dims", v.Dims, "voxels", v.NumVoxels(), v.Orientation())
	fmt.Println("value at (1,1,0):", v.At(1, 1, 0, 0), "flat index of (3,2,1):", v.Index(3, 2, 1, 0))
	fmt.Println("(3,2,1) in mm:", v.VoxelToWorld([3]float64{3, 2, 1}))
	fmt.Printf("min %g, max %g\n", st.Min, st.Max)
	// Output:
	// dims [4 3 2 1] voxels 24 LPS
	// value at (1,1,0): 40 flat index of (3,2,1): 23
	// (3,2,1) in mm: [-98.5 -79 32]
	// min -1000, max 700
}

// Labels counts the voxels of each value of a label map.
func ExampleVolume_Labels() {
	lab, _ := volume.New(volume.Uint8, [4]int{3, 2, 1, 1})
	copy(lab.Data.([]uint8), []uint8{0, 0, 1, 2, 2, 2})
	counts, ok := lab.Labels(256)
	fmt.Println(counts, ok)
	// Output: [{0 2} {1 1} {2 3}] true
}
