// Package measure holds the measurements a reader makes on one plane of an image: a length,
// a bidirectional (RECIST) pair of diameters, an ellipse or a freehand region with its area
// and the statistics of the image values inside it, a probe of one value, an angle.
//
// A measurement is drawn on a plane of the voxel grid (Axis, the voxel axis it is normal
// to, and Slice, its index along that axis) and its points are continuous voxel
// coordinates, as the viewer's marks are: voxel i covers [i, i+1) along each axis, so its
// centre is at i + 0.5. Every value is computed in world millimetres through the volume's
// own voxel-to-world transform (volume.Volume.VoxelToWorld: spacing and direction), never
// from voxel counts, so a length is right on a 0.7 × 0.7 × 3 mm grid and on an oblique
// one, and a right angle on the patient reads 90° whatever the grid. The reader draws on
// the voxel grid because that is what the screen shows; the world is what the report
// says.
//
// A region's statistics are those of the voxels of its slice whose centres lie inside it
// (the mean, the population standard deviation, the minimum and the maximum of the image's
// first channel, in its own unit: Hounsfield units on CT). Its area is the area of the
// drawn shape in mm², not the voxels' count times their size.
//
// A Set is the list a viewer edits: add, move a handle, edit, delete, with undo and redo.
// Measurements marshal to JSON with their kind, plane, slice, points (voxel and world),
// values and units (UCUM codes, as DICOM structured reports carry them), so that a review
// can keep them; Unmarshal checks what it reads and Set.Load computes the values again
// from the image rather than trusting the stored ones.
package measure

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"amid/viewer/volume"
)

// Kind is what a measurement measures.
type Kind string

// The kinds of measurement, with their points:
//
//	Length         2: the two ends
//	Bidirectional  4: the long axis's ends, then the short axis's, perpendicular to it
//	Ellipse        2: opposite corners of the box the ellipse fills (on the voxel grid)
//	Freehand       3 or more: a closed polygon
//	Probe          1
//	Angle          3: one arm's end, the vertex, the other arm's end
const (
	Length        Kind = "length"
	Bidirectional Kind = "bidirectional"
	Ellipse       Kind = "ellipse"
	Freehand      Kind = "freehand"
	Probe         Kind = "probe"
	Angle         Kind = "angle"
)

// Kinds are the kinds in toolbar order.
var Kinds = []Kind{Length, Bidirectional, Ellipse, Freehand, Probe, Angle}

// Units, as UCUM codes (DICOM's coding scheme UCUM).
const (
	UnitMM   = "mm"
	UnitMM2  = "mm2"
	UnitDeg  = "deg"
	UnitHU   = "[hnsf'U]" // Hounsfield unit
	UnitNone = "1"        // a count, or image values of no known unit
)

// MaxPoints bounds a freehand region's points, so that a stored list cannot make a region
// that takes minutes to measure.
const MaxPoints = 10000

// Errors, wrapped with the detail; test with errors.Is.
var (
	// ErrInvalid marks a measurement that is not well formed: an unknown kind, a wrong
	// number of points, a number that is not finite, an axis that is not 0, 1 or 2.
	ErrInvalid = errors.New("invalid measurement")
	// ErrOutside marks a measurement with a point, or a slice, off the image.
	ErrOutside = errors.New("measurement outside the image")
	// ErrDegenerate marks a measurement with nothing to measure: two ends at one place, a
	// region without area or without a voxel centre inside.
	ErrDegenerate = errors.New("degenerate measurement")
	// ErrNotFound marks an ID a Set does not hold.
	ErrNotFound = errors.New("no such measurement")
)

// Value is one measured value.
type Value struct {
	Name  string  `json:"name"` // "length", "long axis", "area", "mean", …
	Value float64 `json:"value"`
	Unit  string  `json:"unit"` // UCUM
}

// String is the value for a reader: "12.3 mm", "40.2 HU".
func (v Value) String() string {
	u := UnitText(v.Unit)
	s := format(v.Value)
	switch u {
	case "":
		return s
	case "°":
		return s + u
	}
	return s + " " + u
}

// UnitText is the unit as a reader writes it: "mm²" for mm2, "HU", "°"; "" for none.
func UnitText(u string) string {
	switch u {
	case UnitMM2:
		return "mm²"
	case UnitDeg:
		return "°"
	case UnitHU:
		return "HU"
	case UnitNone:
		return ""
	}
	return u
}

