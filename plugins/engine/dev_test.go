package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"amid/plugins/engine/vk"
	"amid/plugins/engine/vk/vktest"
)

func TestMain(m *testing.M) {
	vktest.Pin() // lavapipe's vector width, before any Vulkan instance exists
	os.Exit(m.Run())
}

// testVulkan is a Vulkan backend on the shared test device with 2 host workers.
func testVulkan(t testing.TB) *Vulkan {
	t.Helper()
	return NewVulkanOn(vktest.Device(t), 2)
}

// devProbe is grad_test's probe with a device backward pass: it ends a test network with
// L = Σ w·y, w fixed random, so that y's gradient is w.
type devProbe struct {
	probe
	tab *vk.Buffer
}

func (p *devProbe) devInit(dn *devNet) error {
	bits := make([]uint32, len(p.w))
	for i, v := range p.w {
		bits[i] = math.Float32bits(float32(v))
	}
	var err error
	p.tab, err = dn.table(bits)
	return err
}

func (p *devProbe) devForward(*rec) {}

func (p *devProbe) devBackward(r *rec) {
	s := p.y.Shape
	r.eltwise(s.N, s.Sample(), p.tab, 0, s.Sample(), 1, nil, 0, 0, 0, p.y.dg, p.y.off, p.y.stride, p.acc)
}

// A probe's w as float32 is what the CPU's probe hands on too: both read float32(w).
func (p *devProbe) backward() {
	for n := range p.y.Shape.N {
		g := p.y.GradSample(n)
		for i := range g {
			g[i] = float32(p.w[n*p.y.Shape.Sample()+i])
		}
	}
}

// parityCase is a sub-network built alike on the CPU and on the device.
type parityCase struct {
	name string
	in   Shape
	// build adds the layers on x and returns their output (ended by a probe) or, when the
	// sub-network ends in a loss layer, nil and that layer.
	build func(b *Builder, x *Tensor) (*Tensor, layer)
	// targets sets the loss layer's targets from r (the same on both sides).
	targets func(r *rand.Rand, l layer) error
	// inference runs the forward pass alone in inference mode.
	inference bool
	tol       float64
	// tiles, when set, replaces every GEMM tile shape of the device's convolutions.
	tiles *gemmCfg
}

// parityNet is one side of a parity case.
type parityNet struct {
	net  *Net
	x    *Tensor
	out  *Tensor
	loss layer
}

func buildParity(t *testing.T, be Backend, tc parityCase) *parityNet {
	t.Helper()
	b := NewBuilder(be, 7)
	x := b.tensor(tc.in, true)
	out, loss := tc.build(b, x)
	pn := &parityNet{x: x, out: out, loss: loss}
	if out != nil {
		r := rand.New(rand.NewPCG(5, 6))
		pr := &devProbe{probe: probe{y: out, w: make([]float64, out.Shape.Len())}}
		for i := range pr.w {
			pr.w[i] = r.NormFloat64()
		}
		b.use(out, &pr.acc)
		b.layers = append(b.layers, pr)
	}
	net, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	pn.net = net
	t.Cleanup(net.Free)
	r := rand.New(rand.NewPCG(3, 4))
	if x.Data == nil {
		x.Data = make([]float32, x.Shape.Len())
	}
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64())
	}
	// Biases and norm parameters start at 0 and 1: move them to a generic point.
	for _, p := range net.Params() {
		if !p.Decay {
			for i := range p.Data {
				p.Data[i] += float32(0.3 * r.NormFloat64())
			}
		}
	}
	if tc.targets != nil {
		if err := tc.targets(rand.New(rand.NewPCG(8, 9)), loss); err != nil {
			t.Fatal(err)
		}
	}
	if tc.inference {
		net.SetTraining(false)
	}
	if net.dev != nil && tc.tiles != nil {
		for _, l := range net.layers {
			if c, ok := l.(*conv); ok {
				d := c.dv
				d.fwd, d.wgr, d.dgr = *tc.tiles, *tc.tiles, *tc.tiles
				d.parts, d.chunk = splitK(d.cout, d.K, d.n*d.P, d.wgr)
			}
		}
	}
	if net.dev != nil {
		if err := net.dev.pushParams(nil, false); err != nil {
			t.Fatal(err)
		}
		if err := net.dev.put([]*Tensor{x}, false); err != nil {
			t.Fatal(err)
		}
	}
	return pn
}

