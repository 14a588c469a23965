package evaluate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"amid/plugins/metrics"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

func writeLabels(t *testing.T, path string, vals []uint8) {
	t.Helper()
	v, _ := volume.New(volume.Uint8, [4]int{len(vals), 1, 1, 1})
	for i, x := range vals {
		v.SetIndex(i, float64(x))
	}
	if err := imageio.Write(path, v); err != nil {
		t.Fatal(err)
	}
}

func writeAnn(t *testing.T, path string, a *taskspec.Annotation) {
	t.Helper()
	if err := a.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

func TestSegmentationDice(t *testing.T) {
	dir := t.TempDir()
	p, l := filepath.Join(dir, "p.nii.gz"), filepath.Join(dir, "l.nii.gz")
	// Label 1: 2 voxels in truth, 1 predicted, 1 shared: Dice 2·1/3. Label 2: predicted
	// only: Dice 0. Mean over labels present in either: (2/3 + 0) / 2 = 1/3.
	writeLabels(t, l, []uint8{1, 1, 0, 0})
	writeLabels(t, p, []uint8{1, 0, 2, 0})
	s, err := Evaluate(context.Background(), &taskspec.Spec{Kind: taskspec.Segmentation, Dims: 3}, []Pair{{ID: "a", Pred: p, Label: l}})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(s.Value-1.0/3) > 1e-12 || s.Metric != "dice" {
		t.Errorf("%s = %v, want 1/3", s.Metric, s.Value)
	}
	// Both empty: 1.
	e := filepath.Join(dir, "e.nii.gz")
	writeLabels(t, e, []uint8{0, 0, 0, 0})
	s, _ = Evaluate(context.Background(), &taskspec.Spec{Kind: taskspec.Segmentation, Dims: 3}, []Pair{{ID: "e", Pred: e, Label: e}})
	if s.Value != 1 {
		t.Errorf("empty against empty = %v, want 1", s.Value)
	}
	// A prediction of another size is an error naming the case.
	short := filepath.Join(dir, "s.nii.gz")
	writeLabels(t, short, []uint8{0, 0})
	if _, err := Evaluate(context.Background(), &taskspec.Spec{Kind: taskspec.Segmentation, Dims: 3}, []Pair{{ID: "s", Pred: short, Label: l}}); err == nil {
		t.Error("mismatched sizes were scored")
	}
}

// TestClassScoresAndConfusion: per-class Dice pooled over cases, and the share of each
// class's voxels predicted as another foreground class.
func TestClassScoresAndConfusion(t *testing.T) {
	dir := t.TempDir()
	l1, p1 := filepath.Join(dir, "l1.nii.gz"), filepath.Join(dir, "p1.nii.gz")
	l2, p2 := filepath.Join(dir, "l2.nii.gz"), filepath.Join(dir, "p2.nii.gz")
	// Case 1: four voxels of label 1, two predicted 1 and two predicted 2. Case 2: two of
	// label 2, both predicted 2. Label 1: Dice 2·2/(2+4) = 2/3; label 2: 2·2/(4+2) = 2/3;
	// half of label 1's voxels are predicted as 2, none of label 2's as 1.
	writeLabels(t, l1, []uint8{1, 1, 1, 1})
	writeLabels(t, p1, []uint8{1, 1, 2, 2})
	writeLabels(t, l2, []uint8{2, 2, 0, 0})
	writeLabels(t, p2, []uint8{2, 2, 0, 0})
	s, err := Evaluate(context.Background(), &taskspec.Spec{Kind: taskspec.Segmentation, Dims: 3}, []Pair{{ID: "a", Pred: p1, Label: l1}, {ID: "b", Pred: p2, Label: l2}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"dice_1": 2.0 / 3, "dice_2": 2.0 / 3, "confusion_1_2": 0.5}
	if len(s.Extra) != len(want) {
		t.Errorf("extra %v, want %v", s.Extra, want)
	}
	for k, v := range want {
		if math.Abs(s.Extra[k]-v) > 1e-12 {
			t.Errorf("%s = %v, want %v", k, s.Extra[k], v)
		}
	}
}

func TestScoresAndClasses(t *testing.T) {
	dir := t.TempDir()
	spec := &taskspec.Spec{Kind: taskspec.IQA, Dims: 2, Score: &taskspec.ScoreRange{Min: 0, Max: 4}}
	var pairs []Pair
	for i, v := range []float64{0, 1, 2, 3} {
		pv, gv := v*2+1, v // a monotone, linear relation: every correlation is 1
		pp, gp := filepath.Join(dir, string(rune('a'+i))+"p.json"), filepath.Join(dir, string(rune('a'+i))+"g.json")
		writeAnn(t, pp, &taskspec.Annotation{Score: &pv})
		writeAnn(t, gp, &taskspec.Annotation{Score: &gv})
		pairs = append(pairs, Pair{ID: string(rune('a' + i)), Pred: pp, Label: gp})
	}
	s, err := Evaluate(context.Background(), spec, pairs)
	if err != nil || math.Abs(s.Value-3) > 1e-12 {
		t.Errorf("PLCC+SROCC+KROCC = %v (%v), want 3", s, err)
	}
	if sp := Span(spec); sp != s.Value {
		t.Errorf("the IQA score's span is %g, but perfect predictions score %g", sp, s.Value)
	}
	cls := &taskspec.Spec{Kind: taskspec.Classification, Dims: 3, Attributes: []taskspec.Attribute{
		{Name: "a", Classes: []string{"0", "1"}, Group: "g"}, {Name: "b", Classes: []string{"0", "1"}, Group: "g"}}}
	pairs = nil
	// Variants "01", "10", "01": predicted right, wrong, right. Balanced accuracy over
	// variants: ("01": 2/2 + "10": 0/1) / 2 = 0.5.
	for i, c := range [][2][2]int{{{0, 1}, {0, 1}}, {{0, 1}, {1, 0}}, {{0, 1}, {0, 1}}} {
		pp, gp := filepath.Join(dir, "c"+string(rune('0'+i))+"p.json"), filepath.Join(dir, "c"+string(rune('0'+i))+"g.json")
		writeAnn(t, pp, &taskspec.Annotation{Classes: map[string]int{"a": c[0][0], "b": c[0][1]}})
		writeAnn(t, gp, &taskspec.Annotation{Classes: map[string]int{"a": c[1][0], "b": c[1][1]}})
		pairs = append(pairs, Pair{ID: string(rune('0' + i)), Pred: pp, Label: gp})
	}
	s, err = Evaluate(context.Background(), cls, pairs)
	if err != nil || math.Abs(s.Value-0.5) > 1e-12 {
		t.Errorf("balanced accuracy = %v (%v), want 0.5", s, err)
	}
}

func TestBox3D(t *testing.T) {
	dir := t.TempDir()
	pp, gp := filepath.Join(dir, "p.json"), filepath.Join(dir, "g.json")
	writeAnn(t, pp, &taskspec.Annotation{Box3D: &taskspec.Box3D{Min: [3]int{2, 2, 2}, Size: [3]int{4, 4, 4}}})
	writeAnn(t, gp, &taskspec.Annotation{Box3D: &taskspec.Box3D{Min: [3]int{2, 2, 2}, Size: [3]int{4, 4, 4}}})
	s, err := Evaluate(context.Background(), &taskspec.Spec{Kind: taskspec.Detection, Dims: 3, Box3D: true}, []Pair{{ID: "x", Pred: pp, Label: gp}})
	if err != nil || s.Value != 1 {
		t.Errorf("identical boxes: IoU %v (%v), want 1", s, err)
	}
	if _, err := Evaluate(context.Background(), &taskspec.Spec{Kind: taskspec.Detection, Dims: 3, Box3D: true}, nil); err == nil {
		t.Error("no cases were scored")
	}
}

// writeImage writes a w×h 16-bit image whose pixel i is f(i).
func writeImage(t *testing.T, path string, w, h int, f func(i int) float64) {
	t.Helper()
	v, _ := volume.New(volume.Uint16, [4]int{w, h, 1, 1})
	for i := range w * h {
		v.SetIndex(i, f(i))
	}
	if err := imageio.Write(path, v); err != nil {
		t.Fatal(err)
	}
}

// An enhancement is validated with the metric its task names, and the score says which;
// each value is the metric's own on the same pixels (what the USenhance grader computes).
func TestEnhancementTaskMetric(t *testing.T) {
	dir := t.TempDir()
	const w, h = 16, 12 // above SSIM's 7×7 window
	gt := func(i int) float64 { return float64((i*37)%251) * 100 }
	noisy := func(i int) float64 { return gt(i) + float64((i*13)%7)*300 }
	var pairs []Pair
	for _, id := range []string{"a", "b"} {
		p, l := filepath.Join(dir, id+"-pred.png"), filepath.Join(dir, id+"-gt.png")
		writeImage(t, p, w, h, noisy)
		writeImage(t, l, w, h, gt)
		pairs = append(pairs, Pair{ID: id, Pred: p, Label: l})
	}
	pix := func(f func(int) float64) metrics.Image {
		im := metrics.Image{W: w, H: h, Pix: make([]float64, w*h)}
		for i := range im.Pix {
			im.Pix[i] = f(i)
		}
		return im
	}
	pi, gi := pix(noisy), pix(gt)
	dr := metrics.DataRange(pi, gi)
	wantPSNR, _ := metrics.PSNR(pi, gi, dr)
	wantSSIM, _ := metrics.SSIM(pi, gi, dr)
	wantLNCC, _ := metrics.LNCC(pi, gi)
	for name, want := range map[string]float64{"psnr": wantPSNR, "PSNR": wantPSNR, "ssim": wantSSIM, "lncc": wantLNCC, "": wantLNCC} {
		sc, err := Evaluate(context.Background(), &taskspec.Spec{Kind: taskspec.Enhancement, Metric: name}, pairs)
		if err != nil {
			t.Fatalf("metric %q: %v", name, err)
		}
		wantName := strings.ToLower(name)
		if name == "" {
			wantName = "lncc"
		}
		if sc.Metric != wantName || math.Abs(sc.Value-want) > 1e-12 {
			t.Errorf("metric %q: scored %s %v, want %s %v", name, sc.Metric, sc.Value, wantName, want)
		}
	}
	if _, err := Evaluate(context.Background(), &taskspec.Spec{Kind: taskspec.Enhancement, Metric: "mae"}, pairs); err == nil || !strings.Contains(err.Error(), `"mae"`) {
		t.Errorf("an unknown enhancement metric: %v, want an error naming it", err)
	}
	// Identical images: the grader's PSNR is +Inf; validation records a finite value.
	same := []Pair{{ID: "s", Pred: pairs[0].Label, Label: pairs[0].Label}}
	sc, err := Evaluate(context.Background(), &taskspec.Spec{Kind: taskspec.Enhancement, Metric: "psnr"}, same)
	if err != nil || math.IsInf(sc.Value, 0) || sc.Value != psnrCapForTest {
		t.Errorf("PSNR of identical images = %v, %v; want the cap %v", sc, err, psnrCapForTest)
	}
}

// psnrCapForTest is metrics.ImageMetric's cap for identical images (plugins/metrics/image.go).
const psnrCapForTest = 100

// TestUndefinedCorrelation: issue 32's LDCT-IQA run of 3 training cases, whose folds
// validate on one case each. A correlation of one case, or of predictions that are one
// value (an IQA net early in training), has no value: the score says so with the reason,
// Value is 0, and no NaN is left in the record (json.Marshal refused the run's state with
// "unsupported value: NaN", on every resume).
func TestUndefinedCorrelation(t *testing.T) {
	dir := t.TempDir()
	spec := &taskspec.Spec{Kind: taskspec.IQA, Dims: 2, Score: &taskspec.ScoreRange{Min: 0, Max: 4}}
	pairsOf := func(preds, labels []float64) []Pair {
		var pairs []Pair
		for i := range preds {
			id := fmt.Sprintf("c%d-%d", len(preds), i)
			pp, gp := filepath.Join(dir, id+"p.json"), filepath.Join(dir, id+"g.json")
			writeAnn(t, pp, &taskspec.Annotation{Score: &preds[i]})
			writeAnn(t, gp, &taskspec.Annotation{Score: &labels[i]})
			pairs = append(pairs, Pair{ID: id, Pred: pp, Label: gp})
		}
		return pairs
	}
	for _, c := range []struct {
		preds, labels []float64
		why           string
	}{
		{[]float64{2.5}, []float64{1}, "a correlation needs two cases or more, and there is 1"},
		{[]float64{2, 2, 2}, []float64{0, 1, 3}, "the predictions are one value (2) for all 3 cases"},
		{[]float64{0, 1, 3}, []float64{2, 2, 2}, "the labels are one value (2) for all 3 cases"},
	} {
		s, err := Evaluate(context.Background(), spec, pairsOf(c.preds, c.labels))
		if err != nil {
			t.Fatal(err)
		}
		if s.Undefined != c.why || s.Value != 0 {
			t.Errorf("%v against %v: value %v, undefined %q; want 0 and %q", c.preds, c.labels, s.Value, s.Undefined, c.why)
		}
		if b, err := json.Marshal(s); err != nil {
			t.Errorf("%v against %v: the score cannot be recorded: %v", c.preds, c.labels, err)
		} else if !strings.Contains(s.String(), "undefined ("+c.why+")") {
			t.Errorf("the log shows %q (%s)", s.String(), b)
		}
	}
	// Two cases that vary have a value, as before.
	s, err := Evaluate(context.Background(), spec, pairsOf([]float64{1, 2}, []float64{0, 4}))
	if err != nil || s.Undefined != "" || math.Abs(s.Value-3) > 1e-12 {
		t.Errorf("two varying cases: %+v, %v; want 3", s, err)
	}
}

// TestUndefinedScoreIsNull: an undefined score is written as null beside its reason, not
// as the 0 that stands in for it in memory (issue 32).
func TestUndefinedScoreIsNull(t *testing.T) {
	b, err := json.Marshal(Score{Metric: "plcc", Cases: 1, Undefined: "a correlation needs two cases or more, and there is 1"})
	if err != nil || !strings.Contains(string(b), `"value":null`) || !strings.Contains(string(b), `"undefined":"a correlation needs`) {
		t.Errorf("%s (%v)", b, err)
	}
	if b, _ := json.Marshal(Score{Metric: "dice", Value: 0, Cases: 2}); !strings.Contains(string(b), `"value":0`) {
		t.Errorf("a defined 0: %s", b)
	}
}