// format prints x to one decimal, or to three significant digits when it is small.
func format(x float64) string {
	if x != 0 && math.Abs(x) < 1 {
		return strings.ReplaceAll(fmt.Sprintf("%.3g", x), "-", "−")
	}
	return strings.ReplaceAll(fmt.Sprintf("%.1f", x), "-", "−")
}

// Measurement is one measurement on one plane. Points are its handles in continuous voxel
// coordinates, each on the plane (Points[i][Axis] is Slice + 0.5); World and Values are
// computed from them (Compute).
type Measurement struct {
	ID    int  `json:"id"` // given by the Set, from 1
	Kind  Kind `json:"kind"`
	Axis  int  `json:"axis"`  // the voxel axis the plane is normal to: 0, 1 or 2
	Slice int  `json:"slice"` // the plane's index along Axis
	// Plane names the plane as a reader does, from the volume's direction: "axial",
	// "coronal" or "sagittal" (Compute sets it).
	Plane string `json:"plane"`
	Label string `json:"label,omitempty"`
	// Points are in continuous voxel coordinates (voxel i covers [i, i+1)).
	Points [][3]float64 `json:"points"`
	// World are the points in LPS millimetres.
	World  [][3]float64 `json:"world"`
	Values []Value      `json:"values"`
}

// Value returns the value named name, and whether there is one.
func (m *Measurement) Value(name string) (Value, bool) {
	for _, v := range m.Values {
		if v.Name == name {
			return v, true
		}
	}
	return Value{}, false
}

// Text is the measurement's values in one line, as a viewer shows them beside it.
func (m *Measurement) Text() string {
	get := func(name string) Value { v, _ := m.Value(name); return v }
	switch m.Kind {
	case Length:
		return get("length").String()
	case Bidirectional:
		return format(get("long axis").Value) + " × " + get("short axis").String()
	case Ellipse, Freehand:
		mean, sd := get("mean"), get("sd")
		return fmt.Sprintf("%s  mean %s ± %s  min %s  max %s", get("area"), format(mean.Value), sd, format(get("min").Value), format(get("max").Value))
	case Probe:
		return get("value").String()
	case Angle:
		return get("angle").String()
	}
	return ""
}

// clone returns m with its own slices.
func (m Measurement) clone() Measurement {
	m.Points = append([][3]float64(nil), m.Points...)
	m.World = append([][3]float64(nil), m.World...)
	m.Values = append([]Value(nil), m.Values...)
	return m
}

// points says how many points a kind takes: exactly n, or at least n when more is true.
func points(k Kind) (n int, more bool, ok bool) {
	switch k {
	case Length, Ellipse:
		return 2, false, true
	case Bidirectional:
		return 4, false, true
	case Freehand:
		return 3, true, true
	case Probe:
		return 1, false, true
	case Angle:
		return 3, false, true
	}
	return 0, false, false
}

// check says whether m is well formed, without an image.
func check(m *Measurement) error {
	n, more, ok := points(m.Kind)
	if !ok {
		return fmt.Errorf("%w: unknown kind %q", ErrInvalid, m.Kind)
	}
	if m.Axis < 0 || m.Axis > 2 {
		return fmt.Errorf("%w: axis %d is not 0, 1 or 2", ErrInvalid, m.Axis)
	}
	switch {
	case more && (len(m.Points) < n || len(m.Points) > MaxPoints):
		return fmt.Errorf("%w: a %s takes %d to %d points, not %d", ErrInvalid, m.Kind, n, MaxPoints, len(m.Points))
	case !more && len(m.Points) != n:
		return fmt.Errorf("%w: a %s takes %d points, not %d", ErrInvalid, m.Kind, n, len(m.Points))
	}
	for i, p := range m.Points {
		for _, x := range p {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("%w: point %d has a coordinate that is not a number", ErrInvalid, i+1)
			}
		}
	}
	return nil
}

