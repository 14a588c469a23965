package evaluate

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"amid/plugins/metrics"
	"amid/plugins/metrics/metricstest"
	"amid/plugins/taskspec"
)

// tolerance is the largest difference allowed between this figure and the grader's: sums
// of a few values near 1 may differ in the last bits.
const tolerance = 1e-12

// TestSameScoreAsGrader validates the cross-caller cases of amid/plugins/metrics/metricstest
// (which the graders, the plugins' validation and the Review screen score too) under each
// task's challenge and gets the grader's numbers worked out there.
func TestSameScoreAsGrader(t *testing.T) {
	dir := t.TempDir()
	var labels []taskspec.Label
	for _, v := range metricstest.Labels[1:] {
		labels = append(labels, taskspec.Label{Value: v, Name: "label"})
	}
	var pairs []Pair
	for _, c := range metricstest.LabelCases() {
		p, l := filepath.Join(dir, c.ID+"-pred.nii.gz"), filepath.Join(dir, c.ID+"-label.nii.gz")
		if err := metricstest.WriteLabels(p, c.Dims, c.Pred); err != nil {
			t.Fatal(err)
		}
		if err := metricstest.WriteLabels(l, c.Dims, c.Truth); err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, Pair{ID: c.ID, Pred: p, Label: l})
	}
	for _, ch := range metricstest.DiceChallenges {
		s, err := Evaluate(context.Background(), &taskspec.Spec{Kind: taskspec.Segmentation, Dims: 3, Labels: labels, Challenge: ch}, pairs)
		if err != nil {
			t.Fatal(err)
		}
		if want := metricstest.WantDice(ch); math.Abs(s.Value-want) > tolerance {
			t.Errorf("challenge %q: dice %v, want %v", ch, s.Value, want)
		}
	}

	pairs = nil
	for _, c := range metricstest.InstanceCases() {
		p, l := filepath.Join(dir, c.ID+"-pred.tif"), filepath.Join(dir, c.ID+"-label.tif")
		if err := metricstest.WriteLabels(p, [3]int{c.W, c.H, 1}, metricstest.Uint16(c.Pred)); err != nil {
			t.Fatal(err)
		}
		if err := metricstest.WriteLabels(l, [3]int{c.W, c.H, 1}, metricstest.Uint16(c.Truth)); err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, Pair{ID: c.ID, Pred: p, Label: l})
	}
	s, err := Evaluate(context.Background(), &taskspec.Spec{Kind: taskspec.Segmentation, Dims: 2, Instances: true, Challenge: "neurips-cellseg"}, pairs)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(s.Value-metricstest.WantInstanceF1) > tolerance {
		t.Errorf("instance f1 %v, want %v", s.Value, metricstest.WantInstanceF1)
	}

	pairs = nil
	conv := func(ns []metrics.Nucleus) *taskspec.Annotation {
		a := &taskspec.Annotation{}
		for _, n := range ns {
			a.Points = append(a.Points, taskspec.Point{X: n.X, Y: n.Y, Class: n.Class, Score: n.Score})
		}
		return a
	}
	for _, c := range metricstest.PointCases() {
		p, l := filepath.Join(dir, c.ID+"-pred.json"), filepath.Join(dir, c.ID+"-label.json")
		writeAnn(t, p, conv(c.Pred))
		writeAnn(t, l, conv(c.Truth))
		pairs = append(pairs, Pair{ID: c.ID, Pred: p, Label: l})
	}
	for _, ch := range []string{"", "puma-track1-task2"} {
		s, err := Evaluate(context.Background(), &taskspec.Spec{Kind: taskspec.Detection, Dims: 2, Points: metricstest.PointClasses, Challenge: ch}, pairs)
		if err != nil {
			t.Fatal(err)
		}
		if want := metricstest.WantPointsF1(ch); math.Abs(s.Value-want) > tolerance {
			t.Errorf("challenge %q: points f1 %v, want %v", ch, s.Value, want)
		}
	}
}
