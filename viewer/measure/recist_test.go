package measure

import (
	"errors"
	"math"
	"testing"
)

// TestDiameters: a freehand ellipse of 10 and 4 mm semi-axes turned 30° in the x–z plane
// of the 0.7 × 0.7 × 3 mm oblique grid (its 720 points made in the world and taken to
// voxels) has a longest diameter of 20 mm and a longest perpendicular extent of 8 mm, its
// vertices at 0° and 180°, 90° and 270° giving both exactly; an ellipse drawn on the grid,
// 16 × 6 voxels of 0.7 mm, has diameters 11.2 and 4.2 mm. A length has none.
func TestDiameters(t *testing.T) {
	v := anisotropic(t)
	s, _ := NewSet(v, UnitHU)
	pl := newPlane(v, 1, 4)
	c30, s30 := math.Cos(math.Pi/6), math.Sin(math.Pi/6)
	var pts [][3]float64
	for i := range 720 {
		a := 2 * math.Pi * float64(i) / 720
		// In mm along the plane's x and z axes (orthogonal in the world: the direction is a
		// rotation) from its corner, about the centre (14, 18) mm; 0.7 and 3 mm a voxel.
		x, y := 10*math.Cos(a), 4*math.Sin(a)
		wx, wy := 14+c30*x-s30*y, 18+s30*x+c30*y
		pts = append(pts, pl.point(wx/0.7, wy/3))
	}
	r, err := s.Add(Measurement{Kind: Freehand, Axis: 1, Slice: 4, Points: pts})
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.AddDiameters(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	long, _ := d.Value("long axis")
	short, _ := d.Value("short axis")
	if math.Abs(long.Value-20) > 1e-9 || math.Abs(short.Value-8) > 1e-9 {
		t.Errorf("diameters %v × %v mm, want 20 × 8", long.Value, short.Value)
	}
	l, sh := sub(d.World[1], d.World[0]), sub(d.World[3], d.World[2])
	if c := dot(l, sh) / norm(l) / norm(sh); math.Abs(c) > 1e-9 || d.Label != "diameters of 1" {
		t.Errorf("the axes' cosine %v, label %q; want 0 and the region's", c, d.Label)
	}
	e, _ := s.Add(Measurement{Kind: Ellipse, Axis: 2, Slice: 3, Points: [][3]float64{{4, 5, 0}, {20, 11, 0}}})
	d, err = s.AddDiameters(e.ID)
	if err != nil {
		t.Fatal(err)
	}
	long, _ = d.Value("long axis")
	short, _ = d.Value("short axis")
	if math.Abs(long.Value-11.2) > 1e-9 || math.Abs(short.Value-4.2) > 1e-9 {
		t.Errorf("ellipse diameters %v × %v mm, want 11.2 × 4.2", long.Value, short.Value)
	}
	if _, err := s.AddDiameters(d.ID); !errors.Is(err, ErrInvalid) {
		t.Errorf("diameters of a bidirectional measurement: %v", err)
	}
	if _, err := s.AddDiameters(99); !errors.Is(err, ErrNotFound) {
		t.Errorf("diameters of no measurement: %v", err)
	}
}
