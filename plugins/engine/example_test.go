package engine_test

import (
	"fmt"
	"math/rand/v2"

	"amid/plugins/engine"
)

// A 2D U-Net trained for a few steps on one random batch whose label is the sign of the
// image: the loss falls.
func ExampleBuildUNet() {
	be := engine.NewCPU(2)
	cfg := engine.UNetConfig{In: 1, Classes: 2, Widths: []int{8, 16}, Convs: 2, Slope: 0.01}
	u, err := engine.BuildUNet(be, cfg, 2, [3]int{1, 16, 16}, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	r := rand.New(rand.NewPCG(1, 2))
	labels := make([]int32, len(u.Input.Data))
	for i := range u.Input.Data {
		u.Input.Data[i] = float32(r.NormFloat64())
		if u.Input.Data[i] > 0 {
			labels[i] = 1
		}
	}
	if err := u.Loss.SetLabels(labels); err != nil {
		fmt.Println(err)
		return
	}
	opt := engine.NewAdamW(be, u.Params(), 1e-2, 1e-4)
	var first float64
	for step := range 20 {
		u.Forward()
		u.Backward()
		engine.ClipGradNorm(u.Params(), 12)
		opt.Step()
		if step == 0 {
			first = u.Loss.Value()
		}
	}
	fmt.Println("loss fell:", u.Loss.Value() < first/2)
	// Output: loss fell: true
}
