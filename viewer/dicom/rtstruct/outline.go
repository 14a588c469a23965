package rtstruct

import (
	"fmt"
	"slices"

	"amid/viewer/volume"
)

// FromLabelMap outlines each labelled value of lab as an ROI (number: the value; name:
// names[value], else "label N"): on every slice, closed contours along the voxel edges of
// the value's voxels, holes included as contours of their own. Filled by Rasterise (even
// odd), they give back exactly the voxels of the label map.
func FromLabelMap(lab *volume.Volume, names map[int]string) ([]ROI, error) {
	if lab.Dims[3] != 1 || !lab.DType().IsInteger() {
		return nil, fmt.Errorf("the label map must be an integer image with one channel, not %s with %d", lab.DType(), lab.Dims[3])
	}
	nx, ny, nz := lab.Dims[0], lab.Dims[1], lab.Dims[2]
	n := nx * ny
	values := map[int]bool{}
	for i := range lab.NumVoxels() {
		if v := int(lab.AtIndex(i)); v != 0 {
			values[v] = true
		}
	}
	var rois []ROI
	mask := make([]bool, n)
	for _, v := range slices.Sorted(func(yield func(int) bool) {
		for k := range values {
			if !yield(k) {
				return
			}
		}
	}) {
		name := names[v]
		if name == "" {
			name = fmt.Sprintf("label %d", v)
		}
		roi := ROI{Number: v, Name: name}
		for k := range nz {
			set := false
			for j := range n {
				mask[j] = int(lab.AtIndex(k*n+j)) == v
				set = set || mask[j]
			}
			if !set {
				continue
			}
			for _, loop := range outline(mask, nx, ny) {
				c := Contour{Type: ClosedPlanar, Points: make([][3]float64, len(loop))}
				for i, p := range loop {
					c.Points[i] = lab.VoxelToWorld([3]float64{p[0], p[1], float64(k)})
				}
				roi.Contours = append(roi.Contours, c)
			}
		}
		rois = append(rois, roi)
	}
	return rois, nil
}

// outline returns closed loops along the voxel edges between the set and unset voxels of
// mask (nx×ny, row-major; outside the image counts as unset), in voxel coordinates:
// corners lie at half-integers. Every boundary edge is in exactly one loop, which is all
// an even-odd fill needs; straight runs are merged into one edge.
func outline(mask []bool, nx, ny int) [][][2]float64 {
	at := func(x, y int) bool { return x >= 0 && y >= 0 && x < nx && y < ny && mask[y*nx+x] }
	next := map[corner][]corner{}
	count := 0
	add := func(a, b corner) {
		next[a] = append(next[a], b)
		count++
	}
	for y := range ny {
		for x := range nx {
			if !mask[y*nx+x] {
				continue
			}
			// Around the voxel with the set side on the same hand throughout, so that
			// every corner has as many edges in as out.
			if !at(x, y-1) {
				add(corner{x, y}, corner{x + 1, y})
			}
			if !at(x+1, y) {
				add(corner{x + 1, y}, corner{x + 1, y + 1})
			}
			if !at(x, y+1) {
				add(corner{x + 1, y + 1}, corner{x, y + 1})
			}
			if !at(x-1, y) {
				add(corner{x, y + 1}, corner{x, y})
			}
		}
	}
	starts := make([]corner, 0, len(next))
	for c := range next {
		starts = append(starts, c)
	}
	// A fixed order, so the same mask gives the same contours.
	slices.SortFunc(starts, func(a, b corner) int {
		if a.y != b.y {
			return a.y - b.y
		}
		return a.x - b.x
	})
	var loops [][][2]float64
	for _, s := range starts {
		for len(next[s]) > 0 {
			// Follow unused edges until the walk is back at s: every corner has as
			// many unused edges out as in, so it always gets back.
			var pts []corner
			for c := s; ; {
				outs := next[c]
				next[c] = outs[:len(outs)-1]
				pts = append(pts, c)
				c = outs[len(outs)-1]
				if c == s {
					break
				}
			}
			loops = append(loops, simplify(pts))
		}
	}
	return loops
}

// corner (x, y) is the voxel corner at (x−0.5, y−0.5).
type corner struct{ x, y int }

// simplify drops the corners where a loop goes straight on and returns the rest in
// voxel coordinates.
func simplify(p []corner) [][2]float64 {
	var out [][2]float64
	for i := range p {
		a, b, c := p[(i+len(p)-1)%len(p)], p[i], p[(i+1)%len(p)]
		if (b.x-a.x)*(c.y-b.y) == (b.y-a.y)*(c.x-b.x) {
			continue // collinear
		}
		out = append(out, [2]float64{float64(b.x) - 0.5, float64(b.y) - 0.5})
	}
	return out
}
