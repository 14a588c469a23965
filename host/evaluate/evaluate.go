// Package evaluate scores predictions on validation folds with the host's own metrics
// (amid/plugins/metrics), never with a number a plugin reports. Predictions and labels are the
// canonical per-case files of amid/plugins/taskspec: label images, target images or
// annotation JSON.
//
// Each kind has one primary validation metric, the one that decides which lane wins; it
// follows the challenge's metric family:
//
//   - segmentation: mean over cases of the mean Dice over the case's labels under the rule of
//     the task's grader (amid/plugins/metrics.MeanDice, DiceRuleOf: for a task of the user's
//     own, the labels present in the ground truth or the prediction, a case with neither
//     scoring 1); instance segmentation: mean F1 at IoU 0.5 after Hungarian matching
//     (NeurIPS-CellSeg);
//   - detection: boxes, COCO AP@[.5:.95] averaged over the attributes (DENTEX); points,
//     macro F1 over the point classes within the point radius under the rule of the task's
//     grader (metrics.PointsF1, PointsRuleOf: PUMA); a 3D box, mean IoU;
//   - classification: balanced accuracy of each group's joint variant (TopCoW), or of each
//     attribute, averaged; or the clinical metric the task names (clinical.go: AUROC,
//     sensitivity or specificity at an operating point, macro F1, quadratic kappa, Brier
//     score, calibration error), with its 95 % bootstrap interval;
//   - classification of a multi-label attribute: the mean AUROC over its findings, each
//     finding's AUROC beside it (multilabel.go);
//   - iqa: |PLCC| + |SROCC| + |KROCC| (LDCT-IQA);
//   - enhancement: the mean over cases of the image metric the task names
//     (amid/plugins/metrics.ImageMetric: LNCC with an 11×11 window, SSIM or PSNR, as the
//     USenhance grader computes them).
package evaluate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"amid/host/finite"
	"amid/plugins/metrics"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// Pair is one case's prediction and ground-truth file.
type Pair struct {
	ID    string
	Pred  string
	Label string
}

// Score is a validation result.
type Score struct {
	// Metric names the primary metric and Value is its value (higher is better for
	// every primary metric here: a metric better lower is negated, "neg_brier").
	Metric string             `json:"metric"`
	Value  float64            `json:"value"`
	Cases  int                `json:"cases"`
	Extra  map[string]float64 `json:"extra,omitempty"`
	// PerCase holds the per-case values where the metric is a mean over cases.
	PerCase map[string]float64 `json:"per_case,omitempty"`
	// Undefined, when set, says why the primary metric has no value on these cases (a
	// correlation of one case, or of predictions that are one value): Value is then 0,
	// a placeholder no record shows as a score, and Extra and PerCase leave out what is
	// undefined too.
	Undefined string `json:"undefined,omitempty"`
	// Notes name what the value leaves out: a multi-label attribute's findings without an
	// AUROC on these cases (multilabel.go).
	Notes []string `json:"notes,omitempty"`
}

// MarshalJSON writes the value as null when it is undefined (the reason beside it).
func (s Score) MarshalJSON() ([]byte, error) {
	type plain Score
	return json.Marshal(struct {
		plain
		Value *float64 `json:"value"`
	}{plain(s), finite.Maybe(s.Value, s.Undefined != "")})
}

// String is the score as a log prints it: "dice 0.8123", or "plcc_srocc_krocc undefined
// (the predictions are one value (3) for all 4 cases)".
func (s *Score) String() string {
	if s.Undefined != "" {
		return fmt.Sprintf("%s undefined (%s)", s.Metric, s.Undefined)
	}
	return fmt.Sprintf("%s %.4f", s.Metric, s.Value)
}

// defined leaves out of s the values that are not finite (JSON cannot hold them, and they
// are no evidence), and marks a non-finite primary value undefined with reason, or with
// one of its own when reason is empty.
func (s *Score) defined(reason string) *Score {
	bad := func(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) }
	if bad(s.Value) || reason != "" {
		if reason == "" {
			reason = fmt.Sprintf("%v on these %d cases", s.Value, s.Cases)
		}
		s.Value, s.Undefined = 0, reason
	}
	for _, m := range []map[string]float64{s.Extra, s.PerCase} {
		for k, v := range m {
			if bad(v) {
				delete(m, k)
			}
		}
	}
	return s
}

