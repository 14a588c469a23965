package metrics

import (
	"errors"
	"testing"
)

func TestParseClinical(t *testing.T) {
	for in, want := range map[string]Clinical{
		"AUROC":                            {Name: "auroc", Kind: KindAUROC},
		" sensitivity_at_youden":           {Name: "sensitivity_at_youden", Kind: KindSensitivity},
		"specificity_at_youden":            {Name: "specificity_at_youden", Kind: KindSpecificity},
		"specificity_at_sensitivity_0.9":   {Name: "specificity_at_sensitivity_0.9", Kind: KindSpecificity, Target: 0.9},
		"specificity_at_sensitivity_95":    {Name: "specificity_at_sensitivity_0.95", Kind: KindSpecificity, Target: 0.95},
		"f1_macro":                         {Name: "f1_macro", Kind: KindF1Macro},
		"kappa_quadratic":                  {Name: "kappa_quadratic", Kind: KindKappaQuadratic},
		"brier":                            {Name: "brier", Kind: KindBrier, Lower: true},
		"ECE":                              {Name: "ece", Kind: KindECE, Lower: true},
		"specificity_at_sensitivity_0.875": {Name: "specificity_at_sensitivity_0.875", Kind: KindSpecificity, Target: 0.875},
		"specificity_at_sensitivity_1":     {Name: "specificity_at_sensitivity_1", Kind: KindSpecificity, Target: 1},
		"specificity_at_sensitivity_100":   {Name: "specificity_at_sensitivity_1", Kind: KindSpecificity, Target: 1},
	} {
		got, err := ParseClinical(in)
		if err != nil || got != want {
			t.Errorf("ParseClinical(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if !IsClinical(in) {
			t.Errorf("IsClinical(%q) is false", in)
		}
	}
	for _, in := range []string{"", "dice", "balanced_accuracy", "specificity_at_sensitivity_", "specificity_at_sensitivity_x",
		"specificity_at_sensitivity_0", "specificity_at_sensitivity_100.5", "specificity_at_sensitivity_NaN",
		"specificity_at_sensitivity_-0.5"} {
		if _, err := ParseClinical(in); !errors.Is(err, ErrMetricName) {
			t.Errorf("ParseClinical(%q): %v, want ErrMetricName", in, err)
		}
	}
	for _, in := range []string{"dice", "balanced_accuracy", "anterior_acc", "f1"} {
		if IsClinical(in) {
			t.Errorf("IsClinical(%q) is true", in)
		}
	}
}

// FuzzParseClinical: any name either parses to a metric whose canonical name parses to
// itself, or is an ErrMetricName; a target is always in [0, 1] (0: Youden's J).
func FuzzParseClinical(f *testing.F) {
	for _, s := range []string{"auroc", "specificity_at_sensitivity_0.9", "specificity_at_sensitivity_95", "ece", "specificity_at_sensitivity_1e-3", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		c, err := ParseClinical(name)
		if err != nil {
			if !errors.Is(err, ErrMetricName) {
				t.Fatalf("%q: %v is not an ErrMetricName", name, err)
			}
			return
		}
		if c.Target < 0 || c.Target > 1 {
			t.Fatalf("%q: target %v outside [0, 1]", name, c.Target)
		}
		again, err := ParseClinical(c.Name)
		if err != nil || again != c {
			t.Fatalf("%q parses to %+v, whose name parses to %+v, %v", name, c, again, err)
		}
	})
}
