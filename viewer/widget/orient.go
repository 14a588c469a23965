// Package widget is AMID's image viewer: a rendering core that turns one slice of a
// volume.Volume (with an optional label overlay or a prediction/truth difference) into an
// *image.RGBA without Fyne types, and Fyne widgets (SliceView, OrthoView) built on it.
// Tools take a view's primary button through its Painter: the Brush corrects labels, the
// box editor boxes and points, the Measurer draws and edits measurements
// (amid/viewer/measure) on any plane; Capture renders what a view shows, for a report.
//
// Screen conventions: axial slices show anterior up and patient left on screen right
// (radiological convention); coronal slices superior up and patient left on screen right;
// sagittal slices superior up and anterior on screen left.
package widget

import (
	"fmt"
	"math"
	"strings"

	"amid/viewer/volume"
)

// Plane is a viewing plane.
type Plane uint8

// The three viewing planes.
const (
	Axial Plane = iota
	Coronal
	Sagittal
)

func (p Plane) String() string {
	switch p {
	case Axial:
		return "axial"
	case Coronal:
		return "coronal"
	case Sagittal:
		return "sagittal"
	}
	return fmt.Sprintf("plane(%d)", uint8(p))
}

// Layout says how a plane of a volume maps onto screen pixels. Screen pixel (u, v) of slice s
// is voxel index I with I[Across] = u or W-1-u (FlipU), I[Down] = v or H-1-v (FlipV),
// I[Through] = s.
type Layout struct {
	Plane                 Plane
	Across, Down, Through int  // voxel axes shown left→right, top→bottom, and sliced
	FlipU, FlipV          bool // screen runs against the voxel axis
	W, H, N               int  // screen width and height in pixels, number of slices
	// PixelW, PixelH are the physical size (mm) of one screen pixel.
	PixelW, PixelH float64
	// Left, Right, Top, Bottom are the patient directions at the screen edges, e.g. "R",
	// "L", "A", "P"; an oblique axis gets up to three letters, strongest first ("LP").
	Left, Right, Top, Bottom string
}

// worldAxis[j] is the LPS axis (0 L, 1 P, 2 S) closest to voxel axis j; the assignment is a
// permutation chosen greedily by the largest direction cosine so oblique volumes still get
// three distinct axes.
func worldAxes(d [9]float64) [3]int {
	var out [3]int
	var usedR, usedC [3]bool
	for k := 0; k < 3; k++ {
		best, br, bc := -1.0, 0, 0
		for r := 0; r < 3; r++ {
			for c := 0; c < 3; c++ {
				if usedR[r] || usedC[c] {
					continue
				}
				if a := math.Abs(d[3*r+c]); a > best {
					best, br, bc = a, r, c
				}
			}
		}
		usedR[br], usedC[bc] = true, true
		out[bc] = br
	}
	return out
}

// planeAxes gives, for a plane, the LPS axes shown across and down the screen, the LPS axis
// sliced through, and the LPS sign that screen right and screen down point to.
func planeAxes(p Plane) (across, down, through int, rightSign, downSign float64) {
	switch p {
	case Coronal:
		return 0, 2, 1, 1, -1 // right = +L, down = −S
	case Sagittal:
		return 1, 2, 0, 1, -1 // right = +P (anterior left), down = −S
	}
	return 0, 1, 2, 1, 1 // axial: right = +L, down = +P (anterior up)
}

// NewLayout works out the screen mapping of plane p of v from v's direction matrix.
func NewLayout(v *volume.Volume, p Plane) Layout {
	l := axes(v, p)
	ca, cd := column(v, l.Across), column(v, l.Down)
	if l.FlipU {
		ca = [3]float64{-ca[0], -ca[1], -ca[2]}
	}
	if l.FlipV {
		cd = [3]float64{-cd[0], -cd[1], -cd[2]}
	}
	l.Right, l.Left = letters(ca, 1), letters(ca, -1)
	l.Bottom, l.Top = letters(cd, 1), letters(cd, -1)
	return l
}

func column(v *volume.Volume, j int) [3]float64 {
	return [3]float64{v.Direction[j], v.Direction[3+j], v.Direction[6+j]}
}

// axes is NewLayout without the edge letters (it allocates nothing).
func axes(v *volume.Volume, p Plane) Layout {
	wa := worldAxes(v.Direction)
	la, ld, lt, rs, ds := planeAxes(p)
	l := Layout{Plane: p}
	for j := 0; j < 3; j++ {
		switch wa[j] {
		case la:
			l.Across = j
		case ld:
			l.Down = j
		case lt:
			l.Through = j
		}
	}
	l.FlipU = column(v, l.Across)[la]*rs < 0
	l.FlipV = column(v, l.Down)[ld]*ds < 0
	l.W, l.H, l.N = v.Dims[l.Across], v.Dims[l.Down], v.Dims[l.Through]
	l.PixelW, l.PixelH = v.Spacing[l.Across], v.Spacing[l.Down]
	return l
}

// letters names the LPS direction s·d: the letter of each component whose magnitude is at
// least a quarter of the largest, strongest first.
func letters(d [3]float64, s float64) string {
	pos := [3]byte{'L', 'P', 'S'}
	neg := [3]byte{'R', 'A', 'I'}
	idx := [3]int{0, 1, 2}
	for i := 0; i < 3; i++ {
		for j := i + 1; j < 3; j++ {
			if math.Abs(d[idx[j]]) > math.Abs(d[idx[i]]) {
				idx[i], idx[j] = idx[j], idx[i]
			}
		}
	}
	top := math.Abs(d[idx[0]])
	var b strings.Builder
	for _, i := range idx {
		c := d[i] * s
		if math.Abs(c) < top/4 || c == 0 {
			continue
		}
		if c > 0 {
			b.WriteByte(pos[i])
		} else {
			b.WriteByte(neg[i])
		}
	}
	return b.String()
}

// Voxel returns the voxel index shown at screen pixel (u, v) of slice s.
func (l *Layout) Voxel(u, v, s int) [3]int {
	var idx [3]int
	if l.FlipU {
		u = l.W - 1 - u
	}
	if l.FlipV {
		v = l.H - 1 - v
	}
	idx[l.Across], idx[l.Down], idx[l.Through] = u, v, s
	return idx
}

// Screen returns the screen pixel (u, v) and slice s that show voxel idx.
func (l *Layout) Screen(idx [3]int) (u, v, s int) {
	u, v, s = idx[l.Across], idx[l.Down], idx[l.Through]
	if l.FlipU {
		u = l.W - 1 - u
	}
	if l.FlipV {
		v = l.H - 1 - v
	}
	return u, v, s
}

// steps returns the flat-index offset of pixel (0,0) of slice s and the flat-index steps per
// screen pixel right and down, for a volume whose voxel strides are st.
func (l *Layout) steps(st [3]int, s int) (base, du, dv int) {
	du, dv = st[l.Across], st[l.Down]
	base = s * st[l.Through]
	if l.FlipU {
		base += (l.W - 1) * du
		du = -du
	}
	if l.FlipV {
		base += (l.H - 1) * dv
		dv = -dv
	}
	return base, du, dv
}