// Span is the width of the range the primary validation score of s moves over, the unit
// in which the schedule judges a round's gain: 1 for the overlap, detection and accuracy
// scores and for LNCC and SSIM (from 0, or below for an anticorrelation no model trains
// toward, to 1), 3 for the IQA score |PLCC|+|SROCC|+|KROCC| (rexmle.md §6.13: each term to
// 1), and 0 for PSNR, whose decibels have no upper end (a gain is then judged against the
// score itself).
func Span(s *taskspec.Spec) float64 {
	switch {
	case s.Kind == taskspec.IQA:
		return 3
	case s.Kind == taskspec.Enhancement && strings.EqualFold(s.Metric, "psnr"):
		return 0
	}
	return 1
}

// ErrEval marks predictions that cannot be scored.
var ErrEval = errors.New("cannot score predictions")

// Evaluate scores pairs for the task spec s.
func Evaluate(ctx context.Context, s *taskspec.Spec, pairs []Pair) (*Score, error) {
	return EvaluateWith(ctx, s, pairs, Options{})
}

// EvaluateWith scores pairs for the task spec s with the options o: the test set of a
// classification judged at an operating point is scored with the threshold its validation
// chose (o.Thresholds).
func EvaluateWith(ctx context.Context, s *taskspec.Spec, pairs []Pair, o Options) (*Score, error) {
	sc, err := evaluate(ctx, s, pairs, o)
	if err != nil {
		return nil, err
	}
	return sc.defined(""), nil
}

func evaluate(ctx context.Context, s *taskspec.Spec, pairs []Pair, o Options) (*Score, error) {
	if len(pairs) == 0 {
		return nil, fmt.Errorf("%w: no validation cases", ErrEval)
	}
	switch s.Kind {
	case taskspec.Segmentation:
		if s.Instances {
			return perCase(ctx, pairs, "f1@0.5", instanceF1)
		}
		var cs classStats
		sc, err := perCase(ctx, pairs, "dice", func(p, l *volume.Volume) (float64, error) {
			cs.add(p, l)
			return meanDice(p, l, metrics.DiceRuleOf(s.Challenge))
		})
		if err != nil {
			return nil, err
		}
		sc.Extra = cs.extra()
		return sc, nil
	case taskspec.Enhancement:
		name := strings.ToLower(s.Metric)
		if name == "" {
			name = "lncc" // a spec from before the task's metric travelled with it
		}
		m, err := metrics.ImageMetric(name)
		if err != nil {
			return nil, fmt.Errorf("%w: enhancement: %w", ErrEval, err)
		}
		return perCase(ctx, pairs, name, func(p, l *volume.Volume) (float64, error) { return m(gray(p), gray(l)) })
	}
	anns := make([][2]*taskspec.Annotation, len(pairs))
	for i, p := range pairs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pr, err := taskspec.ReadAnnotation(p.Pred, s)
		if err != nil {
			return nil, fmt.Errorf("%w: case %s: prediction: %w", ErrEval, p.ID, err)
		}
		gt, err := taskspec.ReadAnnotation(p.Label, s)
		if err != nil {
			return nil, fmt.Errorf("%w: case %s: label: %w", ErrEval, p.ID, err)
		}
		anns[i] = [2]*taskspec.Annotation{pr, gt}
	}
	switch {
	case s.Kind == taskspec.Detection && s.Box3D:
		return box3D(pairs, anns), nil
	case s.Kind == taskspec.Detection && len(s.Points) > 0:
		return points(s, anns), nil
	case s.Kind == taskspec.Detection:
		return boxes(s, anns), nil
	case s.Kind == taskspec.Classification && hasMultiLabel(s):
		at, _ := s.MultiLabel()
		return multiLabel(at, anns, pairs)
	case s.Kind == taskspec.Classification && metrics.IsClinical(s.Metric):
		c, err := metrics.ParseClinical(s.Metric)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrEval, err)
		}
		return clinical(s, c, anns, o)
	case s.Kind == taskspec.Classification:
		return classes(s, anns), nil
	case s.Kind == taskspec.IQA:
		return scores(anns)
	}
	return nil, fmt.Errorf("%w: kind %q", ErrEval, s.Kind)
}

