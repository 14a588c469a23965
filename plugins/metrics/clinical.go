package metrics

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// The clinical metrics of a classification: AUROC, sensitivity and specificity at an
// operating point, macro F1, Cohen's kappa with quadratic weights, the Brier score and the
// expected calibration error, each as scikit-learn computes it (testdata/clinical_ref.py
// writes the reference values the tests compare with), and percentile-bootstrap intervals.
//
// A metric that has no value on its input (an AUROC without positive or without negative
// cases, a sensitivity without positives) returns 0 and a non-empty reason, never NaN and
// never a stand-in such as 0.5: the reason is what the host records as the score's
// Undefined.

// AUROC is sklearn.metrics.roc_auc_score of binary labels (truth true: positive) and
// scores: the area under the ROC curve by the trapezoidal rule, in which a tie between a
// positive and a negative score counts one half. It is computed as the Mann–Whitney
// statistic of the average ranks (RankAverage), which equals that area: (the positives'
// rank sum − P(P+1)/2) / (P·N), exact up to the one rounding of the division for fewer
// than 2⁵² cases. Undefined without positives or without negatives (scikit-learn raises
// "Only one class present in y_true"), for unequal lengths and for a NaN score.
func AUROC(truth []bool, score []float64) (float64, string) {
	if why := binaryUndefined(truth, score); why != "" {
		return 0, why
	}
	p, n := positives(truth)
	if why := bothClasses(p, n); why != "" {
		return 0, why
	}
	ranks := RankAverage(score)
	var sum float64
	for i, t := range truth {
		if t {
			sum += ranks[i]
		}
	}
	return (sum - float64(p)*float64(p+1)/2) / (float64(p) * float64(n)), ""
}

// ClassValue is one class's (or finding's) value of a metric, or why it has none
// (Undefined non-empty, Value 0).
type ClassValue struct {
	Value     float64
	Undefined string
}

// MacroAUROC is roc_auc_score(y, prob, multi_class="ovr", average="macro") for classes
// 0 … K−1 (K = len(prob[i])): the mean over classes of each class's one-vs-rest AUROC of
// its probability column. A class without positives or without negatives on these cases
// has no AUROC (scikit-learn raises): it is left out of the mean, with its reason in per,
// and the mean is undefined only when no class has one. The probabilities need not sum to
// 1 (scikit-learn requires it; the areas do not depend on it).
func MacroAUROC(y []int, prob [][]float64) (mean float64, per []ClassValue, undefined string) {
	if why := probUndefined(y, prob); why != "" {
		return 0, nil, why
	}
	k := len(prob[0])
	truth := make([][]bool, len(y))
	for i, c := range y {
		truth[i] = make([]bool, k)
		truth[i][c] = true
	}
	return MeanAUROC(truth, prob)
}

// MeanAUROC is the mean AUROC over the findings of a multi-label classification,
// roc_auc_score(truth, prob, average="macro") with truth[i][f] whether case i has finding
// f and prob[i][f] its predicted probability: each finding's AUROC, and their mean over
// the findings that have one (a finding absent from, or present in, every case has none
// and is left out, with its reason in per; scikit-learn raises). Undefined when no finding
// has an AUROC.
func MeanAUROC(truth [][]bool, prob [][]float64) (mean float64, per []ClassValue, undefined string) {
	if len(truth) == 0 || len(truth) != len(prob) {
		return 0, nil, fmt.Sprintf("%d cases of labels for %d of predictions", len(truth), len(prob))
	}
	k := len(truth[0])
	for i := range truth {
		if len(truth[i]) != k || len(prob[i]) != k {
			return 0, nil, fmt.Sprintf("case %d has %d labels and %d probabilities where the first has %d", i, len(truth[i]), len(prob[i]), k)
		}
	}
	per = make([]ClassValue, k)
	var defined []float64
	col, score := make([]bool, len(truth)), make([]float64, len(truth))
	for f := range k {
		for i := range truth {
			col[i], score[i] = truth[i][f], prob[i][f]
		}
		v, why := AUROC(col, score)
		per[f] = ClassValue{Value: v, Undefined: why}
		if why == "" {
			defined = append(defined, v)
		}
	}
	if len(defined) == 0 {
		return 0, per, fmt.Sprintf("no class has an AUROC on these %d cases (class 0: %s)", len(truth), per[0].Undefined)
	}
	return statsMean(defined), per, ""
}

