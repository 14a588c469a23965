package run

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"amid/host/evaluate"
	"amid/host/export"
	"amid/host/profile"
	"amid/host/schedule"
	"amid/plugins/taskspec"
)

// fewCases is the training-set size below which the card says that its intervals are wide
// and its classes thinly seen: nnU-Net's smallest Medical Segmentation Decathlon task
// (Prostate) has 32 training cases.
const fewCases = 32

// rareClass is how few training cases holding a class the card calls out: fewer than one
// per fold of the default five.
const rareClass = 5

// card is the package's model card: the task and the chosen model, the training data's
// fingerprint, the locked split, the out-of-fold validation and test scores with their 95 %
// bootstrap intervals over cases, the compute, the software, and the limits the data sets.
func (r *Runner) card(fp *profile.Fingerprint, version string) *export.Card {
	t := r.task
	best := r.st.lane(r.st.Chosen)
	c := &export.Card{
		Model: export.CardModel{Task: t.ID, Title: firstNonEmpty(t.Title, t.ID), Kind: t.Kind, Dims: t.Dims, Lane: r.chosenLane(),
			Mode: r.finalMode(), Plugin: best.Plugin, Version: version, AMID: Version},
	}
	// The classes a segmentation finds leave its background out.
	var classes []string
	withClass := fp.CasesWithClass
	for i, l := range t.Labels {
		if t.Kind == taskspec.Segmentation && l.Value == 0 {
			if i < len(withClass) {
				withClass = slices.Delete(slices.Clone(withClass), i, i+1)
			}
			continue
		}
		classes = append(classes, l.Name)
	}
	c.IntendedUse = fmt.Sprintf("%s of %s on %d-D %s images like those it was trained on (below), as a research model AMID developed on %d cases of %d patients, "+
		"to be checked by a qualified reader before any use: it is not a medical device, and no regulator has assessed it. %s",
		kindText(t.Kind), orNone(strings.Join(classes, ", ")), t.Dims, firstNonEmpty(t.Modality, "unspecified-modality"),
		fp.Train, fp.Patients, strings.TrimSpace(t.Description))
	c.Training = export.CardData{Cases: fp.Train, Patients: fp.Patients, Modality: fp.Modality, Channels: fp.Channels, Classes: classes,
		MedianSize: fp.MedianShape, Spacing: fp.SpacingRange(), Intensity: fp.Intensity, CasesWithClass: withClass}
	split := ""
	sizes := map[int]int{} // validation cases per fold
	if fl, err := r.folds(); err == nil {
		split = fl.Hash
		for _, k := range fl.Assign {
			sizes[k]++
		}
	}
	c.Evaluation = export.CardEval{Folds: r.st.Folds, SplitHash: split, TestCases: len(r.data.Test),
		Validation: fmt.Sprintf("Validation: %d locked patient-level folds of the %d training cases (no patient in two folds); each case is validated once, by the fold model that did not train on it (out of fold)%s.", r.st.Folds, fp.Train, allDataNote(r.finalMode())),
		Test:       fmt.Sprintf("Test: %d cases the model never trained or was chosen on, scored only when their answers are given.", len(r.data.Test))}
	// The chosen lane's folds: their cases' values, and the mean over folds of each class
	// score.
	var per []float64
	extra, folds := map[string]float64{}, 0
	undefined := best.Undefined()
	for _, k := range slices.Sorted(maps.Keys(best.Folds)) {
		f := best.Folds[k]
		if f.Status != FoldDone || f.Undefined != "" {
			continue
		}
		per = append(per, sortedValues(f.PerCase)...)
		for name, v := range f.Extra {
			extra[name] += v
		}
		folds++
	}
	for name := range extra {
		extra[name] /= float64(folds)
	}
	if n := len(per); n > 0 && n < fp.Train {
		c.Evaluation.Validation += fmt.Sprintf(" The folds trained within the budget validated %d of the %d cases.", n, fp.Train)
	}
	m, n := best.Mean()
	if n == 0 {
		m = 0 // undefined on every fold: Undefined says why, and JSON holds no NaN
	}
	if len(per) > 0 {
		m = mean(per) // the folds' cases are the ones the interval resamples
	}
	val := export.Score("validation (out of fold)", t.Metric.Name, m, per)
	val.PerClass, val.Undefined = classNames(withoutInterval(extra), t.Labels), undefined
	if len(per) == 0 {
		foldInterval(&val, best, sizes)
	}
	c.Scores = append(c.Scores, lowerShown(val, t.Metric.Name))
	if g := r.st.TestScore; g != nil && g.Valid {
		ts := export.Score("test", g.Primary, g.Score, sortedValues(g.PerCase))
		ts.PerClass = classNames(withoutInterval(g.Metrics), t.Labels)
		if lo, hi, ok := evaluate.Interval(g.Metrics); ok && len(g.PerCase) == 0 {
			ts.Low, ts.High, ts.Cases = lo, hi, len(r.data.Test)
			ts.Interval = fmt.Sprintf("%s of the %d test cases, of the %s itself", evaluate.IntervalMethod, len(r.data.Test), g.Primary)
		}
		c.Scores = append(c.Scores, lowerShown(ts, t.Metric.Name))
	}
	for _, id := range r.trainedOn() {
		c.Compute.Trained = append(c.Compute.Trained, id.String())
	}
	c.Compute.Predicted = r.st.Compute.String()
	c.Software = export.Components(
		export.Component{Name: "AMID plugin " + best.Plugin, Version: firstNonEmpty(version, "unknown"), Role: "trains the model and predicts with it (plugin/ in this package)"},
		export.Component{Name: "BLAS", Version: firstNonEmpty(r.st.Compute.BLAS, "none"), Role: "the matrix products of the training engine on the CPU"},
	)
	c.Limitations = r.limits(fp, undefined)
	return c
}

