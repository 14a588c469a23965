//go:build linux

package main

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"amid/plugins/engine"
)

// openBLAS is gonum's BLAS with Sgemm routed to the engine's (OpenBLAS's cblas_sgemm on one
// thread), so that both libraries multiply matrices with the same code.
type openBLAS struct {
	gonum.Implementation
	be *engine.CPU
}

// Sgemm implements blas.Float32.
func (o openBLAS) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	o.be.Sgemm(tA != blas.NoTrans, tB != blas.NoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// gorgoniaNet is the benchmark network in gorgonia.
type gorgoniaNet struct {
	vm     G.VM
	solver G.Solver
	learn  G.Nodes
	loss   *G.Node
}

func newGorgonia(m model) (*gorgoniaNet, error) {
	G.Use(openBLAS{be: engine.NewCPU(1)})
	g := G.NewGraph()
	img, lab := batchData(m)
	N, S, K := m.Batch, m.Size, m.Classes
	onehot := make([]float32, N*K*S*S)
	for i, c := range lab {
		n, p := i/(S*S), i%(S*S)
		onehot[(n*K+int(c))*S*S+p] = 1
	}
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(N, 1, S, S), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(N, 1, S, S), tensor.WithBacking(img))))
	y := G.NewTensor(g, tensor.Float32, 4, G.WithShape(N, K, S, S), G.WithName("y"),
		G.WithValue(tensor.New(tensor.WithShape(N, K, S, S), tensor.WithBacking(onehot))))
	net := &gorgoniaNet{}
	var err error
	// must records the first error of a chain of graph calls.
	must := func(n *G.Node, e error) *G.Node {
		if err == nil {
			err = e
		}
		return n
	}
	layer := 0
	conv := func(x *G.Node, cout, k int) *G.Node {
		if err != nil {
			return x
		}
		layer++
		cin := x.Shape()[1]
		w := G.NewTensor(g, tensor.Float32, 4, G.WithShape(cout, cin, k, k), G.WithName(fmt.Sprintf("w%d", layer)), G.WithInit(G.GlorotN(1)))
		net.learn = append(net.learn, w)
		p := (k - 1) / 2
		return must(G.Conv2d(x, w, tensor.Shape{k, k}, []int{p, p}, []int{1, 1}, []int{1, 1}))
	}
	norm := func(x *G.Node) *G.Node {
		if err != nil {
			return x
		}
		C := x.Shape()[1]
		scale := G.NewTensor(g, tensor.Float32, 4, G.WithShape(1, C, 1, 1), G.WithName(fmt.Sprintf("γ%d", layer)), G.WithInit(G.Ones()))
		bias := G.NewTensor(g, tensor.Float32, 4, G.WithShape(1, C, 1, 1), G.WithName(fmt.Sprintf("β%d", layer)), G.WithInit(G.Zeroes()))
		out, γ, β, _, e := G.BatchNorm(x, scale, bias, 0.9, 1e-5)
		if e != nil {
			err = e
			return x
		}
		net.learn = append(net.learn, γ, β)
		return must(G.LeakyRelu(out, 0.01))
	}
	block := func(x *G.Node, w int) *G.Node {
		for range 2 {
			x = norm(conv(x, w, 3))
		}
		return x
	}
	h := x
	var skips []*G.Node
	for i, w := range m.Widths {
		if i > 0 {
			h = must(G.MaxPool2D(h, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2}))
		}
		h = block(h, w)
		skips = append(skips, h)
	}
	for i := len(m.Widths) - 2; i >= 0; i-- {
		up := conv(must(G.Upsample2D(h, 2)), m.Widths[i], 3)
		h = block(must(G.Concat(1, up, skips[i])), m.Widths[i])
	}
	logits := conv(h, K, 1)
	// Cross-entropy: −Σ one-hot · log softmax over the classes, per pixel, averaged.
	logp := must(G.LogSoftMax(logits, 1))
	sum := must(G.Sum(must(G.HadamardProd(logp, y))))
	net.loss = must(G.Neg(must(G.Div(sum, G.NewConstant(float32(N*S*S))))))
	if err != nil {
		return nil, fmt.Errorf("gorgonia graph: %w", err)
	}
	if _, err := G.Grad(net.loss, net.learn...); err != nil {
		return nil, fmt.Errorf("gorgonia gradients: %w", err)
	}
	net.vm = G.NewTapeMachine(g, G.BindDualValues(net.learn...))
	net.solver = G.NewAdamSolver(G.WithLearnRate(1e-3))
	return net, nil
}

func (n *gorgoniaNet) step() (float64, error) {
	defer n.vm.Reset()
	if err := n.vm.RunAll(); err != nil {
		return 0, err
	}
	if err := n.solver.Step(G.NodesToValueGrads(n.learn)); err != nil {
		return 0, err
	}
	return float64(n.loss.Value().Data().(float32)), nil
}

func (n *gorgoniaNet) params() int {
	c := 0
	for _, p := range n.learn {
		c += p.Shape().TotalSize()
	}
	return c
}
