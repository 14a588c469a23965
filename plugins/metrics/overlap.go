package metrics

import (
	"fmt"
	"math"
	"slices"
)

// Integer is any integer element type a label map may hold.
type Integer interface {
	~uint8 | ~int8 | ~uint16 | ~int16 | ~uint32 | ~int32 | ~uint64 | ~int64 | ~int
}

// Overlap holds the voxel counts behind Dice and IoU for one binary mask pair or one
// label: |GT|, |Pred| and |GT ∩ Pred|.
type Overlap struct {
	GT, Pred, Inter int64
}

// Add returns the sum of two sets of counts (micro averaging pools counts this way).
func (o Overlap) Add(p Overlap) Overlap {
	return Overlap{o.GT + p.GT, o.Pred + p.Pred, o.Inter + p.Inter}
}

// Dice is 2|A∩B|/(|A|+|B|), computed as the graders do ((2·I)/(G+P) in float64), with
// bothEmpty returned when both masks are empty. ISLES'22 and SEG.A use bothEmpty = 1;
// DeepMind's compute_dice_coefficient (PANTHER) uses NaN.
func (o Overlap) Dice(bothEmpty float64) float64 {
	s := o.GT + o.Pred
	if s == 0 {
		return bothEmpty
	}
	return 2 * float64(o.Inter) / float64(s)
}

// DiceEps is 2|A∩B|/(|A|+|B|+eps), the TopCoW per-class formula (eps = 1e-7).
func (o Overlap) DiceEps(eps float64) float64 {
	return 2 * float64(o.Inter) / (float64(o.GT+o.Pred) + eps)
}

// DiceSmooth is (2|A∩B|+eps)/(|A|+|B|+eps), the PUMA micro-Dice formula (eps = 1e-5).
func (o Overlap) DiceSmooth(eps float64) float64 {
	return (2*float64(o.Inter) + eps) / (float64(o.GT+o.Pred) + eps)
}

// IoU is |A∩B|/|A∪B| (SimpleITK's Jaccard coefficient); 0 when both are empty.
func (o Overlap) IoU() float64 {
	u := o.GT + o.Pred - o.Inter
	if u == 0 {
		return 0
	}
	return float64(o.Inter) / float64(u)
}

// BinaryOverlap counts a pair of binary masks (non-zero is foreground).
func BinaryOverlap(gt, pred []uint8) (Overlap, error) {
	if len(gt) != len(pred) {
		return Overlap{}, fmt.Errorf("metrics: masks differ in size: ground truth %d voxels, prediction %d", len(gt), len(pred))
	}
	var o Overlap
	for i, g := range gt {
		p := pred[i]
		if g != 0 {
			o.GT++
			if p != 0 {
				o.Inter++
			}
		}
		if p != 0 {
			o.Pred++
		}
	}
	return o, nil
}

// LabelOverlaps holds the per-label counts of a pair of label maps; label 0 is background
// and never listed.
type LabelOverlaps map[int64]Overlap

// CountLabels counts every non-zero label of two label maps in one pass.
func CountLabels[T Integer](gt, pred []T) (LabelOverlaps, error) {
	if len(gt) != len(pred) {
		return nil, fmt.Errorf("metrics: label maps differ in size: ground truth %d voxels, prediction %d", len(gt), len(pred))
	}
	// Dense counting for the usual small label values, a map for the rest.
	const dense = 1 << 12
	var g, p, in [dense]int64
	sparse := LabelOverlaps{}
	for i, a := range gt {
		b := pred[i]
		av, bv := int64(a), int64(b)
		if av != 0 {
			if av > 0 && av < dense {
				g[av]++
				if av == bv {
					in[av]++
				}
			} else {
				o := sparse[av]
				o.GT++
				if av == bv {
					o.Inter++
				}
				sparse[av] = o
			}
		}
		if bv != 0 {
			if bv > 0 && bv < dense {
				p[bv]++
			} else {
				o := sparse[bv]
				o.Pred++
				sparse[bv] = o
			}
		}
	}
	for l := 1; l < dense; l++ {
		if g[l] != 0 || p[l] != 0 {
			sparse[int64(l)] = Overlap{GT: g[l], Pred: p[l], Inter: in[l]}
		}
	}
	return sparse, nil
}

// GTLabels returns the labels present in the ground truth, ascending.
func (lo LabelOverlaps) GTLabels() []int64 {
	var ls []int64
	for l, o := range lo {
		if o.GT > 0 {
			ls = append(ls, l)
		}
	}
	slices.Sort(ls)
	return ls
}

