package measure

import (
	"fmt"
	"math"

	"amid/viewer/volume"
)

// Set is the measurements made on one image, with their history: each change (Add, Move,
// Replace, SetLabel, Delete, Load) is one step that Undo takes back, unless it falls
// between Begin and End, which make the changes between them one step (a handle dragged
// through many positions). A Set is not safe for concurrent use.
type Set struct {
	vol  *volume.Volume
	unit string
	list []Measurement // replaced on change, never changed in place
	next int
	undo []history
	redo []history
	open bool // between Begin and End
	kept bool // the open gesture has saved its step
}

type history struct {
	list []Measurement
	next int
}

// NewSet returns an empty set of measurements on vol, whose values are in unit (UnitHU on
// CT, UnitNone or "" when unknown).
func NewSet(vol *volume.Volume, unit string) (*Set, error) {
	if vol == nil {
		return nil, fmt.Errorf("%w: no image to measure", ErrInvalid)
	}
	if err := vol.Validate(); err != nil {
		return nil, fmt.Errorf("measure: %w", err)
	}
	if unit == "" {
		unit = UnitNone
	}
	return &Set{vol: vol, unit: unit, next: 1}, nil
}

// Volume is the image measured.
func (s *Set) Volume() *volume.Volume { return s.vol }

// Unit is the unit of the image's values.
func (s *Set) Unit() string { return s.unit }

// Len is the number of measurements.
func (s *Set) Len() int { return len(s.list) }

// List returns a copy of the measurements, oldest first.
func (s *Set) List() []Measurement {
	out := make([]Measurement, len(s.list))
	for i, m := range s.list {
		out[i] = m.clone()
	}
	return out
}

// Get returns a copy of the measurement with id.
func (s *Set) Get(id int) (Measurement, bool) {
	if i := s.find(id); i >= 0 {
		return s.list[i].clone(), true
	}
	return Measurement{}, false
}

func (s *Set) find(id int) int {
	for i := range s.list {
		if s.list[i].ID == id {
			return i
		}
	}
	return -1
}

// Begin starts a gesture: the changes until End are one step of the history.
func (s *Set) Begin() { s.open, s.kept = true, false }

// End ends a gesture.
func (s *Set) End() { s.open, s.kept = false, false }

// save keeps the list as it is before a change, as the step Undo goes back to.
func (s *Set) save() {
	if s.open && s.kept {
		return
	}
	s.kept = s.open
	s.undo = append(s.undo, history{s.list, s.next})
	s.redo = nil
}

// replace puts the list l in place after saving the old one.
func (s *Set) replace(l []Measurement) {
	s.save()
	s.list = l
}

// Add computes m's values and adds it with a new ID, which it returns with the values. A
// bidirectional measurement given two points (its long axis) gets a short axis across the
// long one's middle, perpendicular to it in the world and half as long.
func (s *Set) Add(m Measurement) (Measurement, error) {
	m = m.clone()
	if m.Kind == Bidirectional && len(m.Points) == 2 {
		m.Points = s.shortAxis(m.Axis, m.Slice, m.Points[0], m.Points[1], 0.5, 0.25, 0.25)
	}
	if err := Compute(s.vol, &m, s.unit); err != nil {
		return Measurement{}, err
	}
	m.ID = s.next
	l := append(append(make([]Measurement, 0, len(s.list)+1), s.list...), m)
	s.replace(l)
	s.next++
	return m.clone(), nil
}

// shortAxis returns the long axis p–q with a short axis crossing it at fraction t of its
// length, perpendicular to it in the world, reaching d1 and d2 of the long axis's length
// to either side. Off the plane's axis (a bad axis) it returns the long axis alone, which
// Compute refuses.
func (s *Set) shortAxis(axis, slice int, p, q [3]float64, t, d1, d2 float64) [][3]float64 {
	if axis < 0 || axis > 2 {
		return [][3]float64{p, q}
	}
	pl := newPlane(s.vol, axis, slice)
	pu, pv := pl.uv(p)
	qu, qv := pl.uv(q)
	l := [2]float64{qu - pu, qv - pv}
	n := pl.perp(l)
	long := math.Sqrt(pl.inner(l, l))
	cu, cv := pu+t*l[0], pv+t*l[1]
	return [][3]float64{p, q,
		pl.point(cu+d1*long*n[0], cv+d1*long*n[1]),
		pl.point(cu-d2*long*n[0], cv-d2*long*n[1])}
}

