package metrics

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// SurfaceDistances is what DeepMind's surface_distance.compute_surface_distances returns:
// for every surface element (surfel) of each mask, its distance in mm to the other
// surface, sorted ascending by (distance, area), with the surfel's area alongside.
type SurfaceDistances struct {
	GTToPred, PredToGT []float64
	AreasGT, AreasPred []float64
}

// surfaceBBox is the inclusive bounding box of the union of two masks; ok is false when
// both are empty.
func surfaceBBox(a, b []uint8, dims [3]int) (lo, hi [3]int, ok bool) {
	nx, ny, nz := dims[0], dims[1], dims[2]
	workers := surfaceWorkers(nx * ny * nz / (1 << 20))
	los := make([][3]int, workers)
	his := make([][3]int, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			lo, hi := [3]int{nx, ny, nz}, [3]int{-1, -1, -1}
			for z := nz * w / workers; z < nz*(w+1)/workers; z++ {
				for y := 0; y < ny; y++ {
					base := (z*ny + y) * nx
					first, last := surfaceRowSpan(a[base:base+nx], b[base:base+nx])
					if first < 0 {
						continue
					}
					lo[0], hi[0] = min(lo[0], first), max(hi[0], last)
					lo[1], hi[1] = min(lo[1], y), max(hi[1], y)
					lo[2], hi[2] = min(lo[2], z), max(hi[2], z)
				}
			}
			los[w], his[w] = lo, hi
		}(w)
	}
	wg.Wait()
	lo, hi = [3]int{nx, ny, nz}, [3]int{-1, -1, -1}
	for w := range los {
		for k := 0; k < 3; k++ {
			lo[k], hi[k] = min(lo[k], los[w][k]), max(hi[k], his[w][k])
		}
	}
	return lo, hi, hi[0] >= 0
}

// surfaceRowSpan is the first and last x where ra or rb is non-zero (−1, −1 when none),
// skipping zero bytes eight at a time.
func surfaceRowSpan(ra, rb []uint8) (first, last int) {
	n := len(ra)
	first, last = -1, -1
	x := 0
	for ; x+8 <= n; x += 8 {
		if binary.LittleEndian.Uint64(ra[x:])|binary.LittleEndian.Uint64(rb[x:]) != 0 {
			break
		}
	}
	for ; x < n; x++ {
		if ra[x]|rb[x] != 0 {
			first = x
			break
		}
	}
	if first < 0 {
		return -1, -1
	}
	x = n
	for ; x-8 >= first; x -= 8 {
		if binary.LittleEndian.Uint64(ra[x-8:])|binary.LittleEndian.Uint64(rb[x-8:]) != 0 {
			break
		}
	}
	for x--; x >= first; x-- {
		if ra[x]|rb[x] != 0 {
			return first, x
		}
	}
	return first, first
}

func surfaceCheck(gt, pred []uint8, dims [3]int) error {
	n := dims[0] * dims[1] * dims[2]
	if dims[0] <= 0 || dims[1] <= 0 || dims[2] <= 0 {
		return fmt.Errorf("metrics: empty grid %v", dims)
	}
	if len(gt) != n || len(pred) != n {
		return fmt.Errorf("metrics: masks of %d and %d voxels do not match dims %v", len(gt), len(pred), dims)
	}
	return nil
}

