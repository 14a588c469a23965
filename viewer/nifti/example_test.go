package nifti_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"amid/viewer/nifti"
	"amid/viewer/volume"
)

func Example() {
	dir, err := os.MkdirTemp("", "nifti-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	v, _ := volume.New(volume.Int16, [4]int{4, 3, 2, 1})
	v.Spacing = [3]float64{0.5, 0.5, 2}
	v.Origin = [3]float64{-10, 20, 30}
	v.SetIndex(v.Index(1, 2, 1, 0), 1234)

	path := filepath.Join(dir, "ct.nii.gz")
	if err := nifti.Write(path, v); err != nil {
		log.Fatal(err)
	}
	w, err := nifti.Read(path)
	if err != nil {
		log.Fatal(err)
	}
	h, _ := nifti.ReadHeader(path)
	fmt.Println(w.Dims, w.DType(), w.Spacing, w.Origin, w.Orientation(), w.At(1, 2, 1, 0))
	fmt.Println(h.Magic, h.SformCode, h.QformCode)
	// Output:
	// [4 3 2 1] int16 [0.5 0.5 2] [-10 20 30] LPS 1234
	// n+1 2 1
}
