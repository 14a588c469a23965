package engine

import (
	"math"
	"testing"

	"amid/plugins/engine/vk"
)

// TestTrainingBytesMatchesDriver sizes the training of a 2D and a 3D U-Net without a
// device (TrainingBytes) and then builds them on the test device with a trainer and runs
// a step: the estimate must be within 10 % of the memory the driver reports it took
// (vk.Device.Usage: VK_EXT_memory_budget where the driver has it, glibc's mallinfo2 on
// lavapipe, whose device memory is the C heap), measured after the device's pipelines
// exist (a first build compiles them; the estimate leaves them out, as every network on a
// device shares them). The networks are sized to hold tens of MiB, so that the driver's
// small fixed costs (command buffers, descriptor sets) stay within the bound while the
// test stays short on lavapipe.
func TestTrainingBytesMatchesDriver(t *testing.T) {
	v := faultyVulkan(t, vk.Options{}) // a device of its own: nothing else allocates there
	if _, src, ok := v.dev.Usage(); !ok {
		t.Fatalf("the driver of %s reports no memory usage", v.Info().Name)
	} else {
		t.Logf("driver usage from %s", src)
	}
	for _, tc := range []struct {
		name  string
		cfg   UNetConfig
		batch int
		patch [3]int
	}{
		{"2d", UNetConfig{In: 1, Classes: 3, Widths: []int{4, 8, 16}, Convs: 2, Norm: Instance, Slope: 0.01}, 2, [3]int{1, 128, 128}},
		{"3d", UNetConfig{In: 1, Classes: 2, Widths: []int{4, 8}, Convs: 2, Norm: Batch, Slope: 0.01, MaxPool: true}, 1, [3]int{32, 32, 32}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func(be Backend) (*Net, Optimizer, error) {
				u, err := BuildUNet(be, tc.cfg, tc.batch, tc.patch, 1)
				if err != nil {
					return nil, nil, err
				}
				return u.Net, NewAdamW(be, u.Params(), 1e-3, 1e-4), nil
			}
			opts := TrainOptions{Clip: 12}
			est, err := TrainingBytes(v.Info(), opts, build)
			if err != nil {
				t.Fatal(err)
			}
			train := func(step bool) (grew float64, held int64) {
				before, _, _ := v.dev.Usage()
				net, opt, err := build(v)
				if err != nil {
					t.Fatal(err)
				}
				defer net.Free()
				tr, err := NewTrainer(net, opt, opts)
				if err != nil {
					t.Fatal(err)
				}
				defer tr.Close()
				peak := uint64(0)
				sample := func() {
					u, _, _ := v.dev.Usage()
					peak = max(peak, u)
				}
				sample()
				if step {
					if _, err := tr.Step(1e-3); err != nil {
						t.Fatal(err)
					}
					sample()
					if err := tr.ToHost(); err != nil {
						t.Fatal(err)
					}
					sample()
				}
				held, _ = v.dev.Held()
				return float64(peak) - float64(before), held
			}
			train(false) // records the step: compiles the pipelines
			got, held := train(true)
			rel := (float64(est) - got) / got
			t.Logf("estimate %.1f MiB, driver %.1f MiB (%+.1f %%), held by the engine %.1f MiB", float64(est)/(1<<20), got/(1<<20), 100*rel, float64(held)/(1<<20))
			if math.Abs(rel) > 0.10 {
				t.Errorf("estimate %d bytes, the driver took %.0f: %+.1f %%, beyond 10 %%", est, got, 100*rel)
			}
		})
	}
}