// devRun runs the forward (and backward) pass of a device network once and reads the
// scalars, the parameters and their gradients back.
func devRun(t *testing.T, dn *devNet, backward bool) {
	t.Helper()
	stage, err := dn.d.AllocHost(dn.stage, false)
	if err != nil {
		t.Fatal(err)
	}
	defer stage.Free()
	back, err := dn.d.AllocHost(int64(4*dn.nscal), true)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Free()
	dn.fillStage(stage, nil, true)
	r, err := dn.newRec(false)
	if err != nil {
		t.Fatal(err)
	}
	r.training = dn.n.training
	r.upload(stage, true)
	r.zeroGrads()
	L := len(dn.n.layers)
	r.forward(0, L)
	if backward {
		r.backward(L, 0)
	}
	r.p.Copy(vk.W(back), vk.R(dn.scal), int64(4*dn.nscal))
	p, err := r.end()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	sc := floats(back.Host())
	for _, l := range dn.n.layers {
		if dl, ok := l.(devLoss); ok {
			dl.devValues(sc)
		}
	}
	if err := dn.pullParams(nil); err != nil {
		t.Fatal(err)
	}
}

// relErr is max|got − want| over max|want|: the error relative to the tensor's range.
func relErr(got, want []float32) float64 {
	var d, m float64
	for i, w := range want {
		d = max(d, math.Abs(float64(got[i])-float64(w)))
		m = max(m, math.Abs(float64(w)))
	}
	if m == 0 {
		return d
	}
	return d / m
}

// parityTol is the default bound of relErr between the device and the CPU: float32
// results summed in different orders (tiles, chunks, trees against OpenBLAS's blocks and
// float64 partial sums) differ by a few units of 2⁻²⁴ per term; 1e-4 of the range is the
// issue's bound.
const parityTol = 1e-4

func runParity(t *testing.T, tc parityCase) {
	t.Helper()
	v := testVulkan(t)
	cpu := buildParity(t, NewCPU(2), tc)
	dev := buildParity(t, v, tc)
	tol := tc.tol
	if tol == 0 {
		tol = parityTol
	}
	cpu.net.Forward()
	if !tc.inference {
		cpu.net.Backward()
	}
	devRun(t, dev.net.dev, !tc.inference)
	check := func(what string, got, want []float32) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %s: %d values on the device, %d on the CPU", tc.name, what, len(got), len(want))
		}
		e := relErr(got, want)
		if testing.Verbose() {
			t.Logf("%s: %s: relative error %.3g", tc.name, what, e)
		}
		if !(e <= tol) {
			t.Errorf("%s: %s: relative error %.3g > %g", tc.name, what, e, tol)
		}
	}
	if cpu.out != nil {
		if err := dev.net.dev.fetch([]*Tensor{dev.out}, false); err != nil {
			t.Fatal(err)
		}
		check("output", sampleValues(dev.out, false), sampleValues(cpu.out, false))
	} else {
		cv, dv := cpu.net.lossValue(), dev.net.lossValue()
		check("loss", []float32{float32(dv)}, []float32{float32(cv)})
		if o, ok := cpu.loss.(Output); ok {
			h, _ := o.outBuf()
			dh, db := dev.loss.(Output).outBuf()
			if err := dev.net.dev.transfer([]copyJob{{dh, vk.Binding{Buf: db, Size: int64(4 * len(dh)), Write: true}}}, false, false, nil); err != nil {
				t.Fatal(err)
			}
			check("probabilities", dh, h)
		}
	}
	if tc.inference {
		return
	}
	if err := dev.net.dev.fetch([]*Tensor{dev.x}, true); err != nil {
		t.Fatal(err)
	}
	check("input gradient", sampleValues(dev.x, true), sampleValues(cpu.x, true))
	for i, p := range cpu.net.Params() {
		check(p.Name+" gradient", dev.net.Params()[i].Grad, p.Grad)
	}
}

// sampleValues gathers a tensor's samples (values or gradients) in order.
func sampleValues(t *Tensor, grad bool) []float32 {
	var out []float32
	for n := range t.Shape.N {
		if grad {
			out = append(out, t.GradSample(n)...)
		} else {
			out = append(out, t.Sample(n)...)
		}
	}
	return out
}

func conv3(x *Tensor, b *Builder, cout int, k, s, p [3]int) *Tensor {
	return b.Conv(x, cout, k, s, p, true)
}

