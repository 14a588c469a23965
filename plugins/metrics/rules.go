package metrics

// The conventions in which the graders differ, as parameters of one definition each. A
// task's validation (the host's, a plugin's, the Review screen's) passes the rule of the
// grader that scores the task's submission (DiceRuleOf, PointsRuleOf of its challenge id), so
// that every figure a run shows or tunes on is the grader's.

// DiceRule is how a case's mean Dice over its labels treats a label missing from one side or
// from both, and a case without any label.
type DiceRule int

const (
	// DiceUnion averages 2I/(G+P) over the labels present in the truth or the prediction (a
	// label missing from one side scores 0, a label absent from both is not counted); a case
	// with no label at all scores 1. AMID's own tasks; for a single label it is the binary
	// Dice of ISLES'22 and SEG.A (1 when both masks are empty).
	DiceUnion DiceRule = iota
	// DiceTopCoW is the ReX-MLE TopCoW class-average Dice: over the labels present in the
	// truth only (prediction-only labels are ignored, unlike the official TopCoW code), each
	// 2I/(G+P+1e-7); a case whose truth has no label scores 1.
	DiceTopCoW
	// DiceTopBrain is the ReX-MLE TopBrain class-average Dice: as DiceUnion, but a case with
	// no label at all scores 0.
	DiceTopBrain
)

// topcowEps is the TopCoW grader's Dice denominator epsilon.
const topcowEps = 1e-7

// DiceRuleOf is the Dice rule of the grader of a ReX-MLE challenge id; DiceUnion for any
// other id, "" included (a task of AMID's own).
func DiceRuleOf(challenge string) DiceRule {
	switch challenge {
	case "topcow-track1-task1", "topcow-track2-task1":
		return DiceTopCoW
	case "topbrain-track1", "topbrain-track2":
		return DiceTopBrain
	}
	return DiceUnion
}

// MeanDice is a case's mean Dice over its labels under rule r, averaged as numpy.mean does
// in ascending label order.
func MeanDice(lo LabelOverlaps, r DiceRule) float64 {
	var ls []int64
	empty := 1.0
	switch r {
	case DiceTopCoW:
		ls = lo.GTLabels()
	case DiceTopBrain:
		ls, empty = lo.AllLabels(), 0
	default:
		ls = lo.AllLabels()
	}
	if len(ls) == 0 {
		return empty
	}
	d := make([]float64, len(ls))
	for i, l := range ls {
		if r == DiceTopCoW {
			d[i] = lo[l].DiceEps(topcowEps)
		} else {
			d[i] = lo[l].Dice(0) // G+P > 0 for every listed label
		}
	}
	return NumpyMean(d)
}

// PointsRule is how point detections are matched and their per-image class F1 averaged.
type PointsRule struct {
	// Inclusive matches at a distance equal to the radius too (PUMAMatch).
	Inclusive bool
	Averaging PUMAAveraging
}

// PointsRuleOf is the points rule of the grader of a ReX-MLE challenge id (official says
// whether the official challenge rules apply, grade.Options.Official); for any other id, ""
// included, the ReX track 1 rule (distance below the radius, each class averaged over every
// image).
func PointsRuleOf(challenge string, official bool) PointsRule {
	if challenge == "puma-track2-task2" {
		if official {
			return PointsRule{Averaging: PUMAOfficial}
		}
		return PointsRule{Inclusive: true, Averaging: PUMAPresentImages}
	}
	return PointsRule{Averaging: PUMAAllImages}
}

// PointsF1 is the macro F1 over classes of point detection: each image's predictions are
// matched to its truth within radius (PUMAMatch) and the per-image class F1 averaged under
// r (PUMAMacroF1). truth[i] and pred[i] are image i's points; it also returns each class's F1.
func PointsF1(truth, pred [][]Nucleus, classes []string, radius float64, r PointsRule) (float64, map[string]float64) {
	images := make([]map[string]PointCounts, len(truth))
	for i := range truth {
		images[i] = PUMAMatch(truth[i], pred[i], radius, r.Inclusive)
	}
	return PUMAMacroF1(images, classes, r.Averaging)
}