// Compute checks m against the image vol and fills in its World points and Values, unit
// being the unit of vol's values (UnitHU on CT, UnitNone when unknown). It puts each point
// on the plane (Points[i][Axis] = Slice + 0.5). A point off the image, or a measurement
// with nothing to measure, is an error and leaves m's World and Values as they were.
func Compute(vol *volume.Volume, m *Measurement, unit string) error {
	if err := check(m); err != nil {
		return err
	}
	if m.Slice < 0 || m.Slice >= vol.Dims[m.Axis] {
		return fmt.Errorf("%w: slice %d of axis %d is not among its %d slices", ErrOutside, m.Slice, m.Axis, vol.Dims[m.Axis])
	}
	if unit == "" {
		unit = UnitNone
	}
	pl := newPlane(vol, m.Axis, m.Slice)
	pts := make([][3]float64, len(m.Points))
	for i, p := range m.Points {
		p[m.Axis] = float64(m.Slice) + 0.5
		for a := range 3 {
			if p[a] < 0 || p[a] > float64(vol.Dims[a]) {
				return fmt.Errorf("%w: point %d (%.1f, %.1f, %.1f) is off the %d×%d×%d voxels", ErrOutside, i+1, p[0], p[1], p[2], vol.Dims[0], vol.Dims[1], vol.Dims[2])
			}
		}
		pts[i] = p
	}
	world := make([][3]float64, len(pts))
	for i, p := range pts {
		world[i] = World(vol, p)
	}
	var vals []Value
	switch m.Kind {
	case Length:
		d := dist(world[0], world[1])
		if d == 0 {
			return fmt.Errorf("%w: a length needs two distinct ends", ErrDegenerate)
		}
		vals = []Value{{"length", d, UnitMM}}
	case Bidirectional:
		long, short := dist(world[0], world[1]), dist(world[2], world[3])
		if long == 0 || short == 0 {
			return fmt.Errorf("%w: each axis of a bidirectional measurement needs two distinct ends", ErrDegenerate)
		}
		vals = []Value{{"long axis", long, UnitMM}, {"short axis", short, UnitMM}}
	case Ellipse, Freehand:
		var area float64
		var inside func(x, y float64) bool
		if m.Kind == Ellipse {
			area, inside = pl.ellipse(pts[0], pts[1])
		} else {
			area, inside = pl.polygon(pts, world)
		}
		if !(area > 1e-9) {
			return fmt.Errorf("%w: the %s region encloses no area", ErrDegenerate, m.Kind)
		}
		st := pl.stats(vol, pts, inside)
		if st.n == 0 {
			return fmt.Errorf("%w: the %s region holds no voxel centre; draw it larger", ErrDegenerate, m.Kind)
		}
		vals = []Value{{"area", area, UnitMM2}, {"mean", st.mean, unit}, {"sd", st.sd, unit},
			{"min", st.min, unit}, {"max", st.max, unit}, {"voxels", float64(st.n), UnitNone}}
	case Probe:
		var idx [3]int
		for a := range 3 {
			idx[a] = min(int(pts[0][a]), vol.Dims[a]-1)
		}
		vals = []Value{{"value", vol.At(idx[0], idx[1], idx[2], 0), unit}}
	case Angle:
		u, v := sub(world[0], world[1]), sub(world[2], world[1])
		nu, nv := norm(u), norm(v)
		if nu == 0 || nv == 0 {
			return fmt.Errorf("%w: each arm of an angle needs two distinct ends", ErrDegenerate)
		}
		c := math.Max(-1, math.Min(1, dot(u, v)/(nu*nv)))
		vals = []Value{{"angle", math.Acos(c) * 180 / math.Pi, UnitDeg}}
	}
	m.Points, m.World, m.Values, m.Plane = pts, world, vals, PlaneName(vol, m.Axis)
	return nil
}

// PlaneName names the plane normal to voxel axis axis of vol: "axial" when the axis runs
// nearest the patient's S, "coronal" nearest P, "sagittal" nearest L. Each voxel axis
// takes a patient axis of its own, the largest direction cosines first (as the viewer
// lays its planes out), so an oblique grid still has all three planes.
func PlaneName(vol *volume.Volume, axis int) string {
	var usedR, usedC [3]bool
	for range 3 {
		best, br, bc := -1.0, 0, 0
		for r := range 3 {
			for c := range 3 {
				if !usedR[r] && !usedC[c] && math.Abs(vol.Direction[3*r+c]) > best {
					best, br, bc = math.Abs(vol.Direction[3*r+c]), r, c
				}
			}
		}
		usedR[br], usedC[bc] = true, true
		if bc == axis {
			return [3]string{"sagittal", "coronal", "axial"}[br]
		}
	}
	return ""
}

