// Package edit corrects a label map: the brush, the eraser, a fill of a region in one
// slice, the removal of an island, the interpolation of a label's shape between two edited
// slices, and undo and redo over a case's whole history. It knows nothing of windows: the
// viewer (amid/viewer/widget) turns the pointer into voxel indices and calls it, and the
// screens save what it holds as a correction beside the prediction, never over it.
//
// Shapes are measured in mm on the volume's grid (its spacing), so that a brush is round
// on an anisotropic slice and an interpolation follows the anatomy, not the voxel counts.
// A stroke (Begin, any number of dabs, End) is one step of the history, as a fill, a
// removal or an interpolation is.
package edit

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"amid/viewer/volume"
)

// ErrEdit marks an edit the label map cannot take (a voxel off the grid, an axis that is
// not 0, 1 or 2, a label the map's type cannot hold).
var ErrEdit = errors.New("edit")

// Editor holds a copy of a label map and the history of its edits.
type Editor struct {
	labels *volume.Volume
	// orig holds the value each voxel ever edited had in the map given to New, so that
	// Changes costs the edits, not the map.
	orig map[int]float64
	undo []step
	redo []step
	cur  *step // the stroke under way
	seen map[int]bool
	max  float64 // the greatest label the type holds
}

// step is one edit: the voxels it changed, with their values before and after.
type step struct {
	idx      []int
	old, new []float64
}

// New edits a copy of labels (an integer map of one channel).
func New(labels *volume.Volume) (*Editor, error) {
	if labels == nil || !labels.DType().IsInteger() || labels.Dims[3] != 1 {
		return nil, fmt.Errorf("%w: a label map is one channel of integers", ErrEdit)
	}
	max := map[volume.DType]float64{volume.Uint8: math.MaxUint8, volume.Int8: math.MaxInt8, volume.Uint16: math.MaxUint16,
		volume.Int16: math.MaxInt16, volume.Uint32: math.MaxUint32, volume.Int32: math.MaxInt32}[labels.DType()]
	return &Editor{labels: labels.Clone(), orig: map[int]float64{}, max: max}, nil
}

// Labels is the label map as edited. The editor changes it in place: a viewer that draws
// it must not read it while an edit runs.
func (e *Editor) Labels() *volume.Volume { return e.labels }

// set changes voxel i to v within the current step.
func (e *Editor) set(s *step, i int, v float64) {
	old := e.labels.AtIndex(i)
	if old == v {
		return
	}
	if _, ok := e.orig[i]; !ok {
		e.orig[i] = old
	}
	if e.seen != nil {
		if !e.seen[i] {
			e.seen[i] = true
		} else {
			// A stroke passing a voxel again keeps its first old value.
			e.labels.SetIndex(i, v)
			for j := len(s.idx) - 1; j >= 0; j-- {
				if s.idx[j] == i {
					s.new[j] = v
					return
				}
			}
		}
	}
	s.idx = append(s.idx, i)
	s.old = append(s.old, old)
	s.new = append(s.new, v)
	e.labels.SetIndex(i, v)
}

// commit ends step s: kept in the history when it changed anything, which drops what
// could be redone.
func (e *Editor) commit(s *step) {
	if len(s.idx) == 0 {
		return
	}
	e.undo = append(e.undo, *s)
	e.redo = nil
}

func (e *Editor) check(idx [3]int, axis int, label int) error {
	d := e.labels.Dims
	for a := range 3 {
		if idx[a] < 0 || idx[a] >= d[a] {
			return fmt.Errorf("%w: voxel %v is off the grid %v", ErrEdit, idx, d[:3])
		}
	}
	if axis < 0 || axis > 2 {
		return fmt.Errorf("%w: axis %d is not 0, 1 or 2", ErrEdit, axis)
	}
	if label < 0 || float64(label) > e.max {
		return fmt.Errorf("%w: label %d does not fit a %v map", ErrEdit, label, e.labels.DType())
	}
	return nil
}

// Begin starts a stroke: the dabs until End are one step of the history.
func (e *Editor) Begin() {
	e.End()
	e.cur = &step{}
	e.seen = map[int]bool{}
}

// End ends the stroke under way, if any.
func (e *Editor) End() {
	if e.cur != nil {
		e.commit(e.cur)
	}
	e.cur, e.seen = nil, nil
}

// Dab paints label (0: erases) in the disc of radius mm about voxel c on the slice normal
// to axis through it; the voxel under c is always painted. Outside a stroke it is a step
// of its own.
func (e *Editor) Dab(axis int, c [3]int, radius float64, label int) error {
	if err := e.check(c, axis, label); err != nil {
		return err
	}
	s := e.cur
	if s == nil {
		s = &step{}
		defer e.commit(s)
	}
	u, v := volume.InPlane(axis)
	sp := e.labels.Spacing
	su, sv := math.Max(sp[u], 1e-6), math.Max(sp[v], 1e-6)
	ru, rv := int(radius/su), int(radius/sv)
	d := e.labels.Dims
	for dv := -rv; dv <= rv; dv++ {
		for du := -ru; du <= ru; du++ {
			if math.Hypot(float64(du)*su, float64(dv)*sv) > radius && (du != 0 || dv != 0) {
				continue
			}
			p := c
			p[u] += du
			p[v] += dv
			if p[u] < 0 || p[u] >= d[u] || p[v] < 0 || p[v] >= d[v] {
				continue
			}
			e.set(s, e.labels.Index(p[0], p[1], p[2], 0), float64(label))
		}
	}
	return nil
}