func TestDeviceConvParity(t *testing.T) {
	one, k33, p11 := [3]int{1, 1, 1}, [3]int{1, 3, 3}, [3]int{0, 1, 1}
	for _, tc := range []struct {
		name    string
		in      Shape
		cout    int
		k, s, p [3]int
	}{
		{"2d 3x3", Shape{2, 3, 1, 9, 11}, 5, k33, one, p11},
		{"2d 3x3 stride 2", Shape{2, 3, 1, 9, 11}, 4, k33, [3]int{1, 2, 2}, p11},
		{"2d 5x3 no padding", Shape{2, 2, 1, 8, 7}, 3, [3]int{1, 5, 3}, one, [3]int{}},
		{"2d 1x1", Shape{3, 4, 1, 5, 6}, 6, one, one, [3]int{}},
		{"3d 3x3x3", Shape{2, 2, 5, 6, 7}, 3, [3]int{3, 3, 3}, one, one},
		{"3d anisotropic stride", Shape{2, 2, 5, 6, 7}, 4, [3]int{1, 3, 3}, [3]int{1, 2, 2}, p11},
		{"3d stride 2 all axes", Shape{1, 3, 6, 6, 5}, 2, [3]int{3, 3, 3}, [3]int{2, 2, 2}, one},
		{"wide tiles (40 outputs)", Shape{2, 5, 1, 6, 6}, 40, k33, one, p11},
		{"large tiles (130 outputs)", Shape{1, 3, 1, 4, 5}, 130, k33, one, p11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runParity(t, parityCase{name: tc.name, in: tc.in, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
				return conv3(x, b, tc.cout, tc.k, tc.s, tc.p), nil
			}})
		})
	}
}

// Every tile shape, each forced on convolutions whose sizes are not multiples of the tiles
// (padding rows and columns, a reduction shorter than a tile step).
func TestDeviceTileShapes(t *testing.T) {
	for _, cfg := range []gemmCfg{gemmS, gemmM, gemmL, gemmXL} {
		t.Run(fmt.Sprintf("%dx%d", cfg.BM, cfg.BN), func(t *testing.T) {
			c := cfg
			runParity(t, parityCase{name: fmt.Sprint(cfg), in: Shape{2, 3, 1, 7, 6}, tiles: &c, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
				y := b.Conv(x, 19, [3]int{1, 3, 3}, [3]int{1, 1, 1}, [3]int{0, 1, 1}, true)
				return b.Conv(y, 2, [3]int{1, 1, 1}, [3]int{1, 1, 1}, [3]int{}, false), nil
			}})
		})
	}
}

func TestDeviceConvTransposeParity(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      Shape
		cout    int
		k, s, p [3]int
	}{
		{"2d up 2", Shape{2, 4, 1, 4, 5}, 3, [3]int{1, 2, 2}, [3]int{1, 2, 2}, [3]int{}},
		{"3d up 2", Shape{2, 3, 3, 2, 4}, 2, [3]int{2, 2, 2}, [3]int{2, 2, 2}, [3]int{}},
		{"3d up (1,2,2)", Shape{1, 3, 2, 3, 3}, 4, [3]int{1, 2, 2}, [3]int{1, 2, 2}, [3]int{}},
		{"2d k3 s2 p1 (overlapping)", Shape{2, 3, 1, 4, 4}, 2, [3]int{1, 3, 3}, [3]int{1, 2, 2}, [3]int{0, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runParity(t, parityCase{name: tc.name, in: tc.in, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
				return b.ConvTranspose(x, tc.cout, tc.k, tc.s, tc.p, true), nil
			}})
		})
	}
}

func TestDeviceLayerParity(t *testing.T) {
	k33, one, p11 := [3]int{1, 3, 3}, [3]int{1, 1, 1}, [3]int{0, 1, 1}
	cases := []parityCase{
		{name: "instance norm + leaky", in: Shape{2, 3, 1, 7, 9}, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
			return b.Norm(x, Instance, 0.01), nil
		}},
		{name: "instance norm, no activation", in: Shape{2, 3, 2, 5, 6}, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
			return b.Norm(x, Instance, -1), nil
		}},
		{name: "batch norm + leaky", in: Shape{3, 2, 1, 6, 7}, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
			return b.Norm(x, Batch, 0.01), nil
		}},
		{name: "batch norm, inference", in: Shape{3, 2, 1, 6, 7}, inference: true, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
			return b.Norm(x, Batch, 0.01), nil
		}},
		{name: "max-pool 2d odd", in: Shape{2, 3, 1, 7, 9}, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
			return b.MaxPool(x, [3]int{1, 2, 2}), nil
		}},
		{name: "max-pool 3d", in: Shape{2, 2, 4, 6, 5}, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
			return b.MaxPool(x, [3]int{2, 2, 2}), nil
		}},
		{name: "concatenation of two branches", in: Shape{2, 2, 1, 6, 5}, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
			a := b.Conv(x, 3, k33, one, p11, true)
			c := b.Norm(b.Conv(x, 2, k33, one, p11, false), Instance, 0.01)
			return b.Conv(b.Concat(a, c), 4, k33, one, p11, true), nil
		}},
		{name: "residual sum", in: Shape{2, 3, 1, 5, 6}, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
			return b.Add(x, b.Conv(x, 3, k33, one, p11, true)), nil
		}},
		{name: "sum of a tensor with itself", in: Shape{2, 2, 1, 4, 4}, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
			y := b.Conv(x, 2, k33, one, p11, true)
			return b.Add(y, y), nil
		}},
		{name: "global average pool + dense", in: Shape{3, 4, 2, 3, 5}, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
			return b.Dense(b.GlobalAvgPool(x), 5), nil
		}},
		{name: "dense on a volume", in: Shape{4, 2, 1, 3, 3}, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
			return b.Dense(x, 3), nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runParity(t, tc) })
	}
}

