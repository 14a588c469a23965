package metrics

import (
	"math"
	"sort"
	"strings"
)

// Nucleus is one detected or annotated nucleus: its class name, its centroid in pixels and
// its confidence score.
type Nucleus struct {
	Class string
	X, Y  float64
	Score float64
}

// PointCounts are per-class detection counts.
type PointCounts struct{ TP, FP, FN int }

// F1 is the PUMA per-class F1: 0 when the class is absent from both GT and prediction
// (TP = FP = FN = 0), otherwise 2PR/(P+R) with P and R 0 when undefined.
func (c PointCounts) F1() float64 {
	if c.TP == 0 {
		return 0
	}
	p := float64(c.TP) / float64(c.TP+c.FP)
	r := float64(c.TP) / float64(c.TP+c.FN)
	return 2 * p * r / (p + r)
}

// PUMAMatchRadius is the centroid distance of the PUMA nuclei matching, in pixels.
const PUMAMatchRadius = 15.0

// PUMAMatch matches one image's predicted nuclei to its GT nuclei as the PUMA evaluation
// (official eval_nuclei.py, ReX graders) does and returns the counts per class. For each GT
// nucleus in file order, the candidates are the still unmatched predictions of the same
// class whose centroid lies within radius (distance < radius, or ≤ radius when inclusive:
// ReX's track 2 grader); the candidate of highest score, then smallest distance, (stable in
// file order) is matched, and the first remaining prediction with exactly that centroid is
// removed from the pool (the graders' removal rule, which may remove a different
// prediction with an identical centroid).
func PUMAMatch(gt, pred []Nucleus, radius float64, inclusive bool) map[string]PointCounts {
	pool := map[string][]int{}
	for i, p := range pred {
		pool[p.Class] = append(pool[p.Class], i)
	}
	tp := map[string]int{}
	type cand struct {
		idx   int
		dist  float64
		score float64
	}
	var cands []cand
	for _, g := range gt {
		list := pool[g.Class]
		cands = cands[:0]
		for _, i := range list {
			p := pred[i]
			dx, dy := g.X-p.X, g.Y-p.Y
			d := math.Sqrt(dx*dx + dy*dy)
			if d < radius || (inclusive && d == radius) {
				cands = append(cands, cand{i, d, p.Score})
			}
		}
		if len(cands) == 0 {
			continue
		}
		sort.SliceStable(cands, func(a, b int) bool {
			if cands[a].score != cands[b].score {
				return cands[a].score > cands[b].score
			}
			return cands[a].dist < cands[b].dist
		})
		best := pred[cands[0].idx]
		tp[g.Class]++
		for k, i := range list {
			if pred[i].X == best.X && pred[i].Y == best.Y {
				pool[g.Class] = append(list[:k:k], list[k+1:]...)
				break
			}
		}
	}
	out := map[string]PointCounts{}
	for _, g := range gt {
		c := out[g.Class]
		c.FN++
		out[g.Class] = c
	}
	for _, p := range pred {
		c := out[p.Class]
		c.FP++
		out[p.Class] = c
	}
	for k, n := range tp {
		c := out[k]
		c.TP = n
		c.FP -= n
		c.FN -= n
		out[k] = c
	}
	return out
}

// PUMAAveraging selects how per-image class F1 scores become the macro F1.
type PUMAAveraging int

const (
	// PUMAAllImages averages each class's F1 over every image (a class absent from an
	// image's GT and prediction scores 0 there) and the classes equally: the ReX track 1
	// grader (3 classes).
	PUMAAllImages PUMAAveraging = iota
	// PUMAPresentImages averages each class's F1 only over the images where it occurs in
	// GT or prediction, a class that never occurs scores 0, and all classes count: the ReX
	// track 2 grader (10 classes), more lenient than the official code.
	PUMAPresentImages
	// PUMAOfficial divides each class's F1 sum over the images where it occurs by the
	// number of all images, and averages over the classes that occur in at least one
	// image: the official PUMA evaluate.py.
	PUMAOfficial
)