// World maps continuous voxel coordinates p (voxel i covers [i, i+1)) to LPS millimetres.
func World(vol *volume.Volume, p [3]float64) [3]float64 {
	return vol.VoxelToWorld([3]float64{p[0] - 0.5, p[1] - 0.5, p[2] - 0.5})
}

// plane is a slice of the grid: a and b are its in-plane voxel axes (a < b), ea and eb the
// world vectors of one voxel step along them, g the metric they make.
type plane struct {
	axis, slice int
	a, b        int
	ea, eb      [3]float64
	g           [3]float64 // ea·ea, ea·eb, eb·eb
}

func newPlane(vol *volume.Volume, axis, slice int) plane {
	pl := plane{axis: axis, slice: slice}
	pl.a, pl.b = (axis+1)%3, (axis+2)%3
	if pl.a > pl.b {
		pl.a, pl.b = pl.b, pl.a
	}
	for r := range 3 {
		pl.ea[r] = vol.Direction[3*r+pl.a] * vol.Spacing[pl.a]
		pl.eb[r] = vol.Direction[3*r+pl.b] * vol.Spacing[pl.b]
	}
	pl.g = [3]float64{dot(pl.ea, pl.ea), dot(pl.ea, pl.eb), dot(pl.eb, pl.eb)}
	return pl
}

// uv returns p's in-plane coordinates.
func (pl *plane) uv(p [3]float64) (float64, float64) { return p[pl.a], p[pl.b] }

// point returns the point of the plane at in-plane coordinates (u, v).
func (pl *plane) point(u, v float64) [3]float64 {
	var p [3]float64
	p[pl.a], p[pl.b], p[pl.axis] = u, v, float64(pl.slice)+0.5
	return p
}

// ellipse returns the area in mm² of the ellipse filling the box with corners p and q, and
// its inside test in in-plane coordinates. The grid maps the ellipse to an ellipse in the
// world whose area is the voxel-grid ellipse's area times the world area of one voxel's
// face, |ea × eb|.
func (pl *plane) ellipse(p, q [3]float64) (float64, func(x, y float64) bool) {
	pu, pv := pl.uv(p)
	qu, qv := pl.uv(q)
	cu, cv := (pu+qu)/2, (pv+qv)/2
	ru, rv := math.Abs(qu-pu)/2, math.Abs(qv-pv)/2
	area := math.Pi * ru * rv * norm(cross(pl.ea, pl.eb))
	return area, func(x, y float64) bool {
		dx, dy := (x-cu)/ru, (y-cv)/rv
		return dx*dx+dy*dy <= 1
	}
}

// polygon returns the area in mm² of the polygon pts (world: its points in LPS), half the
// norm of the sum of its edges' cross products, and its inside test (even-odd) in in-plane
// coordinates.
func (pl *plane) polygon(pts, world [][3]float64) (float64, func(x, y float64) bool) {
	var s [3]float64
	for i := range world {
		c := cross(world[i], world[(i+1)%len(world)])
		s = [3]float64{s[0] + c[0], s[1] + c[1], s[2] + c[2]}
	}
	us, vs := make([]float64, len(pts)), make([]float64, len(pts))
	for i, p := range pts {
		us[i], vs[i] = pl.uv(p)
	}
	return norm(s) / 2, func(x, y float64) bool {
		in := false
		for i, j := 0, len(us)-1; i < len(us); j, i = i, i+1 {
			if (vs[i] > y) != (vs[j] > y) && x < us[j]+(y-vs[j])*(us[i]-us[j])/(vs[i]-vs[j]) {
				in = !in
			}
		}
		return in
	}
}

type stats struct {
	n                  int
	mean, sd, min, max float64
}

