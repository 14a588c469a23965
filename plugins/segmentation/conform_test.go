package main

import (
	"testing"

	"amid/viewer/volume"
)

func TestConform(t *testing.T) {
	gray, _ := volume.New(volume.Uint8, [4]int{2, 1, 1, 1})
	gray.SetIndex(0, 10)
	gray.SetIndex(1, 20)
	rgb, err := conform(gray, 3, "g")
	if err != nil || rgb.Dims[3] != 3 || rgb.At(1, 0, 0, 2) != 20 {
		t.Fatalf("gray to RGB: %v %v", rgb, err)
	}
	rgba, _ := volume.New(volume.Uint8, [4]int{1, 1, 1, 4})
	for c, v := range []float64{30, 60, 90, 255} {
		rgba.SetIndex(c, v)
	}
	one, err := conform(rgba, 1, "a")
	// The mean of red, green and blue, without alpha: (30 + 60 + 90) / 3 = 60.
	if err != nil || one.At(0, 0, 0, 0) != 60 {
		t.Errorf("RGBA to gray: %v %v", one, err)
	}
	three, err := conform(rgba, 3, "a")
	if err != nil || three.At(0, 0, 0, 2) != 90 {
		t.Errorf("RGBA to RGB: %v %v", three, err)
	}
	if _, err := conform(gray, 2, "g"); err == nil {
		t.Error("1 to 2 channels was accepted")
	}
}
