package engine

import (
	"fmt"
	"math"
	"strings"
	"time"

	"amid/plugins/engine/vk"
)

// devTrainer is a Trainer's device side: per staging slot a recorded step (one program,
// or two around a host objective), a staging buffer for the batch and a read-back buffer
// for the scalars.
type devTrainer struct {
	dn      *devNet
	opt     Optimizer
	state   *devOptState
	clip    float64
	stage   [2]*vk.Buffer
	back    [2]*vk.Buffer
	progs   [2][]*vk.Program
	obj     *Objective
	objX    int64 // byte offset of the objective's input in a read-back buffer
	objG    int64 // byte offset of its gradient in a staging buffer
	objVal  [2]float64
	next    int
	pending []int
	done    []StepResult
	last    int // the slot of the last step waited for
	prof    bool
}

func newDevTrainer(dn *devNet, opt Optimizer, o TrainOptions) (dt *devTrainer, err error) {
	dt = &devTrainer{dn: dn, opt: opt, clip: o.Clip, prof: o.Profile, last: -1}
	defer func() {
		if err != nil {
			dt.free()
			dt = nil
		}
	}()
	dt.state = &devOptState{}
	switch o := opt.(type) {
	case *Adam:
		dt.state.host = [][][]float32{o.m, o.v}
	case *SGD:
		dt.state.host = [][][]float32{o.buf}
	}
	for range dt.state.host {
		a, err := dn.d.Alloc(dn.arena)
		if err != nil {
			return dt, fmt.Errorf("engine: optimizer state on %s: %w", dn.d.Info().Name, err)
		}
		dt.state.arenas = append(dt.state.arenas, a)
	}
	if last := dn.n.layers[len(dn.n.layers)-1]; last != nil {
		if ob, ok := last.(*Objective); ok {
			dt.obj = ob
		}
	}
	stageBytes, backBytes := dn.stage, int64(4*dn.nscal)
	if dt.obj != nil {
		dt.objG = stageBytes
		stageBytes += align256(int64(4 * len(dt.obj.grad)))
		backBytes = align256(backBytes)
		dt.objX = backBytes
		x := dt.obj.x.owner()
		if x.Data == nil {
			x.Data = make([]float32, x.Shape.Len())
		}
		dt.obj.x.Data = x.Data
		backBytes += int64(4 * len(x.Data))
	}
	for s := range 2 {
		if dt.stage[s], err = dn.d.AllocHost(stageBytes, false); err != nil {
			return dt, err
		}
		if dt.back[s], err = dn.d.AllocHost(backBytes, true); err != nil {
			return dt, err
		}
	}
	for s := range 2 {
		if dn.d.Sizing() {
			break // nothing runs on a sizer
		}
		if dt.progs[s], err = dt.record(s); err != nil {
			return dt, err
		}
	}
	// Start from the host's parameters and optimizer state, unless a trainer has already
	// left newer parameters on the device.
	if dn.ahead {
		err = dn.transfer(dn.optJobs(dt.state), true, false, nil)
	} else {
		err = dn.pushParams(dt.state, false)
	}
	return dt, err
}

// record records slot s's step.
func (dt *devTrainer) record(s int) ([]*vk.Program, error) {
	dn := dt.dn
	L := len(dn.n.layers)
	r, err := dn.newRec(dt.prof)
	if err != nil {
		return nil, err
	}
	r.upload(dt.stage[s], true)
	r.zeroGrads()
	var progs []*vk.Program
	if dt.obj != nil {
		r.forward(0, L-1)
		x := dt.obj.x.owner()
		r.mark("objective")
		r.p.Copy(vk.Binding{Buf: dt.back[s], Off: dt.objX, Write: true}, vk.R(x.dd), int64(4*len(x.Data)))
		p, err := r.end()
		if err != nil {
			return nil, err
		}
		progs = append(progs, p)
		if r, err = dn.newRec(dt.prof); err != nil {
			progs[0].Free()
			return nil, err
		}
		r.p.Copy(vk.W(dt.obj.dv.grad), vk.Binding{Buf: dt.stage[s], Off: dt.objG}, int64(4*len(dt.obj.grad)))
	} else {
		r.forward(0, L)
	}
	r.backward(L, 0)
	r.scr = 0
	r.mark("clip and optimizer")
	r.clipAndStep(dt.state, dt.opt)
	r.mark("end")
	r.p.Copy(vk.W(dt.back[s]), vk.R(dn.scal), int64(4*dn.nscal))
	p, err := r.end()
	if err != nil {
		for _, q := range progs {
			q.Free()
		}
		return nil, err
	}
	return append(progs, p), nil
}