// ROCPoint is one point of a ROC curve: predicting positive every case whose score is at
// least Threshold finds TP of the positives and flags FP of the negatives.
type ROCPoint struct {
	Threshold float64
	TP, FP    int
}

// ROC is sklearn.metrics.roc_curve's curve as counts: its first point has threshold +Inf
// (no case positive; scikit-learn 1.2 writes the largest score + 1 there, 1.3 and later
// +Inf), then one point per distinct score, from the highest. With drop, the points
// inside a straight run of the curve are left out as roc_curve(drop_intermediate=True)
// leaves them out (they change neither the area nor which threshold Youden's J picks).
// p and n count the positives and the negatives.
func ROC(truth []bool, score []float64, drop bool) (pts []ROCPoint, p, n int) {
	idx := make([]int, len(score))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return score[idx[a]] > score[idx[b]] })
	var tp int
	for j, i := range idx {
		if truth[i] {
			tp++
		}
		if j+1 == len(idx) || score[idx[j+1]] != score[i] {
			pts = append(pts, ROCPoint{Threshold: score[i], TP: tp, FP: j + 1 - tp})
		}
	}
	if drop && len(pts) > 2 {
		kept := pts[:1]
		for j := 1; j+1 < len(pts); j++ {
			a, b, c := pts[j-1], pts[j], pts[j+1]
			if c.FP-2*b.FP+a.FP != 0 || c.TP-2*b.TP+a.TP != 0 {
				kept = append(kept, b)
			}
		}
		pts = append(kept, pts[len(pts)-1])
	}
	p, n = positives(truth)
	return append([]ROCPoint{{Threshold: math.Inf(1)}}, pts...), p, n
}

// YoudenThreshold is the threshold of the ROC curve's point of largest Youden's J =
// sensitivity + specificity − 1 = TPR − FPR, the first (highest threshold) of equal ones,
// as np.argmax(tpr − fpr) over roc_curve(truth, score) picks it; each rate computed as
// roc_curve computes it (count / total), so equal rates compare equal. +Inf when no
// threshold beats calling every case negative (J ≤ 0 everywhere). Undefined without
// positives or without negatives (a rate is then 0/0).
func YoudenThreshold(truth []bool, score []float64) (float64, string) {
	if why := binaryUndefined(truth, score); why != "" {
		return 0, why
	}
	pts, p, n := ROC(truth, score, true)
	if why := bothClasses(p, n); why != "" {
		return 0, why
	}
	best, bestJ := 0, math.Inf(-1)
	for j, pt := range pts {
		if v := float64(pt.TP)/float64(p) - float64(pt.FP)/float64(n); v > bestJ {
			best, bestJ = j, v
		}
	}
	return pts[best].Threshold, ""
}

// SensitivityThreshold is the highest threshold at which the sensitivity reaches target
// (in (0, 1]): the first point of roc_curve(truth, score, drop_intermediate=False) whose
// TPR ≥ target. Undefined without positives, without negatives, or for a target outside
// (0, 1].
func SensitivityThreshold(truth []bool, score []float64, target float64) (float64, string) {
	if !(target > 0 && target <= 1) {
		return 0, fmt.Sprintf("a target sensitivity of %g is not in (0, 1]", target)
	}
	if why := binaryUndefined(truth, score); why != "" {
		return 0, why
	}
	pts, p, n := ROC(truth, score, false)
	if why := bothClasses(p, n); why != "" {
		return 0, why
	}
	for _, pt := range pts {
		if float64(pt.TP)/float64(p) >= target {
			return pt.Threshold, ""
		}
	}
	return pts[len(pts)-1].Threshold, "" // unreachable: the last point's TPR is 1
}

