package volume

import (
	"math"
	"testing"
)

func TestResampleTo(t *testing.T) {
	// src: 4×4×2 voxels of 2 mm holding x + 10y + 100z (a linear ramp, which trilinear
	// interpolation reproduces exactly inside the volume).
	src, _ := New(Float32, [4]int{4, 4, 2, 1})
	src.Spacing = [3]float64{2, 2, 2}
	src.Direction = [9]float64{1, 0, 0, 0, 1, 0, 0, 0, 1}
	for z := range 2 {
		for y := range 4 {
			for x := range 4 {
				src.SetIndex(src.Index(x, y, z, 0), float64(x+10*y+100*z))
			}
		}
	}
	// ref: 1 mm voxels over the same field, shifted by half a source voxel.
	ref, _ := New(Uint8, [4]int{6, 6, 2, 1})
	ref.Spacing = [3]float64{1, 1, 2}
	ref.Origin = [3]float64{1, 1, 0}
	ref.Direction = src.Direction
	out, err := ResampleTo(src, ref, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][3]int{{0, 0, 0}, {3, 2, 1}, {5, 5, 0}} {
		// ref voxel (x, y, z) is at world (1 + x, 1 + y, 2z): source index ((1+x)/2, (1+y)/2, z).
		want := (1+float64(c[0]))/2 + 10*(1+float64(c[1]))/2 + 100*float64(c[2])
		if got := out.At(c[0], c[1], c[2], 0); math.Abs(got-want) > 1e-4 {
			t.Errorf("voxel %v = %v, want %v", c, got, want)
		}
	}
	near, _ := ResampleTo(src, ref, false)
	// Nearest: (1+5)/2 = 3 exactly for x = 5; outside the source (none here) would be 0.
	if got := near.At(5, 5, 0, 0); got != 3+30 {
		t.Errorf("nearest voxel (5,5,0) = %v, want 33", got)
	}
	if out.Spacing != ref.Spacing || out.Dims[0] != 6 {
		t.Errorf("output grid %v %v", out.Dims, out.Spacing)
	}
}
