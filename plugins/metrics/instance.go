package metrics

import (
	"errors"
	"fmt"
	"slices"
)

// CellSegThresholds are the IoU thresholds of the NeurIPS-CellSeg grader (rexmle.md §6.2).
var CellSegThresholds = []float64{0.5, 0.6, 0.7, 0.8, 0.9}

// CellSegTileSize and CellSegTilePixels are the tiling rule of NeurIPS-CellSeg's
// compute_metric.py: images of at least 25,000,000 pixels are zero-padded to multiples of
// 2000 and evaluated in 2000×2000 tiles.
const (
	CellSegTileSize   = 2000
	CellSegTilePixels = 25_000_000
)

// ErrNegativeLabel is returned for an instance mask with negative labels (skimage's
// relabel_sequential refuses them, so the grader fails).
var ErrNegativeLabel = errors.New("instance mask has negative labels")

// InstanceCounts is the matching outcome of one image at one IoU threshold.
type InstanceCounts struct {
	TP, FP, FN        int
	TrueNum, PredNum  int // cells after border removal
	Precision, Recall float64
	F1                float64
}

// CellSegF1 evaluates one image as the NeurIPS-CellSeg grader (a port of the official
// compute_metric.py) does, at each threshold: cells touching the 2-pixel image border are
// removed from GT and prediction (with the grader's np.unique quirk: the smallest value
// among border values and interior background is spared), both are relabelled
// sequentially, IoUs are counted from pixel overlaps, and true positives are the pairs
// with IoU ≥ t of the Hungarian assignment on −(IoU ≥ t) − IoU/(2·n_min). Precision =
// TP/#pred, recall = TP/#GT, F1 = 2PR/(P+R), and all three are 0 when TP = 0 (even when both
// images are empty). Images of CellSegTilePixels or more are tiled (CellSegTileSize).
//
// gt and pred are w×h row-major int32 instance maps (0 = background), as the grader casts
// them. Only the overlapping label pairs are stored, never dense masks.
func CellSegF1(gt, pred []int32, w, h int, thresholds []float64) ([]InstanceCounts, error) {
	return instanceCellSeg(gt, pred, w, h, thresholds, CellSegTilePixels, CellSegTileSize)
}

// instanceCellSeg is CellSegF1 with the tiling rule as parameters (tests use small tiles).
func instanceCellSeg(gt, pred []int32, w, h int, thresholds []float64, tilePixels, tile int) ([]InstanceCounts, error) {
	if len(gt) != w*h || len(pred) != w*h {
		return nil, fmt.Errorf("%w: masks of %d and %d pixels for %d×%d", ErrShape, len(gt), len(pred), w, h)
	}
	out := make([]InstanceCounts, len(thresholds))
	if w*h < tilePixels {
		tiles, err := instanceTile(gt, pred, w, 0, 0, w, h, thresholds)
		if err != nil {
			return nil, err
		}
		copy(out, tiles)
	} else {
		nw := (w + tile - 1) / tile
		nh := (h + tile - 1) / tile
		for ty := 0; ty < nh; ty++ {
			for tx := 0; tx < nw; tx++ {
				c, err := instanceTile(gt, pred, w, tx*tile, ty*tile, tile, tile, thresholds)
				if err != nil {
					return nil, err
				}
				for k := range out {
					out[k].TP += c[k].TP
					out[k].FP += c[k].FP
					out[k].FN += c[k].FN
					out[k].TrueNum += c[k].TrueNum
					out[k].PredNum += c[k].PredNum
				}
			}
		}
	}
	for k := range out {
		c := &out[k]
		if c.TP == 0 {
			continue
		}
		if c.PredNum > 0 {
			c.Precision = float64(c.TP) / float64(c.PredNum)
		}
		if c.TrueNum > 0 {
			c.Recall = float64(c.TP) / float64(c.TrueNum)
		}
		if c.Precision+c.Recall > 0 {
			c.F1 = 2 * (c.Precision * c.Recall) / (c.Precision + c.Recall)
		}
	}
	return out, nil
}

