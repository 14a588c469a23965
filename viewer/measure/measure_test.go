package measure

import (
	"errors"
	"flag"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"amid/viewer/imageio"
	"amid/viewer/volume"
)

var update = flag.Bool("update", false, "write testdata/roi.nii again from its generator")

// oblique is a rotation of 30° about S then 20° about L (cosines written out from
// cos 30° = 0.8660254, sin 30° = 0.5, cos 20° = 0.9396926, sin 20° = 0.3420201): R = Rx(20°)·Rz(30°).
var oblique = func() [9]float64 {
	c1, s1 := math.Cos(30*math.Pi/180), math.Sin(30*math.Pi/180)
	c2, s2 := math.Cos(20*math.Pi/180), math.Sin(20*math.Pi/180)
	rz := [9]float64{c1, -s1, 0, s1, c1, 0, 0, 0, 1}
	rx := [9]float64{1, 0, 0, 0, c2, -s2, 0, s2, c2}
	var r [9]float64
	for i := range 3 {
		for j := range 3 {
			for k := range 3 {
				r[3*i+j] += rx[3*i+k] * rz[3*k+j]
			}
		}
	}
	return r
}()

// anisotropic is a 40×30×12 int16 volume of 0.7 × 0.7 × 3 mm voxels (the grid) on
// the oblique direction, its origin off zero, its value at (x, y, z) x + 100·y + 10000·z.
func anisotropic(t testing.TB) *volume.Volume {
	t.Helper()
	v, err := volume.New(volume.Int16, [4]int{40, 30, 12, 1})
	if err != nil {
		t.Fatal(err)
	}
	v.Spacing = [3]float64{0.7, 0.7, 3}
	v.Direction = oblique
	v.Origin = [3]float64{-120.5, 33.25, 80}
	for z := range 12 {
		for y := range 30 {
			for x := range 40 {
				v.Data.([]int16)[v.Index(x, y, z, 0)] = int16(x + 100*y + 1000*z)
			}
		}
	}
	return v
}

// affineWorld maps continuous voxel coordinates p (voxel i covers [i, i+1)) to the world
// through the 4×4 affine written out by hand, independently of World and VoxelToWorld:
// the voxel centre i is at index i, so the index of p is p − 0.5.
func affineWorld(v *volume.Volume, p [3]float64) [3]float64 {
	a := v.Affine()
	var w [3]float64
	for r := range 3 {
		w[r] = a[4*r]*(p[0]-0.5) + a[4*r+1]*(p[1]-0.5) + a[4*r+2]*(p[2]-0.5) + a[4*r+3]
	}
	return w
}

// TestLengthOblique: a length on each plane of the 0.7 × 0.7 × 3 mm oblique volume equals
// the world distance of its ends computed from the affine; and a length of 10 voxels along
// x is 7 mm (10 × 0.7), along z in a sagittal plane 4 voxels are 12 mm (4 × 3), whatever the
// direction, as the direction is a rotation.
func TestLengthOblique(t *testing.T) {
	v := anisotropic(t)
	for _, c := range []struct {
		axis, slice int
		p, q        [3]float64
		want        float64 // mm, 0: only the affine's distance
	}{
		{2, 5, [3]float64{3.25, 4.5, 0}, [3]float64{31.75, 22.125, 0}, 0},
		{1, 7, [3]float64{2, 0, 1.5}, [3]float64{37.5, 0, 11.25}, 0},
		{0, 20, [3]float64{0, 0.5, 0.5}, [3]float64{0, 29.5, 12}, 0},
		{2, 0, [3]float64{5, 5, 0}, [3]float64{15, 5, 0}, 7},
		{0, 3, [3]float64{0, 5, 2}, [3]float64{0, 5, 6}, 12},
	} {
		m := Measurement{Kind: Length, Axis: c.axis, Slice: c.slice, Points: [][3]float64{c.p, c.q}}
		if err := Compute(v, &m, UnitHU); err != nil {
			t.Fatal(err)
		}
		p, q := c.p, c.q
		p[c.axis], q[c.axis] = float64(c.slice)+0.5, float64(c.slice)+0.5
		wp, wq := affineWorld(v, p), affineWorld(v, q)
		want := math.Sqrt((wp[0]-wq[0])*(wp[0]-wq[0]) + (wp[1]-wq[1])*(wp[1]-wq[1]) + (wp[2]-wq[2])*(wp[2]-wq[2]))
		got, _ := m.Value("length")
		if math.Abs(got.Value-want) > 1e-9 || got.Unit != UnitMM {
			t.Errorf("axis %d: length %v, want %v mm (the affine's)", c.axis, got, want)
		}
		if c.want != 0 && math.Abs(got.Value-c.want) > 1e-9 {
			t.Errorf("axis %d: length %v, want %v mm", c.axis, got.Value, c.want)
		}
		for i, w := range []([3]float64){wp, wq} {
			if dist(m.World[i], w) > 1e-9 {
				t.Errorf("axis %d: world point %d %v, want %v", c.axis, i, m.World[i], w)
			}
		}
	}
}