// Move moves handle h (an index into Points) of measurement id to p and computes its
// values again; a move that would take the measurement off the image or make it
// degenerate is refused with the reason, and changes nothing. A bidirectional
// measurement's short axis stays perpendicular to its long one: moving a long axis's end
// turns the short axis with it, keeping where it crosses and its reach to either side;
// moving a short axis's end slides it along the long axis to the place nearest p and sets
// that side's reach, the other side's kept.
func (s *Set) Move(id, h int, p [3]float64) error {
	i := s.find(id)
	if i < 0 {
		return fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	m := s.list[i].clone()
	if h < 0 || h >= len(m.Points) {
		return fmt.Errorf("%w: handle %d of a %s with %d points", ErrInvalid, h, m.Kind, len(m.Points))
	}
	if m.Kind == Bidirectional {
		m.Points = s.moveBidirectional(&m, h, p)
	} else {
		m.Points[h] = p
	}
	return s.put(i, m)
}

// moveBidirectional returns m's points with handle h at p (see Move).
func (s *Set) moveBidirectional(m *Measurement, h int, p [3]float64) [][3]float64 {
	pl := newPlane(s.vol, m.Axis, m.Slice)
	uv := func(x [3]float64) [2]float64 { u, v := pl.uv(x); return [2]float64{u, v} }
	a, b, c, d := uv(m.Points[0]), uv(m.Points[1]), uv(m.Points[2]), uv(m.Points[3])
	l := [2]float64{b[0] - a[0], b[1] - a[1]}
	ll := pl.inner(l, l)
	if ll == 0 {
		return m.Points
	}
	// Where the short axis crosses the long one (fraction t), and its reach each side in
	// fractions of the long axis's length along the perpendicular.
	long := math.Sqrt(ll)
	n := pl.perp(l)
	along := func(x [2]float64) float64 { return pl.inner([2]float64{x[0] - a[0], x[1] - a[1]}, l) / ll }
	t := (along(c) + along(d)) / 2
	o := [2]float64{a[0] + t*l[0], a[1] + t*l[1]}
	side := func(x [2]float64) float64 { return pl.inner([2]float64{x[0] - o[0], x[1] - o[1]}, n) / long }
	d1, d2 := side(c), -side(d)
	q := uv(p)
	switch h {
	case 0, 1:
		np := m.Points
		np[h] = p
		return s.shortAxis(m.Axis, m.Slice, np[0], np[1], t, d1, d2)
	case 2:
		t = math.Max(0, math.Min(1, along(q)))
		o = [2]float64{a[0] + t*l[0], a[1] + t*l[1]}
		d1 = side(q)
	case 3:
		t = math.Max(0, math.Min(1, along(q)))
		o = [2]float64{a[0] + t*l[0], a[1] + t*l[1]}
		d2 = -side(q)
	}
	return s.shortAxis(m.Axis, m.Slice, m.Points[0], m.Points[1], t, d1, d2)
}

// Replace gives measurement id new points (an edit) and computes its values again; it
// refuses, changing nothing, what Add would refuse.
func (s *Set) Replace(id int, pts [][3]float64) error {
	i := s.find(id)
	if i < 0 {
		return fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	m := s.list[i].clone()
	m.Points = append([][3]float64(nil), pts...)
	return s.put(i, m)
}

// SetLabel gives measurement id a label (a reader's name for it: "target lesion 1").
func (s *Set) SetLabel(id int, label string) error {
	i := s.find(id)
	if i < 0 {
		return fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	m := s.list[i].clone()
	m.Label = label
	return s.put(i, m)
}

// put computes m and puts it in place of measurement i.
func (s *Set) put(i int, m Measurement) error {
	if err := Compute(s.vol, &m, s.unit); err != nil {
		return err
	}
	l := append([]Measurement(nil), s.list...)
	l[i] = m
	s.replace(l)
	return nil
}

// Delete removes measurement id.
func (s *Set) Delete(id int) error {
	i := s.find(id)
	if i < 0 {
		return fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	l := append(append([]Measurement(nil), s.list[:i]...), s.list[i+1:]...)
	s.replace(l)
	return nil
}

// Load replaces the measurements with ms (as Unmarshal read them), their values computed
// again from the image; IDs are kept when they are distinct and positive, otherwise given
// anew. Any measurement the image refuses refuses the whole load, which changes nothing.
func (s *Set) Load(ms []Measurement) error {
	l := make([]Measurement, len(ms))
	seen := map[int]bool{}
	renumber := false
	for i, m := range ms {
		m = m.clone()
		if err := Compute(s.vol, &m, s.unit); err != nil {
			return fmt.Errorf("measurement %d: %w", i+1, err)
		}
		renumber = renumber || m.ID <= 0 || seen[m.ID]
		seen[m.ID] = true
		l[i] = m
	}
	next := 1
	for i := range l {
		if renumber {
			l[i].ID = i + 1
		}
		next = max(next, l[i].ID+1)
	}
	s.replace(l)
	s.next = next
	return nil
}

// Undo takes back the last step; false when there is none.
func (s *Set) Undo() bool {
	if len(s.undo) == 0 {
		return false
	}
	h := s.undo[len(s.undo)-1]
	s.undo = s.undo[:len(s.undo)-1]
	s.redo = append(s.redo, history{s.list, s.next})
	s.list, s.next = h.list, h.next
	s.kept = false
	return true
}

// Redo makes again the last step taken back; false when there is none.
func (s *Set) Redo() bool {
	if len(s.redo) == 0 {
		return false
	}
	h := s.redo[len(s.redo)-1]
	s.redo = s.redo[:len(s.redo)-1]
	s.undo = append(s.undo, history{s.list, s.next})
	s.list, s.next = h.list, h.next
	s.kept = false
	return true
}