// Fill gives label to the region of seed's value that is 4-connected to seed in the slice
// normal to axis through it.
func (e *Editor) Fill(axis int, seed [3]int, label int) error {
	if err := e.check(seed, axis, label); err != nil {
		return err
	}
	e.End()
	s := &step{}
	defer e.commit(s)
	from := e.labels.AtIndex(e.labels.Index(seed[0], seed[1], seed[2], 0))
	if from == float64(label) {
		return nil
	}
	u, v := volume.InPlane(axis)
	d := e.labels.Dims
	stack := [][3]int{seed}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		i := e.labels.Index(p[0], p[1], p[2], 0)
		if e.labels.AtIndex(i) != from {
			continue
		}
		e.set(s, i, float64(label))
		for _, q := range [4][2]int{{1, 0}, {-1, 0}, {0, 1}, {0, -1}} {
			n := p
			n[u] += q[0]
			n[v] += q[1]
			if n[u] >= 0 && n[u] < d[u] && n[v] >= 0 && n[v] < d[v] {
				stack = append(stack, n)
			}
		}
	}
	return nil
}

// RemoveIsland sets to background the 6-connected component (in 3D) of the label at
// seed; it does nothing on background.
func (e *Editor) RemoveIsland(seed [3]int) error {
	if err := e.check(seed, 2, 0); err != nil {
		return err
	}
	e.End()
	s := &step{}
	defer e.commit(s)
	from := e.labels.AtIndex(e.labels.Index(seed[0], seed[1], seed[2], 0))
	if from == 0 {
		return nil
	}
	d := e.labels.Dims
	stack := [][3]int{seed}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		i := e.labels.Index(p[0], p[1], p[2], 0)
		if e.labels.AtIndex(i) != from {
			continue
		}
		e.set(s, i, 0)
		for a := range 3 {
			for _, dd := range [2]int{-1, 1} {
				n := p
				n[a] += dd
				if n[a] >= 0 && n[a] < d[a] {
					stack = append(stack, n)
				}
			}
		}
	}
	return nil
}

// Interpolate fills the slices strictly between slices a and b (normal to axis) with the
// shape of label interpolated from its shapes on a and b: on each slice between, the
// signed distances (mm) to the label's edge on a and on b are mixed by the slice's place,
// and the label covers where the mix is inside, replacing its shape there (Raya and
// Udupa's shape-based interpolation). Other labels are kept where the label does not come.
func (e *Editor) Interpolate(axis, a, b, label int) error {
	if a > b {
		a, b = b, a
	}
	if err := e.check([3]int{}, axis, label); err != nil {
		return err
	}
	if label == 0 {
		return fmt.Errorf("%w: background has no shape to interpolate", ErrEdit)
	}
	d := e.labels.Dims
	if a < 0 || b >= d[axis] {
		return fmt.Errorf("%w: slices %d and %d on axis %d of %d slices", ErrEdit, a, b, axis, d[axis])
	}
	e.End()
	s := &step{}
	defer e.commit(s)
	u, v := volume.InPlane(axis)
	nu, nv := d[u], d[v]
	at := func(w, i, j int) int {
		var p [3]int
		p[axis], p[u], p[v] = w, i, j
		return e.labels.Index(p[0], p[1], p[2], 0)
	}
	sdf := func(w int) []float64 {
		in := make([]bool, nu*nv)
		for j := range nv {
			for i := range nu {
				in[j*nu+i] = e.labels.AtIndex(at(w, i, j)) == float64(label)
			}
		}
		return signedDistance(in, nu, nv, e.labels.Spacing[u], e.labels.Spacing[v])
	}
	da, db := sdf(a), sdf(b)
	for w := a + 1; w < b; w++ {
		t := float64(w-a) / float64(b-a)
		for j := range nv {
			for i := range nu {
				k := j*nu + i
				vox := at(w, i, j)
				cur := e.labels.AtIndex(vox)
				switch inside := (1-t)*da[k]+t*db[k] < 0; {
				case inside && cur != float64(label):
					e.set(s, vox, float64(label))
				case !inside && cur == float64(label):
					e.set(s, vox, 0)
				}
			}
		}
	}
	return nil
}

// Undo takes back the last step; false when there is none.
func (e *Editor) Undo() bool { return e.move(&e.undo, &e.redo, true) }

// Redo makes again the last step taken back; false when there is none.
func (e *Editor) Redo() bool { return e.move(&e.redo, &e.undo, false) }