// TestAngleAndBidirectional: on the oblique grid a right angle drawn along x and y reads
// 90°, one of 1 voxel along x and 1 along y from the vertex reads 45° (the voxels are square
// in that plane), and in the x–z plane an arm of 3 voxels along x (2.1 mm) against one of
// 3 along x and 1 along z (2.1 and 3 mm) makes atan(3/2.1) = 55.0080°. A bidirectional drawn as a long axis
// gets a short axis perpendicular in the world and half as long.
func TestAngleAndBidirectional(t *testing.T) {
	v := anisotropic(t)
	for _, c := range []struct {
		axis int
		pts  [][3]float64
		want float64
	}{
		{2, [][3]float64{{20, 5, 0}, {10, 5, 0}, {10, 15, 0}}, 90},
		{2, [][3]float64{{11, 5, 0}, {10, 5, 0}, {11, 6, 0}}, 45},
		{1, [][3]float64{{13, 0, 4}, {10, 0, 4}, {13, 0, 5}}, math.Atan(3/2.1) * 180 / math.Pi},
	} {
		m := Measurement{Kind: Angle, Axis: c.axis, Slice: 3, Points: c.pts}
		if err := Compute(v, &m, ""); err != nil {
			t.Fatal(err)
		}
		if got, _ := m.Value("angle"); math.Abs(got.Value-c.want) > 1e-9 || got.Unit != UnitDeg {
			t.Errorf("angle %v, want %v°", got, c.want)
		}
	}
	s, err := NewSet(v, UnitHU)
	if err != nil {
		t.Fatal(err)
	}
	// In the x–z plane, where voxels are 0.7 × 3 mm, a diagonal long axis: its
	// perpendicular on the voxel grid is not the grid's perpendicular.
	m, err := s.Add(Measurement{Kind: Bidirectional, Axis: 1, Slice: 4, Points: [][3]float64{{5, 0, 2}, {25, 0, 8}}})
	if err != nil {
		t.Fatal(err)
	}
	checkPerp := func(m Measurement, what string) {
		t.Helper()
		l, sh := sub(m.World[1], m.World[0]), sub(m.World[3], m.World[2])
		if c := dot(l, sh) / norm(l) / norm(sh); math.Abs(c) > 1e-9 {
			t.Errorf("%s: the axes' cosine is %v, want 0", what, c)
		}
	}
	checkPerp(m, "added")
	long, _ := m.Value("long axis")
	short, _ := m.Value("short axis")
	if math.Abs(short.Value-long.Value/2) > 1e-9 {
		t.Errorf("short axis %v, want half the long %v", short.Value, long.Value)
	}
	// Moving a long axis's end turns the short axis with it; a short axis's end slides it.
	if err := s.Move(m.ID, 1, [3]float64{30, 0, 3}); err != nil {
		t.Fatal(err)
	}
	m, _ = s.Get(m.ID)
	checkPerp(m, "long end moved")
	if err := s.Move(m.ID, 2, [3]float64{12, 0, 9}); err != nil {
		t.Fatal(err)
	}
	m, _ = s.Get(m.ID)
	checkPerp(m, "short end moved")
}