// limits are what the training data sets as the model's bounds, one sentence each.
func (r *Runner) limits(fp *profile.Fingerprint, undefined string) []string {
	t := r.task
	var out []string
	dims := "volumes (3-D)"
	if t.Dims == 2 {
		dims = "2-D images"
	}
	out = append(out, fmt.Sprintf("It reads %s of %d channel(s)%s: amid predict refuses other inputs with the reason.", dims, max(fp.Channels, 1), modalityText(t.Modality)))
	sp := fp.SpacingRange()
	out = append(out, fmt.Sprintf("It saw spacings (Z, Y, X) from %s to %s mm and intensities between %.4g and %.4g (0.5 and 99.5 percentiles); amid predict warns of an input more than 25 %% outside the spacings or whose median intensity lies outside those percentiles.",
		export.Triple(sp[0]), export.Triple(sp[1]), fp.Intensity[0], fp.Intensity[2]))
	if fp.Train < fewCases {
		out = append(out, fmt.Sprintf("It was trained on %d cases, fewer than %d: its scores' intervals are wide, and it has seen little of the variety of real patients.", fp.Train, fewCases))
	}
	for i, n := range fp.CasesWithClass {
		if i >= len(t.Labels) || n >= rareClass || t.Kind == taskspec.Segmentation && t.Labels[i].Value == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("Class %s is in only %d of its %d training cases.", t.Labels[i].Name, n, fp.Train))
	}
	if undefined != "" {
		out = append(out, "Its validation score is undefined: "+undefined+".")
	}
	if t.Kind == taskspec.Segmentation && t.Instances {
		out = append(out, "Its label maps number instances; amid predict reports no volumes for them.")
	}
	return out
}

// allDataNote says what out-of-fold validation means for a model trained on every case.
func allDataNote(mode string) string {
	if mode == schedule.FinalAllData {
		return "; the final model, trained on every case, is judged by its fold models' scores"
	}
	return ""
}