// AllLabels returns the labels present in the ground truth or the prediction, ascending.
func (lo LabelOverlaps) AllLabels() []int64 {
	var ls []int64
	for l, o := range lo {
		if o.GT > 0 || o.Pred > 0 {
			ls = append(ls, l)
		}
	}
	slices.Sort(ls)
	return ls
}

// MicroDice pools the counts of every case and class before taking Dice per class, then
// averages the classes: the PUMA tissue formula with eps = 1e-5. counts[c] are the pooled
// counts of class c.
func MicroDice(counts []Overlap, eps float64) float64 {
	if len(counts) == 0 {
		return math.NaN()
	}
	d := make([]float64, len(counts))
	for i, o := range counts {
		d[i] = o.DiceSmooth(eps)
	}
	return NumpyMean(d)
}

// LesionF1 is the ISLES'22 lesion-wise F1: ground-truth components (conn, 26 in the
// grader) that overlap the prediction are true positives, the others false negatives;
// predicted components that overlap no ground truth are false positives;
// F1 = TP/(TP+(FP+FN)/2), emptyValue (1 in the grader) when there is no lesion at all.
func LesionF1(gt, pred []uint8, dims [3]int, conn Connectivity, emptyValue float64) (float64, error) {
	if len(gt) != len(pred) {
		return 0, fmt.Errorf("metrics: masks differ in size: ground truth %d voxels, prediction %d", len(gt), len(pred))
	}
	cg, err := NewComponents(gt, dims, conn)
	if err != nil {
		return 0, err
	}
	cp, err := NewComponents(pred, dims, conn)
	if err != nil {
		return 0, err
	}
	tp, fn, fp := 0, 0, 0
	for _, t := range cg.Touching(pred) {
		if t {
			tp++
		} else {
			fn++
		}
	}
	for _, t := range cp.Touching(gt) {
		if !t {
			fp++
		}
	}
	if tp+fp+fn == 0 {
		return emptyValue, nil
	}
	return float64(tp) / (float64(tp) + float64(fp+fn)/2), nil
}

// LesionCountDiff is |#components(gt) − #components(pred)| (ISLES'22, 26-connectivity).
func LesionCountDiff(gt, pred []uint8, dims [3]int, conn Connectivity) (int, error) {
	a, err := CountComponents(gt, dims, conn)
	if err != nil {
		return 0, err
	}
	b, err := CountComponents(pred, dims, conn)
	if err != nil {
		return 0, err
	}
	if a > b {
		return a - b, nil
	}
	return b - a, nil
}

// AbsVolumeDiff is |Σgt·v − Σpred·v| for a voxel volume v, formed as the ISLES'22 grader
// forms it (each volume first, then the difference).
func AbsVolumeDiff(o Overlap, voxelVolume float64) float64 {
	return math.Abs(float64(o.GT)*voxelVolume - float64(o.Pred)*voxelVolume)
}

// ISLESVoxelML is the voxel volume in millilitres as the ISLES'22 grader computes it from
// NIfTI zooms: the product of the three float32 zooms in float32, divided by 1000 in
// float64.
func ISLESVoxelML(spacing [3]float64) float64 {
	p := float32(float32(spacing[0]) * float32(spacing[1]))
	p = float32(p * float32(spacing[2]))
	return float64(p) / 1000
}

// NumpyMean is numpy.mean of a float64 vector: numpy's blocked pairwise sum divided by n;
// NaN for an empty vector.
func NumpyMean(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	return NumpySum(x) / float64(len(x))
}

// NumpyMedian is numpy.median: the middle value, or the mean of the two middle values.
func NumpyMedian(x []float64) float64 {
	n := len(x)
	if n == 0 {
		return math.NaN()
	}
	s := slices.Clone(x)
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// NumpySum is numpy.sum of a contiguous float64 vector, to the bit: the reduction runs
// over blocks of 8192 elements, each summed pairwise with eight accumulators below 128
// elements, and the block sums are added in order starting from 0.
func NumpySum(x []float64) float64 {
	const buf = 8192
	s := 0.0
	for i := 0; i < len(x); i += buf {
		s += overlapPairwise(x[i:min(i+buf, len(x))])
	}
	return s
}

func overlapPairwise(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		r := 0.0
		for _, v := range a {
			r += v
		}
		return r
	case n <= 128:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := 0; j < 8; j++ {
				r[j] += a[i+j]
			}
		}
		res := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			res += a[i]
		}
		return res
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return overlapPairwise(a[:n2]) + overlapPairwise(a[n2:])
	}
}
