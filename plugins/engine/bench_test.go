package engine

import "testing"

// BenchmarkUNetStep times a training step of the reference U-Nets (batch 8 of 1×128² with
// widths 32–256, and batch 2 of 1×64³ with widths 16–128).
func BenchmarkUNetStep(b *testing.B) {
	for _, tc := range []struct {
		name   string
		n      int
		patch  [3]int
		widths []int
	}{
		{"2d", 8, [3]int{1, 128, 128}, []int{32, 64, 128, 256}},
		{"3d", 2, [3]int{64, 64, 64}, []int{16, 32, 64, 128}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			be := NewCPU(0)
			cfg := UNetConfig{In: 1, Classes: 2, Widths: tc.widths, Convs: 2, MaxPool: true, Slope: 0.01}
			u := smallUNet(b, be, cfg, tc.n, tc.patch, 1)
			opt := NewAdamW(be, u.Params(), 1e-3, 1e-2)
			b.ResetTimer()
			for range b.N {
				u.Forward()
				u.Backward()
				opt.Step()
			}
			s := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(u.Flops()/s/1e9, "GFLOP/s")
			b.ReportMetric(float64(tc.n)/s, "samples/s")
			b.ReportMetric(float64(u.Bytes())/(1<<20), "MiB")
		})
	}
}

// BenchmarkUNetInfer times the forward pass of one patch (batch 1, as sliding-window
// inference runs it) of the reference U-Nets, with the depth fold and with the column path
// alone, side by side.
func BenchmarkUNetInfer(b *testing.B) {
	for _, tc := range []struct {
		name   string
		patch  [3]int
		widths []int
	}{
		{"2d", [3]int{1, 256, 256}, []int{32, 64, 128, 256}},
		{"3d", [3]int{64, 64, 64}, []int{16, 32, 64, 128}},
	} {
		for _, fold := range []bool{true, false} {
			name := tc.name + "/columns"
			if fold {
				name = tc.name + "/fold"
			}
			b.Run(name, func(b *testing.B) {
				be := NewCPU(0)
				cfg := UNetConfig{In: 1, Classes: 2, Widths: tc.widths, Convs: 2, MaxPool: true, Slope: 0.01}
				u := smallUNet(b, be, cfg, 1, tc.patch, 1, withTiling(tiling{columns: !fold}))
				u.SetTraining(false)
				b.ResetTimer()
				for range b.N {
					u.Forward()
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "patches/s")
			})
		}
	}
}

// BenchmarkUNetInferBuilt times the forward pass of the reference 3D U-Net on two 64³
// patches (the segmentation plugin's batch on two workers) built for training and
// ForInference, side by side, with each one's memory (Net.Bytes: what it allocates; the
// training network's gradients are never touched at inference, so they stay out of the
// resident memory, which make bench-predict measures).
func BenchmarkUNetInferBuilt(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{{"training", nil}, {"inference", []Option{ForInference}}} {
		b.Run(tc.name, func(b *testing.B) {
			be := NewCPU(0)
			cfg := UNetConfig{In: 1, Classes: 4, Widths: []int{16, 32, 64, 128}, Convs: 2, MaxPool: true, Slope: 0.01}
			u := smallUNet(b, be, cfg, 2, [3]int{64, 64, 64}, 1, tc.opts...)
			u.SetTraining(false)
			b.ResetTimer()
			for range b.N {
				u.Forward()
			}
			b.ReportMetric(2*float64(b.N)/b.Elapsed().Seconds(), "patches/s")
			b.ReportMetric(float64(u.Bytes())/(1<<20), "MiB")
		})
	}
}