func kindText(kind string) string {
	switch kind {
	case taskspec.Segmentation:
		return "Segmentation"
	case taskspec.Detection:
		return "Detection"
	case taskspec.Classification:
		return "Classification"
	case taskspec.IQA:
		return "Image-quality scoring"
	case taskspec.Enhancement:
		return "Enhancement"
	}
	return kind
}

func orNone(s string) string {
	if s == "" {
		return "its target"
	}
	return s
}

func modalityText(m string) string {
	if m == "" {
		return ""
	}
	return ", of modality " + m
}

// sortedValues are m's values in the order of its sorted keys.
func sortedValues(m map[string]float64) []float64 {
	out := make([]float64, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// classNames renames the label values in metric names to the labels' names: dice_3 →
// "dice brain", confusion_5_3 → "confusion haemorrhage brain".
func classNames(m map[string]float64, labels []taskspec.Label) map[string]float64 {
	if m == nil {
		return nil
	}
	names := map[string]string{}
	for _, l := range labels {
		names[fmt.Sprint(l.Value)] = l.Name
	}
	out := make(map[string]float64, len(m))
	for k, v := range m {
		parts := strings.Split(k, "_")
		for i, p := range parts[1:] {
			if n, ok := names[p]; ok {
				parts[i+1] = n
			}
		}
		out[strings.Join(parts, " ")] = v
	}
	return out
}

// withoutInterval is a score's Extra less its bootstrap interval, which the card shows
// beside the value instead.
func withoutInterval(m map[string]float64) map[string]float64 {
	if _, _, ok := evaluate.Interval(m); !ok {
		return m
	}
	out := maps.Clone(m)
	delete(out, evaluate.CILow)
	delete(out, evaluate.CIHigh)
	return out
}

// foldInterval gives the validation score of a metric that is not a mean over cases (a
// clinical metric: AUROC, kappa, Brier) its interval: the one validated fold's bootstrap
// interval over its cases; with several folds none, since the folds' cases were scored by
// different models, and the report lists each fold's. sizes counts each fold's validation
// cases.
func foldInterval(s *export.CardScore, l *LaneState, sizes map[int]int) {
	var with []FoldState
	s.Cases = 0
	for _, k := range slices.Sorted(maps.Keys(l.Folds)) {
		if f := l.Folds[k]; f.Status == FoldDone && f.Undefined == "" {
			if _, _, ok := evaluate.Interval(f.Extra); ok {
				with = append(with, f)
				s.Cases += sizes[k]
			}
		}
	}
	switch {
	case len(with) == 1:
		s.Low, s.High, _ = evaluate.Interval(with[0].Extra)
		s.Value = with[0].Score
		s.Interval = fmt.Sprintf("%s of the validated fold, of the %s itself", evaluate.IntervalMethod, s.Metric)
	case len(with) > 1:
		s.Interval = fmt.Sprintf("none over the %d folds together: the %s is not a mean over cases; the run's report gives each fold's %s", len(with), s.Metric, evaluate.IntervalMethod)
	}
}

// lowerShown shows a score that is better lower (the Brier score, the calibration error:
// the host ranks their negation, "neg_brier") as the metric itself, its interval flipped.
func lowerShown(s export.CardScore, metric string) export.CardScore {
	if !evaluate.LowerBetter(metric) || s.Undefined != "" {
		return s
	}
	s.Metric = strings.TrimPrefix(s.Metric, "neg_") + " (lower is better)"
	s.Value, s.Low, s.High = -s.Value, -s.High, -s.Low
	return s
}

// scoreName is the name of the score lanes are ranked by: the task's metric, or for a
// metric better lower (the Brier score, the calibration error) its negation, "neg_brier",
// which is what the scores hold.
func (r *Runner) scoreName() string {
	if evaluate.LowerBetter(r.task.Metric.Name) {
		return "neg_" + strings.ToLower(r.task.Metric.Name)
	}
	return r.task.Metric.Name
}
