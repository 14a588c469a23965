// Package stats holds the validation statistics AMID's image-level plugins score
// themselves with, computed as the ReX-MLE graders do: sklearn's balanced accuracy, and
// scipy's Pearson, Spearman and Kendall tau-b correlations whose absolute values sum to
// the LDCT-IQA score. (Plugins do not import the host's metrics package.)
package stats

import (
	"math"
	"sort"
)

// BalancedAccuracy is sklearn.metrics.balanced_accuracy_score: the mean over the classes
// present in truth of each class's recall. NaN for empty or unequal-length input.
func BalancedAccuracy[T comparable](truth, pred []T) float64 {
	if len(truth) == 0 || len(truth) != len(pred) {
		return math.NaN()
	}
	type count struct{ n, hit int }
	per := map[T]*count{}
	var order []T
	for i, t := range truth {
		c, ok := per[t]
		if !ok {
			c = &count{}
			per[t] = c
			order = append(order, t)
		}
		c.n++
		if pred[i] == t {
			c.hit++
		}
	}
	var s float64
	for _, t := range order {
		s += float64(per[t].hit) / float64(per[t].n)
	}
	return s / float64(len(order))
}

// Pearson is scipy.stats.pearsonr's r, NaN when an input is constant, has fewer than two
// values or the lengths differ.
func Pearson(x, y []float64) float64 {
	n := len(x)
	if n < 2 || n != len(y) {
		return math.NaN()
	}
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(n)
	my /= float64(n)
	var sxx, syy, sxy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxx += dx * dx
		syy += dy * dy
		sxy += dx * dy
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return math.Max(-1, math.Min(1, sxy/math.Sqrt(sxx)/math.Sqrt(syy)))
}

// Ranks are scipy.stats.rankdata's average ranks (1-based; ties share their mean rank).
func Ranks(x []float64) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
	r := make([]float64, len(x))
	for i := 0; i < len(idx); {
		j := i + 1
		for j < len(idx) && x[idx[j]] == x[idx[i]] {
			j++
		}
		for k := i; k < j; k++ {
			r[idx[k]] = float64(i+j+1) / 2
		}
		i = j
	}
	return r
}

// Spearman is scipy.stats.spearmanr's rho: Pearson's r of the average ranks.
func Spearman(x, y []float64) float64 {
	if len(x) < 2 || len(x) != len(y) {
		return math.NaN()
	}
	return Pearson(Ranks(x), Ranks(y))
}

// Kendall is scipy.stats.kendalltau's tau-b, (concordant − discordant) / √((n0 − tx)(n0 −
// ty)) over all pairs, NaN when either input is all ties. It counts pairs directly, O(n²).
func Kendall(x, y []float64) float64 {
	n := len(x)
	if n < 2 || n != len(y) {
		return math.NaN()
	}
	var s, tx, ty, n0 float64
	for i := range n {
		for j := i + 1; j < n; j++ {
			a, b := sign(x[i]-x[j]), sign(y[i]-y[j])
			n0++
			if a == 0 {
				tx++
			}
			if b == 0 {
				ty++
			}
			s += a * b
		}
	}
	if tx == n0 || ty == n0 {
		return math.NaN()
	}
	return math.Max(-1, math.Min(1, s/math.Sqrt(n0-tx)/math.Sqrt(n0-ty)))
}

func sign(v float64) float64 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// IQA is the LDCT-IQA score |PLCC| + |SROCC| + |KROCC| of pred against truth with its three
// terms; a NaN term (a constant prediction) counts 0 here, where the grader would refuse
// the submission.
func IQA(pred, truth []float64) (score, plcc, srocc, krocc float64) {
	z := func(v float64) float64 {
		if math.IsNaN(v) {
			return 0
		}
		return math.Abs(v)
	}
	plcc, srocc, krocc = z(Pearson(pred, truth)), z(Spearman(pred, truth)), z(Kendall(pred, truth))
	return plcc + srocc + krocc, plcc, srocc, krocc
}
