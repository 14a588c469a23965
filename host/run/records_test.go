package run

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordsRefuseNonFinite: a run's records go through one encoder (encode), which
// refuses a float JSON cannot hold with the record's and the field's name, and writes
// nothing; before it, json.Marshal's "unsupported value: NaN" named neither (issue 32).
func TestRecordsRefuseNonFinite(t *testing.T) {
	dir := t.TempDir()
	st := &State{Version: stateVersion, Lanes: []*LaneState{{ID: "iqa_cnn", Folds: map[int]FoldState{0: {Status: FoldDone, Extra: map[string]float64{"plcc": math.NaN()}}}}}}
	err := st.save(dir)
	if err == nil || !strings.Contains(err.Error(), "run.json: lanes[0].folds.0.extra.plcc is NaN") {
		t.Fatalf("saving a NaN: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, stateFileName)); !os.IsNotExist(err) {
		t.Errorf("a refused state was written: %v", err)
	}
	if _, err := writeJSON(filepath.Join(dir, "x.json"), map[string]any{"out_of_fold": math.Inf(1)}); err == nil || !strings.Contains(err.Error(), "x.json: out_of_fold is +Inf") {
		t.Errorf("writing +Inf: %v", err)
	}
	st.Lanes[0].Folds[0] = FoldState{Status: FoldDone, Undefined: "a correlation needs two cases or more, and there is 1",
		Rounds: []Round{{Until: 10, Steps: 10, Undefined: "a correlation needs two cases or more, and there is 1"}}}
	if err := st.save(dir); err != nil {
		t.Fatal(err)
	}
	// Undefined is written as null beside its reason, not as the 0 that stands in for it.
	raw, err := os.ReadFile(filepath.Join(dir, stateFileName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(raw), `"score": null`) != 2 || strings.Contains(string(raw), `"score": 0`) {
		t.Errorf("run.json does not write the undefined score as null:\n%s", raw)
	}
	back, err := LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	l := back.Lanes[0]
	if l.Undefined() != "a correlation needs two cases or more, and there is 1" || l.MeanText() != "undefined" {
		t.Errorf("read back: undefined %q, mean %q", l.Undefined(), l.MeanText())
	}
}
