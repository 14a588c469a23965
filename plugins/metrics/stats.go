package metrics

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// BalancedAccuracy is sklearn.metrics.balanced_accuracy_score: the mean, over the classes
// present in yTrue, of the recall of each class. Classes that occur only in yPred count
// against the recall of the true class but add no term (sklearn drops their NaN recall with
// a warning). It is NaN for empty or unequal-length input (sklearn raises).
func BalancedAccuracy[T comparable](yTrue, yPred []T) float64 {
	if len(yTrue) == 0 || len(yTrue) != len(yPred) {
		return math.NaN()
	}
	type counts struct{ n, hit int }
	per := map[T]*counts{}
	var order []T
	for i, t := range yTrue {
		c, ok := per[t]
		if !ok {
			c = &counts{}
			per[t] = c
			order = append(order, t)
		}
		c.n++
		if yPred[i] == t {
			c.hit++
		}
	}
	sum := 0.0
	for _, t := range order {
		c := per[t]
		sum += float64(c.hit) / float64(c.n)
	}
	return sum / float64(len(order))
}

// TopCoWVariant renders a TopCoW edge vector as the variant class string that the TopCoW
// classification graders (ReX and official) feed to balanced_accuracy_score:
// "Var_<region>_" followed by the 0/1 values joined with "_", region "Ant" (edges L-A1,
// Acom, 3rd-A2, R-A1) or "Pos" (L-Pcom, L-P1, R-P1, R-Pcom), e.g. ("Ant", [1 1 0 1]) →
// "Var_Ant_1_1_0_1".
func TopCoWVariant(region string, edges []int) string {
	parts := make([]string, len(edges))
	for i, e := range edges {
		parts[i] = strconv.Itoa(e)
	}
	return "Var_" + region + "_" + strings.Join(parts, "_")
}

// statsHasNaN reports whether any element is NaN.
func statsHasNaN(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) {
			return true
		}
	}
	return false
}

// Pearson is scipy.stats.pearsonr's r: mean-centred vectors, each scaled by its norm, their
// dot product, clipped to [−1, 1]. NaN when either input is constant, contains NaN, has
// fewer than 2 elements or the lengths differ (scipy warns or raises).
func Pearson(x, y []float64) float64 {
	n := len(x)
	if n < 2 || n != len(y) || statsHasNaN(x) || statsHasNaN(y) {
		return math.NaN()
	}
	mx, my := statsMean(x), statsMean(y)
	var nx, ny float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		nx += dx * dx
		ny += dy * dy
	}
	nx, ny = math.Sqrt(nx), math.Sqrt(ny)
	if nx == 0 || ny == 0 {
		return math.NaN()
	}
	r := 0.0
	for i := range x {
		r += (x[i] - mx) / nx * ((y[i] - my) / ny)
	}
	return math.Max(-1, math.Min(1, r))
}

// statsMean is the mean with pairwise summation, as numpy's mean.
func statsMean(x []float64) float64 { return statsPairwiseSum(x) / float64(len(x)) }

// statsPairwiseSum follows numpy's pairwise summation closely enough that means agree to
// the last bit or two: blocks of 8 accumulators below 128 elements, halves above.
func statsPairwiseSum(x []float64) float64 {
	n := len(x)
	switch {
	case n < 8:
		s := 0.0
		for _, v := range x {
			s += v
		}
		return s
	case n <= 128:
		var r [8]float64
		copy(r[:], x[:8])
		i := 8
		for ; i+8 <= n; i += 8 {
			for k := 0; k < 8; k++ {
				r[k] += x[i+k]
			}
		}
		s := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			s += x[i]
		}
		return s
	}
	m := n / 2
	m -= m % 8
	return statsPairwiseSum(x[:m]) + statsPairwiseSum(x[m:])
}

// RankAverage is scipy.stats.rankdata(method='average'): 1-based ranks, ties share the
// mean of the ranks they span.
func RankAverage(x []float64) []float64 {
	n := len(x)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
	r := make([]float64, n)
	for i := 0; i < n; {
		j := i + 1
		for j < n && x[idx[j]] == x[idx[i]] {
			j++
		}
		avg := float64(i+j+1) / 2 // mean of ranks i+1 … j
		for k := i; k < j; k++ {
			r[idx[k]] = avg
		}
		i = j
	}
	return r
}

// Spearman is scipy.stats.spearmanr's correlation: Pearson's r of the average ranks. NaN
// when an input contains NaN (nan_policy='propagate') or is constant.
func Spearman(x, y []float64) float64 {
	if len(x) < 2 || len(x) != len(y) || statsHasNaN(x) || statsHasNaN(y) {
		return math.NaN()
	}
	return Pearson(RankAverage(x), RankAverage(y))
}