// SensitivityAt is the sensitivity (recall of the positives, recall_score(truth, score ≥
// threshold)) and the specificity (recall of the negatives, recall_score with
// pos_label=0) of calling positive every case whose score is at least threshold. Each is
// undefined, with its reason, on cases without positives or without negatives
// (scikit-learn returns 0 there, with a warning).
func SensitivityAt(truth []bool, score []float64, threshold float64) (sens, spec ClassValue) {
	if why := binaryUndefined(truth, score); why != "" {
		return ClassValue{Undefined: why}, ClassValue{Undefined: why}
	}
	var tp, tn, p, n int
	for i, t := range truth {
		hit := score[i] >= threshold
		switch {
		case t:
			p++
			if hit {
				tp++
			}
		default:
			n++
			if !hit {
				tn++
			}
		}
	}
	if p == 0 {
		sens.Undefined = fmt.Sprintf("no positive case among the %d: a sensitivity needs one", n)
	} else {
		sens.Value = float64(tp) / float64(p)
	}
	if n == 0 {
		spec.Undefined = fmt.Sprintf("no negative case among the %d: a specificity needs one", p)
	} else {
		spec.Value = float64(tn) / float64(n)
	}
	return sens, spec
}

// MacroF1 is sklearn.metrics.f1_score(yTrue, yPred, average="macro"): the unweighted mean
// over the classes present in yTrue or yPred of each class's F1 = 2·P·R / (P + R), a class
// with no true positive scoring 0. Undefined for empty or unequal-length input.
func MacroF1[T cmp.Ordered](yTrue, yPred []T) (float64, string) {
	if len(yTrue) == 0 || len(yTrue) != len(yPred) {
		return 0, fmt.Sprintf("%d labels for %d predictions", len(yTrue), len(yPred))
	}
	type counts struct{ tp, pred, true int }
	per := map[T]*counts{}
	get := func(c T) *counts {
		if per[c] == nil {
			per[c] = &counts{}
		}
		return per[c]
	}
	for i, t := range yTrue {
		get(t).true++
		get(yPred[i]).pred++
		if yPred[i] == t {
			get(t).tp++
		}
	}
	labels := make([]T, 0, len(per))
	for c := range per {
		labels = append(labels, c)
	}
	slices.Sort(labels)
	f := make([]float64, len(labels))
	for i, c := range labels {
		n := per[c]
		var prec, rec float64
		if n.pred > 0 {
			prec = float64(n.tp) / float64(n.pred)
		}
		if n.true > 0 {
			rec = float64(n.tp) / float64(n.true)
		}
		if d := prec + rec; d > 0 {
			f[i] = 2 * prec * rec / d
		}
	}
	return statsMean(f), ""
}

