package run

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"amid/assets/fileio"
	"amid/host/audit/audittest"
	"amid/host/export"
	"amid/viewer/measure"
	"amid/viewer/volume"
)

// TestSaveMeasurements keeps a reader's measurements with a finished run's review: they
// read back equal, and the audit log records the file's sha256 and the count per kind
// (never a coordinate or a value); a case that is not a test case is refused.
func TestSaveMeasurements(t *testing.T) {
	dir := t.TempDir()
	st, _ := json.Marshal(State{Version: 1, ID: "r1", Phase: PhaseDone, Task: filepath.Join(dir, "task.yaml"), Data: dir})
	preds, _ := json.Marshal(map[string][]string{"c1": {filepath.Join(dir, "final", "predictions", "c1.nii.gz")}})
	if err := os.MkdirAll(filepath.Join(dir, "final"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "run.json"), st, 0o644)
	os.WriteFile(filepath.Join(dir, "final", "predictions.json"), preds, 0o644)

	// An 8×8×2 grid of 1 mm voxels: a length of 3 and 4 voxels is 5 mm.
	vol, err := volume.New(volume.Int16, [4]int{8, 8, 2, 1})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := measure.NewSet(vol, measure.UnitHU)
	if _, err := set.Add(measure.Measurement{Kind: measure.Length, Axis: 2, Slice: 1, Points: [][3]float64{{1, 1, 0}, {4, 5, 0}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Add(measure.Measurement{Kind: measure.Probe, Axis: 2, Slice: 1, Points: [][3]float64{{2.5, 2.5, 0}}}); err != nil {
		t.Fatal(err)
	}
	m := &export.Measurements{Case: "c1", Reviewer: "reader", Unit: measure.UnitHU, Measurements: set.List()}
	if err := SaveMeasurements(dir, m); err != nil {
		t.Fatal(err)
	}
	got, err := Measurements(dir, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Measurements, m.Measurements) || got.Reviewer != "reader" || !got.Time.Equal(m.Time) {
		t.Fatalf("read back %+v, want %+v", got, m)
	}
	sum, _ := fileio.SHA256(filepath.Join(dir, "measurements", "c1.json"))
	var found bool
	for _, e := range audittest.Entries(t, filepath.Join(dir, "audit.db")) {
		if e.Action != export.ActionReviewMeasured {
			continue
		}
		found = true
		if e.Role != "user" || e.Outputs["measurements/c1.json"] != sum {
			t.Errorf("entry %+v, want the file's sha256 %s", e, sum)
		}
		var d map[string]any
		json.Unmarshal(e.Details, &d)
		if d["count"] != 2.0 || !reflect.DeepEqual(d["kinds"], map[string]any{"length": 1.0, "probe": 1.0}) {
			t.Errorf("details %s", e.Details)
		}
		if strings.Contains(string(e.Details), "points") || strings.Contains(string(e.Details), "value") {
			t.Errorf("the details carry the image's measurements: %s", e.Details)
		}
	}
	if !found {
		t.Fatal("no review.measured entry")
	}
	if err := SaveMeasurements(dir, &export.Measurements{Case: "c9"}); err == nil || !strings.Contains(err.Error(), "not a test case") {
		t.Errorf("a case that is not a test case: %v", err)
	}
}
