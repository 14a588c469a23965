package compute

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Tolerances is how closely a re-run under another compute identity must agree with the
// original. The package doc says why each bound has its size.
type Tolerances struct {
	// LabelDice is the lowest Dice allowed for any label of any case.
	LabelDice float64
	// ScoreRel bounds |Δ| of a regressed score, relative to the task's score range.
	ScoreRel float64
	// ImageRel bounds max |Δ| of an image, relative to the original image's value range.
	ImageRel float64
	// Coord bounds |Δ| of a point or box coordinate, in pixels (voxels).
	Coord float64
	// Confidence bounds |Δ| of a box's or point's score, whose range is [0, 1].
	Confidence float64
}

// Table is the one tolerance table: the verifier of model packages and the GPU backend's
// cross-device tests use it, and nothing else defines another.
var Table = Tolerances{LabelDice: 0.999, ScoreRel: 1e-4, ImageRel: 1e-3, Coord: 0.01, Confidence: 1e-4}

// Agreement accumulates how closely re-run outputs agree with the originals, file by
// file, under a Tolerances. Its zero value is not ready: use [NewAgreement].
type Agreement struct {
	tol Tolerances
	// Compared is the number of outputs compared.
	Compared int
	// Worst holds, per kind of measure, the worst value seen and where.
	Worst map[Measure]Worst
	// Problems lists every output beyond tolerance, one sentence each.
	Problems []string
}

// Measure is a kind of agreement measure.
type Measure string

// The measures, each with the direction in which it gets worse.
const (
	LabelDice  Measure = "label Dice"                      // lower is worse
	ScoreDiff  Measure = "score difference"                // relative to the score range; higher is worse
	ImageDiff  Measure = "image difference"                // relative to the value range; higher is worse
	CoordDiff  Measure = "coordinate difference"           // pixels; higher is worse
	ConfDiff   Measure = "confidence difference"           // higher is worse
	Categories Measure = "categorical outputs that differ" // a count; higher is worse
)

// Worst is the worst value of one measure and where it was seen.
type Worst struct {
	Value float64
	Where string
}

// NewAgreement starts an agreement under tol (usually [Table]).
func NewAgreement(tol Tolerances) *Agreement {
	return &Agreement{tol: tol, Worst: map[Measure]Worst{}}
}

// OK says whether every output compared so far is within tolerance.
func (a *Agreement) OK() bool { return len(a.Problems) == 0 }

// Fail records an output that cannot be compared or is beyond tolerance.
func (a *Agreement) Fail(format string, args ...any) {
	a.Problems = append(a.Problems, fmt.Sprintf(format, args...))
}

func (a *Agreement) note(m Measure, v float64, where string) {
	w, seen := a.Worst[m]
	worse := v > w.Value
	if m == LabelDice {
		worse = v < w.Value
	}
	if !seen || worse {
		a.Worst[m] = Worst{v, where}
	}
}

// Summary names the worst value of each measure seen, e.g. "worst label Dice 0.99996
// (case 3, label 2)"; "nothing compared" when there was nothing.
func (a *Agreement) Summary() string {
	if len(a.Worst) == 0 {
		return "nothing compared"
	}
	var s []string
	for _, m := range []Measure{LabelDice, ScoreDiff, ImageDiff, CoordDiff, ConfDiff, Categories} {
		w, ok := a.Worst[m]
		if !ok {
			continue
		}
		switch m {
		case LabelDice:
			s = append(s, fmt.Sprintf("worst label Dice %.6g (%s)", w.Value, w.Where))
		case ScoreDiff, ImageDiff:
			s = append(s, fmt.Sprintf("largest %s %.3g of the range (%s)", m, w.Value, w.Where))
		case Categories:
			s = append(s, fmt.Sprintf("%s: %d", m, int(w.Value)))
		default:
			s = append(s, fmt.Sprintf("largest %s %.3g (%s)", m, w.Value, w.Where))
		}
	}
	return strings.Join(s, "; ")
}

// Labels compares two label maps of the same grid, label by label: the Dice of each label
// present in either must be at least LabelDice (labels absent from both count as equal).
func (a *Agreement) Labels(where string, orig, rerun []int32) {
	if len(orig) != len(rerun) {
		a.Fail("%s: the re-run's label map has %d voxels, the original %d", where, len(rerun), len(orig))
		return
	}
	a.Compared++
	type count struct{ o, r, both int }
	counts := map[int32]*count{}
	get := func(v int32) *count {
		c := counts[v]
		if c == nil {
			c = &count{}
			counts[v] = c
		}
		return c
	}
	for i, o := range orig {
		r := rerun[i]
		if o == 0 && r == 0 {
			continue
		}
		if o != 0 {
			get(o).o++
		}
		if r != 0 {
			get(r).r++
		}
		if o == r {
			counts[o].both++
		}
	}
	labels := make([]int32, 0, len(counts))
	for v := range counts {
		labels = append(labels, v)
	}
	slices.Sort(labels)
	if len(labels) == 0 {
		a.note(LabelDice, 1, where+", background only")
	}
	for _, v := range labels {
		c := counts[v]
		d := 2 * float64(c.both) / float64(c.o+c.r)
		at := fmt.Sprintf("%s, label %d", where, v)
		a.note(LabelDice, d, at)
		if d < a.tol.LabelDice {
			a.Fail("%s: Dice %.6g between the re-run and the original, below %g", at, d, a.tol.LabelDice)
		}
	}
}