// fixture is testdata/roi.nii: 10×8×3 int16, 0.7 × 0.7 × 3 mm voxels on the oblique
// direction, values from a fixed linear congruential sequence in −200..299 (see
// testdata/README.md). go test -update writes it again.
func fixture(t *testing.T) *volume.Volume {
	t.Helper()
	path := filepath.Join("testdata", "roi.nii")
	if *update {
		v, err := volume.New(volume.Int16, [4]int{10, 8, 3, 1})
		if err != nil {
			t.Fatal(err)
		}
		v.Spacing, v.Direction, v.Origin = [3]float64{0.7, 0.7, 3}, oblique, [3]float64{12.5, -40, 7}
		x := uint32(12345)
		for i := range v.Data.([]int16) {
			x = x*1103515245 + 12345 // the C standard's example rand()
			v.Data.([]int16)[i] = int16((x>>16)%500) - 200
		}
		if err := imageio.Write(path, v); err != nil {
			t.Fatal(err)
		}
	}
	v, err := imageio.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestROIHand: a freehand rectangle and the ellipse in the same box on the fixture's slice
// 1, against values worked out by hand. The rectangle from (2, 3) to (5, 5) holds the
// centres of voxels x 2..4, y 3..4; the ellipse in that box (centre (3.5, 4), radii 1.5 and
// 1) those where ((x+0.5−3.5)/1.5)² + ((y+0.5−4)/1)² ≤ 1: x 2..4 at y 3 and 4 give
// (4/9 or 0) + 0.25 ≤ 1, all six.
func TestROIHand(t *testing.T) {
	v := fixture(t)
	var vals []float64
	for y := 3; y <= 4; y++ {
		for x := 2; x <= 4; x++ {
			vals = append(vals, v.At(x, y, 1, 0))
		}
	}
	// The six values of the file, listed so that a change in the reader shows here first
	// (read with this test's loop and written down).
	if want := []float64{97, 227, 151, 158, 71, -148}; !equal(vals, want) {
		t.Fatalf("fixture values %v, want %v: testdata/roi.nii changed", vals, want)
	}
	// mean (97+227+151+158+71−148)/6 = 556/6; population SD from the squares about it.
	mean := 556.0 / 6
	ss := 0.0
	for _, x := range vals {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / 6)
	rect := Measurement{Kind: Freehand, Axis: 2, Slice: 1, Points: [][3]float64{{2, 3, 0}, {5, 3, 0}, {5, 5, 0}, {2, 5, 0}}}
	ell := Measurement{Kind: Ellipse, Axis: 2, Slice: 1, Points: [][3]float64{{2, 3, 0}, {5, 5, 0}}}
	for _, c := range []struct {
		m    *Measurement
		area float64
	}{
		// 3 × 2 voxels of 0.7 × 0.7 mm; the direction is a rotation, which keeps areas.
		{&rect, 3 * 0.7 * 2 * 0.7},
		// π · 1.5 · 1 voxels², times 0.49 mm² a voxel face.
		{&ell, math.Pi * 1.5 * 0.7 * 1 * 0.7},
	} {
		if err := Compute(v, c.m, UnitHU); err != nil {
			t.Fatal(err)
		}
		want := map[string]float64{"area": c.area, "mean": mean, "sd": sd, "min": -148, "max": 227, "voxels": 6}
		for name, w := range want {
			// The fixture's direction went through the file as float32: areas agree to 1e-6.
			if got, ok := c.m.Value(name); !ok || math.Abs(got.Value-w) > 1e-6 {
				t.Errorf("%s %s = %v, want %v", c.m.Kind, name, got.Value, w)
			}
		}
	}
	if !strings.Contains(rect.Text(), "mm²") || !strings.Contains(rect.Text(), "HU") {
		t.Errorf("text %q says no area or unit", rect.Text())
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestROIBruteForce compares regions on every plane of the fixture with a computation
// written independently: each voxel's centre taken to the world through the affine, its
// place in the region's plane solved from the world (the Gram system of the plane's two
// world axes), inside the ellipse by its equation and inside the polygon by its winding
// number, and the statistics by sums of values and squares.
func TestROIBruteForce(t *testing.T) {
	v := fixture(t)
	for _, c := range []Measurement{
		{Kind: Ellipse, Axis: 2, Slice: 0, Points: [][3]float64{{1.2, 0.7, 0}, {8.9, 7.4, 0}}},
		{Kind: Ellipse, Axis: 0, Slice: 4, Points: [][3]float64{{0, 0.3, 0.1}, {0, 7.8, 2.9}}},
		{Kind: Freehand, Axis: 2, Slice: 2, Points: [][3]float64{{0.5, 0.5, 0}, {9.1, 1.3, 0}, {4.4, 3.9, 0}, {8.8, 7.6, 0}, {0.9, 6.2, 0}}},
		{Kind: Freehand, Axis: 1, Slice: 6, Points: [][3]float64{{0.2, 0, 0.2}, {9.7, 0, 1.1}, {3.3, 0, 2.8}}},
	} {
		m := c
		if err := Compute(v, &m, UnitHU); err != nil {
			t.Fatal(err)
		}
		want := brute(v, &c)
		for name, w := range want {
			got, ok := m.Value(name)
			if !ok || math.Abs(got.Value-w) > 1e-6*math.Max(1, math.Abs(w)) {
				t.Errorf("%s on axis %d: %s = %v, want %v", c.Kind, c.Axis, name, got.Value, w)
			}
		}
	}
}

// brute is TestROIBruteForce's independent computation.
func brute(v *volume.Volume, m *Measurement) map[string]float64 {
	a, b := (m.Axis+1)%3, (m.Axis+2)%3
	if a > b {
		a, b = b, a
	}
	on := func(p [3]float64) [3]float64 { p[m.Axis] = float64(m.Slice) + 0.5; return p }
	o := affineWorld(v, on([3]float64{}))
	var ua, ub [3]float64 // unit steps along a and b
	ua[a], ub[b] = 1, 1
	ea, eb := sub(affineWorld(v, on(ua)), o), sub(affineWorld(v, on(ub)), o)
	// planar solves w = o + s·ea + t·eb for (s, t).
	planar := func(w [3]float64) (float64, float64) {
		d := sub(w, o)
		g11, g12, g22 := dot(ea, ea), dot(ea, eb), dot(eb, eb)
		r1, r2 := dot(d, ea), dot(d, eb)
		det := g11*g22 - g12*g12
		return (g22*r1 - g12*r2) / det, (g11*r2 - g12*r1) / det
	}
	var inside func(s, t float64) bool
	var area float64
	if m.Kind == Ellipse {
		p, q := m.Points[0], m.Points[1]
		cs, ct := (p[a]+q[a])/2, (p[b]+q[b])/2
		rs, rt := math.Abs(q[a]-p[a])/2, math.Abs(q[b]-p[b])/2
		inside = func(s, t float64) bool { return (s-cs)*(s-cs)/(rs*rs)+(t-ct)*(t-ct)/(rt*rt) <= 1 }
		// The world semi-axes rs·ea and rt·eb are perpendicular (the grid is orthogonal).
		area = math.Pi * rs * norm(ea) * rt * norm(eb)
	} else {
		n := len(m.Points)
		inside = func(s, t float64) bool {
			// The winding number: the sum of the angles the edges turn about (s, t).
			w := 0.0
			for i := range n {
				p, q := m.Points[i], m.Points[(i+1)%n]
				a1 := math.Atan2(p[b]-t, p[a]-s)
				a2 := math.Atan2(q[b]-t, q[a]-s)
				d := a2 - a1
				for d > math.Pi {
					d -= 2 * math.Pi
				}
				for d < -math.Pi {
					d += 2 * math.Pi
				}
				w += d
			}
			return math.Abs(w) > math.Pi
		}
		// The shoelace formula in the plane's world coordinates (lengths along ea and eb).
		for i := range n {
			p, q := m.Points[i], m.Points[(i+1)%n]
			area += p[a]*norm(ea)*q[b]*norm(eb) - q[a]*norm(ea)*p[b]*norm(eb)
		}
		area = math.Abs(area) / 2
	}
	var n, sum, sum2 float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for z := range v.Dims[2] {
		for y := range v.Dims[1] {
			for x := range v.Dims[0] {
				idx := [3]int{x, y, z}
				if idx[m.Axis] != m.Slice {
					continue
				}
				s, t := planar(affineWorld(v, [3]float64{float64(x) + 0.5, float64(y) + 0.5, float64(z) + 0.5}))
				if !inside(s, t) {
					continue
				}
				val := v.At(x, y, z, 0)
				n++
				sum += val
				sum2 += val * val
				lo, hi = math.Min(lo, val), math.Max(hi, val)
			}
		}
	}
	mean := sum / n
	return map[string]float64{"area": area, "mean": mean, "sd": math.Sqrt(sum2/n - mean*mean), "min": lo, "max": hi, "voxels": n}
}

// TestBadInput: each bad measurement is refused with a one-sentence error of its kind,
// never a panic.
func TestBadInput(t *testing.T) {
	v := anisotropic(t)
	for _, c := range []struct {
		m    Measurement
		want error
	}{
		{Measurement{Kind: Length, Axis: 2, Slice: 3, Points: [][3]float64{{1, 1, 0}, {41, 1, 0}}}, ErrOutside},
		{Measurement{Kind: Length, Axis: 2, Slice: 12, Points: [][3]float64{{1, 1, 0}, {4, 1, 0}}}, ErrOutside},
		{Measurement{Kind: Probe, Axis: 1, Slice: 3, Points: [][3]float64{{-0.1, 0, 3}}}, ErrOutside},
		{Measurement{Kind: Length, Axis: 2, Slice: 3, Points: [][3]float64{{1, 1, 0}, {1, 1, 5}}}, ErrDegenerate},
		{Measurement{Kind: Freehand, Axis: 2, Slice: 3, Points: [][3]float64{{1, 1, 0}, {2, 2, 0}, {3, 3, 0}}}, ErrDegenerate},
		{Measurement{Kind: Freehand, Axis: 2, Slice: 3, Points: [][3]float64{{1, 1, 0}, {2, 2, 0}}}, ErrInvalid},
		{Measurement{Kind: Ellipse, Axis: 2, Slice: 3, Points: [][3]float64{{1, 1, 0}, {1, 9, 0}}}, ErrDegenerate},
		{Measurement{Kind: Ellipse, Axis: 2, Slice: 3, Points: [][3]float64{{1.1, 1.1, 0}, {1.2, 1.2, 0}}}, ErrDegenerate},
		{Measurement{Kind: Angle, Axis: 2, Slice: 3, Points: [][3]float64{{1, 1, 0}, {1, 1, 0}, {3, 3, 0}}}, ErrDegenerate},
		{Measurement{Kind: "circle", Axis: 2, Slice: 3, Points: [][3]float64{{1, 1, 0}}}, ErrInvalid},
		{Measurement{Kind: Probe, Axis: 3, Slice: 3, Points: [][3]float64{{1, 1, 0}}}, ErrInvalid},
		{Measurement{Kind: Probe, Axis: 2, Slice: 3, Points: [][3]float64{{math.NaN(), 1, 0}}}, ErrInvalid},
	} {
		m := c.m
		err := Compute(v, &m, UnitHU)
		if !errors.Is(err, c.want) {
			t.Errorf("%s %v: error %v, want %v", c.m.Kind, c.m.Points, err, c.want)
			continue
		}
		if s := err.Error(); strings.Count(s, ". ") > 0 || strings.Contains(s, "\n") {
			t.Errorf("error %q is more than one sentence", s)
		}
	}
	if _, err := NewSet(nil, ""); err == nil {
		t.Error("a set without an image accepted")
	}
}

// TestSet: add, move, label, delete, with undo and redo; a gesture is one step; a refused
// move changes nothing.
func TestSet(t *testing.T) {
	v := anisotropic(t)
	s, err := NewSet(v, UnitHU)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Add(Measurement{Kind: Length, Axis: 2, Slice: 2, Points: [][3]float64{{5, 5, 0}, {15, 5, 0}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Add(Measurement{Kind: Probe, Axis: 2, Slice: 2, Points: [][3]float64{{3.5, 4.5, 0}}})
	if err != nil {
		t.Fatal(err)
	}
	// The probe's voxel (3, 4, 2): 3 + 100·4 + 1000·2.
	if got, _ := b.Value("value"); got.Value != 2403 || a.ID != 1 || b.ID != 2 {
		t.Errorf("probe %v, IDs %d %d; want 2403 and 1, 2", got, a.ID, b.ID)
	}
	s.Begin()
	for x := 16.0; x <= 25; x++ {
		if err := s.Move(a.ID, 1, [3]float64{x, 5, 0}); err != nil {
			t.Fatal(err)
		}
	}
	s.End()
	if err := s.Move(a.ID, 1, [3]float64{99, 5, 0}); !errors.Is(err, ErrOutside) {
		t.Errorf("a move off the image: %v", err)
	}
	m, _ := s.Get(a.ID)
	// 20 voxels of 0.7 mm.
	if got, _ := m.Value("length"); math.Abs(got.Value-14) > 1e-9 {
		t.Errorf("after the drag: length %v, want 14 mm", got.Value)
	}
	if err := s.SetLabel(a.ID, "target 1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(b.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(b.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting twice: %v", err)
	}
	if s.Len() != 1 {
		t.Fatalf("%d measurements, want 1", s.Len())
	}
	s.Undo() // the delete
	s.Undo() // the label
	s.Undo() // the whole drag
	m, _ = s.Get(a.ID)
	if got, _ := m.Value("length"); s.Len() != 2 || math.Abs(got.Value-7) > 1e-9 || m.Label != "" {
		t.Errorf("after three undos: %d measurements, length %v, label %q; want 2, 7 mm, none", s.Len(), got.Value, m.Label)
	}
	s.Redo()
	s.Undo()
	s.Undo()
	s.Undo()
	if s.Len() != 0 || s.Undo() {
		t.Errorf("after undoing everything: %d measurements", s.Len())
	}
	for s.Redo() {
	}
	if s.Len() != 1 {
		t.Errorf("after redoing everything: %d measurements, want 1", s.Len())
	}
	c, _ := s.Add(Measurement{Kind: Probe, Axis: 2, Slice: 2, Points: [][3]float64{{3.5, 4.5, 0}}})
	if c.ID != 3 {
		t.Errorf("a new measurement after undo and redo has ID %d, want 3", c.ID)
	}
	// An edit replaces the points: voxel (7, 1, 2) holds 7 + 100 + 2000; a point off the
	// image is refused and changes nothing.
	if err := s.Replace(c.ID, [][3]float64{{7.5, 1.5, 0}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Replace(c.ID, [][3]float64{{7.5, 31, 0}}); !errors.Is(err, ErrOutside) {
		t.Errorf("an edit off the image: %v", err)
	}
	if m, _ := s.Get(c.ID); value(m, "value") != 2107 {
		t.Errorf("after the edit the probe reads %v, want 2107", value(m, "value"))
	}
	// A list whose IDs repeat is numbered anew on loading, from 1.
	if err := s.Load([]Measurement{c, c}); err != nil {
		t.Fatal(err)
	}
	if l := s.List(); len(l) != 2 || l[0].ID != 1 || l[1].ID != 2 {
		t.Errorf("loaded IDs %d and %d, want 1 and 2", l[0].ID, l[1].ID)
	}
}

func value(m Measurement, name string) float64 {
	v, _ := m.Value(name)
	return v.Value
}

// TestJSON: measurements go through JSON and back with their kind, plane, slice, points in
// voxels and the world, values and units; Load computes the values again, and refuses a
// list with a measurement off the image, keeping the one it had.
func TestJSON(t *testing.T) {
	v := anisotropic(t)
	s, _ := NewSet(v, UnitHU)
	for _, m := range []Measurement{
		{Kind: Length, Axis: 2, Slice: 2, Points: [][3]float64{{5, 5, 0}, {15, 5, 0}}},
		{Kind: Ellipse, Axis: 1, Slice: 3, Points: [][3]float64{{5, 0, 2}, {15, 0, 8}}},
		{Kind: Bidirectional, Axis: 0, Slice: 9, Points: [][3]float64{{0, 5, 2}, {0, 15, 8}}},
	} {
		if _, err := s.Add(m); err != nil {
			t.Fatal(err)
		}
	}
	b, err := Marshal(s.List())
	if err != nil {
		t.Fatal(err)
	}
	// On the oblique grid voxel axis 1 runs nearest P (its direction column is
	// (−sin 30°, cos 30° cos 20°, cos 30° sin 20°) = (−0.5, 0.81, 0.30)): coronal.
	for _, want := range []string{`"kind":"ellipse"`, `"axis":1`, `"slice":3`, `"plane":"coronal"`, `"world":[[`, `"unit":"mm2"`, `"unit":"[hnsf'U]"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
	ms, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ms {
		ms[i].Values = nil // Load computes them again
	}
	s2, _ := NewSet(v, UnitHU)
	if err := s2.Load(ms); err != nil {
		t.Fatal(err)
	}
	b2, _ := Marshal(s2.List())
	if string(b) != string(b2) {
		t.Errorf("loaded again:\n%s\nwant\n%s", b2, b)
	}
	ms[1].Points[0][0] = 400
	if err := s2.Load(ms); !errors.Is(err, ErrOutside) || s2.Len() != 3 {
		t.Errorf("loading a measurement off the image: %v, %d kept", err, s2.Len())
	}
	for _, bad := range []string{`{`, `[{"kind":"length","axis":2,"points":[[1,1,1]]}]`, `[{"kind":"probe","axis":2,"points":[[1,1,1]],"world":[[1,1,1],[2,2,2]]}]`} {
		if _, err := Unmarshal([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// FuzzUnmarshal: Unmarshal never panics, and what it accepts Load either takes or refuses
// with an error; seeded with a valid list and broken ones.
func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte(`[{"id":1,"kind":"length","axis":2,"slice":2,"points":[[5,5,2.5],[15,5,2.5]]}]`))
	f.Add([]byte(`[{"kind":"freehand","axis":1,"slice":3,"points":[[1,3.5,1],[9,3.5,1],[5,3.5,9]]}]`))
	f.Add([]byte(`[{"kind":"bidirectional","axis":0,"slice":39,"points":[[39.5,1,1],[39.5,9,9],[39.5,1,9],[39.5,9,1]]}]`))
	f.Add([]byte(`[{"kind":"angle","axis":-1}]`))
	f.Add([]byte(`[{"kind":"ellipse","axis":2,"slice":1e9,"points":[[1e308,0,0],[0,0,0]]}]`))
	v := anisotropic(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := Unmarshal(b)
		if err != nil {
			return
		}
		s, _ := NewSet(v, UnitHU)
		if err := s.Load(ms); err == nil && s.Len() != len(ms) {
			t.Fatalf("loaded %d of %d", s.Len(), len(ms))
		}
	})
}
