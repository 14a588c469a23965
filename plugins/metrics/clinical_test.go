package metrics

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"amid/assets/ci"
)

// clinicalTol is how far a clinical metric may lie from scikit-learn's value. The Go code
// either does the same floating-point operations in the same order as scikit-learn (the
// rates, F1, kappa, Brier, the percentiles) or computes the exact ratio with one rounding
// (AUROC from ranks), where scikit-learn sums one rounded trapezoid per distinct score: at
// most 200 in these cases (the largest case has 200), each off by at most 2⁻⁵³ relative on
// values at most 2, so the two differ by less than 200 · 2 · 2⁻⁵³ ≈ 4.4e-14. 1e-12 is the
// bound the issue states (#31: "every metric equals scikit-learn's to 1e-12").
const clinicalTol = 1e-12

// clinicalRef mirrors testdata/clinical_ref.json, written by testdata/clinical_ref.py.
type clinicalRef struct {
	Command string            `json:"command"`
	Vers    map[string]string `json:"versions"`
	Binary  []struct {
		Name           string    `json:"name"`
		Y              []int     `json:"y"`
		Score          []float64 `json:"score"`
		AUROC          *float64  `json:"auroc"`
		AUROCUndefined string    `json:"auroc_undefined"`
		Youden         *float64  `json:"youden"`
		YoudenSens     float64   `json:"youden_sens"`
		YoudenSpec     float64   `json:"youden_spec"`
		Targets        []struct {
			Target    float64  `json:"target"`
			Threshold *float64 `json:"threshold"`
			Sens      float64  `json:"sens"`
			Spec      float64  `json:"spec"`
		} `json:"targets"`
		Test *struct {
			Y     []int     `json:"y"`
			Score []float64 `json:"score"`
			Sens  float64   `json:"sens"`
			Spec  float64   `json:"spec"`
		} `json:"test"`
	} `json:"binary"`
	Multiclass []struct {
		Name     string      `json:"name"`
		Y        []int       `json:"y"`
		Prob     [][]float64 `json:"prob"`
		PerClass []*float64  `json:"per_class"`
		Macro    *float64    `json:"macro"`
	} `json:"multiclass"`
	Multilabel []struct {
		Name       string      `json:"name"`
		Y          [][]int     `json:"y"`
		Prob       [][]float64 `json:"prob"`
		Mean       *float64    `json:"mean"`
		PerFinding []*float64  `json:"per_finding"`
	} `json:"multilabel"`
	F1 []struct {
		Name  string  `json:"name"`
		Y     []int   `json:"y"`
		Pred  []int   `json:"pred"`
		Value float64 `json:"value"`
	} `json:"f1_macro"`
	Kappa []struct {
		Name  string   `json:"name"`
		Y     []int    `json:"y"`
		Pred  []int    `json:"pred"`
		K     int      `json:"k"`
		Value *float64 `json:"value"`
	} `json:"kappa_quadratic"`
	Calibration []struct {
		Name  string      `json:"name"`
		Y     []int       `json:"y"`
		Prob  [][]float64 `json:"prob"`
		Brier float64     `json:"brier"`
		ECE   float64     `json:"ece"`
	} `json:"calibration"`
	Percentile []struct {
		Sorted []float64 `json:"sorted"`
		P2_5   float64   `json:"p2_5"`
		P97_5  float64   `json:"p97_5"`
	} `json:"percentile"`
}

func readClinicalRef(t *testing.T, path string) *clinicalRef {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r clinicalRef
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &r
}

func bools(y []int) []bool {
	out := make([]bool, len(y))
	for i, v := range y {
		out[i] = v == 1
	}
	return out
}

// checkValue compares a metric's value or its undefinedness with the reference's (nil:
// scikit-learn raises or returns NaN).
func checkValue(t *testing.T, what string, got float64, why string, want *float64) {
	t.Helper()
	switch {
	case want == nil && why == "":
		t.Errorf("%s = %v, want undefined (scikit-learn defines none)", what, got)
	case want != nil && why != "":
		t.Errorf("%s undefined (%s), want %v", what, why, *want)
	case want != nil && math.Abs(got-*want) > clinicalTol:
		t.Errorf("%s = %.17g, want %.17g (scikit-learn; off by %.3g)", what, got, *want, got-*want)
	}
}

func checkClose(t *testing.T, what string, got, want float64) {
	t.Helper()
	checkValue(t, what, got, "", &want)
}

func threshold(p *float64) float64 {
	if p == nil {
		return math.Inf(1)
	}
	return *p
}

// TestClinicalReference compares every clinical metric with scikit-learn's value on the
// committed cases of testdata/clinical_ref.json: ties, one-value scores and folds without
// positives or negatives among them.
func TestClinicalReference(t *testing.T) {
	checkClinical(t, readClinicalRef(t, "testdata/clinical_ref.json"))
}

