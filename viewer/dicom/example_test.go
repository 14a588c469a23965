package dicom_test

import (
	"fmt"

	"amid/viewer/dicom"
)

func ExampleReadFile() {
	// A 4×3 three-frame file written by the package's test generator.
	v, m, err := dicom.ReadFile("testdata/fuzz-seeds/multiframe-positioned.dcm")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(v.Dims, v.DType(), v.Spacing, v.Origin)
	fmt.Println(m.Modality, m.TransferSyntax, m.RescaleSlope, m.RescaleIntercept, m.Slices)
	// Output:
	// [4 3 3 1] int16 [0.25 0.5 1] [-10 -20 30]
	// OT Explicit VR Little Endian 2 -1024 3
}
