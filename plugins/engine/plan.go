package engine

import "sort"

// planBuffers gives every root tensor of an inference network its values' buffer, reusing
// a buffer once every layer that reads its tensor has run, and returns the bytes
// allocated. A root's life runs from the layer that writes it (or, for a concatenation,
// the first of its parts' writers) to the last layer that reads it or one of its views,
// both included, so a layer's output never shares its input's buffer. Inputs the caller
// fills, tensors no layer reads (the outputs) and the inputs of the layers that write no
// tensor (the losses, whose inputs a caller may read back) live to the end. Lives are
// taken in the order they begin; each takes the smallest free buffer that holds it, or a
// new one. The values of a training network are all alive at once (the backward pass
// reads them), so the saving is the network's depth: a U-Net keeps its skips and a few
// activations of the level it is at.
func (b *Builder) planBuffers() int64 {
	writes := make([]bool, len(b.layers)+1) // layers that write a tensor
	for _, t := range b.tensors {
		writes[t.born] = true
	}
	type life struct {
		t          *Tensor
		start, end int
	}
	lives := map[*Tensor]*life{}
	var order []*life
	end := len(b.layers)
	for _, t := range b.tensors {
		r := t.owner()
		l := lives[r]
		if l == nil {
			l = &life{t: r, start: t.born, end: -1}
			lives[r] = l
			order = append(order, l)
		}
		l.start = min(l.start, t.born)
		if t.input {
			l.start, l.end = 0, end
		}
	}
	read := map[*Tensor]bool{}
	for _, u := range b.uses {
		l := lives[u.t.owner()]
		read[l.t] = true
		if !writes[u.at] {
			l.end = end // a loss's input
		}
		l.end = max(l.end, u.at)
	}
	for _, l := range order {
		if !read[l.t] {
			l.end = end
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].start < order[j].start })

	type buffer struct {
		data []float32
		free int // the layer index after which the buffer may be taken again
	}
	var bufs []*buffer
	var bytes int64
	for _, l := range order {
		n := l.t.Shape.Len()
		best := -1
		for i, bf := range bufs {
			if bf.free < l.start && len(bf.data) >= n && (best < 0 || len(bf.data) < len(bufs[best].data)) {
				best = i
			}
		}
		if best < 0 {
			bufs = append(bufs, &buffer{data: make([]float32, n)})
			bytes += 4 * int64(n)
			best = len(bufs) - 1
		}
		bf := bufs[best]
		bf.free = l.end
		l.t.Data = bf.data[:n:n]
	}
	return bytes
}
