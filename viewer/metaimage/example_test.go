package metaimage_test

import (
	"fmt"
	"os"
	"path/filepath"

	"amid/viewer/metaimage"
	"amid/viewer/volume"
)

// Writing a compressed .mha and reading it back.
func ExampleWrite() {
	v, _ := volume.New(volume.Int16, [4]int{4, 3, 2, 1})
	v.Spacing = [3]float64{0.5, 0.5, 2}
	v.Origin = [3]float64{-10, 20, 5}
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "ct.mha")
	if err := metaimage.Write(p, v); err != nil {
		fmt.Println(err)
		return
	}
	back, err := metaimage.Read(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(back.Dims, back.DType(), back.Spacing, back.Origin)
	// Output: [4 3 2 1] int16 [0.5 0.5 2] [-10 20 5]
}