// instanceTile evaluates the tw×th window at (x0, y0) of a w-wide image; pixels outside the
// image read as 0 (the grader's zero padding).
func instanceTile(gt, pred []int32, w, x0, y0, tw, th int, thresholds []float64) ([]InstanceCounts, error) {
	h := len(gt) / w
	gmap, ng, err := instanceRelabel(gt, w, h, x0, y0, tw, th)
	if err != nil {
		return nil, err
	}
	pmap, np, err := instanceRelabel(pred, w, h, x0, y0, tw, th)
	if err != nil {
		return nil, err
	}
	ov := instanceOverlaps(gt, pred, w, h, x0, y0, tw, th, gmap, pmap, ng, np)
	out := make([]InstanceCounts, len(thresholds))
	for k, t := range thresholds {
		tp := 0
		if np > 0 {
			tp = instanceMatch(ov, ng, np, t)
		}
		out[k] = InstanceCounts{TP: tp, FP: np - tp, FN: ng - tp, TrueNum: ng, PredNum: np}
	}
	return out, nil
}

// instanceLabelMap maps original labels to sequential ones (0 = removed/background).
type instanceLabelMap struct {
	dense  []int32
	sparse map[int32]int32
}

func (m *instanceLabelMap) get(v int32) int32 {
	if v <= 0 {
		return 0
	}
	if m.dense != nil {
		return m.dense[v]
	}
	return m.sparse[v]
}

// instanceRelabel applies the grader's remove_boundary_cells then relabel_sequential to
// the window and returns the label map and the number of remaining cells.
func instanceRelabel(mask []int32, w, h, x0, y0, tw, th int) (*instanceLabelMap, int, error) {
	const margin = 2
	xe, ye := min(x0+tw, w), min(y0+th, h)
	var maxv int32
	for y := y0; y < ye; y++ {
		for _, v := range mask[y*w+x0 : y*w+xe] {
			if v < 0 {
				return nil, 0, fmt.Errorf("%w (%d)", ErrNegativeLabel, v)
			}
			maxv = max(maxv, v)
		}
	}
	// Labels present, and labels on the 2-pixel border of the window.
	var present, border func(v int32) bool
	var markB func(v int32)
	if int64(maxv) <= 1<<26 {
		p := make([]bool, int(maxv)+1)
		b := make([]bool, int(maxv)+1)
		present, border = func(v int32) bool { return p[v] }, func(v int32) bool { return b[v] }
		markB = func(v int32) { b[v] = true }
		for y := y0; y < ye; y++ {
			row := mask[y*w+x0 : y*w+xe]
			ly := y - y0
			if ly < margin || ly >= th-margin {
				for _, v := range row {
					p[v], b[v] = true, true
				}
				continue
			}
			for lx, v := range row {
				p[v] = true
				if lx < margin || lx >= tw-margin {
					b[v] = true
				}
			}
		}
	} else {
		p, b := map[int32]bool{}, map[int32]bool{}
		present, border = func(v int32) bool { return p[v] }, func(v int32) bool { return b[v] }
		markB = func(v int32) { b[v] = true }
		for y := y0; y < ye; y++ {
			ly := y - y0
			for lx, v := range mask[y*w+x0 : y*w+xe] {
				p[v] = true
				if ly < margin || ly >= th-margin || lx < margin || lx >= tw-margin {
					b[v] = true
				}
			}
		}
	}
	// Border pixels beyond the image are padding zeros; np.unique(mask*bd) also holds 0
	// from the interior when the interior is non-empty.
	if y0+th > h || x0+tw > w || (th > 2*margin && tw > 2*margin) {
		markB(0)
	}
	// The grader skips the first (smallest) unique border value: spare it.
	var spare int32 = -1
	for v := int32(0); v <= maxv; v++ {
		if border(v) {
			spare = v
			break
		}
	}
	keep := make([]int32, 0, 64)
	if int64(maxv) <= 1<<26 {
		for v := int32(1); v <= maxv; v++ {
			if present(v) && (!border(v) || v == spare) {
				keep = append(keep, v)
			}
		}
	} else {
		// Sparse labels: collect from the window (maps above).
		seen := map[int32]bool{}
		for y := y0; y < ye; y++ {
			for _, v := range mask[y*w+x0 : y*w+xe] {
				if v > 0 && !seen[v] {
					seen[v] = true
					if !border(v) || v == spare {
						keep = append(keep, v)
					}
				}
			}
		}
		slices.Sort(keep)
	}
	m := &instanceLabelMap{}
	if int64(maxv) <= 1<<26 {
		m.dense = make([]int32, int(maxv)+1)
		for i, v := range keep {
			m.dense[v] = int32(i + 1)
		}
	} else {
		m.sparse = make(map[int32]int32, len(keep))
		for i, v := range keep {
			m.sparse[v] = int32(i + 1)
		}
	}
	return m, len(keep), nil
}