// Kendall is scipy.stats.kendalltau's tau-b: (concordant − discordant) / √((n0 − tx)(n0 −
// ty)) with n0 = n(n−1)/2 and tx, ty the pairs tied in x and in y, clipped to [−1, 1]. NaN
// when an input contains NaN, all pairs are tied in either input, or lengths differ. It runs
// in O(n log n) (Knight's algorithm, as scipy).
func Kendall(x, y []float64) float64 {
	n := len(x)
	if n != len(y) || n < 2 || statsHasNaN(x) || statsHasNaN(y) {
		return math.NaN()
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	// Sort by x, then y.
	sort.Slice(idx, func(a, b int) bool {
		ia, ib := idx[a], idx[b]
		if x[ia] != x[ib] {
			return x[ia] < x[ib]
		}
		return y[ia] < y[ib]
	})
	var xtie, xytie int64
	for i := 0; i < n; {
		j := i + 1
		for j < n && x[idx[j]] == x[idx[i]] {
			j++
		}
		t := int64(j - i)
		xtie += t * (t - 1) / 2
		for k := i; k < j; {
			l := k + 1
			for l < j && y[idx[l]] == y[idx[k]] {
				l++
			}
			u := int64(l - k)
			xytie += u * (u - 1) / 2
			k = l
		}
		i = j
	}
	// Count discordant pairs as inversions of y in x-order (ties in x are y-sorted, so
	// they add none).
	ys := make([]float64, n)
	for i, k := range idx {
		ys[i] = y[k]
	}
	buf := make([]float64, n)
	dis := kendallInversions(ys, buf)
	// ys is now sorted: count ties in y.
	var ytie int64
	for i := 0; i < n; {
		j := i + 1
		for j < n && ys[j] == ys[i] {
			j++
		}
		t := int64(j - i)
		ytie += t * (t - 1) / 2
		i = j
	}
	tot := int64(n) * int64(n-1) / 2
	if xtie == tot || ytie == tot {
		return math.NaN()
	}
	conMinusDis := float64(tot - xtie - ytie + xytie - 2*dis)
	tau := conMinusDis / math.Sqrt(float64(tot-xtie)) / math.Sqrt(float64(tot-ytie))
	return math.Max(-1, math.Min(1, tau))
}

// kendallInversions sorts a (merge sort, stable) and returns the number of pairs i < j with
// a[i] > a[j].
func kendallInversions(a, buf []float64) int64 {
	n := len(a)
	if n < 2 {
		return 0
	}
	m := n / 2
	inv := kendallInversions(a[:m], buf[:m]) + kendallInversions(a[m:], buf[m:])
	i, j, k := 0, m, 0
	for i < m && j < n {
		if a[j] < a[i] {
			buf[k] = a[j]
			inv += int64(m - i)
			j++
		} else {
			buf[k] = a[i]
			i++
		}
		k++
	}
	k += copy(buf[k:], a[i:m])
	copy(buf[k:], a[j:n])
	copy(a, buf[:n])
	return inv
}

// LDCTScore is the LDCT-IQA score |PLCC| + |SROCC| + |KROCC| (rexmle.md §6.13), NaN when any
// of the three is NaN (a constant prediction), as in the grader.
func LDCTScore(pred, gt []float64) (score, plcc, srocc, krocc float64) {
	plcc = math.Abs(Pearson(pred, gt))
	srocc = math.Abs(Spearman(pred, gt))
	krocc = math.Abs(Kendall(pred, gt))
	return plcc + srocc + krocc, plcc, srocc, krocc
}

// CorrelationUndefined says why the correlations of pred with gt (Pearson's, Spearman's,
// Kendall's) have no value, "" when they have one: fewer than two pairs, a NaN, or a side
// that holds one value (its variance is 0; scipy's pearsonr returns NaN there too, with a
// ConstantInputWarning).
func CorrelationUndefined(pred, gt []float64) string {
	switch {
	case len(pred) != len(gt):
		return fmt.Sprintf("%d predictions for %d labels", len(pred), len(gt))
	case len(pred) < 2:
		return fmt.Sprintf("a correlation needs two cases or more, and there is %d", len(pred))
	case statsHasNaN(pred) || statsHasNaN(gt):
		return "a value is NaN"
	case constant(pred):
		return fmt.Sprintf("the predictions are one value (%g) for all %d cases", pred[0], len(pred))
	case constant(gt):
		return fmt.Sprintf("the labels are one value (%g) for all %d cases", gt[0], len(gt))
	}
	return ""
}

func constant(x []float64) bool {
	for _, v := range x[1:] {
		if v != x[0] {
			return false
		}
	}
	return true
}
