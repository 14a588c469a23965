package engine

import (
	"unsafe"

	"amid/plugins/engine/vk"
)

// Transfers between a device network and its host copies: parameters, batch norm state
// and optimizer state (checkpoints are written from the host copies, so they do not
// depend on the device), and tensors read back for tests and predictions. These are
// one-off programs, recorded when needed.

// copyJob is one transfer between a host slice and device memory.
type copyJob struct {
	host []float32
	dev  vk.Binding
}

// devOptState is optimizer state kept on the device: per slot an arena laid out as the
// parameters', and the host slices (per parameter) it is saved from.
type devOptState struct {
	arenas []*vk.Buffer
	host   [][][]float32 // per slot, per parameter
}

// optJobs lists the transfers of optimizer state.
func (dn *devNet) optJobs(o *devOptState) []copyJob {
	var js []copyJob
	for s, a := range o.arenas {
		for i, p := range dn.n.params {
			js = append(js, copyJob{o.host[s][i], vk.Binding{Buf: a, Off: p.aoff, Size: int64(4 * len(p.Data)), Write: true}})
		}
	}
	return js
}

// jobs lists the transfers of the parameters, layer state and optimizer state.
func (dn *devNet) jobs(o *devOptState, grads bool) []copyJob {
	var js []copyJob
	for _, p := range dn.n.params {
		js = append(js, copyJob{p.Data, dn.pdata(p)})
		if grads {
			js = append(js, copyJob{p.Grad, dn.pgrad(p)})
		}
	}
	for _, l := range dn.n.layers {
		if s, ok := l.(devStateful); ok {
			js = append(js, s.devState()...)
		}
	}
	if o != nil {
		js = append(js, dn.optJobs(o)...)
	}
	return js
}

// floats views b's bytes as float32 values.
func floats(b []byte) []float32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// transfer runs one program copying the jobs to the device (up) or back to the host; with
// zero it first clears every buffer of the network (and o's arenas).
func (dn *devNet) transfer(js []copyJob, up, zero bool, o *devOptState) error {
	var total int64
	for _, j := range js {
		total += align256(j.dev.Size)
	}
	total = max(total, 256)
	host, err := dn.d.AllocHost(total, !up)
	if err != nil {
		return err
	}
	defer host.Free()
	if dn.d.Sizing() { // counted: the staging buffer is part of the peak
		return nil
	}
	p, err := dn.d.NewProgram()
	if err != nil {
		return err
	}
	defer p.Free()
	if zero {
		for _, b := range dn.bufs {
			p.Fill(vk.W(b), 0)
		}
		if o != nil {
			for _, a := range o.arenas {
				p.Fill(vk.W(a), 0)
			}
		}
	}
	h := host.Host()
	var off int64
	for _, j := range js {
		if up {
			copy(floats(h[off:off+j.dev.Size]), j.host)
			p.Copy(j.dev, vk.Binding{Buf: host, Off: off}, j.dev.Size)
		} else {
			p.Copy(vk.Binding{Buf: host, Off: off, Write: true}, j.dev, j.dev.Size)
		}
		off += align256(j.dev.Size)
	}
	if err := p.Run(); err != nil {
		return err
	}
	if !up {
		off = 0
		for _, j := range js {
			copy(j.host, floats(h[off:off+j.dev.Size]))
			off += align256(j.dev.Size)
		}
	}
	return nil
}

// pushParams uploads the parameters, the layers' state and o (when not nil).
func (dn *devNet) pushParams(o *devOptState, zero bool) error {
	js := dn.jobs(o, false)
	if zero {
		js = append(js, dn.consts...)
	}
	if err := dn.transfer(js, true, zero, o); err != nil {
		return err
	}
	dn.ahead = false
	return nil
}

// pullParams reads the parameters, their gradients, the layers' state and o back.
func (dn *devNet) pullParams(o *devOptState) error {
	if err := dn.transfer(dn.jobs(o, true), false, false, o); err != nil {
		return err
	}
	dn.ahead = false
	return nil
}

// fetch reads tensors (values, or gradients with grads) back into their host memory,
// allocating it where there is none.
func (dn *devNet) fetch(ts []*Tensor, grads bool) error {
	var js []copyJob
	for _, t := range ts {
		r := t.owner()
		if grads {
			if r.Grad == nil {
				r.Grad = make([]float32, r.Shape.Len())
			}
			t.Grad = r.Grad
			js = append(js, copyJob{r.Grad, vk.W(r.dg)})
		} else {
			if r.Data == nil {
				r.Data = make([]float32, r.Shape.Len())
			}
			t.Data = r.Data
			js = append(js, copyJob{r.Data, vk.W(r.dd)})
		}
	}
	for i := range js {
		js[i].dev.Size = int64(4 * len(js[i].host))
	}
	return dn.transfer(js, false, false, nil)
}

// put uploads tensors' host values (or gradients) to the device.
func (dn *devNet) put(ts []*Tensor, grads bool) error {
	var js []copyJob
	for _, t := range ts {
		r := t.owner()
		if grads {
			js = append(js, copyJob{r.Grad, vk.Binding{Buf: r.dg, Size: int64(4 * len(r.Grad)), Write: true}})
		} else {
			js = append(js, copyJob{r.Data, vk.Binding{Buf: r.dd, Size: int64(4 * len(r.Data)), Write: true}})
		}
	}
	return dn.transfer(js, true, false, nil)
}
