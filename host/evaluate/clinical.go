package evaluate

import (
	"fmt"
	"math"
	"strings"

	"amid/plugins/metrics"
	"amid/plugins/taskspec"
)

// A classification whose metric is a clinical one (metrics.ClinicalNames: auroc,
// sensitivity_at_youden, specificity_at_youden, specificity_at_sensitivity_0.9, f1_macro,
// kappa_quadratic, brier, ece) is validated with it instead of balanced accuracy, attribute
// by attribute, as amid/plugins/metrics computes it:
//
//   - the scores are the prediction's class probabilities (taskspec.Annotation.Probs); a
//     prediction without them counts its class as probability 1, the scores of a hard
//     classifier;
//   - AUROC is the binary AUROC of class 1 for a two-class attribute and the macro
//     one-vs-rest AUROC above; kappa weighs the attribute's classes as ordinal grades in
//     their order; Brier and ECE use every class's probability;
//   - a sensitivity or a specificity needs a two-class attribute, class 1 positive: its
//     threshold is chosen on the cases scored (validation) by Youden's J or for the
//     target sensitivity, and kept in Extra as "threshold_<attribute>"; scoring other
//     cases (the test set) with Options.Thresholds applies that threshold instead;
//   - the Brier score and the ECE are better lower: the primary metric is their negation,
//     "neg_brier" and "neg_ece" (higher better, as every primary score here), and Extra
//     holds "brier" and "ece" themselves;
//   - above two classes, Extra holds each class's one-vs-rest AUROC as "auroc_<class>"
//     ("auroc_<attribute>_<class>" with several attributes), where it has one;
//   - the value is the mean over the attributes that have one; an attribute without (an
//     AUROC of a fold without positives) is left out, and the score is undefined, with the
//     reason, when none has one;
//   - Extra holds "ci95_low" and "ci95_high", the 95 % percentile-bootstrap interval of the
//     primary value over the cases (metrics.Bootstrap: 1000 resamples, a fixed seed, the
//     thresholds held), and with several attributes each one's value under its name.

// Options change how Evaluate scores.
type Options struct {
	// Thresholds are the operating points chosen on validation cases, by attribute name
	// (Thresholds of the validation score's Extra): a sensitivity or specificity applies
	// them instead of choosing its own, as a test set is scored.
	Thresholds map[string]float64
}

// ThresholdKey prefixes an attribute's threshold in a Score's Extra.
const ThresholdKey = "threshold_"

// The keys of a primary value's 95 % bootstrap interval in a Score's Extra, where the
// metric is not a mean of per-case values (the clinical metrics).
const (
	CILow  = "ci95_low"
	CIHigh = "ci95_high"
)

// IntervalMethod says how the interval at CILow and CIHigh is found.
var IntervalMethod = fmt.Sprintf("95 %% percentile bootstrap over the cases (%d resamples, a fixed seed)", metrics.BootstrapResamples)

// Interval is the bootstrap interval a score's Extra keeps, if any.
func Interval(extra map[string]float64) (low, high float64, ok bool) {
	low, okl := extra[CILow]
	high, okh := extra[CIHigh]
	return low, high, okl && okh
}

// Thresholds are the operating points a score's Extra keeps, by attribute name.
func Thresholds(extra map[string]float64) map[string]float64 {
	var out map[string]float64
	for k, v := range extra {
		if name, ok := strings.CutPrefix(k, ThresholdKey); ok {
			if out == nil {
				out = map[string]float64{}
			}
			out[name] = v
		}
	}
	return out
}

// LowerBetter reports whether the task's metric name is better lower (the Brier score,
// the calibration error), so that its primary score is its negation.
func LowerBetter(metric string) bool {
	c, err := metrics.ParseClinical(metric)
	return err == nil && c.Lower
}

// attrData is one attribute's labels and predictions over the cases.
type attrData struct {
	at   taskspec.Attribute
	y    []int
	pred []int
	prob [][]float64
}

func (d *attrData) binary(idx []int) ([]bool, []float64) {
	y, s := make([]bool, len(idx)), make([]float64, len(idx))
	for k, i := range idx {
		y[k], s[k] = d.y[i] == 1, d.prob[i][1]
	}
	return y, s
}

func pick[T any](v []T, idx []int) []T {
	out := make([]T, len(idx))
	for k, i := range idx {
		out[k] = v[i]
	}
	return out
}