func perCase(ctx context.Context, pairs []Pair, name string, f func(p, l *volume.Volume) (float64, error)) (*Score, error) {
	out := &Score{Metric: name, Cases: len(pairs), PerCase: map[string]float64{}}
	var sum float64
	for _, p := range pairs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pv, err := imageio.Read(p.Pred)
		if err != nil {
			return nil, fmt.Errorf("%w: case %s: prediction %s: %w", ErrEval, p.ID, p.Pred, err)
		}
		lv, err := imageio.Read(p.Label)
		if err != nil {
			return nil, fmt.Errorf("%w: case %s: label %s: %w", ErrEval, p.ID, p.Label, err)
		}
		if [3]int(pv.Dims[:3]) != [3]int(lv.Dims[:3]) {
			return nil, fmt.Errorf("%w: case %s: prediction %s is %v but its label is %v", ErrEval, p.ID, p.Pred, pv.Dims[:3], lv.Dims[:3])
		}
		v, err := f(pv, lv)
		if err != nil {
			return nil, fmt.Errorf("%w: case %s: %w", ErrEval, p.ID, err)
		}
		out.PerCase[p.ID] = v
		sum += v
	}
	out.Value = sum / float64(len(pairs))
	return out, nil
}

func ints(v *volume.Volume) []int32 {
	n := v.NumVoxels()
	out := make([]int32, n)
	for i := range n {
		out[i] = int32(v.AtIndex(i * v.Dims[3]))
	}
	return out
}

// meanDice is the case's mean Dice over its labels under the rule of the task's grader.
func meanDice(p, l *volume.Volume, rule metrics.DiceRule) (float64, error) {
	lo, err := metrics.CountLabels(ints(l), ints(p))
	if err != nil {
		return 0, err
	}
	return metrics.MeanDice(lo, rule), nil
}

// classStats pools a segmentation's voxels over cases: per label the voxels predicted, the
// voxels labelled and those both, and between foreground labels the voxels of one
// predicted as another.
type classStats struct {
	inter, pred, label map[int32]int
	confused           map[[2]int32]int
}

func (c *classStats) add(p, l *volume.Volume) {
	if c.inter == nil {
		c.inter, c.pred, c.label, c.confused = map[int32]int{}, map[int32]int{}, map[int32]int{}, map[[2]int32]int{}
	}
	pv, lv := ints(p), ints(l)
	for i := range pv {
		a, b := lv[i], pv[i]
		if b != 0 {
			c.pred[b]++
		}
		if a == 0 {
			continue
		}
		c.label[a]++
		switch {
		case a == b:
			c.inter[a]++
		case b != 0:
			c.confused[[2]int32{a, b}]++
		}
	}
}

// minConfusion is the smallest confusion reported: a hundredth of a class's voxels.
const minConfusion = 0.01

// extra is the Score's Extra of a segmentation: "dice_<k>", the Dice of label k over the
// voxels of every case pooled, and "confusion_<a>_<b>", the share of label a's voxels
// predicted as foreground label b, where at least minConfusion.
func (c *classStats) extra() map[string]float64 {
	out := map[string]float64{}
	for k := range c.label {
		out[fmt.Sprintf("dice_%d", k)] = 2 * float64(c.inter[k]) / float64(c.pred[k]+c.label[k])
	}
	for k := range c.pred {
		if c.label[k] == 0 {
			out[fmt.Sprintf("dice_%d", k)] = 0
		}
	}
	for ab, n := range c.confused {
		if f := float64(n) / float64(c.label[ab[0]]); f >= minConfusion {
			out[fmt.Sprintf("confusion_%d_%d", ab[0], ab[1])] = f
		}
	}
	return out
}

func instanceF1(p, l *volume.Volume) (float64, error) {
	if p.Dims[2] != 1 {
		return 0, fmt.Errorf("instance F1 is defined for 2D images, not %v", p.Dims[:3])
	}
	c, err := metrics.CellSegF1(ints(l), ints(p), l.Dims[0], l.Dims[1], []float64{0.5})
	if err != nil {
		return 0, err
	}
	return c[0].F1, nil
}

func gray(v *volume.Volume) metrics.Image {
	n := v.NumVoxels()
	im := metrics.Image{W: v.Dims[0], H: v.Dims[1] * v.Dims[2], Pix: make([]float64, n)}
	for i := range n {
		im.Pix[i] = v.AtIndex(i * v.Dims[3])
	}
	return im
}

func box3D(pairs []Pair, anns [][2]*taskspec.Annotation) *Score {
	out := &Score{Metric: "iou", Cases: len(pairs), PerCase: map[string]float64{}}
	var sum float64
	for i, a := range anns {
		var v float64
		if a[0].Box3D != nil && a[1].Box3D != nil {
			v = metrics.BoxIoUReX(metrics.Box3D{Size: a[0].Box3D.Size, Location: a[0].Box3D.Min}, metrics.Box3D{Size: a[1].Box3D.Size, Location: a[1].Box3D.Min}, 0.5)
		}
		out.PerCase[pairs[i].ID] = v
		sum += v
	}
	out.Value = sum / float64(len(anns))
	return out
}