func checkClinical(t *testing.T, r *clinicalRef) {
	for _, c := range r.Binary {
		y := bools(c.Y)
		v, why := AUROC(y, c.Score)
		checkValue(t, c.Name+": AUROC", v, why, c.AUROC)
		if c.AUROC == nil {
			if _, why := YoudenThreshold(y, c.Score); why == "" {
				t.Errorf("%s: a Youden threshold on one class", c.Name)
			}
			continue
		}
		thr, why := YoudenThreshold(y, c.Score)
		if why != "" || thr != threshold(c.Youden) {
			t.Errorf("%s: Youden threshold %v (%s), want %v", c.Name, thr, why, threshold(c.Youden))
		}
		sens, spec := SensitivityAt(y, c.Score, thr)
		checkClose(t, c.Name+": sensitivity at Youden", sens.Value, c.YoudenSens)
		checkClose(t, c.Name+": specificity at Youden", spec.Value, c.YoudenSpec)
		for _, tg := range c.Targets {
			thr, why := SensitivityThreshold(y, c.Score, tg.Target)
			if why != "" || thr != threshold(tg.Threshold) {
				t.Errorf("%s: threshold for sensitivity %v is %v (%s), want %v", c.Name, tg.Target, thr, why, threshold(tg.Threshold))
			}
			sens, spec := SensitivityAt(y, c.Score, thr)
			checkClose(t, c.Name+": sensitivity at target", sens.Value, tg.Sens)
			checkClose(t, c.Name+": specificity at target", spec.Value, tg.Spec)
		}
		if c.Test != nil { // the validation's threshold applied to other cases
			sens, spec := SensitivityAt(bools(c.Test.Y), c.Test.Score, thr)
			checkClose(t, c.Name+": test sensitivity at the validation's threshold", sens.Value, c.Test.Sens)
			checkClose(t, c.Name+": test specificity at the validation's threshold", spec.Value, c.Test.Spec)
		}
	}
	for _, c := range r.Multiclass {
		m, per, why := MacroAUROC(c.Y, c.Prob)
		checkValue(t, c.Name+": macro AUROC", m, why, c.Macro)
		for k, w := range c.PerClass {
			checkValue(t, c.Name+": class AUROC", per[k].Value, per[k].Undefined, w)
		}
	}
	for _, c := range r.Multilabel {
		truth := make([][]bool, len(c.Y))
		for i, row := range c.Y {
			truth[i] = bools(row)
		}
		m, per, why := MeanAUROC(truth, c.Prob)
		checkValue(t, c.Name+": mean AUROC over findings", m, why, c.Mean)
		for k, w := range c.PerFinding {
			checkValue(t, c.Name+": finding AUROC", per[k].Value, per[k].Undefined, w)
		}
	}
	for _, c := range r.F1 {
		v, why := MacroF1(c.Y, c.Pred)
		checkValue(t, c.Name+": macro F1", v, why, &c.Value)
	}
	for _, c := range r.Kappa {
		v, why := QuadraticKappa(c.Y, c.Pred, c.K)
		checkValue(t, c.Name+": quadratic kappa", v, why, c.Value)
	}
	for _, c := range r.Calibration {
		v, why := Brier(c.Y, c.Prob)
		checkValue(t, c.Name+": Brier", v, why, &c.Brier)
		v, why = ECE(c.Y, c.Prob)
		checkValue(t, c.Name+": ECE", v, why, &c.ECE)
	}
	for _, c := range r.Percentile {
		checkClose(t, "2.5th percentile", Percentile(c.Sorted, 2.5), c.P2_5)
		checkClose(t, "97.5th percentile", Percentile(c.Sorted, 97.5), c.P97_5)
	}
}

// TestClinicalReferenceRegenerates runs testdata/clinical_ref.py again (CI installs
// python3-sklearn: the Makefile's APT_PKGS) and checks that it writes the committed cases
// and values: the reference is what scikit-learn computes, not a file edited by hand.
// Values are compared with clinicalTol, since another scikit-learn may round differently.
func TestClinicalReferenceRegenerates(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import sklearn, numpy").Run(); err != nil {
		ci.Missing(t, "the clinical reference needs /usr/bin/python3 with scikit-learn (Debian: python3-sklearn)")
	}
	out := filepath.Join(t.TempDir(), "clinical_ref.json")
	cmd := exec.Command(py, "clinical_ref.py", out)
	cmd.Dir = "testdata"
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("clinical_ref.py: %v\n%s", err, b)
	}
	fresh, committed := readClinicalRef(t, out), readClinicalRef(t, "testdata/clinical_ref.json")
	fresh.Vers, committed.Vers = nil, nil
	a, _ := json.Marshal(fresh)
	b, _ := json.Marshal(committed)
	if !bytes.Equal(a, b) {
		// Another scikit-learn may differ in the last bits: the committed cases must be
		// the same, and the values within clinicalTol, which checkClinical checks.
		if len(fresh.Binary) != len(committed.Binary) || len(fresh.Calibration) != len(committed.Calibration) || len(fresh.Kappa) != len(committed.Kappa) {
			t.Fatal("clinical_ref.py writes other cases than testdata/clinical_ref.json holds: run it and commit its output")
		}
		for i := range fresh.Binary {
			if !slices.Equal(fresh.Binary[i].Score, committed.Binary[i].Score) {
				t.Fatalf("case %s: clinical_ref.py writes other scores than the committed file", fresh.Binary[i].Name)
			}
		}
		t.Logf("clinical_ref.py's values differ from the committed file's in their last bits (another scikit-learn?): checked within %g", clinicalTol)
	}
	checkClinical(t, fresh)
}