// stats are the statistics of the values of the voxels of the plane whose centres are
// inside, among those of the points' bounding box.
func (pl *plane) stats(vol *volume.Volume, pts [][3]float64, inside func(x, y float64) bool) stats {
	lu, lv, hu, hv := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, p := range pts {
		u, v := pl.uv(p)
		lu, lv, hu, hv = math.Min(lu, u), math.Min(lv, v), math.Max(hu, u), math.Max(hv, v)
	}
	u0, u1 := max(0, int(math.Floor(lu))), min(vol.Dims[pl.a]-1, int(math.Ceil(hu)))
	v0, v1 := max(0, int(math.Floor(lv))), min(vol.Dims[pl.b]-1, int(math.Ceil(hv)))
	st := stats{min: math.Inf(1), max: math.Inf(-1)}
	var sum float64
	var idx [3]int
	idx[pl.axis] = pl.slice
	// Two passes, the second about the mean, for a standard deviation without the
	// cancellation of a sum of squares.
	for v := v0; v <= v1; v++ {
		for u := u0; u <= u1; u++ {
			if !inside(float64(u)+0.5, float64(v)+0.5) {
				continue
			}
			idx[pl.a], idx[pl.b] = u, v
			x := vol.At(idx[0], idx[1], idx[2], 0)
			st.n++
			sum += x
			st.min, st.max = math.Min(st.min, x), math.Max(st.max, x)
		}
	}
	if st.n == 0 {
		return st
	}
	st.mean = sum / float64(st.n)
	var ss float64
	for v := v0; v <= v1; v++ {
		for u := u0; u <= u1; u++ {
			if inside(float64(u)+0.5, float64(v)+0.5) {
				idx[pl.a], idx[pl.b] = u, v
				d := vol.At(idx[0], idx[1], idx[2], 0) - st.mean
				ss += d * d
			}
		}
	}
	st.sd = math.Sqrt(ss / float64(st.n))
	return st
}

// inner is the world dot product of in-plane vectors x and y.
func (pl *plane) inner(x, y [2]float64) float64 {
	return x[0]*y[0]*pl.g[0] + (x[0]*y[1]+x[1]*y[0])*pl.g[1] + x[1]*y[1]*pl.g[2]
}

// perp returns the in-plane vector one millimetre long perpendicular, in the world, to l.
func (pl *plane) perp(l [2]float64) [2]float64 {
	w := [2]float64{l[0]*pl.g[0] + l[1]*pl.g[1], l[0]*pl.g[1] + l[1]*pl.g[2]} // G·l
	p := [2]float64{-w[1], w[0]}
	n := math.Sqrt(pl.inner(p, p))
	if n == 0 {
		return [2]float64{}
	}
	return [2]float64{p[0] / n, p[1] / n}
}

func sub(a, b [3]float64) [3]float64 { return [3]float64{a[0] - b[0], a[1] - b[1], a[2] - b[2]} }
func dot(a, b [3]float64) float64    { return a[0]*b[0] + a[1]*b[1] + a[2]*b[2] }
func norm(a [3]float64) float64      { return math.Sqrt(dot(a, a)) }
func dist(a, b [3]float64) float64   { return norm(sub(a, b)) }
func cross(a, b [3]float64) [3]float64 {
	return [3]float64{a[1]*b[2] - a[2]*b[1], a[2]*b[0] - a[0]*b[2], a[0]*b[1] - a[1]*b[0]}
}

// Marshal encodes measurements as a JSON array.
func Marshal(ms []Measurement) ([]byte, error) {
	b, err := json.Marshal(ms)
	if err != nil {
		return nil, fmt.Errorf("measurements: %w", err)
	}
	return b, nil
}

// Unmarshal decodes a JSON array of measurements and checks that each is well formed (its
// kind, axis, points); it does not check them against an image (Set.Load does).
func Unmarshal(b []byte) ([]Measurement, error) {
	var ms []Measurement
	if err := json.Unmarshal(b, &ms); err != nil {
		return nil, fmt.Errorf("measurements: %w", err)
	}
	for i := range ms {
		if err := check(&ms[i]); err != nil {
			return nil, fmt.Errorf("measurement %d: %w", i+1, err)
		}
		if len(ms[i].World) != 0 && len(ms[i].World) != len(ms[i].Points) {
			return nil, fmt.Errorf("measurement %d: %w: %d world points for %d points", i+1, ErrInvalid, len(ms[i].World), len(ms[i].Points))
		}
	}
	return ms, nil
}
