package engine

import "testing"

// Nearest-neighbour upsampling copies each voxel into its block, and its gradients pass
// the finite-difference check of TestGradients.
func TestUpsample(t *testing.T) {
	b := NewBuilder(NewCPU(2), 1)
	x := b.Input(Shape{1, 1, 1, 2, 2})
	y := b.Upsample(x, [3]int{1, 2, 3})
	if _, err := b.Build(); err != nil {
		t.Fatal(err)
	}
	copy(x.Data, []float32{1, 2, 3, 4})
	b.layers[0].forward()
	want := []float32{
		1, 1, 1, 2, 2, 2,
		1, 1, 1, 2, 2, 2,
		3, 3, 3, 4, 4, 4,
		3, 3, 3, 4, 4, 4,
	}
	if y.Shape != (Shape{1, 1, 1, 4, 6}) {
		t.Fatalf("shape %v, want 1×1×1×4×6", y.Shape)
	}
	for i, v := range want {
		if y.Data[i] != v {
			t.Fatalf("output %v, want %v", y.Data, want)
		}
	}
	for _, tc := range []gradCase{
		{name: "upsample 1×2×2", in: Shape{2, 3, 1, 3, 4}, build: func(b *Builder, x *Tensor) *Tensor {
			return b.Upsample(x, [3]int{1, 2, 2})
		}},
		{name: "upsample 2×1×3 after a convolution", in: Shape{1, 2, 2, 3, 2}, build: func(b *Builder, x *Tensor) *Tensor {
			c := b.Conv(x, 2, [3]int{1, 1, 1}, [3]int{1, 1, 1}, [3]int{}, true)
			return b.Upsample(c, [3]int{2, 1, 3})
		}},
	} {
		tc.h, tc.tol = stdStep, stdTol
		runGradCase(t, tc)
	}
}