// QuadraticKappa is Cohen's kappa with quadratic weights of two ratings of ordinal
// grades 0 … k−1, sklearn.metrics.cohen_kappa_score(yTrue, yPred, labels=range(k),
// weights="quadratic"): 1 − Σ w·O / Σ w·E with O the confusion matrix, E the outer product
// of its margins over the case count and w(i, j) = (i − j)². The grades are the task's
// (labels given), so that a grade absent from both ratings keeps the others' distances.
// Undefined for empty or unequal-length input, a grade outside [0, k), or when Σ w·E is 0
// (both ratings are one and the same grade for every case: scikit-learn returns NaN).
func QuadraticKappa(yTrue, yPred []int, k int) (float64, string) {
	if len(yTrue) == 0 || len(yTrue) != len(yPred) {
		return 0, fmt.Sprintf("%d labels for %d predictions", len(yTrue), len(yPred))
	}
	o := make([]float64, k*k)
	rows, cols := make([]float64, k), make([]float64, k)
	for i, t := range yTrue {
		p := yPred[i]
		if t < 0 || t >= k || p < 0 || p >= k {
			return 0, fmt.Sprintf("case %d has grades %d and %d, outside 0 … %d", i, t, p, k-1)
		}
		o[t*k+p]++
		rows[t]++
		cols[p]++
	}
	// As scikit-learn: expected = outer(sum0, sum1) / sum(sum0) with sum0 the column
	// (prediction) margins, then the sums of w·O and w·E in numpy's order (row-major,
	// pairwise).
	n := float64(len(yTrue))
	wo, we := make([]float64, k*k), make([]float64, k*k)
	for i := range k {
		for j := range k {
			w := float64((i - j) * (i - j))
			wo[i*k+j] = w * o[i*k+j]
			we[i*k+j] = w * (cols[i] * rows[j] / n)
		}
	}
	num, den := statsPairwiseSum(wo), statsPairwiseSum(we)
	if den == 0 {
		return 0, fmt.Sprintf("the labels and the predictions are grade %d for all %d cases: kappa is 0/0", yTrue[0], len(yTrue))
	}
	return 1 - num/den, ""
}

// Brier is the Brier score of a classification with K classes, lower better:
// sklearn.metrics.brier_score_loss(y == 1, prob[:, 1]) for two classes, the mean squared
// difference between the positive class's probability and its 0/1 label; for K > 2 the
// mean over cases of Σₖ (prob[i][k] − [y[i] = k])², Brier's own multi-class score (the
// sum over classes of brier_score_loss of each class against the rest; scikit-learn 1.7's
// multi-class brier_score_loss, which halves only the binary case). In [0, 1] for two
// classes, [0, 2] above.
func Brier(y []int, prob [][]float64) (float64, string) {
	if why := probUndefined(y, prob); why != "" {
		return 0, why
	}
	k := len(prob[0])
	if k == 2 {
		d := make([]float64, len(y))
		for i, c := range y {
			e := prob[i][1] - float64(c)
			d[i] = e * e
		}
		return statsMean(d), ""
	}
	var sum float64
	d := make([]float64, len(y))
	for c := range k {
		for i, t := range y {
			e := prob[i][c]
			if t == c {
				e -= 1
			}
			d[i] = e * e
		}
		sum += statsMean(d)
	}
	return sum, ""
}

// ECEBins is how many equal-width bins of confidence the expected calibration error uses,
// as commonly defined (Guo et al., "On calibration of modern neural networks", 2017).
const ECEBins = 10

// ECE is the expected calibration error of a classification, lower better, with ECEBins
// equal-width bins (k/10, (k+1)/10] of the top-label confidence (Guo et al. 2017): each
// case's confidence is its largest probability and its hit whether that class (the first
// of equal ones, as numpy's argmax) is its label; ECE = Σ_bins (cases in bin / cases) ·
// |mean hit − mean confidence|. A confidence of 0 falls in the first bin. The same
// definition holds for two classes (the confidence is then at least 0.5).
func ECE(y []int, prob [][]float64) (float64, string) {
	if why := probUndefined(y, prob); why != "" {
		return 0, why
	}
	var count [ECEBins]int
	var hits, conf [ECEBins]float64
	for i, row := range prob {
		best := 0
		for c, v := range row {
			if v > row[best] {
				best = c
			}
		}
		c := row[best]
		b := sort.Search(ECEBins-1, func(j int) bool { return c <= float64(j+1)/ECEBins })
		count[b]++
		conf[b] += c
		if best == y[i] {
			hits[b]++
		}
	}
	var e float64
	for b := range ECEBins {
		if count[b] > 0 {
			m := float64(count[b])
			e += m / float64(len(y)) * math.Abs(hits[b]/m-conf[b]/m)
		}
	}
	return e, ""
}

