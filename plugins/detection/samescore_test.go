package main

import (
	"math"
	"testing"

	"amid/plugins/metrics"
	"amid/plugins/metrics/metricstest"
	"amid/plugins/taskspec"
)

// TestSameScoreAsGrader tunes on the cross-caller point cases of
// amid/plugins/metrics/metricstest (which the graders, the host's validation and the
// Review screen score too) as the plugin's validation does (pointsF1, every point kept)
// and gets the grader's number worked out there.
func TestSameScoreAsGrader(t *testing.T) {
	conv := func(ns []metrics.Nucleus) *taskspec.Annotation {
		a := &taskspec.Annotation{}
		for _, n := range ns {
			a.Points = append(a.Points, taskspec.Point{X: n.X, Y: n.Y, Class: n.Class, Score: n.Score})
		}
		return a
	}
	var preds, refs []*taskspec.Annotation
	for _, c := range metricstest.PointCases() {
		preds, refs = append(preds, conv(c.Pred)), append(refs, conv(c.Truth))
	}
	for _, ch := range []string{"", "puma-track1-task2"} {
		got := pointsF1(preds, refs, metricstest.PointClasses, metrics.PUMAMatchRadius, 0, metrics.PointsRuleOf(ch, false))
		// 1e-12: sums of a few values near 1 may differ in the last bits.
		if want := metricstest.WantPointsF1(ch); math.Abs(got-want) > 1e-12 {
			t.Errorf("challenge %q: points f1 %v, want %v", ch, got, want)
		}
	}
}
