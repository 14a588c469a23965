package predict

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

// pointTask is a detection task of two point classes, points within 3 pixels being the
// same object.
const pointTask = `id: nuclei
kind: detection
dims: 2
points: [tumour, lymphocyte]
point_radius: 3
data:
  train:
    images: ["train/{id}.png"]
    label: {path: "train/{id}.json", format: annotation}
  test:
    images: ["test/{id}.png"]
metric: {name: macro_f1, direction: max}
submission:
  columns: [case_id, predictions_json]
  id_column: case_id
  file_column: predictions_json
  path: "predictions/{id}.json"
budget: 3m
`

// TestReviewAnnotationCorrection records a detection's correction on a predict run's
// case: its sha256 and per class the points changed (one moved 2 pixels, within the
// task's 3; one deleted; one added), the case named by its place in results.json.
func TestReviewAnnotationCorrection(t *testing.T) {
	out := t.TempDir()
	pkg := zipPackage(t, pointTask)
	pa := &taskspec.Annotation{Points: []taskspec.Point{
		{X: 10, Y: 10, Class: "tumour", Score: 0.9},
		{X: 30, Y: 30, Class: "lymphocyte", Score: 0.6},
	}}
	pb, _ := pa.Marshal()
	if err := os.MkdirAll(filepath.Join(out, "predictions"), 0o755); err != nil {
		t.Fatal(err)
	}
	pred := filepath.Join(out, "predictions", "c1.json")
	if err := os.WriteFile(pred, pb, 0o644); err != nil {
		t.Fatal(err)
	}
	res, _ := json.Marshal(Result{Package: pkg, Cases: []CaseResult{{ID: "c1", Predictions: []string{filepath.Join("predictions", "c1.json")}}}})
	if err := os.WriteFile(filepath.Join(out, FileResults), res, 0o644); err != nil {
		t.Fatal(err)
	}
	sp := &taskspec.Spec{Points: []string{"tumour", "lymphocyte"}}
	s, err := taskspec.MarksOf(pa, sp)
	if err != nil {
		t.Fatal(err)
	}
	e := marks.New(s, 3) // the task's point radius
	if err := e.MovePoint(0, [3]float64{12.5, 10.5, 0.5}); err != nil {
		t.Fatal(err)
	}
	if err := e.DeletePoint(1); err != nil {
		t.Fatal(err)
	}
	if _, err := e.AddPoint(marks.Point{At: [3]float64{50.5, 50.5, 0.5}, Class: 1}); err != nil {
		t.Fatal(err)
	}
	a, err := taskspec.AnnotationOf(e.Set(), pa, sp)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := export.SaveAnnotationCorrection(out, "c1", a)
	if err != nil {
		t.Fatal(err)
	}
	if err := Review(out, export.Decision{Case: "c1", Decision: export.Corrected, Correction: rel, Reviewer: "reader"}); err != nil {
		t.Fatal(err)
	}
	last := audittest.Last(t, filepath.Join(out, fileAuditDB), audit.ActionReviewDecision)
	var det struct {
		Case    int
		Changes []marks.Change
	}
	sum, _ := fileio.PathSHA256(filepath.Join(out, rel))
	want := []marks.Change{
		{Kind: marks.KindPoint, Class: 0, Moved: 1},
		{Kind: marks.KindPoint, Class: 1, Added: 1, Removed: 1},
	}
	if err := json.Unmarshal(last.Details, &det); err != nil || det.Case != 1 || !slices.Equal(det.Changes, want) || last.Outputs["correction"] != sum {
		t.Errorf("audit entry %s %v: want case 1, changes %+v and sha256 %s", last.Details, last.Outputs, want, sum)
	}
	if _, err := os.Stat(filepath.Join(out, FileAudit)); err != nil {
		t.Errorf("the audit log was not exported: %v", err)
	}
}