// instanceOverlapSet holds the pixel counts of each relabelled GT and predicted cell and
// the overlap of every pair that shares a pixel.
type instanceOverlapSet struct {
	gArea, pArea []int64
	pairs        map[[2]int32]int64
}

func instanceOverlaps(gt, pred []int32, w, h, x0, y0, tw, th int, gm, pm *instanceLabelMap, ng, np int) *instanceOverlapSet {
	s := &instanceOverlapSet{gArea: make([]int64, ng+1), pArea: make([]int64, np+1), pairs: map[[2]int32]int64{}}
	for y := y0; y < min(y0+th, h); y++ {
		var last [2]int32
		run := int64(0)
		for x := x0; x < min(x0+tw, w); x++ {
			g := gm.get(gt[y*w+x])
			p := pm.get(pred[y*w+x])
			s.gArea[g]++
			s.pArea[p]++
			if g == 0 || p == 0 {
				if run > 0 {
					s.pairs[last] += run
					run = 0
				}
				continue
			}
			k := [2]int32{g, p}
			if run > 0 && k != last {
				s.pairs[last] += run
				run = 0
			}
			last = k
			run++
		}
		if run > 0 {
			s.pairs[last] += run
		}
	}
	return s
}

// instanceMatch returns the true positives at threshold t: the pairs with IoU ≥ t in the
// optimal assignment of the grader's cost −(IoU ≥ t) − IoU/(2·n_min). Because the second
// term sums to at most 1/2, that assignment always has the most pairs with IoU ≥ t, and
// pairs below t or in different components of the "IoU ≥ t" graph cannot change that
// count; so the assignment is solved exactly per component of that graph.
func instanceMatch(s *instanceOverlapSet, ng, np int, t float64) int {
	nmin := float64(min(ng, np))
	type edge struct {
		g, p int32
		iou  float64
	}
	var edges []edge
	for k, o := range s.pairs {
		iou := float64(o) / float64(s.gArea[k[0]]+s.pArea[k[1]]-o)
		if iou >= t {
			edges = append(edges, edge{k[0], k[1], iou})
		}
	}
	if len(edges) == 0 {
		return 0
	}
	// Union-find over GT ids 1..ng and predicted ids ng+1..ng+np.
	parent := map[int32]int32{}
	var find func(int32) int32
	find = func(a int32) int32 {
		p, ok := parent[a]
		if !ok || p == a {
			return a
		}
		r := find(p)
		parent[a] = r
		return r
	}
	for _, e := range edges {
		a, b := find(e.g), find(int32(ng)+e.p)
		if a != b {
			parent[a] = b
		}
	}
	comps := map[int32][]edge{}
	for _, e := range edges {
		r := find(e.g)
		comps[r] = append(comps[r], e)
	}
	tp := 0
	for _, ce := range comps {
		if len(ce) == 1 {
			tp++
			continue
		}
		gi, pi := map[int32]int{}, map[int32]int{}
		for _, e := range ce {
			if _, ok := gi[e.g]; !ok {
				gi[e.g] = len(gi)
			}
			if _, ok := pi[e.p]; !ok {
				pi[e.p] = len(pi)
			}
		}
		nr, nc := len(gi), len(pi)
		cost := make([]float64, nr*nc)
		ious := make([]float64, nr*nc)
		for g, i := range gi {
			for p, j := range pi {
				o := s.pairs[[2]int32{g, p}]
				if o > 0 {
					ious[i*nc+j] = float64(o) / float64(s.gArea[g]+s.pArea[p]-o)
				}
			}
		}
		for k, iou := range ious {
			c := -iou / (2 * nmin)
			if iou >= t {
				c--
			}
			cost[k] = c
		}
		rows, cols, err := LinearSumAssignment(cost, nr, nc)
		if err != nil {
			continue // finite costs: cannot happen
		}
		for k := range rows {
			if ious[rows[k]*nc+cols[k]] >= t {
				tp++
			}
		}
	}
	return tp
}
