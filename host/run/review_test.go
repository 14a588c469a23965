package run

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/audit/audittest"
	"amid/host/export"
	"amid/plugins/taskspec"
	"amid/viewer/edit/marks"
)

// boxTask is a detection task of one box attribute, three diagnoses, and two point
// classes, points within 3 pixels being the same object.
const boxTask = `id: teeth
kind: detection
dims: 2
attributes:
  - {name: diagnosis, classes: [caries, lesion, impacted]}
points: [tumour, lymphocyte]
point_radius: 3
data:
  train:
    images: ["train/{id}.png"]
    label: {path: "train/{id}.json", format: annotation}
  test:
    images: ["test/{id}.png"]
metric: {name: ap_mean, direction: max}
submission:
  columns: [case_id, predictions_json]
  id_column: case_id
  file_column: predictions_json
  path: "predictions/{id}.json"
budget: 3m
`

// TestReviewAnnotationCorrection records a detection's correction on a finished run's
// test case: the decision in review.json, and in the audit log the correction's file,
// its sha256 and per class the boxes and points changed (box 0 deleted, box 1 given
// diagnosis 2). The prediction stays as it was.
func TestReviewAnnotationCorrection(t *testing.T) {
	dir := t.TempDir()
	put := func(rel string, b []byte) string {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	taskPath := put("task.yaml", []byte(boxTask))
	st, _ := json.Marshal(State{Version: 1, ID: "r1", Phase: PhaseDone, Task: taskPath, Data: dir})
	put("run.json", st)
	pa := &taskspec.Annotation{Boxes: []taskspec.Box{
		{X: 0, Y: 0, W: 10, H: 10, Attrs: map[string]int{"diagnosis": 0}, Score: 0.9},
		{X: 20, Y: 20, W: 10, H: 10, Attrs: map[string]int{"diagnosis": 1}, Score: 0.8},
	}}
	pb, _ := pa.Marshal()
	pred := put(filepath.Join("final", "predictions", "c1.json"), pb)
	preds, _ := json.Marshal(map[string][]string{"c1": {pred}})
	put(filepath.Join("final", "predictions.json"), preds)

	sp := &taskspec.Spec{Attributes: []taskspec.Attribute{{Name: "diagnosis", Classes: []string{"caries", "lesion", "impacted"}}}}
	s, err := taskspec.MarksOf(pa, sp)
	if err != nil {
		t.Fatal(err)
	}
	e := marks.New(s, 3) // the task's point radius
	if err := e.ClassBox(1, 2); err != nil {
		t.Fatal(err)
	}
	if err := e.DeleteBox(0); err != nil {
		t.Fatal(err)
	}
	a, err := taskspec.AnnotationOf(e.Set(), pa, sp)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := export.SaveAnnotationCorrection(dir, "c1", a)
	if err != nil {
		t.Fatal(err)
	}
	if err := Review(dir, export.Decision{Case: "c1", Decision: export.Corrected, Correction: rel, Reviewer: "reader"}); err != nil {
		t.Fatal(err)
	}
	ds, err := Decisions(dir)
	if err != nil || len(ds) != 1 || ds[0].Correction != rel {
		t.Fatalf("decisions %+v, %v", ds, err)
	}
	last := audittest.Last(t, filepath.Join(dir, "audit.db"), audit.ActionReviewDecision)
	var det struct {
		Case, Decision, Correction string
		Changes                    []marks.Change
	}
	sum, _ := fileio.PathSHA256(filepath.Join(dir, rel))
	want := []marks.Change{
		{Kind: marks.KindBox, Class: 0, Removed: 1},
		{Kind: marks.KindBox, Class: 2, Reclassed: 1},
	}
	if err := json.Unmarshal(last.Details, &det); err != nil || det.Case != "c1" || det.Correction != rel ||
		!slices.Equal(det.Changes, want) || last.Outputs["correction"] != sum {
		t.Errorf("audit entry %s %v: want changes %+v and sha256 %s", last.Details, last.Outputs, want, sum)
	}
	if now, _ := os.ReadFile(pred); string(now) != string(pb) {
		t.Error("the prediction changed")
	}
}
