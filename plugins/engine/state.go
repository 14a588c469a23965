package engine

import "fmt"

// Buffer is state of a network that is not trained by gradients but must be saved with
// its parameters: the running mean and variance of batch norm layers. Data aliases the
// layer's own slice.
type Buffer struct {
	Name string
	Data []float32
}

// Buffers are the network's non-trainable state tensors in layer order
// ("<layer>.norm.running_mean", "<layer>.norm.running_var"); none for instance norm.
func (n *Net) Buffers() []Buffer {
	var out []Buffer
	for _, l := range n.layers {
		if l, ok := l.(*norm); ok && l.runMean != nil {
			name := l.gamma.Name[:len(l.gamma.Name)-len(".weight")]
			out = append(out, Buffer{name + ".running_mean", l.runMean}, Buffer{name + ".running_var", l.runVar})
		}
	}
	return out
}

// OptimState is an optimizer's state: the number of steps taken and, per slot name, one
// buffer per parameter (in the optimizer's parameter order). Adam has slots "m" and "v"
// (first and second moments), SGD "momentum". The buffers returned by State alias the
// optimizer's own.
type OptimState struct {
	Kind  string
	Step  int
	Slots map[string][][]float32
}

// State returns Adam's step count and moments.
func (a *Adam) State() OptimState {
	return OptimState{Kind: "adam", Step: a.t, Slots: map[string][][]float32{"m": a.m, "v": a.v}}
}

// SetState copies s into Adam; s must come from an Adam over parameters of the same sizes.
func (a *Adam) SetState(s OptimState) error {
	if err := checkState(s, "adam", map[string][][]float32{"m": a.m, "v": a.v}); err != nil {
		return err
	}
	a.t = s.Step
	return nil
}

// State returns SGD's step count and momentum buffers.
func (s *SGD) State() OptimState {
	return OptimState{Kind: "sgd", Step: s.t, Slots: map[string][][]float32{"momentum": s.buf}}
}

// SetState copies st into SGD; st must come from an SGD over parameters of the same sizes.
func (s *SGD) SetState(st OptimState) error {
	if err := checkState(st, "sgd", map[string][][]float32{"momentum": s.buf}); err != nil {
		return err
	}
	s.t = st.Step
	return nil
}

// checkState verifies s against the optimizer's own slots and copies it into them.
func checkState(s OptimState, kind string, dst map[string][][]float32) error {
	if s.Kind != kind {
		return fmt.Errorf("%w: optimizer state is %q, optimizer is %q", ErrConfig, s.Kind, kind)
	}
	if s.Step < 0 {
		return fmt.Errorf("%w: optimizer state has negative step %d", ErrConfig, s.Step)
	}
	if len(s.Slots) != len(dst) {
		return fmt.Errorf("%w: %s state has %d slots, want %d", ErrConfig, kind, len(s.Slots), len(dst))
	}
	for name, d := range dst {
		src, ok := s.Slots[name]
		if !ok {
			return fmt.Errorf("%w: %s state lacks slot %q", ErrConfig, kind, name)
		}
		if len(src) != len(d) {
			return fmt.Errorf("%w: %s slot %q has %d buffers, optimizer has %d parameters", ErrConfig, kind, name, len(src), len(d))
		}
		for i := range d {
			if len(src[i]) != len(d[i]) {
				return fmt.Errorf("%w: %s slot %q buffer %d has %d values, parameter has %d", ErrConfig, kind, name, i, len(src[i]), len(d[i]))
			}
		}
	}
	for name, d := range dst {
		for i := range d {
			copy(d[i], s.Slots[name][i])
		}
	}
	return nil
}