func points(s *taskspec.Spec, anns [][2]*taskspec.Annotation) *Score {
	radius := s.PointRadius
	if radius <= 0 {
		radius = metrics.PUMAMatchRadius
	}
	truth, pred := make([][]metrics.Nucleus, len(anns)), make([][]metrics.Nucleus, len(anns))
	conv := func(ps []taskspec.Point) []metrics.Nucleus {
		out := make([]metrics.Nucleus, len(ps))
		for i, p := range ps {
			out[i] = metrics.Nucleus{Class: p.Class, X: p.X, Y: p.Y, Score: p.Score}
		}
		return out
	}
	for i, a := range anns {
		truth[i], pred[i] = conv(a[1].Points), conv(a[0].Points)
	}
	f1, byClass := metrics.PointsF1(truth, pred, s.Points, radius, metrics.PointsRuleOf(s.Challenge, false))
	return &Score{Metric: "macro_f1", Value: f1, Cases: len(anns), Extra: byClass}
}

func boxes(s *taskspec.Spec, anns [][2]*taskspec.Annotation) *Score {
	out := &Score{Metric: "ap_mean", Cases: len(anns), Extra: map[string]float64{}}
	attrs := s.Attributes
	if len(attrs) == 0 {
		attrs = []taskspec.Attribute{{Name: "", Classes: []string{"object", "object"}}}
	}
	imgs := make([]int64, len(anns))
	for i := range anns {
		imgs[i] = int64(i + 1)
	}
	var sum float64
	for _, at := range attrs {
		var gts []metrics.COCOGT
		var dts []metrics.COCODet
		cats := make([]int64, len(at.Classes))
		for c := range cats {
			cats[c] = int64(c + 1)
		}
		id := int64(1)
		for i, a := range anns {
			for _, b := range a[1].Boxes {
				gts = append(gts, metrics.COCOGT{ID: id, ImageID: int64(i + 1), CategoryID: int64(b.Attrs[at.Name] + 1), Box: metrics.COCOBox{X: b.X, Y: b.Y, W: b.W, H: b.H}, Area: b.W * b.H})
				id++
			}
			for _, b := range a[0].Boxes {
				dts = append(dts, metrics.COCODet{ImageID: int64(i + 1), CategoryID: int64(b.Attrs[at.Name] + 1), Box: metrics.COCOBox{X: b.X, Y: b.Y, W: b.W, H: b.H}, Score: b.Score})
			}
		}
		st := metrics.COCOEvaluate(gts, dts, imgs, cats)
		ap := math.Max(st.AP, 0) // pycocotools reports -1 when no ground truth
		out.Extra["ap_"+at.Name] = ap
		sum += ap
	}
	out.Value = sum / float64(len(attrs))
	return out
}

func classes(s *taskspec.Spec, anns [][2]*taskspec.Annotation) *Score {
	out := &Score{Metric: "balanced_accuracy", Cases: len(anns), Extra: map[string]float64{}}
	groups := map[string][]taskspec.Attribute{}
	var order []string
	for _, at := range s.Attributes {
		g := at.Group
		if g == "" {
			g = at.Name
		}
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], at)
	}
	var sum float64
	for _, g := range order {
		var yt, yp []string
		for _, a := range anns {
			var t, p []string
			for _, at := range groups[g] {
				t = append(t, fmt.Sprint(a[1].Classes[at.Name]))
				p = append(p, fmt.Sprint(a[0].Classes[at.Name]))
			}
			yt = append(yt, strings.Join(t, ""))
			yp = append(yp, strings.Join(p, ""))
		}
		v := metrics.BalancedAccuracy(yt, yp)
		out.Extra[g] = v
		sum += v
	}
	out.Value = sum / float64(len(order))
	return out
}

func scores(anns [][2]*taskspec.Annotation) (*Score, error) {
	pred := make([]float64, len(anns))
	gt := make([]float64, len(anns))
	for i, a := range anns {
		if a[0].Score == nil || a[1].Score == nil {
			return nil, fmt.Errorf("%w: case %d has no score", ErrEval, i)
		}
		pred[i], gt[i] = *a[0].Score, *a[1].Score
	}
	s, pl, sr, kr := metrics.LDCTScore(pred, gt)
	sc := &Score{Metric: "plcc_srocc_krocc", Value: s, Cases: len(anns), Extra: map[string]float64{"plcc": pl, "srocc": sr, "krocc": kr}}
	return sc.defined(metrics.CorrelationUndefined(pred, gt)), nil
}

func hasMultiLabel(s *taskspec.Spec) bool {
	_, ok := s.MultiLabel()
	return ok
}
