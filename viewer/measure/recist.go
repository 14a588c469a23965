package measure

import (
	"fmt"
	"math"
	"sort"
)

// ellipseOutline is the number of points an ellipse's outline is taken at for its
// diameters: the longest is then within (1 − cos(π/360)) ≈ 4·10⁻⁵ of its own.
const ellipseOutline = 720

// maxChords bounds the perpendicular chords tried for the short axis, so that a region of
// MaxPoints points takes milliseconds, not seconds.
const maxChords = 2000

// AddDiameters adds the bidirectional measurement of region id (an ellipse or a freehand
// region) as RECIST reads a lesion: its long axis the region's longest diameter (the
// greatest world distance between two points of its outline), its short axis the region's
// longest extent perpendicular to it in the world (from where a line across it first meets
// the outline to where it last does). It returns the new measurement, labelled after the
// region.
func (s *Set) AddDiameters(id int) (Measurement, error) {
	i := s.find(id)
	if i < 0 {
		return Measurement{}, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	r := &s.list[i]
	if r.Kind != Ellipse && r.Kind != Freehand {
		return Measurement{}, fmt.Errorf("%w: a %s has no diameters, only a region has", ErrInvalid, r.Kind)
	}
	pl := newPlane(s.vol, r.Axis, r.Slice)
	out := outline(&pl, r)
	p, q := diameter(&pl, out)
	c, d := perpendicularChord(&pl, out, p, q)
	label := fmt.Sprintf("diameters of %d", r.ID)
	if r.Label != "" {
		label = "diameters of " + r.Label
	}
	return s.Add(Measurement{Kind: Bidirectional, Axis: r.Axis, Slice: r.Slice, Label: label,
		Points: [][3]float64{pl.point(p[0], p[1]), pl.point(q[0], q[1]), pl.point(c[0], c[1]), pl.point(d[0], d[1])}})
}

// outline returns region r's outline in in-plane coordinates: a freehand region's points,
// an ellipse taken at ellipseOutline points.
func outline(pl *plane, r *Measurement) [][2]float64 {
	if r.Kind == Freehand {
		out := make([][2]float64, len(r.Points))
		for i, p := range r.Points {
			out[i][0], out[i][1] = pl.uv(p)
		}
		return out
	}
	pu, pv := pl.uv(r.Points[0])
	qu, qv := pl.uv(r.Points[1])
	cu, cv, ru, rv := (pu+qu)/2, (pv+qv)/2, math.Abs(qu-pu)/2, math.Abs(qv-pv)/2
	out := make([][2]float64, ellipseOutline)
	for i := range out {
		a := 2 * math.Pi * float64(i) / ellipseOutline
		out[i] = [2]float64{cu + ru*math.Cos(a), cv + rv*math.Sin(a)}
	}
	return out
}

// diameter returns the two points of pts farthest apart in the world. They lie on the
// convex hull (the grid maps it to the world's), which is searched pair by pair.
func diameter(pl *plane, pts [][2]float64) ([2]float64, [2]float64) {
	h := hull(pts)
	best, p, q := -1.0, h[0], h[0]
	for i := range h {
		for j := i + 1; j < len(h); j++ {
			d := [2]float64{h[j][0] - h[i][0], h[j][1] - h[i][1]}
			if dd := pl.inner(d, d); dd > best {
				best, p, q = dd, h[i], h[j]
			}
		}
	}
	return p, q
}

// hull is the convex hull of pts (Andrew's monotone chain).
func hull(pts [][2]float64) [][2]float64 {
	s := append([][2]float64(nil), pts...)
	sort.Slice(s, func(i, j int) bool { return s[i][0] < s[j][0] || s[i][0] == s[j][0] && s[i][1] < s[j][1] })
	turn := func(o, a, b [2]float64) float64 {
		return (a[0]-o[0])*(b[1]-o[1]) - (a[1]-o[1])*(b[0]-o[0])
	}
	var h [][2]float64
	for pass := 0; pass < 2; pass++ {
		start := len(h)
		for _, p := range s {
			for len(h) >= start+2 && turn(h[len(h)-2], h[len(h)-1], p) <= 0 {
				h = h[:len(h)-1]
			}
			h = append(h, p)
		}
		h = h[:len(h)-1] // the last point starts the other chain
		for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
			s[i], s[j] = s[j], s[i]
		}
	}
	if len(h) == 0 {
		return pts[:1]
	}
	return h
}

// perpendicularChord returns the ends of the polygon pts's longest extent perpendicular in
// the world to the segment p–q. Between two vertices' places along p–q the extent's ends
// move linearly, the farthest out of several edges each, so the extent is convex there and
// greatest at a vertex's place: those are tried (at most maxChords, evenly spread, for a
// larger region).
func perpendicularChord(pl *plane, pts [][2]float64, p, q [2]float64) ([2]float64, [2]float64) {
	l := [2]float64{q[0] - p[0], q[1] - p[1]}
	ll := pl.inner(l, l)
	n := pl.perp(l)
	along := func(x [2]float64) float64 { return pl.inner([2]float64{x[0] - p[0], x[1] - p[1]}, l) / ll }
	across := func(x [2]float64) float64 { return pl.inner([2]float64{x[0] - p[0], x[1] - p[1]}, n) }
	f := make([]float64, len(pts))
	h := make([]float64, len(pts))
	for i, x := range pts {
		f[i], h[i] = along(x), across(x)
	}
	step := max(1, len(pts)/maxChords)
	best, bt, lo, hi := -1.0, 0.5, 0.0, 0.0
	for k := 0; k < len(pts); k += step {
		t := f[k]
		mn, mx := math.Inf(1), math.Inf(-1)
		for i := range pts {
			j := (i + 1) % len(pts)
			if (f[i]-t)*(f[j]-t) > 0 || f[i] == f[j] && f[i] != t {
				continue
			}
			var y float64
			if f[i] == f[j] { // an edge along the chord: both ends on it
				mn, mx = math.Min(mn, math.Min(h[i], h[j])), math.Max(mx, math.Max(h[i], h[j]))
				continue
			}
			y = h[i] + (t-f[i])/(f[j]-f[i])*(h[j]-h[i])
			mn, mx = math.Min(mn, y), math.Max(mx, y)
		}
		if mx-mn > best {
			best, bt, lo, hi = mx-mn, t, mn, mx
		}
	}
	o := [2]float64{p[0] + bt*l[0], p[1] + bt*l[1]}
	return [2]float64{o[0] + lo*n[0], o[1] + lo*n[1]}, [2]float64{o[0] + hi*n[0], o[1] + hi*n[1]}
}