func TestDeviceLossParity(t *testing.T) {
	labels := func(r *rand.Rand, l layer) error {
		s := l.(*Loss).x.Shape
		lab := make([]int32, s.N*s.Spatial())
		for i := range lab {
			lab[i] = int32(r.IntN(s.C))
		}
		return l.(*Loss).SetLabels(lab)
	}
	cases := []parityCase{
		{name: "softmax CE + Dice 3 classes", in: Shape{2, 3, 1, 7, 9}, targets: labels, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
			return nil, b.SoftmaxLoss(x, 1, 1)
		}},
		{name: "softmax CE + Dice weighted, 3d", in: Shape{2, 2, 3, 4, 5}, targets: labels, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
			return nil, b.SoftmaxLoss(x, 0.5, 0.25)
		}},
		{name: "head loss", in: Shape{5, 7, 1, 1, 1}, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
			return nil, b.HeadLoss(x, []int{3, 2, 2}, [][]float64{{1, 2, 0.5}, nil, {0, 1}})
		}, targets: func(r *rand.Rand, l layer) error {
			return l.(*HeadLoss).SetLabels([]int32{0, 1, 1, 2, -1, 0, 1, 0, 1, -1, 1, 0, 2, 1, 1})
		}},
		{name: "regression loss", in: Shape{6, 1, 1, 1, 1}, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
			return nil, b.RegressionLoss(x, RegressionWeights{MSE: 1, Rank: 0.5, Corr: 0.25, Temp: 0.7})
		}, targets: func(r *rand.Rand, l layer) error {
			return l.(*RegressionLoss).SetTargets([]float32{0.3, -1.2, 0.8, 0.8, 2.1, -0.4})
		}},
		{name: "focal loss, 2 heatmaps", in: Shape{3, 2, 1, 9, 10}, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
			return nil, b.Focal(x)
		}, targets: func(r *rand.Rand, l layer) error {
			// Gaussian bumps around a few centres (exactly 1), zero elsewhere; one sample
			// without a centre (its loss is divided by 1).
			f := l.(*Focal)
			t := make([]float32, len(f.target))
			for s := range 2 {
				for c := range 3 {
					cy, cx := r.IntN(9), r.IntN(10)
					plane := t[(s*2+c%2)*90 : (s*2+c%2+1)*90]
					for y := range 9 {
						for x := range 10 {
							d := float64((y-cy)*(y-cy) + (x-cx)*(x-cx))
							plane[y*10+x] = max(plane[y*10+x], float32(math.Exp(-d/4)))
						}
					}
				}
			}
			return f.SetTarget(t)
		}},
		{name: "image loss 2d", in: Shape{2, 2, 1, 9, 10}, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
			return nil, b.ImageLoss(x, ImageLossConfig{L1: 0.16, SSIM: 0.84, Window: 3, Range: 4})
		}, targets: imageTargets},
		{name: "image loss 3d window 7", in: Shape{1, 1, 2, 8, 9}, build: func(b *Builder, x *Tensor) (*Tensor, layer) {
			return nil, b.ImageLoss(x, ImageLossConfig{L1: 1, SSIM: 1, Window: 7, Range: 4})
		}, targets: imageTargets},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runParity(t, tc) })
	}
}

// imageTargets are the inputs plus noise: an image loss near its working point.
func imageTargets(r *rand.Rand, l layer) error {
	il := l.(*ImageLoss)
	t := make([]float32, len(il.target))
	for i := range t {
		t[i] = float32(r.NormFloat64())
	}
	return il.SetTarget(t)
}

func TestDeviceForwardOnlyPanics(t *testing.T) {
	v := testVulkan(t)
	b := NewBuilder(v, 1)
	x := b.Input(Shape{1, 1, 1, 4, 4})
	b.Norm(x, Instance, 0.01)
	n, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	defer n.Free()
	defer func() {
		if recover() == nil {
			t.Fatal("Forward on a device network did not panic")
		}
	}()
	n.Forward()
}
