package infer_test

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"amid/plugins/compute"
	"amid/plugins/engine"
	"amid/plugins/engine/infer"
	"amid/plugins/engine/vk/vktest"
)

func TestMain(m *testing.M) {
	vktest.Pin()
	os.Exit(m.Run())
}

// netWindow builds cfg (seed 1, inference mode) for batch n on be and its NetWindow.
func netWindow(t *testing.T, be engine.Backend, cfg engine.UNetConfig, n int, patch [3]int, opt infer.Options) *infer.NetWindow {
	t.Helper()
	u, err := engine.BuildUNet(be, cfg, n, patch, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.Free)
	u.SetTraining(false)
	nw, err := infer.NewNetWindow(u.Net, u.Input, u.Loss, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nw.Close)
	return nw
}

// Sliding windows on the device (cut, flipped, summed there) give the CPU's
// probabilities: a 3D U-Net with batch norm (running statistics in inference), windows
// overlapping and an image smaller than the patch along one axis, mirrored and not, batch
// 1 and 3 (3 does not divide the 8 flips of a window, so batches straddle windows).
func TestNetWindowOnDevice(t *testing.T) {
	d := vktest.Device(t)
	v := engine.NewVulkanOn(d, 2)
	cfg := engine.UNetConfig{In: 2, Classes: 3, Widths: []int{4, 8}, Convs: 1, MaxPool: true, Norm: engine.Batch, Slope: 0.01}
	patch := [3]int{8, 8, 4}  // D, H, W = Z, Y, X
	dims := [3]int{7, 13, 11} // X < patch X: one centred window
	r := rand.New(rand.NewPCG(4, 1))
	img := make([]float32, 2*dims[0]*dims[1]*dims[2])
	for i := range img {
		img[i] = float32(r.NormFloat64())
	}
	for _, mirror := range []bool{false, true} {
		for _, batch := range []int{1, 3} {
			opt := infer.Options{Patch: [3]int{patch[2], patch[1], patch[0]}, Channels: 2, Classes: 3, Mirror: mirror, Batch: batch}
			cpu, dev := netWindow(t, engine.NewCPU(2), cfg, batch, patch, opt), netWindow(t, v, cfg, batch, patch, opt)
			want, err := cpu.Run(img, dims)
			if err != nil {
				t.Fatal(err)
			}
			got, err := dev.Run(img, dims)
			if err != nil {
				t.Fatal(err)
			}
			// Stream hands the same values slice by slice on either backend.
			for name, nw := range map[string]*infer.NetWindow{"cpu": cpu, "device": dev} {
				var res []float32
				if err := nw.Stream(img, dims, collectPlanes(&res, dims, 3)); err != nil {
					t.Fatal(err)
				}
				if ref := map[string][]float32{"cpu": want, "device": got}[name]; !slices.Equal(res, ref) {
					t.Errorf("mirror %v, batch %d: %s Stream differs from its Run", mirror, batch, name)
				}
			}
			worst := 0.0
			for i, p := range want {
				worst = max(worst, math.Abs(float64(got[i]-p)))
			}
			// Probabilities in [0, 1]: the network's float32 rounding (parity 1e-4 of the
			// range at most, in practice 1e-7) and float32 sums of at most 8·4 windows.
			t.Logf("mirror %v, batch %d: largest difference %.3g", mirror, batch, worst)
			if worst > 1e-5 {
				t.Errorf("mirror %v, batch %d: device windows differ from the CPU's by %g", mirror, batch, worst)
			}
			a := compute.NewAgreement(compute.Table)
			a.Labels("case", infer.Argmax(want, 3), infer.Argmax(got, 3))
			if !a.OK() {
				t.Errorf("mirror %v, batch %d: %v", mirror, batch, a.Problems)
			}
		}
	}
}

// collectPlanes is a Sink that copies each slice into K planes of dims in *res.
func collectPlanes(res *[]float32, dims [3]int, K int) infer.Sink {
	XY, N := dims[0]*dims[1], dims[0]*dims[1]*dims[2]
	*res = make([]float32, K*N)
	return func(z int, slice []float32) {
		for k := range K {
			copy((*res)[k*N+z*XY:k*N+(z+1)*XY], slice[k*XY:(k+1)*XY])
		}
	}
}
