package nrrd_test

import (
	"fmt"

	"amid/viewer/nrrd"
)

// A 3D Slicer segmentation: the labelmap and the segments its key/value pairs describe.
func ExampleReadImage() {
	im, err := nrrd.ReadImage("testdata/gen_seg.seg.nrrd")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(im.Volume.Dims, im.Volume.DType(), im.Volume.Orientation())
	for _, s := range im.Segments {
		fmt.Printf("%s %q label %d layer %d\n", s.ID, s.Name, s.LabelValue, s.Layer)
	}
	// Output:
	// [6 5 4 1] uint8 LPS
	// Segment_1 "liver" label 1 layer 0
	// Segment_2 "tumor" label 2 layer 0
}
