package taskspec

import (
	"fmt"
	"strings"

	"amid/plugins/metrics"
)

// Finding label values of Annotation.Findings.
const (
	FindingAbsent    = 0
	FindingPresent   = 1
	FindingUncertain = -1
)

// MultiLabel is the spec's multi-label attribute, if it has one.
func (s *Spec) MultiLabel() (Attribute, bool) {
	for _, a := range s.Attributes {
		if a.MultiLabel {
			return a, true
		}
	}
	return Attribute{}, false
}

// checkMultiLabel checks a multi-label attribute: a classification's only attribute,
// outside any group, scored by the mean AUROC over its findings (metric auroc).
func (s *Spec) checkMultiLabel() error {
	a, ok := s.MultiLabel()
	if !ok {
		return nil
	}
	switch {
	case s.Kind != Classification:
		return fmt.Errorf("%w: attribute %s is multi-label, which a classification's attribute is; this is a %s task", ErrSpec, a.Name, s.Kind)
	case len(s.Attributes) != 1:
		return fmt.Errorf("%w: attribute %s is multi-label, and a multi-label attribute is a classification's only attribute (this task has %d)", ErrSpec, a.Name, len(s.Attributes))
	case a.Group != "":
		return fmt.Errorf("%w: multi-label attribute %s is in group %s; its findings are judged each on its own", ErrSpec, a.Name, a.Group)
	case s.Metric != "" && !strings.EqualFold(strings.TrimSpace(s.Metric), "auroc"):
		return fmt.Errorf("%w: metric %s: a multi-label attribute is scored by the mean AUROC over its findings, metric auroc", ErrSpec, s.Metric)
	}
	return nil
}

// checkFindings checks the findings of a: each names a multi-label attribute of s, with
// one value a finding, each 1, 0 or −1.
func (a *Annotation) checkFindings(s *Spec) error {
	for name, f := range a.Findings {
		at, ok := s.Attribute(name)
		if !ok || !at.MultiLabel || len(f) != len(at.Classes) {
			return fmt.Errorf("%w: findings of %s: %d values for a multi-label attribute of the task with %d findings", ErrAnnotation, name, len(f), len(at.Classes))
		}
		for k, v := range f {
			if v != FindingAbsent && v != FindingPresent && v != FindingUncertain {
				return fmt.Errorf("%w: finding %s of %s is %d, not 1, 0 or -1", ErrAnnotation, at.Classes[k], name, v)
			}
		}
	}
	return nil
}

// FindingsAUROC is the mean AUROC over the findings of a multi-label attribute:
// truth[i][f] is case i's label of finding f (1, 0, or −1 uncertain) and prob[i][f] its
// predicted probability. Without uncertain labels it is metrics.MeanAUROC; a finding's
// uncertain cases are left out of its own AUROC. A finding without positives or without
// negatives has no AUROC and is left out of the mean, its reason in per; undefined when
// no finding has one.
func FindingsAUROC(truth [][]int, prob [][]float64) (mean float64, per []metrics.ClassValue, undefined string) {
	if len(truth) == 0 || len(truth) != len(prob) {
		return 0, nil, fmt.Sprintf("%d cases of labels for %d of predictions", len(truth), len(prob))
	}
	k := len(truth[0])
	uncertain := false
	for i := range truth {
		if len(truth[i]) != k || len(prob[i]) != k {
			return 0, nil, fmt.Sprintf("case %d has %d labels and %d probabilities where the first has %d", i, len(truth[i]), len(prob[i]), k)
		}
		for _, v := range truth[i] {
			uncertain = uncertain || v == FindingUncertain
		}
	}
	if !uncertain {
		b := make([][]bool, len(truth))
		for i, t := range truth {
			b[i] = make([]bool, k)
			for f, v := range t {
				b[i][f] = v == FindingPresent
			}
		}
		return metrics.MeanAUROC(b, prob)
	}
	per = make([]metrics.ClassValue, k)
	var sum float64
	var got int
	for f := range k {
		var y []bool
		var sc []float64
		for i := range truth {
			if truth[i][f] != FindingUncertain {
				y, sc = append(y, truth[i][f] == FindingPresent), append(sc, prob[i][f])
			}
		}
		v, why := metrics.AUROC(y, sc)
		per[f] = metrics.ClassValue{Value: v, Undefined: why}
		if why == "" {
			sum += v
			got++
		}
	}
	if got == 0 {
		return 0, per, fmt.Sprintf("no finding has an AUROC on these %d cases (finding 0: %s)", len(truth), per[0].Undefined)
	}
	return sum / float64(got), per, ""
}
