package bench

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"amid/host/grade"
)

// Each published human figure is the rank-1 entry of its Column in the challenge's
// embedded leaderboard (rexmle.md §3: "the Human reference is presumably the rank-1
// leaderboard entry"), rounded to the two decimals the table gives.
func TestPublishedColumns(t *testing.T) {
	for _, id := range grade.ChallengeIDs {
		p, ok := PublishedScores(id)
		if !ok {
			t.Errorf("%s: no published scores", id)
			continue
		}
		lb, err := grade.LoadLeaderboard(id)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(lb.Metrics, p.Column) {
			t.Errorf("%s: published column %q is not a leaderboard column (%v)", id, p.Column, lb.Metrics)
			continue
		}
		first := slices.Index(lb.Ranks, 1)
		if first < 0 {
			t.Errorf("%s: the leaderboard has no rank 1", id)
			continue
		}
		if v := lb.Values[p.Column][first]; math.Abs(v-p.Human) > 0.005 {
			t.Errorf("%s: the rank-1 %s is %v, the published human figure %v", id, p.Column, v, p.Human)
		}
	}
}

// TopCoW detection is compared on iou, the published figures' column, with the grader's
// primary (boundary_iou) beside it and both named as what the ReX grader ranks by; a
// challenge whose figures are its primary metric is compared on it alone.
func TestCompareLikeWithLike(t *testing.T) {
	topcow := Row{ID: "topcow-track1-task2", Metric: "boundary_iou", Score: 0.62, Primary: "boundary_iou", PrimaryScore: 0.62, Valid: true,
		metrics: map[string]float64{"boundary_iou": 0.62, "iou": 0.71, "boundary_iou_position": 6, "iou_position": 6}}
	isles := Row{ID: "isles22", Metric: "dice", Score: 0.5, Primary: "dice", PrimaryScore: 0.5, Valid: true,
		metrics: map[string]float64{"dice": 0.5, "lesion_f1": 0.4, "lesion_count_diff": 3, "abs_volume_diff": 2}}
	compare(&topcow)
	compare(&isles)
	if topcow.Metric != "iou" || topcow.Score != 0.71 || topcow.PrimaryScore != 0.62 || !slices.Equal(topcow.RankedBy, []string{"boundary_iou", "iou"}) {
		t.Errorf("TopCoW detection row: %+v", topcow)
	}
	if isles.Metric != "dice" || isles.Score != 0.5 || len(isles.RankedBy) != 4 {
		t.Errorf("ISLES row: %+v", isles)
	}
	var b bytes.Buffer
	if err := Table(&b, []Row{topcow, isles}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[1], " iou ") || !strings.Contains(lines[1], "0.7100") || !strings.Contains(lines[1], "0.79") ||
		!strings.Contains(lines[1], "primary boundary_iou 0.6200; ranked by the mean position over boundary_iou, iou") {
		t.Errorf("TopCoW detection line: %q", lines[1])
	}
	if strings.Contains(lines[2], "primary") || !strings.Contains(lines[2], "ranked by the mean position over dice, lesion_f1, lesion_count_diff, abs_volume_diff") {
		t.Errorf("ISLES line: %q", lines[2])
	}
}