// clipAndStep records the gradient norm, the clipping factor and the optimizer's update.
func (r *rec) clipAndStep(st *devOptState, opt Optimizer) {
	dn := r.dn
	n := int(dn.arena / 4)
	r.rowSums(vk.R(dn.grads), 0, n, 1, 1, n, vk.W(dn.scal), scNorm, 1, rsSquare)
	r.run(kClip, nil, [3]int{1, 1, 1}, []uint32{svMaxNorm, scNorm, scFactor, 0}, vk.R(dn.step), vk.W(dn.scal))
	for g, rg := range dn.groups {
		lo, hi := int(rg[0]/4), int(rg[1]/4)
		if hi == lo {
			continue
		}
		switch o := opt.(type) {
		case *Adam:
			wd := float32(0)
			if g == 0 {
				wd = float32(o.WeightDecay)
			}
			r.run(kAdam, nil, groups1(hi-lo, 256), []uint32{u32(lo), u32(hi - lo), f32(wd), b32(o.Decoupled),
				f32(float32(o.Beta1)), f32(float32(o.Beta2)), f32(float32(o.Eps))},
				vk.W(dn.params), vk.R(dn.grads), vk.W(st.arenas[0]), vk.W(st.arenas[1]), vk.R(dn.step), vk.R(dn.scal))
		case *SGD:
			wd := float32(0)
			if g == 0 {
				wd = float32(o.WeightDecay)
			}
			r.run(kSGD, nil, groups1(hi-lo, 256), []uint32{u32(lo), u32(hi - lo), f32(wd), f32(float32(o.Momentum)), b32(o.Nesterov)},
				vk.W(dn.params), vk.R(dn.grads), vk.W(st.arenas[0]), vk.R(dn.step), vk.R(dn.scal))
		}
	}
}

// stepValues advances the optimizer's step count and returns the step block.
func (dt *devTrainer) stepValues(lr float64) []float32 {
	v := make([]float32, svCount)
	v[svLR], v[svMaxNorm] = float32(lr), float32(dt.clip)
	switch o := dt.opt.(type) {
	case *Adam:
		o.t++
		v[svC1] = float32(1 - math.Pow(o.Beta1, float64(o.t)))
		v[svC2] = float32(math.Sqrt(1 - math.Pow(o.Beta2, float64(o.t))))
	case *SGD:
		o.t++
		if o.t == 1 {
			v[svFirst] = 1
		}
	}
	return v
}

func (dt *devTrainer) submit(lr float64) error {
	if len(dt.pending) == 2 {
		r, err := dt.waitOne()
		if err != nil {
			return err
		}
		dt.done = append(dt.done, r)
	}
	s := dt.next
	dt.dn.fillStage(dt.stage[s], dt.stepValues(lr), true)
	progs := dt.progs[s]
	if err := progs[0].Submit(); err != nil {
		return err
	}
	dt.dn.ahead = true
	if dt.obj != nil {
		if err := progs[0].Wait(); err != nil {
			return err
		}
		o := dt.obj
		copy(o.x.owner().Data, floats(dt.back[s].Host()[dt.objX:]))
		o.be.Parallel(o.x.Shape.N, o.fn)
		var v float64
		for _, x := range o.vals {
			v += x
		}
		dt.objVal[s] = v / float64(len(o.vals))
		copy(floats(dt.stage[s].Host()[dt.objG:]), o.grad)
		if err := progs[1].Submit(); err != nil {
			return err
		}
	}
	dt.pending = append(dt.pending, s)
	dt.next = 1 - s
	return nil
}

// waitOne waits for the oldest pending step and returns its result.
func (dt *devTrainer) waitOne() (StepResult, error) {
	s := dt.pending[0]
	dt.pending = dt.pending[1:]
	progs := dt.progs[s]
	if err := progs[len(progs)-1].Wait(); err != nil {
		return StepResult{}, err
	}
	dt.last = s
	sc := floats(dt.back[s].Host()[:4*dt.dn.nscal])
	for _, l := range dt.dn.n.layers {
		if dl, ok := l.(devLoss); ok {
			dl.devValues(sc)
		}
	}
	if dt.obj != nil {
		dt.obj.value = dt.objVal[s]
	}
	norm := float64(sc[scNorm])
	return StepResult{Loss: dt.dn.n.lossValue(), GradNorm: norm, Skipped: !Finite(norm)}, nil
}

func (dt *devTrainer) wait() (StepResult, error) {
	if len(dt.done) > 0 {
		r := dt.done[0]
		dt.done = dt.done[1:]
		return r, nil
	}
	if len(dt.pending) == 0 {
		return StepResult{}, errNothingPending
	}
	return dt.waitOne()
}

// drain waits for every pending step, keeping the results for Wait.
func (dt *devTrainer) drain() error {
	for len(dt.pending) > 0 {
		r, err := dt.waitOne()
		if err != nil {
			return err
		}
		dt.done = append(dt.done, r)
	}
	return nil
}

func (dt *devTrainer) free() {
	for s := range 2 {
		for _, p := range dt.progs[s] {
			p.Free()
		}
		dt.progs[s] = nil
		dt.stage[s].Free()
		dt.back[s].Free()
	}
	if dt.state != nil {
		for _, a := range dt.state.arenas {
			a.Free()
		}
	}
}

// profile turns the last step's timestamps into layer times.
func (dt *devTrainer) profile() ([]LayerTime, error) {
	if !dt.prof || dt.last < 0 {
		return nil, nil
	}
	var out []LayerTime
	at := map[string]int{}
	for _, p := range dt.progs[dt.last] {
		spans, err := p.Times()
		if err != nil {
			return nil, err
		}
		for _, s := range spans {
			kind, name, _ := strings.Cut(s.Label, " ")
			if kind != "fwd" && kind != "bwd" {
				name = s.Label
			}
			i, ok := at[name]
			if !ok {
				i = len(out)
				at[name] = i
				out = append(out, LayerTime{Layer: name})
			}
			d := time.Duration(s.Nanos)
			if kind == "bwd" {
				out[i].Backward += d
			} else {
				out[i].Forward += d
			}
		}
	}
	return out, nil
}
