package ui

import (
	"testing"

	"amid/host/run"
)

// TestResultRowsUndefined: a lane whose every fold's score is undefined shows "undefined"
// with the reason, and sorts after a lane with a score (issue 32).
func TestResultRowsUndefined(t *testing.T) {
	why := "a correlation needs two cases or more, and there is 1"
	st := &run.State{Chosen: "iqa_forest", Lanes: []*run.LaneState{
		{ID: "iqa_cnn", Folds: map[int]run.FoldState{0: {Status: run.FoldDone, Undefined: why}}},
		{ID: "iqa_forest", Folds: map[int]run.FoldState{0: {Status: run.FoldDone, Score: 0.5}}},
	}}
	rows := resultRows(st)
	if len(rows) != 2 || rows[0][0] != "iqa_forest" || rows[0][2] != "0.5000" {
		t.Fatalf("rows %q: want the forest first, with its score", rows)
	}
	if got := rows[1][2]; got != "undefined: "+why {
		t.Errorf("the undefined lane's mean %q, want the reason beside it", got)
	}
}
