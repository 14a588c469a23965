package assets

import (
	"bytes"
	"image/png"
	"testing"

	"amid/host/synth"
	"amid/viewer/nifti"
	"amid/viewer/volume"
)

// The committed sample study must be exactly what its generator makes: regenerate it in
// memory and compare voxel by voxel and the geometry.
func TestSampleMatchesGenerator(t *testing.T) {
	ct, labels, err := synth.SampleStudy()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		file []byte
		want *volume.Volume
	}{{SampleCTPath, SampleCT, ct}, {SampleLabelsPath, SampleLabels, labels}} {
		got, err := nifti.Decode(bytes.NewReader(c.file), c.name)
		if err != nil {
			t.Fatal(err)
		}
		if got.DType() != c.want.DType() || got.Dims != c.want.Dims {
			t.Fatalf("%s: %v %v, generator makes %v %v (run: go run assets/gen/sample.go)", c.name, got.DType(), got.Dims, c.want.DType(), c.want.Dims)
		}
		// NIfTI stores the affine in float32: geometry agrees to float32 precision.
		if !volume.SameGrid(got, c.want, 1e-4) {
			t.Fatalf("%s: geometry %v %v differs from the generator's %v %v", c.name, got.Spacing, got.Origin, c.want.Spacing, c.want.Origin)
		}
		for i := 0; i < got.Len(); i++ {
			if got.AtIndex(i) != c.want.AtIndex(i) {
				t.Fatalf("%s: voxel %d is %v, generator makes %v (run: go run assets/gen/sample.go)", c.name, i, got.AtIndex(i), c.want.AtIndex(i))
			}
		}
	}
}

func TestIcon(t *testing.T) {
	img, err := png.Decode(bytes.NewReader(Icon))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 256 || b.Dy() != 256 {
		t.Fatalf("icon is %v, want 256×256 (assets/gen/icon.go)", b)
	}
}