// Image compares two images of the same grid: max |Δ| must be at most ImageRel times the
// original's value range (max − min; its largest magnitude when it is constant).
func (a *Agreement) Image(where string, orig, rerun []float64) {
	if len(orig) != len(rerun) {
		a.Fail("%s: the re-run's image has %d values, the original %d", where, len(rerun), len(orig))
		return
	}
	a.Compared++
	lo, hi, mag := math.Inf(1), math.Inf(-1), 0.0
	for _, v := range orig {
		lo, hi, mag = min(lo, v), max(hi, v), max(mag, math.Abs(v))
	}
	rng := hi - lo
	if !(rng > 0) {
		rng = mag
	}
	diff := 0.0
	for i, v := range orig {
		d := math.Abs(v - rerun[i])
		if d > diff || math.IsNaN(d) {
			diff = d
		}
	}
	rel := 0.0
	switch {
	case math.IsNaN(diff):
		rel = math.Inf(1)
	case rng > 0:
		rel = diff / rng
	case diff > 0:
		rel = math.Inf(1)
	}
	a.note(ImageDiff, rel, where)
	if !(rel <= a.tol.ImageRel) {
		a.Fail("%s: the re-run's image differs by up to %.3g of the value range, more than %g", where, rel, a.tol.ImageRel)
	}
}

// Score compares one regressed score; span is the task's score range (max − min).
func (a *Agreement) Score(where string, orig, rerun, span float64) {
	a.Compared++
	rel := math.Abs(orig-rerun) / span
	if !(span > 0) {
		rel = math.Inf(1)
		if orig == rerun {
			rel = 0
		}
	}
	a.note(ScoreDiff, rel, where)
	if !(rel <= a.tol.ScoreRel) {
		a.Fail("%s: the re-run's score %g differs from the original %g by %.3g of the score range, more than %g", where, rerun, orig, rel, a.tol.ScoreRel)
	}
}

// Categorical compares an output that must be equal (a class, an attribute, a box in whole
// voxels); what names it in a problem.
func (a *Agreement) Categorical(where string, equal bool, what string) {
	a.Compared++
	w := a.Worst[Categories]
	if !equal {
		w.Value++
		w.Where = where
		a.Fail("%s: %s", where, what)
	}
	if w.Where == "" {
		w.Where = where
	}
	a.Worst[Categories] = w
}

// Located is a detected object: coordinates (a point's x, y; a box's x, y, w, h), a
// confidence in [0, 1], and a key that must match exactly (its class and attributes).
type Located struct {
	Coords []float64
	Score  float64
	Key    string
}

// Objects compares two lists of detected objects. Each original object must have a
// distinct re-run object with the same key, every coordinate within Coord and the score
// within Confidence (objects are matched greedily in the original's order, so a swap of
// two near-equal scores is not a difference); and the lists must be equally long.
func (a *Agreement) Objects(where string, orig, rerun []Located) {
	a.Compared++
	if len(orig) != len(rerun) {
		a.Fail("%s: the re-run found %d objects, the original %d", where, len(rerun), len(orig))
		return
	}
	used := make([]bool, len(rerun))
	for i, o := range orig {
		best, bestDiff := -1, math.Inf(1)
		for j, r := range rerun {
			if used[j] || r.Key != o.Key || len(r.Coords) != len(o.Coords) {
				continue
			}
			d := 0.0
			for k := range o.Coords {
				d = max(d, math.Abs(o.Coords[k]-r.Coords[k]))
			}
			if d < bestDiff {
				best, bestDiff = j, d
			}
		}
		at := fmt.Sprintf("%s, object %d", where, i)
		if best < 0 {
			a.Fail("%s: no re-run object of the same class and attributes", at)
			continue
		}
		used[best] = true
		conf := math.Abs(o.Score - rerun[best].Score)
		a.note(CoordDiff, bestDiff, at)
		a.note(ConfDiff, conf, at)
		if !(bestDiff <= a.tol.Coord) {
			a.Fail("%s: the nearest re-run object is %.3g pixels away, more than %g", at, bestDiff, a.tol.Coord)
		}
		if !(conf <= a.tol.Confidence) {
			a.Fail("%s: the re-run's score differs by %.3g, more than %g", at, conf, a.tol.Confidence)
		}
	}
}