// TestClinicalUndefined: each metric says why it has no value on input that defines none,
// and returns 0 there, never NaN (issue #32: undefined is a value).
func TestClinicalUndefined(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name string
		v    float64
		why  string
	}{}
	add := func(name string, v float64, why string) {
		cases = append(cases, struct {
			name string
			v    float64
			why  string
		}{name, v, why})
	}
	v, why := AUROC(nil, nil)
	add("AUROC of nothing", v, why)
	v, why = AUROC([]bool{true, false}, []float64{nan, 1})
	add("AUROC of a NaN score", v, why)
	v, why = AUROC([]bool{true}, []float64{1, 2})
	add("AUROC of unequal lengths", v, why)
	v, _, why = MacroAUROC([]int{0, 0}, [][]float64{{1, 0}, {0.5, 0.5}})
	add("macro AUROC of one class", v, why)
	v, _, why = MacroAUROC([]int{0, 2}, [][]float64{{1, 0}, {0.5, 0.5}})
	add("macro AUROC of a class outside the probabilities", v, why)
	v, why = SensitivityThreshold([]bool{true, false}, []float64{1, 0}, 0)
	add("a target sensitivity of 0", v, why)
	s, sp := SensitivityAt([]bool{false, false}, []float64{1, 0}, 0.5)
	add("sensitivity without positives", s.Value, s.Undefined)
	s, sp = SensitivityAt([]bool{true}, []float64{1}, 0.5)
	add("specificity without negatives", sp.Value, sp.Undefined)
	_ = s
	v, why = MacroF1([]int{1}, []int{})
	add("F1 of unequal lengths", v, why)
	v, why = QuadraticKappa([]int{1, 1}, []int{1, 1}, 3)
	add("kappa of one grade", v, why)
	v, why = QuadraticKappa([]int{1, 5}, []int{1, 1}, 3)
	add("kappa of a grade outside the grades", v, why)
	v, why = Brier([]int{0}, [][]float64{{1}})
	add("Brier of one class", v, why)
	v, why = ECE([]int{0, 1}, [][]float64{{0.5, 0.5}, {0.5}})
	add("ECE of ragged probabilities", v, why)
	lo, hi, _, why := Bootstrap(1, func([]int) (float64, string) { return 1, "" })
	add("an interval of one case", lo+hi, why)
	lo, hi, _, why = Bootstrap(5, func([]int) (float64, string) { return 0, "never" })
	add("an interval of a metric undefined on every resample", lo+hi, why)
	for _, c := range cases {
		if c.why == "" || c.v != 0 {
			t.Errorf("%s: %v, undefined %q; want 0 and a reason", c.name, c.v, c.why)
		}
	}
}

// TestBootstrap: an interval over cases of a metric recomputed on each resample holds the
// value on all the cases, is the same when computed twice (a fixed seed), and leaves out
// the resamples on which the metric is undefined.
func TestBootstrap(t *testing.T) {
	// 40 cases, every third positive; scores (7i mod 40)/40, a permutation of the 40
	// steps of [0, 1) (7 is prime to 40), raised by 0.3 for the positives: the positives
	// score higher on the whole, an AUROC well inside (0, 1), so that an interval has
	// room on both sides.
	y := make([]bool, 40)
	s := make([]float64, 40)
	for i := range y {
		y[i] = i%3 == 0
		s[i] = float64((i*7)%40) / 40
		if y[i] {
			s[i] += 0.3
		}
	}
	auc, _ := AUROC(y, s)
	stat := func(idx []int) (float64, string) {
		yy, ss := make([]bool, len(idx)), make([]float64, len(idx))
		for k, i := range idx {
			yy[k], ss[k] = y[i], s[i]
		}
		return AUROC(yy, ss)
	}
	lo, hi, used, why := Bootstrap(len(y), stat)
	if why != "" || !(lo < auc && auc < hi) || used > BootstrapResamples || used == 0 {
		t.Fatalf("interval [%v, %v] from %d resamples (%s) around AUROC %v", lo, hi, used, why, auc)
	}
	lo2, hi2, used2, _ := Bootstrap(len(y), stat)
	if lo2 != lo || hi2 != hi || used2 != used {
		t.Errorf("the same interval twice: [%v, %v] then [%v, %v]", lo, hi, lo2, hi2)
	}
	// 3 cases of which one positive: about (2/3)³ + (1/3)³ of the resamples (≈ 0.33)
	// draw one class only and are left out.
	_, _, used, why = Bootstrap(3, func(idx []int) (float64, string) { return stat(idx[:3]) })
	if why != "" || used >= BootstrapResamples {
		t.Errorf("%d of %d resamples kept (%s): the one-class ones should be left out", used, BootstrapResamples, why)
	}
}