// move takes the newest step of from, sets its voxels to their values before it (back) or
// after it, and puts it on to.
func (e *Editor) move(from, to *[]step, back bool) bool {
	e.End()
	if len(*from) == 0 {
		return false
	}
	s := (*from)[len(*from)-1]
	*from = (*from)[:len(*from)-1]
	if back {
		for j := len(s.idx) - 1; j >= 0; j-- {
			e.labels.SetIndex(s.idx[j], s.old[j])
		}
	} else {
		for j, i := range s.idx {
			e.labels.SetIndex(i, s.new[j])
		}
	}
	*to = append(*to, s)
	return true
}

// Change is how the edits moved one label: the voxels that took it and those that lost it.
type Change struct {
	Label   int `json:"label"`
	Added   int `json:"added"`
	Removed int `json:"removed"`
}

// Changes are the labels whose voxels differ from the map given to New, in label order.
// They cost the voxels ever edited, not the map.
func (e *Editor) Changes() []Change {
	by := map[int]*Change{}
	for i, was := range e.orig {
		tally(by, int(was), int(e.labels.AtIndex(i)))
	}
	return sorted(by)
}

// tally counts a voxel that went from label was to label now.
func tally(by map[int]*Change, was, now int) {
	if was == now {
		return
	}
	for _, l := range [2]int{was, now} {
		if by[l] == nil {
			by[l] = &Change{Label: l}
		}
	}
	by[was].Removed++
	by[now].Added++
}

// sorted is the changes of by in label order.
func sorted(by map[int]*Change) []Change {
	out := make([]Change, 0, len(by))
	for _, c := range by {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Label < out[j].Label })
	return out
}

// Diff is how the label map now differs from was, label by label in label order: the
// voxels that took each label and those that lost it. The maps must have the same
// dimensions.
func Diff(was, now *volume.Volume) ([]Change, error) {
	if was.Dims != now.Dims {
		return nil, fmt.Errorf("%w: a map of %v against one of %v", ErrEdit, now.Dims, was.Dims)
	}
	by := map[int]*Change{}
	for i := range now.Len() {
		tally(by, int(was.AtIndex(i)), int(now.AtIndex(i)))
	}
	return sorted(by), nil
}

// signedDistance is, for each pixel of a W×H plane of spacing sx, sy mm, its distance to
// the nearest pixel outside the shape in (negative, inside) or to the nearest inside
// (positive); without any pixel inside, every pixel is far outside.
func signedDistance(in []bool, W, H int, sx, sy float64) []float64 {
	out := make([]bool, len(in))
	for i, b := range in {
		out[i] = !b
	}
	dIn, dOut := distance(in, W, H, sx, sy), distance(out, W, H, sx, sy)
	r := make([]float64, len(in))
	for i := range r {
		if in[i] {
			r[i] = -dOut[i]
		} else {
			r[i] = dIn[i]
		}
	}
	return r
}

// distance is each pixel's Euclidean distance in mm to the nearest pixel where to is
// true (exact: Felzenszwalb and Huttenlocher's two passes of lower envelopes); +Inf
// everywhere when to holds none.
func distance(to []bool, W, H int, sx, sy float64) []float64 {
	g := make([]float64, len(to))
	for i, b := range to {
		if !b {
			g[i] = math.Inf(1)
		}
	}
	line := make([]float64, max(W, H))
	tmp := make([]float64, max(W, H))
	for y := range H {
		copy(line, g[y*W:(y+1)*W])
		envelope(line[:W], sx, tmp[:W])
		copy(g[y*W:(y+1)*W], tmp[:W])
	}
	for x := range W {
		for y := range H {
			line[y] = g[y*W+x]
		}
		envelope(line[:H], sy, tmp[:H])
		for y := range H {
			g[y*W+x] = math.Sqrt(tmp[y])
		}
	}
	return g
}

// envelope writes to d the squared distance transform of the sampled function f on a
// line of spacing sp: d[q] = min over p of (q−p)²sp² + f[p].
func envelope(f []float64, sp float64, d []float64) {
	n := len(f)
	v := make([]int, n)
	z := make([]float64, n+1)
	k := -1
	for q := range n {
		if math.IsInf(f[q], 1) {
			continue
		}
		pq := float64(q) * sp
		for k >= 0 {
			pv := float64(v[k]) * sp
			s := ((f[q] + pq*pq) - (f[v[k]] + pv*pv)) / (2 * (pq - pv))
			if s > z[k] {
				k++
				v[k], z[k], z[k+1] = q, s, math.Inf(1)
				break
			}
			k--
		}
		if k < 0 {
			k = 0
			v[0], z[0], z[1] = q, math.Inf(-1), math.Inf(1)
		}
	}
	if k < 0 {
		for q := range d {
			d[q] = math.Inf(1)
		}
		return
	}
	j := 0
	for q := range n {
		pq := float64(q) * sp
		for z[j+1] < pq {
			j++
		}
		dq := pq - float64(v[j])*sp
		d[q] = dq*dq + f[v[j]]
	}
}