// surfaceCodes computes the 2×2×2 neighbour code of every corner of the cropped box
// [lo, hi] grown by one corner: corner (i, j, k) sees the voxels (i−1..i, j−1..j, k−1..k)
// of the crop, and the voxel at offset (dz, dy, dx) ∈ {−1, 0}³ sets bit
// 128 >> (4(dz+1) + 2(dy+1) + (dx+1)), the library's kernel over (Z, Y, X) arrays.
// Each corner row gathers the four crop rows it sees; corner planes are shared among
// goroutines.
func surfaceCodes(mask []uint8, dims [3]int, lo, hi [3]int, out []uint8) []uint8 {
	c := [3]int{hi[0] - lo[0] + 1, hi[1] - lo[1] + 1, hi[2] - lo[2] + 1}
	m := [3]int{c[0] + 1, c[1] + 1, c[2] + 1}
	n := m[0] * m[1] * m[2]
	if cap(out) < n {
		out = make([]uint8, n)
	}
	out = out[:n]
	nx, ny := dims[0], dims[1]
	workers := surfaceWorkers(n / 65536)
	// t rows hold a crop row as 0/1 bytes with a zero on either side (t[1+i] is voxel
	// i), padded so that 8-byte words can be read past the end.
	tw := (m[0] + 1 + 7) / 8 * 8
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var t [4][]uint8
			var on [4]bool
			for k := range t {
				t[k] = make([]uint8, tw+8)
			}
			word := make([]uint8, tw)
			for {
				cz := int(next.Add(1) - 1)
				if cz >= m[2] {
					return
				}
				for cy := 0; cy < m[1]; cy++ {
					// (voxel z, voxel y) at offsets (−1,−1), (−1,0), (0,−1), (0,0): bits 7–6,
					// 5–4, 3–2 and 1–0, the higher bit of each pair for dx = −1.
					for k := range t {
						vz, vy := cz-1+k/2, cy-1+k%2
						on[k] = vz >= 0 && vz < c[2] && vy >= 0 && vy < c[1]
						if on[k] {
							base := ((lo[2]+vz)*ny+lo[1]+vy)*nx + lo[0]
							surfaceBits(mask[base:base+c[0]], t[k][1:1+c[0]])
						}
					}
					for x := 0; x < m[0]; x += 8 {
						var v uint64
						for k := range t {
							if on[k] {
								a := binary.LittleEndian.Uint64(t[k][x:])
								b := binary.LittleEndian.Uint64(t[k][x+1:])
								v |= (a<<1 | b) << (6 - 2*uint(k))
							}
						}
						binary.LittleEndian.PutUint64(word[x:], v)
					}
					copy(out[(cz*m[1]+cy)*m[0]:(cz*m[1]+cy+1)*m[0]], word)
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// surfaceBits writes 1 to dst for every non-zero byte of src and 0 for every zero one.
func surfaceBits(src, dst []uint8) {
	const lsb = 0x0101010101010101
	i := 0
	for ; i+8 <= len(src); i += 8 {
		x := binary.LittleEndian.Uint64(src[i:])
		x |= x >> 4
		x |= x >> 2
		x |= x >> 1
		binary.LittleEndian.PutUint64(dst[i:], x&lsb)
	}
	for ; i < len(src); i++ {
		dst[i] = min(src[i], 1)
	}
}

// DeepMindSurfaceDistances computes surface distances exactly as DeepMind's
// surface_distance.compute_surface_distances does for 3D masks (the library PANTHER's
// grader uses). The masks are cropped to the bounding box of their union, every corner
// between voxels gets the 8-bit code of its 2×2×2 neighbourhood, corners whose code is
// neither 0 nor 255 are surfels, each weighted by its marching-cubes area, and distances
// run between corner points. spacing is in (X, Y, Z) order; the library's axes are the
// (Z, Y, X) axes of a numpy array read by SimpleITK. If one mask is empty its lists are
// empty and all distances of the other are +Inf; both empty gives empty lists.
func DeepMindSurfaceDistances(gt, pred []uint8, dims [3]int, spacing [3]float64) (*SurfaceDistances, error) {
	if err := surfaceCheck(gt, pred, dims); err != nil {
		return nil, err
	}
	lo, hi, ok := surfaceBBox(gt, pred, dims)
	sd := &SurfaceDistances{}
	if !ok {
		return sd, nil
	}
	m := [3]int{hi[0] - lo[0] + 2, hi[1] - lo[1] + 2, hi[2] - lo[2] + 2}
	cg := surfaceCodes(gt, dims, lo, hi, nil)
	cp := surfaceCodes(pred, dims, lo, hi, nil)
	area := surfaceAreaTable([3]float64{spacing[2], spacing[1], spacing[0]})
	dz := make([]int32, len(cg))
	gp := surfaceDirected(cp, cg, m, spacing, &area, dz)
	pg := surfaceDirected(cg, cp, m, spacing, &area, dz)
	sd.GTToPred, sd.AreasGT = surfaceSplit(gp)
	sd.PredToGT, sd.AreasPred = surfaceSplit(pg)
	return sd, nil
}

// surfaceRows marks the rows (y, z) of a grid that hold a voxel for which isQuery holds.
func surfaceRows(query []uint8, m [3]int, isQuery func(uint8) bool) []bool {
	rows := make([]bool, m[1]*m[2])
	for r := range rows {
		for _, c := range query[r*m[0] : (r+1)*m[0]] {
			if isQuery(c) {
				rows[r] = true
				break
			}
		}
	}
	return rows
}

// surfaceEDTRows is EDTSquaredToFeatures with correct values on the marked rows only.
func surfaceEDTRows(feature []uint8, rows []bool, m [3]int, spacing [3]float64, out []float64) []float64 {
	n := m[0] * m[1] * m[2]
	out = edtGrow(out, n)
	inf := math.Inf(1)
	for i, f := range feature[:n] {
		if f != 0 {
			out[i] = 0
		} else {
			out[i] = inf
		}
	}
	edtTransformRows(out, m, spacing, rows)
	return out
}

// AverageDistance is compute_average_surface_distance: the area-weighted mean distance
// from the ground-truth surface to the prediction and from the prediction to the ground
// truth (NaN for an empty surface).
func (s *SurfaceDistances) AverageDistance() (gtToPred, predToGT float64) {
	return surfaceWeightedMean(s.GTToPred, s.AreasGT), surfaceWeightedMean(s.PredToGT, s.AreasPred)
}

func surfaceWeightedMean(d, a []float64) float64 {
	p := make([]float64, len(d))
	for i := range d {
		p[i] = d[i] * a[i]
	}
	return NumpySum(p) / NumpySum(a)
}

// MASD is PANTHER's mean average surface distance: the mean of the two directed average
// distances.
func (s *SurfaceDistances) MASD() float64 {
	g, p := s.AverageDistance()
	return (g + p) / 2
}

// ASSD is the average symmetric surface distance: the area-weighted mean over the surfels
// of both surfaces of their distance to the other surface.
func (s *SurfaceDistances) ASSD() float64 {
	d := slices.Concat(s.GTToPred, s.PredToGT)
	a := slices.Concat(s.AreasGT, s.AreasPred)
	return surfaceWeightedMean(d, a)
}

// RobustHausdorff is compute_robust_hausdorff: in each direction the distance at which
// the cumulative surfel area first reaches percent % of the total, and the larger of the
// two (+Inf for an empty surface). percent = 100 gives the Hausdorff distance.
func (s *SurfaceDistances) RobustHausdorff(percent float64) float64 {
	return max(surfacePercentile(s.GTToPred, s.AreasGT, percent), surfacePercentile(s.PredToGT, s.AreasPred, percent))
}

func surfacePercentile(d, a []float64, percent float64) float64 {
	if len(d) == 0 {
		return math.Inf(1)
	}
	total := NumpySum(a)
	q := percent / 100.0
	cum := 0.0
	for i, v := range a {
		cum += v
		if cum/total >= q {
			return d[i]
		}
	}
	return d[len(d)-1]
}

// SurfaceOverlap is compute_surface_overlap_at_tolerance: the fraction of each surface's
// area within tol mm of the other surface.
func (s *SurfaceDistances) SurfaceOverlap(tol float64) (gt, pred float64) {
	og := surfaceAreaWithin(s.GTToPred, s.AreasGT, tol)
	op := surfaceAreaWithin(s.PredToGT, s.AreasPred, tol)
	return og / NumpySum(s.AreasGT), op / NumpySum(s.AreasPred)
}

// SurfaceDice is compute_surface_dice_at_tolerance: the area of both surfaces within tol
// mm of the other, over the total area of both (NaN when both are empty).
func (s *SurfaceDistances) SurfaceDice(tol float64) float64 {
	og := surfaceAreaWithin(s.GTToPred, s.AreasGT, tol)
	op := surfaceAreaWithin(s.PredToGT, s.AreasPred, tol)
	return (og + op) / (NumpySum(s.AreasGT) + NumpySum(s.AreasPred))
}

func surfaceAreaWithin(d, a []float64, tol float64) float64 {
	var sel []float64
	for i, v := range d {
		if v <= tol {
			sel = append(sel, a[i])
		}
	}
	return NumpySum(sel)
}

// MONAIEdges returns the border voxels of mask as MONAI's get_mask_edges finds them
// (without spacing): mask XOR binary_erosion(mask) with the 6-neighbour cross and voxels
// outside the grid counted as background, i.e. every foreground voxel with a background
// or outside face neighbour.
func MONAIEdges(mask []uint8, dims [3]int, out []uint8) []uint8 {
	nx, ny, nz := dims[0], dims[1], dims[2]
	n := nx * ny * nz
	if cap(out) < n {
		out = make([]uint8, n)
	}
	out = out[:n]
	sy, sz := nx, nx*ny
	for z := 0; z < nz; z++ {
		for y := 0; y < ny; y++ {
			base := z*sz + y*sy
			for x := 0; x < nx; x++ {
				i := base + x
				if mask[i] == 0 {
					out[i] = 0
					continue
				}
				e := x == 0 || x == nx-1 || y == 0 || y == ny-1 || z == 0 || z == nz-1 ||
					mask[i-1] == 0 || mask[i+1] == 0 || mask[i-sy] == 0 || mask[i+sy] == 0 ||
					mask[i-sz] == 0 || mask[i+sz] == 0
				if e {
					out[i] = 1
				} else {
					out[i] = 0
				}
			}
		}
	}
	return out
}

// MONAISurfaceDistances is MONAI's get_surface_distance(edges_pred, edges_gt,
// "euclidean", spacing) after get_mask_edges(pred, gt), as the SEG.A, TopBrain and TopCoW
// graders call it: the distance in mm from every border voxel of the prediction to the
// nearest border voxel of the ground truth, one direction only, in raster order. With an
// empty ground truth every prediction border voxel gets +Inf; with an empty prediction
// (and a non-empty ground truth) MONAI returns +Inf for every ground-truth border voxel,
// and so does this. Both empty gives an empty list. Unit spacing gives voxel units (the
// ReX SEG.A grader's spacing=None).
func MONAISurfaceDistances(pred, gt []uint8, dims [3]int, spacing [3]float64) ([]float64, error) {
	if err := surfaceCheck(gt, pred, dims); err != nil {
		return nil, err
	}
	lo, hi, ok := surfaceBBox(gt, pred, dims)
	if !ok {
		return []float64{}, nil
	}
	// crop, as get_mask_edges does; the edges and distances are the same as uncropped
	c := [3]int{hi[0] - lo[0] + 1, hi[1] - lo[1] + 1, hi[2] - lo[2] + 1}
	cp := surfaceCrop(pred, dims, lo, c)
	cg := surfaceCrop(gt, dims, lo, c)
	ep := MONAIEdges(cp, c, nil)
	eg := MONAIEdges(cg, c, cp) // cp is no longer needed
	anyG, anyP := false, false
	for i := range eg {
		anyG = anyG || eg[i] != 0
		anyP = anyP || ep[i] != 0
	}
	var out []float64
	if !anyG || !anyP {
		src := ep
		if anyG {
			src = eg
		}
		for _, v := range src {
			if v != 0 {
				out = append(out, math.Inf(1))
			}
		}
		return out, nil
	}
	d := surfaceEDTRows(eg, surfaceRows(ep, c, func(v uint8) bool { return v != 0 }), c, spacing, nil)
	for i, v := range ep {
		if v != 0 {
			out = append(out, math.Sqrt(d[i]))
		}
	}
	return out, nil
}

func surfaceCrop(m []uint8, dims [3]int, lo, c [3]int) []uint8 {
	out := make([]uint8, c[0]*c[1]*c[2])
	for z := 0; z < c[2]; z++ {
		for y := 0; y < c[1]; y++ {
			src := ((lo[2]+z)*dims[1]+lo[1]+y)*dims[0] + lo[0]
			copy(out[(z*c[1]+y)*c[0]:(z*c[1]+y+1)*c[0]], m[src:src+c[0]])
		}
	}
	return out
}

// NumpyPercentile is numpy.percentile(x, q) with the default linear method, to the bit:
// virtual index (n−1)·q/100 and numpy's two-sided lerp. NaN for an empty vector.
func NumpyPercentile(x []float64, q float64) float64 {
	n := len(x)
	if n == 0 {
		return math.NaN()
	}
	s := slices.Clone(x)
	slices.Sort(s)
	v := float64(n-1) * (q / 100)
	lo := math.Floor(v)
	i := int(lo)
	if i >= n-1 {
		return s[n-1]
	}
	if i < 0 {
		return s[0]
	}
	a, b := s[i], s[i+1]
	t := v - lo
	diff := b - a
	if t >= 0.5 {
		return b - float64(diff*(1-t))
	}
	return a + float64(diff*t)
}
