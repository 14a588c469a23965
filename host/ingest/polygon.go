package ingest

import (
	"math"
	"slices"
	"sort"
)

// This file fills polygons on an 8-bit label map exactly as Pillow does for
// ImageDraw.polygon(points, fill=v, outline=v) on an "L" image, the call ReX-MLE's PUMA
// preparation uses to rasterise the tissue ground truth: the coordinates are truncated to
// int (Pillow's _draw_polygon), the edges built and merged as ImagingDrawPolygon does, and
// the scan lines filled by polygon_generic with its float32 arithmetic, its rounding
// macros and its corner rule. Since fill and outline are equal, Pillow draws no separate
// outline.

// edge is Pillow's Edge.
type edge struct {
	x0, y0     int
	xmin, ymin int
	xmax, ymax int
	dx         float32
}

func newEdge(x0, y0, x1, y1 int) edge {
	e := edge{x0: x0, y0: y0, xmin: min(x0, x1), xmax: max(x0, x1), ymin: min(y0, y1), ymax: max(y0, y1)}
	if y0 != y1 {
		e.dx = float32(x1-x0) / float32(y1-y0)
	}
	return e
}

// at is the edge's x on row y, in Pillow's float32 arithmetic. The explicit conversions
// keep the compiler from fusing the multiply and the add.
func (e *edge) at(y int) float32 {
	return float32(float32(y-e.y0)*e.dx) + float32(e.x0)
}

// label is a w×h 8-bit map, row-major.
type label struct {
	w, h int
	pix  []uint8
}

func newLabel(w, h int) *label { return &label{w: w, h: h, pix: make([]uint8, w*h)} }

// hline is Pillow's hline8: row y from x0 to x1 inclusive, clipped.
func (l *label) hline(x0, y, x1 int, ink uint8) {
	if y < 0 || y >= l.h {
		return
	}
	if x0 < 0 {
		x0 = 0
	} else if x0 >= l.w {
		return
	}
	if x1 < 0 {
		return
	} else if x1 >= l.w {
		x1 = l.w - 1
	}
	for x := x0; x <= x1; x++ {
		l.pix[y*l.w+x] = ink
	}
}

// fillPolygon is ImagingDrawPolygon with fill on integer vertices xy.
func (l *label) fillPolygon(xy [][2]int, ink uint8) {
	count := len(xy)
	if count == 0 {
		return
	}
	e := make([]edge, 0, count)
	i := 0
	for ; i < count-1; i++ {
		x0, y0, x1, y1 := xy[i][0], xy[i][1], xy[i+1][0], xy[i+1][1]
		if y0 == y1 && i != 0 && y0 == xy[i-1][1] {
			// a horizontal line right after another one
			last := &e[len(e)-1]
			if x1 > x0 && x0 > xy[i-1][0] {
				last.xmax = x1
				continue
			} else if x1 < x0 && x0 < xy[i-1][0] {
				last.xmin = x1
				continue
			}
		}
		e = append(e, newEdge(x0, y0, x1, y1))
	}
	if xy[i] != xy[0] {
		e = append(e, newEdge(xy[i][0], xy[i][1], xy[0][0], xy[0][1]))
	}
	l.polygon(e, ink)
}

// polygon is Pillow's polygon_generic for an image without alpha.
func (l *label) polygon(e []edge, ink uint8) {
	if len(e) == 0 {
		return
	}
	ymin, ymax := l.h-1, 0
	table := make([]*edge, 0, len(e))
	for i := range e {
		ymin = min(ymin, e[i].ymin)
		ymax = max(ymax, e[i].ymax)
		if e[i].ymin == e[i].ymax {
			l.hline(e[i].xmin, e[i].ymin, e[i].xmax, ink)
			continue
		}
		table = append(table, &e[i])
	}
	ymin = max(ymin, 0)
	ymax = min(ymax, l.h)
	if ymin > ymax {
		return
	}
	// Pillow visits every edge, in table order, on every row; only the edges whose rows
	// include y contribute (the corner rule, too, only looks at edges with an end on y),
	// so the active edges are kept, in table order, as the rows advance.
	starts := make([][]int, ymax-ymin+1)
	for i, e := range table {
		if e.ymax < ymin || e.ymin > ymax {
			continue
		}
		first := max(e.ymin, ymin)
		starts[first-ymin] = append(starts[first-ymin], i)
	}
	var active []int
	xx := make([]float32, 2*len(table))
	for y := ymin; y <= ymax; y++ {
		if add := starts[y-ymin]; len(add) > 0 {
			active = append(active, add...)
			slices.Sort(active)
		}
		j := 0
		for pos, i := range active {
			cur := table[i]
			xx[j] = cur.at(y)
			j++
			if y == cur.ymax && y < ymax {
				// needed to draw consistent polygons
				xx[j] = xx[j-1]
				j++
			} else if (y == cur.ymin || y == cur.ymax) && cur.dx != 0 {
				// connect discontiguous corners
				for _, k := range active[:pos] {
					other := table[k]
					if (y != other.ymin && y != other.ymax) || other.dx == 0 {
						continue
					}
					if roundf(xx[j-1]) != roundf(other.at(y)) {
						continue
					}
					off := 1
					if y == cur.ymax {
						off = -1
					}
					adj := cur.at(y + off)
					if y+off < other.ymin || y+off > other.ymax {
						continue
					}
					adjOther := other.at(y + off)
					if xx[j-1] > adj+1 && xx[j-1] > adjOther+1 {
						xx[j-1] = roundf(max(adj, adjOther)) + 1
					} else if xx[j-1] < adj-1 && xx[j-1] < adjOther-1 {
						xx[j-1] = roundf(min(adj, adjOther)) - 1
					}
					break
				}
			}
		}
		row := xx[:j]
		sort.Slice(row, func(a, b int) bool { return row[a] < row[b] })
		for i := 1; i < j; i += 2 {
			l.hline(roundUp(row[i-1]), y, roundDown(row[i]), ink)
		}
		// edges whose last row this was leave
		n := 0
		for _, i := range active {
			if table[i].ymax > y {
				active[n] = i
				n++
			}
		}
		active = active[:n]
	}
}

// roundf is C's roundf: half away from zero.
func roundf(f float32) float32 { return float32(math.Round(float64(f))) }

// roundUp is Pillow's ROUND_UP: float32 addition for f ≥ 0, double for f < 0 (fabs
// returns a double).
func roundUp(f float32) int {
	if f >= 0 {
		return int(math.Floor(float64(f + 0.5)))
	}
	return -int(math.Floor(math.Abs(float64(f)) + 0.5))
}

// roundDown is Pillow's ROUND_DOWN.
func roundDown(f float32) int {
	if f >= 0 {
		return int(math.Ceil(float64(f - 0.5)))
	}
	return -int(math.Ceil(math.Abs(float64(f)) - 0.5))
}
