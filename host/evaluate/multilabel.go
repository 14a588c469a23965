package evaluate

import (
	"fmt"

	"amid/plugins/metrics"
	"amid/plugins/taskspec"
)

// A classification's multi-label attribute (taskspec.Attribute.MultiLabel) is scored by
// the mean AUROC over its findings (taskspec.FindingsAUROC, metrics.MeanAUROC without
// uncertain labels): the primary "auroc" is that mean, Extra holds each finding's AUROC as
// "auroc_<finding>" and the 95 % bootstrap interval; a finding without positives or
// without negatives among the cases has none and is left out of the mean, named with its
// reason in Score.Notes. A prediction's scores are its findings' probabilities
// (Annotation.Probs), else its findings, 1 or 0.

// multiLabel scores the multi-label attribute at of a classification.
func multiLabel(at taskspec.Attribute, anns [][2]*taskspec.Annotation, pairs []Pair) (*Score, error) {
	n := len(anns)
	truth, prob := make([][]int, n), make([][]float64, n)
	for i, a := range anns {
		t, ok := a[1].Findings[at.Name]
		if !ok {
			return nil, fmt.Errorf("%w: case %s: the label has no findings of %s", ErrEval, pairs[i].ID, at.Name)
		}
		truth[i] = t
		if p := a[0].Probs[at.Name]; len(p) == len(at.Classes) {
			prob[i] = p
			continue
		}
		f, ok := a[0].Findings[at.Name]
		if !ok {
			return nil, fmt.Errorf("%w: case %s: the prediction has neither probabilities nor findings of %s", ErrEval, pairs[i].ID, at.Name)
		}
		prob[i] = make([]float64, len(f))
		for k, v := range f {
			if v == taskspec.FindingPresent {
				prob[i][k] = 1
			}
		}
	}
	out := &Score{Metric: "auroc", Cases: n, Extra: map[string]float64{}}
	mean, per, why := taskspec.FindingsAUROC(truth, prob)
	for k, v := range per {
		if v.Undefined == "" {
			out.Extra["auroc_"+at.Classes[k]] = v.Value
			continue
		}
		out.Notes = append(out.Notes, fmt.Sprintf("finding %s has no AUROC and is left out of the mean: %s", at.Classes[k], v.Undefined))
	}
	if why != "" {
		return out.defined(why), nil
	}
	out.Value = mean
	if lo, hi, _, u := metrics.Bootstrap(n, func(idx []int) (float64, string) {
		v, _, why := taskspec.FindingsAUROC(pick(truth, idx), pick(prob, idx))
		return v, why
	}); u == "" {
		out.Extra[CILow], out.Extra[CIHigh] = lo, hi
	}
	return out, nil
}
