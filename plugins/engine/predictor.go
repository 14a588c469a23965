package engine

import (
	"fmt"

	"amid/plugins/engine/vk"
)

// Output is a value a [Predictor] hands back to the host after each run: a *Tensor, the
// softmax probabilities of a *Loss, or those of a *HeadLoss.
type Output interface {
	// Values is the output's host memory: a tensor's values (Data), a loss's
	// probabilities (Prob).
	Values() []float32
	// outBuf is the output's host memory and, on a device, its device buffer.
	outBuf() (host []float32, dev *vk.Buffer)
}

// Values implements Output: the tensor's buffer (with its root's when it is part of a
// concatenation), allocated on a device network where it had none.
func (t *Tensor) Values() []float32 {
	h, _ := t.outBuf()
	return h
}

// Values implements Output: the probabilities.
func (l *Loss) Values() []float32 { return l.prob }

// Values implements Output: the probabilities.
func (l *HeadLoss) Values() []float32 { return l.prob }

func (t *Tensor) outBuf() ([]float32, *vk.Buffer) {
	r := t.owner()
	if r.Data == nil {
		r.Data = make([]float32, r.Shape.Len())
	}
	t.Data = r.Data
	return r.Data, r.dd
}

func (l *Loss) outBuf() ([]float32, *vk.Buffer) {
	if l.dv == nil {
		return l.prob, nil
	}
	return l.prob, l.dv.prob
}

func (l *HeadLoss) outBuf() ([]float32, *vk.Buffer) {
	if l.dv == nil {
		return l.prob, nil
	}
	return l.prob, l.dv.prob
}

// Predictor runs a network's forward pass on the inputs (and loss targets) the caller has
// filled and hands back the outputs it was made for, on whichever backend the network
// was built: on the CPU Run is Forward; on a device the pass is recorded once (per
// training mode, see Net.SetTraining) and each run uploads the inputs and targets, runs
// and reads back the outputs and the loss values. An [Objective]'s function runs on the
// host afterwards, on its input read back.
type Predictor struct {
	net  *Net
	outs []Output
	dev  *devPredictor
}

// NewPredictor prepares forward passes of net that read back outs. On a device it
// uploads the host parameters first (after a checkpoint was loaded into them), unless a
// [Trainer] has left newer ones there.
func NewPredictor(net *Net, outs ...Output) (*Predictor, error) {
	p := &Predictor{net: net, outs: outs}
	if net.dev == nil {
		return p, nil
	}
	if !net.dev.ahead {
		if err := net.dev.pushParams(nil, false); err != nil {
			return nil, err
		}
	}
	dp, err := newDevPredictor(net.dev, outs)
	if err != nil {
		return nil, err
	}
	p.dev = dp
	return p, nil
}

// Run runs the forward pass; afterwards the outputs' host memory (Tensor.Data, Loss.Prob,
// HeadLoss.Prob) and the loss layers' values hold its results.
func (p *Predictor) Run() error {
	if p.dev == nil {
		p.net.Forward()
		return nil
	}
	return p.dev.run(p.net.training)
}

// Close releases the predictor's device programs and buffers (nothing on the CPU).
func (p *Predictor) Close() {
	if p.dev != nil {
		p.dev.free()
		p.dev = nil
	}
}

// ToHost copies a device network's parameters, their gradients and batch norm's running
// statistics into their host slices (nothing to do on the CPU). A [Trainer]'s ToHost also
// copies the optimizer's state.
func (n *Net) ToHost() error {
	if n.dev == nil {
		return nil
	}
	return n.dev.pullParams(nil)
}

// ToDevice copies the host parameters and batch norm statistics to a device network
// (nothing to do on the CPU).
func (n *Net) ToDevice() error {
	if n.dev == nil {
		return nil
	}
	return n.dev.pushParams(nil, false)
}

// devPredictor is a Predictor's device side.
type devPredictor struct {
	dn          *devNet
	stage, back *vk.Buffer
	progs       [2]*vk.Program // by training mode, recorded on first use
	outs        []outJob
	obj         *Objective
	objX        int64
}

// outJob is an output's place in the read-back buffer.
type outJob struct {
	host []float32
	dev  *vk.Buffer
	off  int64
}

func newDevPredictor(dn *devNet, outs []Output) (dp *devPredictor, err error) {
	dp = &devPredictor{dn: dn}
	defer func() {
		if err != nil {
			dp.free()
			dp = nil
		}
	}()
	off := align256(int64(4 * dn.nscal))
	for i, o := range outs {
		host, dev := o.outBuf()
		if dev == nil {
			return dp, fmt.Errorf("%w: output %d of a predictor is not on the network's device", ErrConfig, i)
		}
		dp.outs = append(dp.outs, outJob{host, dev, off})
		off += align256(int64(4 * len(host)))
	}
	if ob, ok := dn.n.layers[len(dn.n.layers)-1].(*Objective); ok {
		dp.obj = ob
		host, dev := ob.x.outBuf()
		dp.objX = off
		dp.outs = append(dp.outs, outJob{host, dev, off})
		off += align256(int64(4 * len(host)))
	}
	if dp.stage, err = dn.d.AllocHost(dn.stage, false); err != nil {
		return dp, err
	}
	if dp.back, err = dn.d.AllocHost(off, true); err != nil {
		return dp, err
	}
	return dp, nil
}

func (dp *devPredictor) record(training bool) (*vk.Program, error) {
	dn := dp.dn
	r, err := dn.newRec(false)
	if err != nil {
		return nil, err
	}
	r.training = training
	r.upload(dp.stage, true)
	L := len(dn.n.layers)
	if dp.obj != nil {
		L--
	}
	r.forward(0, L)
	r.p.Copy(vk.W(dp.back), vk.R(dn.scal), int64(4*dn.nscal))
	for _, o := range dp.outs {
		r.p.Copy(vk.Binding{Buf: dp.back, Off: o.off, Write: true}, vk.R(o.dev), int64(4*len(o.host)))
	}
	return r.end()
}

func (dp *devPredictor) run(training bool) error {
	mode := 0
	if training {
		mode = 1
	}
	if dp.progs[mode] == nil {
		p, err := dp.record(training)
		if err != nil {
			return err
		}
		dp.progs[mode] = p
	}
	dp.dn.fillStage(dp.stage, nil, true)
	if err := dp.progs[mode].Run(); err != nil {
		return err
	}
	h := dp.back.Host()
	sc := floats(h[:4*dp.dn.nscal])
	for _, l := range dp.dn.n.layers {
		if dl, ok := l.(devLoss); ok {
			dl.devValues(sc)
		}
	}
	for _, o := range dp.outs {
		copy(o.host, floats(h[o.off:]))
	}
	if o := dp.obj; o != nil {
		o.be.Parallel(o.x.Shape.N, o.fn)
		var v float64
		for _, x := range o.vals {
			v += x
		}
		o.value = v / float64(len(o.vals))
	}
	return nil
}

func (dp *devPredictor) free() {
	for i, p := range dp.progs {
		p.Free()
		dp.progs[i] = nil
	}
	dp.stage.Free()
	dp.back.Free()
}
