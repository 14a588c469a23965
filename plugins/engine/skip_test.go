package engine_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"amid/plugins/engine"
)

// TestConstantPatchSkipsStep trains the 6-stage 2D U-Net the segmentation plugin planned
// for make bench-quality's inia19-quadrants task (widths 8 to 128, a 160 × 128 patch, five
// classes, instance norm, deep supervision) on a patch of one constant value, as a slab's
// empty corner gives. Every instance norm then sees a variance of 0 and its backward
// multiplies the gradient by 1/√ε; through the dozen norms the gradients overflow
// float32. Before the step was skipped, the optimizer wrote NaN into every weight and the
// lane ended with "training diverged at step 2". The step must be reported skipped and
// leave the weights as they were, on the CPU and on the Vulkan device (lavapipe), and the
// next step, on a real image, must train.
func TestConstantPatchSkipsStep(t *testing.T) {
	for _, dev := range []string{"cpu", "vulkan"} {
		t.Run(dev, func(t *testing.T) {
			var be engine.Backend = engine.NewCPU(2)
			if dev == "vulkan" {
				be = deviceBackend(t)
			}
			cfg := engine.UNetConfig{In: 1, Classes: 5, Widths: []int{8, 16, 32, 64, 128, 128},
				Kernels: slices.Repeat([][3]int{{1, 3, 3}}, 6), Pools: slices.Repeat([][3]int{{1, 2, 2}}, 5),
				Convs: 2, Norm: engine.Instance, Slope: 0.01, DeepSupervision: true}
			u, err := engine.BuildUNet(be, cfg, 1, [3]int{1, 160, 128}, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer u.Free()
			opt := engine.NewAdamW(be, u.Params(), 3e-3, 0)
			tr, err := engine.NewTrainer(u.Net, opt, engine.TrainOptions{Clip: 12})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			weights := func() []float32 {
				if err := tr.ToHost(); err != nil {
					t.Fatal(err)
				}
				var w []float32
				for _, p := range u.Params() {
					w = append(w, p.Data...)
				}
				return w
			}
			before := weights()
			clear(u.Input.Data)
			if err := u.SetLabels(make([]int32, len(u.Input.Data))); err != nil {
				t.Fatal(err)
			}
			r, err := tr.Step(3e-3)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Skipped || engine.Finite(r.GradNorm) {
				t.Fatalf("a constant patch: gradient norm %g, skipped %v; want a norm that is not finite, skipped", r.GradNorm, r.Skipped)
			}
			if after := weights(); !slices.Equal(before, after) {
				t.Fatal("the skipped step changed the weights")
			}
			rnd := rand.New(rand.NewPCG(1, 2))
			lab := make([]int32, len(u.Input.Data))
			for i := range u.Input.Data {
				u.Input.Data[i] = float32(rnd.NormFloat64())
				lab[i] = int32(i % 5)
			}
			if err := u.SetLabels(lab); err != nil {
				t.Fatal(err)
			}
			if r, err = tr.Step(3e-3); err != nil {
				t.Fatal(err)
			}
			if r.Skipped || !engine.Finite(r.GradNorm) || math.IsNaN(r.Loss) {
				t.Fatalf("a real patch: %+v; want a finite step", r)
			}
			after := weights()
			if slices.Equal(before, after) {
				t.Fatal("a real patch's step left the weights as they were")
			}
			for _, w := range after {
				if !engine.Finite(float64(w)) {
					t.Fatal("a weight is not finite after the real patch's step")
				}
			}
		})
	}
}
