package main

import (
	"fmt"
	"math"

	"amid/plugins/protocol"
	"amid/plugins/taskspec"
)

// A multi-label attribute (taskspec.Attribute.MultiLabel) is trained with one sigmoid per
// finding: a head of two logits (y₀, y₁) whose softmax is σ(y₁ − y₀), so that its
// cross-entropy is the binary cross-entropy of that sigmoid, and an uncertain label
// (−1, the "ignore" policy) is the head's ignored label, left out of the loss. Its
// probability is the finding's own; validation scores the mean AUROC over findings.

// findingHeads are the heads of the multi-label attribute a: one a finding, in order.
func findingHeads(a taskspec.Attribute) []head {
	out := make([]head, len(a.Classes))
	for k, f := range a.Classes {
		out[k] = head{Name: a.Name + "/" + f, Attrs: []string{a.Name}, Classes: [][]int{{0}, {1}}, Multi: true, Finding: k}
	}
	return out
}

// findingTarget is the target of finding head h for a case's findings: 1, 0, or −1
// (uncertain, or no findings) which the loss leaves out.
func (h head) findingTarget(f map[string][]int) int32 {
	v := f[h.Attrs[0]]
	if h.Finding >= len(v) {
		return -1
	}
	return int32(v[h.Finding])
}

// findingWeights are the balanced weights of a finding head over the labelled cases
// (sklearn's "balanced": n / (2 · n_k), 0 for a value no case has).
func findingWeights(h head, f []map[string][]int) []float64 {
	var count [2]int
	for _, x := range f {
		if t := h.findingTarget(x); t >= 0 {
			count[t]++
		}
	}
	n := count[0] + count[1]
	present := 0
	for _, c := range count {
		if c > 0 {
			present++
		}
	}
	w := make([]float64, 2)
	for k, c := range count {
		if c > 0 {
			w[k] = float64(n) / float64(present*c)
		}
	}
	return w
}

// readFindings reads the findings of the multi-label attribute a of every case: each
// label names one value a finding.
func readFindings(cases []protocol.Case, s *taskspec.Spec, a taskspec.Attribute) ([]map[string][]int, error) {
	out := make([]map[string][]int, len(cases))
	for i, c := range cases {
		if c.Label == "" {
			return nil, fmt.Errorf("case %s has no label file", c.ID)
		}
		ann, err := taskspec.ReadAnnotation(c.Label, s)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.ID, err)
		}
		if _, ok := ann.Findings[a.Name]; !ok {
			return nil, fmt.Errorf("case %s: label %s has no findings for multi-label attribute %q", c.ID, c.Label, a.Name)
		}
		out[i] = ann.Findings
	}
	return out, nil
}

// findingFreqs is the share of positives among the labelled cases of each finding of a:
// the prior lane's probabilities (0.5 for a finding no case labels).
func findingFreqs(a taskspec.Attribute, f []map[string][]int) []float64 {
	out := make([]float64, len(a.Classes))
	for k := range out {
		var pos, n int
		for _, x := range f {
			if v := x[a.Name]; k < len(v) && v[k] != taskspec.FindingUncertain {
				n++
				if v[k] == taskspec.FindingPresent {
					pos++
				}
			}
		}
		out[k] = 0.5
		if n > 0 {
			out[k] = float64(pos) / float64(n)
		}
	}
	return out
}

// present is the findings a prediction holds: 1 where a finding's probability is at
// least 0.5.
func present(p []float64) []int {
	out := make([]int, len(p))
	for k, v := range p {
		if v >= 0.5 {
			out[k] = taskspec.FindingPresent
		}
	}
	return out
}

// sigmoid is σ(d) = 1 / (1 + e^(−d)), the probability of a finding head whose logits
// differ by d = y₁ − y₀.
func sigmoid(d float64) float64 {
	if d >= 0 {
		return 1 / (1 + math.Exp(-d))
	}
	e := math.Exp(d)
	return e / (1 + e)
}

// scoreFindings is the mean AUROC over the findings of a ("auroc"), each finding's
// ("auroc/<finding>", where it has one), of probabilities prob against truth.
func scoreFindings(a taskspec.Attribute, truth []map[string][]int, prob [][]float64) map[string]float64 {
	t := make([][]int, len(truth))
	for i, x := range truth {
		t[i] = x[a.Name]
	}
	out := map[string]float64{}
	mean, per, why := taskspec.FindingsAUROC(t, prob)
	if why == "" {
		out["auroc"] = mean
	}
	for k, v := range per {
		if v.Undefined == "" {
			out["auroc/"+a.Classes[k]] = v.Value
		}
	}
	return out
}