// PUMAMacroF1 aggregates per-image counts into the macro F1 over classes and the per-class
// averages, under the averaging rule avg.
func PUMAMacroF1(images []map[string]PointCounts, classes []string, avg PUMAAveraging) (float64, map[string]float64) {
	per := map[string]float64{}
	n := len(images)
	if n == 0 {
		return 0, per
	}
	used := 0
	sum := 0.0
	for _, cl := range classes {
		s, k := 0.0, 0
		for _, im := range images {
			c, ok := im[cl]
			if ok && (c.TP+c.FP+c.FN) > 0 {
				s += c.F1()
				k++
			}
		}
		var v float64
		switch avg {
		case PUMAAllImages:
			v = s / float64(n)
		case PUMAPresentImages:
			if k > 0 {
				v = s / float64(k)
			}
		case PUMAOfficial:
			v = s / float64(n)
			if k == 0 {
				continue
			}
		}
		per[cl] = v
		sum += v
		used++
	}
	if used == 0 {
		return 0, per
	}
	return sum / float64(used), per
}

// PUMAT1Classes are the 3 classes of PUMA track 1 nuclei detection.
var PUMAT1Classes = []string{"tumor", "TILs", "other"}

// PUMAT2Classes are the 10 classes of PUMA track 2 nuclei detection.
var PUMAT2Classes = []string{"tumor", "lymphocytes", "plasma_cells", "histiocytes", "melanophages",
	"neutrophils", "stromal_cells", "epithelium", "endothelium", "apoptotic_cells"}

// PUMAT1Class normalises a class name as the ReX track 1 grader does: "TILs", "til",
// "lymphocyte(s)" → "TILs"; "tumor", "tumour" → "tumor"; "other(s)" → "other"
// (case-insensitive, trimmed); any other name is kept as given (and so matches only itself
// and is left out of the macro F1).
func PUMAT1Class(name string) string {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "tils", "til", "lymphocyte", "lymphocytes":
		return "TILs"
	case "tumor", "tumour":
		return "tumor"
	case "other", "others":
		return "other"
	}
	return name
}

// PUMAT2Class normalises a class name as the ReX track 2 grader does: the 10 canonical
// names (case-insensitive, trimmed) and the raw "nuclei_" names lymphocyte, plasma_cell,
// histiocyte, melanophage, neutrophil, stroma, apoptosis map to canonical names; anything
// else (including nuclei_tumor, nuclei_epithelium, nuclei_endothelium) is dropped (ok false).
func PUMAT2Class(name string) (string, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, c := range PUMAT2Classes {
		if n == c {
			return c, true
		}
	}
	if rest, ok := strings.CutPrefix(n, "nuclei_"); ok {
		m := map[string]string{"lymphocyte": "lymphocytes", "plasma_cell": "plasma_cells", "histiocyte": "histiocytes",
			"melanophage": "melanophages", "neutrophil": "neutrophils", "stroma": "stromal_cells", "apoptosis": "apoptotic_cells"}
		c, ok := m[rest]
		return c, ok
	}
	return "", false
}

// TissueCounts accumulates PUMA tissue micro Dice over images: for classes 1–5 (stroma,
// blood vessel, tumour, epidermis, necrosis) the intersection and both sizes.
type TissueCounts struct {
	Inter, GT, Pred [6]int64
}

// Add adds one image's GT and prediction label maps (same length).
func (t *TissueCounts) Add(gt, pred []uint8) {
	for i, g := range gt {
		p := pred[i]
		if g >= 1 && g <= 5 {
			t.GT[g]++
			if p == g {
				t.Inter[g]++
			}
		}
		if p >= 1 && p <= 5 {
			t.Pred[p]++
		}
	}
}

// MicroDice is the PUMA tissue metric (ReX graders and official evaluate_tissue.py): per
// class (2·|A∩B| + 1e-5)/(|A| + |B| + 1e-5), 0 when the class is absent from all GT and
// prediction, averaged over the 5 classes. It also returns the per-class values.
func (t *TissueCounts) MicroDice() (float64, [5]float64) {
	const eps = 0.00001
	var per [5]float64
	s := 0.0
	for c := 1; c <= 5; c++ {
		u := t.GT[c] + t.Pred[c]
		if u > 0 {
			per[c-1] = (2*float64(t.Inter[c]) + eps) / (float64(u) + eps)
		}
		s += per[c-1]
	}
	return s / 5, per
}
