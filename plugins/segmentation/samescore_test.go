package main

import (
	"math"
	"testing"

	"amid/plugins/metrics"
	"amid/plugins/metrics/metricstest"
	"amid/viewer/volume"
)

// tolerance is the largest difference allowed between this figure and the grader's: sums
// of a few values near 1 may differ in the last bits.
const tolerance = 1e-12

// TestSameScoreAsGrader scores the cross-caller cases of amid/plugins/metrics/metricstest
// (which the graders, the host's validation and the Review screen score too) as the
// plugin's validation does (scoreCases: class maps, then classDice and instanceScores
// averaged over cases) and gets the grader's numbers worked out there.
func TestSameScoreAsGrader(t *testing.T) {
	classes := func(dims [3]int, data []uint8) []int32 {
		v, err := volume.New(volume.Uint8, [4]int{dims[0], dims[1], dims[2], 1})
		if err != nil {
			t.Fatal(err)
		}
		v.Data = data
		k, err := classIndex(v, metricstest.Labels)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	cases := metricstest.LabelCases()
	for _, ch := range metricstest.DiceChallenges {
		var sum float64
		for _, c := range cases {
			d, err := classDice(classes(c.Dims, c.Pred), classes(c.Dims, c.Truth), metrics.DiceRuleOf(ch))
			if err != nil {
				t.Fatal(err)
			}
			sum += d
		}
		if got, want := sum/float64(len(cases)), metricstest.WantDice(ch); math.Abs(got-want) > tolerance {
			t.Errorf("challenge %q: dice %v, want %v", ch, got, want)
		}
	}

	inst := metricstest.InstanceCases()
	var sum float64
	for _, c := range inst {
		f1, _, err := instanceScores(c.Pred, c.Truth, [3]int{c.W, c.H, 1})
		if err != nil {
			t.Fatal(err)
		}
		sum += f1
	}
	if got := sum / float64(len(inst)); math.Abs(got-metricstest.WantInstanceF1) > tolerance {
		t.Errorf("instance f1 %v, want %v", got, metricstest.WantInstanceF1)
	}
}
