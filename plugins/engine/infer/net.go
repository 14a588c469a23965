package infer

import (
	"errors"
	"fmt"

	"amid/plugins/engine"
)

// NetWindow predicts images with sliding windows of a network built by package engine, on
// whichever backend it was built: on a Vulkan device the windows are cut out of the image,
// flipped, run, weighted and summed on the device (engine.Windows), so only the image goes
// up and the K planes come back; on the CPU, for a 2.5D network (Options.Slices), or for
// an image whose sums do not fit the device, the network runs as [Window]'s predictor.
// Either way the windows, flips, weights and batches are Window's.
type NetWindow struct {
	opt  Options
	in   *engine.Tensor
	out  engine.Output
	pred *engine.Predictor
	dev  *engine.Windows
	r    *runner // the windows' flips and weights
	err  error   // the predictor's error during a host pass
}

// NewNetWindow prepares sliding windows of net, whose input is in (opt.Batch patches, or
// 1, of opt.Channels channels, or Channels·Slices for a 2.5D network; its D×H×W is the
// patch's Z×Y×X) and whose output is out (opt.Classes planes per patch: a contiguous
// tensor or a softmax loss's probabilities).
func NewNetWindow(net *engine.Net, in *engine.Tensor, out engine.Output, opt Options) (*NetWindow, error) {
	nw := &NetWindow{opt: opt, in: in, out: out}
	r, err := newRunner(opt, nil)
	if err != nil {
		return nil, err
	}
	nw.r = r
	C := opt.Channels
	if opt.Slices > 1 {
		C *= opt.Slices
	}
	s := in.Shape
	if s.N != r.B || s.C != C || [3]int{s.W, s.H, s.D} != opt.Patch {
		return nil, fmt.Errorf("infer: network input %v does not take %d patches %v of %d channels", s, r.B, opt.Patch, C)
	}
	if nw.pred, err = engine.NewPredictor(net, out); err != nil {
		return nil, err
	}
	if _, onDevice := net.Backend().(*engine.Vulkan); onDevice && opt.Slices <= 1 {
		if nw.dev, err = engine.NewWindows(net, in, out, r.w, len(r.flips)); err != nil {
			nw.pred.Close()
			return nil, err
		}
	}
	return nw, nil
}

// Run predicts img (Channels planes of dims X·Y·Z) and returns Classes planes, as Window.
func (nw *NetWindow) Run(img []float32, dims [3]int) ([]float32, error) {
	if nw.dev != nil {
		if err := nw.r.check(img, dims); err != nil {
			return nil, err
		}
		res, err := nw.dev.Run(img, dims, nw.jobs(dims))
		if !errors.Is(err, engine.ErrOutOfDeviceMemory) {
			return res, err
		}
		// The image's sums do not fit the device: sum on the host instead.
	}
	nw.err = nil
	res, err := Window(img, dims, nw.opt, nw.predict)
	if err == nil {
		err = nw.err
	}
	return res, err
}

// Stream predicts img as Run does and hands the result to sink slice by slice, as
// [WindowTo]: on the CPU the sums hold a band of the patch's planes; on a device the K
// planes come back whole and are handed on slice by slice.
func (nw *NetWindow) Stream(img []float32, dims [3]int, sink Sink) error {
	if nw.dev != nil {
		res, err := nw.Run(img, dims)
		if err != nil {
			return err
		}
		sliced(res, dims, nw.opt.Classes, sink)
		return nil
	}
	nw.err = nil
	err := WindowTo(img, dims, nw.opt, nw.predict, sink)
	if err == nil {
		err = nw.err
	}
	return err
}

// sliced hands K planes of dims to sink slice by slice.
func sliced(res []float32, dims [3]int, K int, sink Sink) {
	XY, N := dims[0]*dims[1], dims[0]*dims[1]*dims[2]
	slice := make([]float32, K*XY)
	for z := range dims[2] {
		for k := range K {
			copy(slice[k*XY:(k+1)*XY], res[k*N+z*XY:k*N+(z+1)*XY])
		}
		sink(z, slice)
	}
}

// predict is Window's predictor: the patches into the input, a forward pass, the output.
func (nw *NetWindow) predict(in, out []float32) {
	copy(nw.in.Data, in)
	if err := nw.pred.Run(); err != nil && nw.err == nil {
		nw.err = err
	}
	copy(out, nw.out.Values())
}

// jobs lists the windows and flips of an image in the order Window feeds them.
func (nw *NetWindow) jobs(dims [3]int) []engine.WindowJob {
	var steps [3][]int
	for a := range 3 {
		steps[a] = Steps(dims[a], nw.r.P[a], nw.r.ov)
	}
	var js []engine.WindowJob
	for _, z := range steps[2] {
		for _, y := range steps[1] {
			for _, x := range steps[0] {
				for _, m := range nw.r.flips {
					js = append(js, engine.WindowJob{Lo: [3]int{x, y, z}, Flip: m})
				}
			}
		}
	}
	return js
}

// Close releases the device programs and buffers.
func (nw *NetWindow) Close() {
	nw.pred.Close()
	if nw.dev != nil {
		nw.dev.Close()
	}
}
