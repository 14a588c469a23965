package engine_test

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"amid/plugins/compute"
	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/engine/infer"
	"amid/plugins/engine/vk/vktest"
)

// Checkpoints do not depend on the device: a model trained on the device predicts on the
// CPU, and one trained on the CPU predicts on the device, within the one tolerance table
// of re-runs under another compute identity (compute.Table): label maps, images and
// scores.

// deviceBackend is a Vulkan backend on the test device.
func deviceBackend(t *testing.T) *engine.Vulkan { return engine.NewVulkanOn(vktest.Device(t), 2) }

// signImage is a random image whose label is "above 0.3" (a rule a U-Net learns).
func signImage(r *rand.Rand, n int) ([]float32, []int32) {
	img, lab := make([]float32, n), make([]int32, n)
	for i := range img {
		img[i] = float32(r.NormFloat64())
		if img[i] > 0.3 {
			lab[i] = 1
		}
	}
	return img, lab
}

// trainSeg trains a 2D U-Net on be for steps steps and writes its checkpoint to path.
func trainSeg(t *testing.T, be engine.Backend, cfg engine.UNetConfig, path string, steps int) {
	t.Helper()
	u, err := engine.BuildUNet(be, cfg, 2, [3]int{1, 16, 16}, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Free()
	opt := engine.NewAdamW(be, u.Params(), 1e-2, 1e-4)
	tr, err := engine.NewTrainer(u.Net, opt, engine.TrainOptions{Clip: 12})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	r := rand.New(rand.NewPCG(1, 1))
	for s := range steps {
		img, lab := signImage(r, len(u.Input.Data))
		copy(u.Input.Data, img)
		if err := u.SetLabels(lab); err != nil {
			t.Fatal(err)
		}
		if err := tr.Submit(engine.PolyLR(1e-2, s, steps, 0.9)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.ToHost(); err != nil {
		t.Fatal(err)
	}
	if err := ckpt.Save(path, ckpt.Checkpoint{Arch: cfg, Step: steps, Model: u.Net, Opt: opt}); err != nil {
		t.Fatal(err)
	}
}

// segment loads the checkpoint into a U-Net on be and predicts img with sliding windows.
func segment(t *testing.T, be engine.Backend, cfg engine.UNetConfig, path string, img []float32, dims [3]int) []float32 {
	t.Helper()
	u, err := engine.BuildUNet(be, cfg, 2, [3]int{1, 16, 16}, 99) // another seed: the checkpoint's weights must win
	if err != nil {
		t.Fatal(err)
	}
	defer u.Free()
	if _, err := ckpt.Load(path, cfg, u.Net, nil); err != nil {
		t.Fatal(err)
	}
	u.SetTraining(false)
	nw, err := infer.NewNetWindow(u.Net, u.Input, u.Loss, infer.Options{Patch: [3]int{16, 16, 1}, Channels: 1, Classes: 2, Mirror: true, Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer nw.Close()
	prob, err := nw.Run(img, dims)
	if err != nil {
		t.Fatal(err)
	}
	return prob
}

func TestCrossDeviceSegmentation(t *testing.T) {
	v := deviceBackend(t)
	cfg := engine.UNetConfig{In: 1, Classes: 2, Widths: []int{8, 16}, Convs: 2, Slope: 0.01}
	dims := [3]int{40, 36, 2}
	img, truth := signImage(rand.New(rand.NewPCG(7, 7)), dims[0]*dims[1]*dims[2])
	dir := t.TempDir()
	for _, tc := range []struct {
		name        string
		train, pred engine.Backend
	}{{"trained on the device, predicted on the CPU", v, engine.NewCPU(2)}, {"trained on the CPU, predicted on the device", engine.NewCPU(2), v}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "seg.ckpt")
			trainSeg(t, tc.train, cfg, path, 60)
			same := infer.Argmax(segment(t, tc.train, cfg, path, img, dims), 2)
			other := infer.Argmax(segment(t, tc.pred, cfg, path, img, dims), 2)
			right := 0
			for i, l := range same {
				if l == truth[i] {
					right++
				}
			}
			// A constant guess is right on P(N(0,1) ≤ 0.3) = 62 % of the voxels.
			acc := float64(right) / float64(len(truth))
			t.Logf("accuracy %.3f", acc)
			if acc < 0.85 {
				t.Errorf("accuracy %.3f: the model did not learn", acc)
			}
			a := compute.NewAgreement(compute.Table)
			a.Labels("case", same, other)
			t.Log(a.Summary())
			if !a.OK() {
				t.Error(a.Problems)
			}
		})
	}
}

// An image-to-image model (residual U-Net with the image loss) and a score head (global
// average pool, dense, regression loss) trained on the device predict on the CPU within
// the table's image and score bounds.
func TestCrossDeviceImageAndScore(t *testing.T) {
	v := deviceBackend(t)
	cfg := engine.UNetConfig{In: 1, Classes: 1, Widths: []int{4, 8}, Convs: 1, Slope: 0.01}
	lcfg := engine.ImageLossConfig{L1: 0.16, SSIM: 0.84, Window: 7, Range: 4}
	build := func(be engine.Backend) *engine.ResUNet {
		u, err := engine.BuildResUNet(be, cfg, 2, [3]int{1, 16, 16}, 5, lcfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(u.Free)
		return u
	}
	dev, cpu := build(v), build(engine.NewCPU(2))
	tr, err := engine.NewTrainer(dev.Net, engine.NewAdamW(v, dev.Params(), 3e-3, 1e-4), engine.TrainOptions{Clip: 12})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	r := rand.New(rand.NewPCG(2, 2))
	noisy := func() ([]float32, []float32) {
		clean, in := make([]float32, len(dev.Input.Data)), make([]float32, len(dev.Input.Data))
		for i := range clean {
			clean[i] = float32(math.Sin(float64(i%16)/3) + math.Cos(float64(i/16%16)/4))
			in[i] = clean[i] + float32(0.3*r.NormFloat64())
		}
		return in, clean
	}
	for range 10 {
		in, clean := noisy()
		copy(dev.Input.Data, in)
		if err := dev.Loss.SetTarget(clean); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Step(3e-3); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.ToHost(); err != nil {
		t.Fatal(err)
	}
	for i, p := range dev.Params() {
		copy(cpu.Params()[i].Data, p.Data)
	}
	in, _ := noisy()
	outs := make([][]float64, 2)
	for k, u := range []*engine.ResUNet{dev, cpu} {
		pr, err := engine.NewPredictor(u.Net, u.Output)
		if err != nil {
			t.Fatal(err)
		}
		copy(u.Input.Data, in)
		if err := pr.Run(); err != nil {
			t.Fatal(err)
		}
		for _, x := range u.Output.Values() {
			outs[k] = append(outs[k], float64(x))
		}
		pr.Close()
	}
	a := compute.NewAgreement(compute.Table)
	a.Image("restored image", outs[1], outs[0])

	// Scores: a regression head on a small encoder.
	scoreNet := func(be engine.Backend) (*engine.Net, *engine.Tensor, *engine.Tensor, *engine.RegressionLoss) {
		b := engine.NewBuilder(be, 9)
		x := b.Input(engine.Shape{N: 4, C: 1, D: 1, H: 12, W: 12})
		h := b.Norm(b.Conv(x, 6, [3]int{1, 3, 3}, [3]int{1, 2, 2}, [3]int{0, 1, 1}, true), engine.Instance, 0.01)
		out := b.Dense(b.GlobalAvgPool(h), 1)
		l := b.RegressionLoss(out, engine.RegressionWeights{MSE: 1, Corr: 0.5})
		n, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Free)
		return n, x, out, l
	}
	dn, dx, dout, dl := scoreNet(v)
	cn, cx, cout, _ := scoreNet(engine.NewCPU(2))
	str, err := engine.NewTrainer(dn, engine.NewAdam(v, dn.Params(), 1e-2), engine.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer str.Close()
	targets := make([]float32, 4)
	for range 10 {
		for n := range 4 {
			targets[n] = float32(r.IntN(5))
			for i := range dx.Sample(n) {
				dx.Sample(n)[i] = targets[n]*0.2 + float32(r.NormFloat64())
			}
		}
		if err := dl.SetTargets(targets); err != nil {
			t.Fatal(err)
		}
		if _, err := str.Step(1e-2); err != nil {
			t.Fatal(err)
		}
	}
	if err := str.ToHost(); err != nil {
		t.Fatal(err)
	}
	for i, p := range dn.Params() {
		copy(cn.Params()[i].Data, p.Data)
	}
	for i := range dx.Data {
		dx.Data[i] = float32(r.NormFloat64())
	}
	copy(cx.Data, dx.Data)
	dp, err := engine.NewPredictor(dn, dout)
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	cp, _ := engine.NewPredictor(cn, cout)
	if err := dp.Run(); err != nil {
		t.Fatal(err)
	}
	if err := cp.Run(); err != nil {
		t.Fatal(err)
	}
	for n := range 4 {
		a.Score("score", float64(cout.Values()[n]), float64(dout.Values()[n]), 4) // targets span 0…4
	}
	t.Log(a.Summary())
	if !a.OK() {
		t.Error(a.Problems)
	}
}
