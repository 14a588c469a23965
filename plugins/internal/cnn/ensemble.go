package cnn

import (
	"fmt"
	"slices"

	"amid/plugins/engine"
)

// Member is one network's weights: its parameters and buffers, either a live network's
// own slices or a copy.
type Member struct {
	Params  []*engine.Param
	Buffers []engine.Buffer
}

// Snapshot copies a network's weights.
func Snapshot(n *engine.Net) Member {
	var m Member
	for _, p := range n.Params() {
		m.Params = append(m.Params, &engine.Param{Name: p.Name, Shape: p.Shape, Data: slices.Clone(p.Data), Decay: p.Decay})
	}
	for _, b := range n.Buffers() {
		m.Buffers = append(m.Buffers, engine.Buffer{Name: b.Name, Data: slices.Clone(b.Data)})
	}
	return m
}

// Live is a member that is a network's own weights.
func Live(n *engine.Net) Member { return Member{Params: n.Params(), Buffers: n.Buffers()} }

// Zero is a member of zeros shaped like n's weights.
func Zero(n *engine.Net) Member {
	m := Snapshot(n)
	for _, p := range m.Params {
		clear(p.Data)
	}
	for _, b := range m.Buffers {
		clear(b.Data)
	}
	return m
}

// CopyInto copies the member's weights into n, whose shapes must match.
func (m Member) CopyInto(n *engine.Net) error {
	ps, bs := n.Params(), n.Buffers()
	if len(ps) != len(m.Params) || len(bs) != len(m.Buffers) {
		return fmt.Errorf("%w: member has %d parameters and %d buffers, network %d and %d", engine.ErrConfig, len(m.Params), len(m.Buffers), len(ps), len(bs))
	}
	for i, p := range ps {
		if len(p.Data) != len(m.Params[i].Data) {
			return fmt.Errorf("%w: parameter %s has %d values, member %d", engine.ErrConfig, p.Name, len(p.Data), len(m.Params[i].Data))
		}
		copy(p.Data, m.Params[i].Data)
	}
	for i, b := range bs {
		if len(b.Data) != len(m.Buffers[i].Data) {
			return fmt.Errorf("%w: buffer %s has %d values, member %d", engine.ErrConfig, b.Name, len(b.Data), len(m.Buffers[i].Data))
		}
		copy(b.Data, m.Buffers[i].Data)
	}
	return nil
}

// Ensemble is several members of one architecture saved in one checkpoint (parameters
// named "m<i>.<name>") with the optimizer state of the one being trained, Current; it
// implements the checkpoint package's Model and Optimizer.
type Ensemble struct {
	Members []Member
	Current int
	Opt     *engine.Adam // the current member's optimizer; nil when none
}

// Params are every member's parameters, renamed, sharing their values.
func (e *Ensemble) Params() []*engine.Param {
	var out []*engine.Param
	for i, m := range e.Members {
		for _, p := range m.Params {
			out = append(out, &engine.Param{Name: fmt.Sprintf("m%d.%s", i, p.Name), Shape: p.Shape, Data: p.Data, Grad: p.Grad, Decay: p.Decay})
		}
	}
	return out
}

// Buffers are every member's buffers, renamed, sharing their values.
func (e *Ensemble) Buffers() []engine.Buffer {
	var out []engine.Buffer
	for i, m := range e.Members {
		for _, b := range m.Buffers {
			out = append(out, engine.Buffer{Name: fmt.Sprintf("m%d.%s", i, b.Name), Data: b.Data})
		}
	}
	return out
}

// State is the current member's Adam state, with zeros for the other members.
func (e *Ensemble) State() engine.OptimState {
	st := e.Opt.State()
	out := engine.OptimState{Kind: st.Kind, Step: st.Step, Slots: map[string][][]float32{}}
	for name, bufs := range st.Slots {
		for i, m := range e.Members {
			if i == e.Current {
				out.Slots[name] = append(out.Slots[name], bufs...)
				continue
			}
			for _, p := range m.Params {
				out.Slots[name] = append(out.Slots[name], make([]float32, len(p.Data)))
			}
		}
	}
	return out
}

// SetState hands the current member's part of s to its optimizer.
func (e *Ensemble) SetState(s engine.OptimState) error {
	lo := 0
	for i := range e.Current {
		lo += len(e.Members[i].Params)
	}
	hi := lo + len(e.Members[e.Current].Params)
	part := engine.OptimState{Kind: s.Kind, Step: s.Step, Slots: map[string][][]float32{}}
	for name, bufs := range s.Slots {
		if len(bufs) < hi {
			return fmt.Errorf("%w: optimizer slot %q has %d buffers, want at least %d", engine.ErrConfig, name, len(bufs), hi)
		}
		part.Slots[name] = bufs[lo:hi]
	}
	return e.Opt.SetState(part)
}

// Infer runs m in inference mode on imgs, its batch size at a time (the last batch padded
// with its last image), calls out with each image's index and outputs, and puts m back in
// training mode. On a device the forward pass runs through the model's predictor, which
// keeps the weights it found there (call Net.ToDevice after changing the host's).
func Infer(m *Model, imgs []*Image, out func(i int, y []float32)) error {
	if m.pred == nil {
		p, err := engine.NewPredictor(m.Net, m.Out)
		if err != nil {
			return err
		}
		m.pred = p
	}
	m.SetTraining(false)
	defer m.SetTraining(true)
	B := m.Input.Shape.N
	idx := make([]int, B)
	for lo := 0; lo < len(imgs); lo += B {
		for k := range B {
			idx[k] = min(lo+k, len(imgs)-1)
		}
		Fill(m.Input.Data, imgs, idx, nil, nil)
		if err := m.pred.Run(); err != nil {
			return err
		}
		for k := range min(B, len(imgs)-lo) {
			out(lo+k, m.Out.Sample(k))
		}
	}
	return nil
}