// BootstrapResamples is how many resamples a bootstrap interval draws.
const BootstrapResamples = 1000

// bootstrapSeed is the seed of the resampling (PCG), fixed so that an interval is the
// same every time it is computed from the same cases.
var bootstrapSeed = [2]uint64{20261206, 31}

// Bootstrap is the 95 % percentile-bootstrap interval of a metric over n cases:
// BootstrapResamples resamples of n cases drawn with replacement from a fixed seed, the
// metric (stat, of the resample's case indices) on each, and the 2.5th and 97.5th
// percentiles of the values (Percentile, numpy's linear interpolation). A resample on
// which the metric is undefined (an AUROC drawn without a positive) is left out; used
// says how many were kept. Undefined for fewer than 2 cases or when no resample has a
// value.
func Bootstrap(n int, stat func(idx []int) (float64, string)) (low, high float64, used int, undefined string) {
	if n < 2 {
		return 0, 0, 0, fmt.Sprintf("an interval needs 2 cases or more, and there is %d", n)
	}
	r := rand.New(rand.NewPCG(bootstrapSeed[0], bootstrapSeed[1]))
	idx := make([]int, n)
	vals := make([]float64, 0, BootstrapResamples)
	var why string
	for range BootstrapResamples {
		for i := range idx {
			idx[i] = r.IntN(n)
		}
		v, u := stat(idx)
		if u != "" {
			why = u
			continue
		}
		vals = append(vals, v)
	}
	if len(vals) == 0 {
		return 0, 0, 0, fmt.Sprintf("the metric is undefined on every resample of the %d cases (%s)", n, why)
	}
	slices.Sort(vals)
	return Percentile(vals, 2.5), Percentile(vals, 97.5), len(vals), ""
}

// Percentile is numpy.percentile(sorted, q) of ascending values with its default linear
// interpolation: the value at rank q/100 · (n − 1), interpolated as numpy's _lerp does
// (from the upper neighbour when the fraction is at least one half).
func Percentile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	at := q / 100 * float64(n-1)
	lo := math.Floor(at)
	i := min(int(lo), n-1)
	j := min(i+1, n-1)
	t := at - lo
	a, b := sorted[i], sorted[j]
	d := b - a
	if t >= 0.5 {
		return b - d*(1-t)
	}
	return a + d*t
}

func positives(truth []bool) (p, n int) {
	for _, t := range truth {
		if t {
			p++
		}
	}
	return p, len(truth) - p
}

func bothClasses(p, n int) string {
	switch {
	case p == 0:
		return fmt.Sprintf("no positive case among the %d: an AUROC needs both classes", n)
	case n == 0:
		return fmt.Sprintf("no negative case among the %d: an AUROC needs both classes", p)
	}
	return ""
}

func binaryUndefined(truth []bool, score []float64) string {
	switch {
	case len(truth) == 0 || len(truth) != len(score):
		return fmt.Sprintf("%d labels for %d scores", len(truth), len(score))
	case statsHasNaN(score):
		return "a score is NaN"
	}
	return ""
}

func probUndefined(y []int, prob [][]float64) string {
	if len(y) == 0 || len(y) != len(prob) {
		return fmt.Sprintf("%d labels for %d predictions", len(y), len(prob))
	}
	k := len(prob[0])
	if k < 2 {
		return fmt.Sprintf("%d class probabilities: a classification has 2 or more", k)
	}
	for i, row := range prob {
		if len(row) != k {
			return fmt.Sprintf("case %d has %d probabilities where the first has %d", i, len(row), k)
		}
		if y[i] < 0 || y[i] >= k {
			return fmt.Sprintf("case %d has class %d, outside 0 … %d", i, y[i], k-1)
		}
		if statsHasNaN(row) {
			return fmt.Sprintf("a probability of case %d is NaN", i)
		}
	}
	return ""
}
