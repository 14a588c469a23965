package ui

import (
	"math"
	"path/filepath"
	"testing"

	"amid/plugins/metrics"
	"amid/plugins/metrics/metricstest"
)

// TestCaseDiceSameAsGrader scores the cross-caller cases of amid/plugins/metrics/metricstest
// (which the graders, the host's validation and the plugins' validation score too) as the
// Review screen does (caseDice on the files, under the task's rule) and gets the grader's
// numbers worked out there. No display is needed: caseDice only reads files.
func TestCaseDiceSameAsGrader(t *testing.T) {
	dir := t.TempDir()
	var cases []*reviewCase
	for _, c := range metricstest.LabelCases() {
		rc := &reviewCase{ID: c.ID, Pred: filepath.Join(dir, c.ID+"-pred.nii.gz"), Truth: filepath.Join(dir, c.ID+"-label.nii.gz"), Validation: true}
		if err := metricstest.WriteLabels(rc.Pred, c.Dims, c.Pred); err != nil {
			t.Fatal(err)
		}
		if err := metricstest.WriteLabels(rc.Truth, c.Dims, c.Truth); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, rc)
	}
	for _, ch := range metricstest.DiceChallenges {
		var sum float64
		for _, c := range cases {
			sum += caseDice(c, metrics.DiceRuleOf(ch))
		}
		// 1e-12: sums of a few values near 1 may differ in the last bits.
		if got, want := sum/float64(len(cases)), metricstest.WantDice(ch); math.Abs(got-want) > 1e-12 {
			t.Errorf("challenge %q: mean case Dice %v, want %v", ch, got, want)
		}
	}
}
