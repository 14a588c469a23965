package metrics

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ClinicalKind is which clinical metric a [Clinical] names.
type ClinicalKind int

// The clinical metrics of a classification.
const (
	KindAUROC ClinicalKind = iota + 1
	KindSensitivity
	KindSpecificity
	KindF1Macro
	KindKappaQuadratic
	KindBrier
	KindECE
)

// Clinical is a clinical classification metric named in a task's metric.name, as
// ParseClinical reads it.
type Clinical struct {
	// Name is the metric's name in canonical form (lower case, the target as Go's
	// shortest decimal).
	Name string
	Kind ClinicalKind
	// Target, for a sensitivity or specificity, is the sensitivity the operating point's
	// threshold is chosen to reach on validation cases (SensitivityThreshold); 0 chooses
	// it by Youden's J (YoudenThreshold).
	Target float64
	// Lower: lower values are better (the Brier score, the calibration error).
	Lower bool
}

// ClinicalNames are the clinical metric names ParseClinical knows; TARGET is a sensitivity
// in (0, 1] (0.9) or a percentage in (1, 100] (90).
var ClinicalNames = []string{
	"auroc", "sensitivity_at_youden", "specificity_at_youden",
	"specificity_at_sensitivity_TARGET", "f1_macro", "kappa_quadratic", "brier", "ece",
}

// ErrMetricName marks a metric name that names no clinical metric.
var ErrMetricName = errors.New("unknown metric name")

// IsClinical reports whether name is meant as a clinical metric: it is one of
// ClinicalNames or starts like one that takes a target, so that a misspelt target is an
// error rather than another metric.
func IsClinical(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, c := range ClinicalNames {
		if n == c || strings.HasSuffix(c, "_TARGET") && strings.HasPrefix(n, strings.TrimSuffix(c, "TARGET")) {
			return true
		}
	}
	return false
}

// ParseClinical reads a clinical metric name (case-insensitive, one of ClinicalNames).
func ParseClinical(name string) (Clinical, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	switch n {
	case "auroc":
		return Clinical{Name: n, Kind: KindAUROC}, nil
	case "sensitivity_at_youden":
		return Clinical{Name: n, Kind: KindSensitivity}, nil
	case "specificity_at_youden":
		return Clinical{Name: n, Kind: KindSpecificity}, nil
	case "f1_macro":
		return Clinical{Name: n, Kind: KindF1Macro}, nil
	case "kappa_quadratic":
		return Clinical{Name: n, Kind: KindKappaQuadratic}, nil
	case "brier":
		return Clinical{Name: n, Kind: KindBrier, Lower: true}, nil
	case "ece":
		return Clinical{Name: n, Kind: KindECE, Lower: true}, nil
	}
	const prefix = "specificity_at_sensitivity_"
	if t, ok := strings.CutPrefix(n, prefix); ok {
		v, err := strconv.ParseFloat(t, 64)
		if err != nil || math.IsNaN(v) {
			return Clinical{}, fmt.Errorf("%w: metric %q: the target sensitivity %q is not a number", ErrMetricName, name, t)
		}
		if v > 1 && v <= 100 {
			v /= 100
		}
		if !(v > 0 && v <= 1) {
			return Clinical{}, fmt.Errorf("%w: metric %q: the target sensitivity %s is not in (0, 1] nor a percentage in (1, 100]", ErrMetricName, name, t)
		}
		return Clinical{Name: prefix + strconv.FormatFloat(v, 'g', -1, 64), Kind: KindSpecificity, Target: v}, nil
	}
	return Clinical{}, fmt.Errorf("%w: %q is not one of %s", ErrMetricName, name, strings.Join(ClinicalNames, ", "))
}

// Operating reports whether c is judged at an operating point (a sensitivity or a
// specificity), whose threshold is chosen on validation cases.
func (c Clinical) Operating() bool { return c.Kind == KindSensitivity || c.Kind == KindSpecificity }