// clinical scores a classification with the clinical metric c.
func clinical(s *taskspec.Spec, c metrics.Clinical, anns [][2]*taskspec.Annotation, o Options) (*Score, error) {
	n := len(anns)
	data := make([]*attrData, 0, len(s.Attributes))
	for _, at := range s.Attributes {
		if c.Operating() && len(at.Classes) != 2 {
			return nil, fmt.Errorf("%w: %s needs attributes of two classes, and %s has %d", ErrEval, c.Name, at.Name, len(at.Classes))
		}
		d := &attrData{at: at, y: make([]int, n), pred: make([]int, n), prob: make([][]float64, n)}
		for i, a := range anns {
			d.y[i], d.pred[i] = a[1].Classes[at.Name], a[0].Classes[at.Name]
			if p := a[0].Probs[at.Name]; len(p) == len(at.Classes) {
				d.prob[i] = p
			} else {
				d.prob[i] = make([]float64, len(at.Classes))
				d.prob[i][d.pred[i]] = 1
			}
		}
		data = append(data, d)
	}
	out := &Score{Metric: c.Name, Cases: n, Extra: map[string]float64{}}
	if c.Lower {
		out.Metric = "neg_" + c.Name
	}
	thr := map[string]float64{}
	for _, d := range data {
		if !c.Operating() {
			break
		}
		if t, ok := o.Thresholds[d.at.Name]; ok {
			thr[d.at.Name], out.Extra[ThresholdKey+d.at.Name] = t, t
			continue
		}
		y, sc := d.binary(all(n))
		var t float64
		var why string
		if c.Target > 0 {
			t, why = metrics.SensitivityThreshold(y, sc, c.Target)
		} else {
			t, why = metrics.YoudenThreshold(y, sc)
		}
		if why != "" {
			return out.defined(fmt.Sprintf("%s: no threshold: %s", d.at.Name, why)), nil
		}
		// +Inf (no threshold beats calling every case negative) is kept as the largest
		// float, which no probability reaches: JSON holds no infinity.
		t = min(t, math.MaxFloat64)
		thr[d.at.Name], out.Extra[ThresholdKey+d.at.Name] = t, t
	}
	// one is the metric of one attribute on the cases idx, as the task names it.
	one := func(d *attrData, idx []int) (float64, string) {
		switch c.Kind {
		case metrics.KindAUROC:
			if len(d.at.Classes) == 2 {
				return metrics.AUROC(d.binary(idx))
			}
			v, _, why := metrics.MacroAUROC(pick(d.y, idx), pick(d.prob, idx))
			return v, why
		case metrics.KindSensitivity, metrics.KindSpecificity:
			y, sc := d.binary(idx)
			sens, spec := metrics.SensitivityAt(y, sc, thr[d.at.Name])
			if c.Kind == metrics.KindSensitivity {
				return sens.Value, sens.Undefined
			}
			return spec.Value, spec.Undefined
		case metrics.KindF1Macro:
			return metrics.MacroF1(pick(d.y, idx), pick(d.pred, idx))
		case metrics.KindKappaQuadratic:
			return metrics.QuadraticKappa(pick(d.y, idx), pick(d.pred, idx), len(d.at.Classes))
		case metrics.KindBrier:
			return metrics.Brier(pick(d.y, idx), pick(d.prob, idx))
		case metrics.KindECE:
			return metrics.ECE(pick(d.y, idx), pick(d.prob, idx))
		}
		return 0, "no such metric"
	}
	// value is the mean over the attributes that have one, negated when lower is better.
	value := func(idx []int, each func(name string, v float64)) (float64, string) {
		var sum float64
		var got int
		var why []string
		for _, d := range data {
			v, u := one(d, idx)
			if u != "" {
				why = append(why, d.at.Name+": "+u)
				continue
			}
			if each != nil {
				each(d.at.Name, v)
			}
			sum += v
			got++
		}
		if got == 0 {
			return 0, strings.Join(why, "; ")
		}
		v := sum / float64(got)
		if c.Lower {
			v = -v
		}
		return v, ""
	}
	v, why := value(all(n), func(name string, v float64) {
		if len(data) > 1 {
			out.Extra[name] = v
		}
		if c.Operating() { // the other rate at the same threshold
			d := data[0]
			for _, x := range data {
				if x.at.Name == name {
					d = x
				}
			}
			y, sc := d.binary(all(n))
			sens, spec := metrics.SensitivityAt(y, sc, thr[name])
			if sens.Undefined == "" {
				out.Extra["sensitivity_"+name] = sens.Value
			}
			if spec.Undefined == "" {
				out.Extra["specificity_"+name] = spec.Value
			}
		}
	})
	if why != "" {
		return out.defined(why), nil
	}
	if c.Kind == metrics.KindAUROC { // each class's one-vs-rest AUROC, where it has one
		for _, d := range data {
			if len(d.at.Classes) == 2 {
				continue
			}
			_, per, _ := metrics.MacroAUROC(d.y, d.prob)
			for k, pc := range per {
				if pc.Undefined == "" {
					key := "auroc_" + d.at.Classes[k]
					if len(data) > 1 {
						key = "auroc_" + d.at.Name + "_" + d.at.Classes[k]
					}
					out.Extra[key] = pc.Value
				}
			}
		}
	}
	out.Value = v
	if c.Lower {
		out.Extra[c.Name] = -v
	}
	if lo, hi, _, u := metrics.Bootstrap(n, func(idx []int) (float64, string) { return value(idx, nil) }); u == "" {
		out.Extra[CILow], out.Extra[CIHigh] = lo, hi
	}
	return out, nil
}

func all(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}
