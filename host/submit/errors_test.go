package submit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/host/task"
	"amid/plugins/taskspec"
)

const iqaYAML = `
id: ldct-iqa
kind: iqa
dims: 2
score: {min: 0, max: 4}
data:
  train: {images: ["train/{id}.tif"], label: {path: "train_labels.csv", format: csv, id_column: image_id, value_column: quality_score}}
  test: {images: ["test/{id}.tif"]}
metric: {name: score}
submission: {columns: [image_id, quality_score], id_column: image_id, value_column: quality_score}
`

func scoreFile(t *testing.T, dir, name string, v float64) string {
	return writeAnn(t, filepath.Join(dir, name+".json"), &taskspec.Annotation{Score: &v})
}

// wantFail checks that Write fails with ErrSubmission and a one-line message holding parts,
// and that it left the destination and its folder as they were.
func wantFail(t *testing.T, tk *task.Task, test []task.Case, preds []Prediction, parts ...string) {
	t.Helper()
	parent := t.TempDir()
	dir := filepath.Join(parent, "sub")
	writeFile(t, filepath.Join(dir, "submission.csv"), "old\n")
	err := Write(t.Context(), tk, test, preds, dir)
	if err == nil {
		t.Fatalf("no error, want one with %q", parts)
	}
	if !errors.Is(err, ErrSubmission) {
		t.Errorf("%v is not ErrSubmission", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q lacks %q", err, p)
		}
	}
	if b := string(readFile(t, filepath.Join(dir, "submission.csv"))); b != "old\n" {
		t.Errorf("the previous submission was changed: %q", b)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 1 {
		t.Errorf("the folder holds %d entries after a failed write, want the submission alone", len(ents))
	}
}

func TestCompleteness(t *testing.T) {
	dir := t.TempDir()
	tk := parseTask(t, iqaYAML)
	a, b := scoreFile(t, dir, "a", 1), scoreFile(t, dir, "b", 2)
	test := []task.Case{{ID: "0001"}, {ID: "0002"}}
	wantFail(t, tk, test, []Prediction{{CaseID: "0001", File: a}}, "1 test cases have no prediction: 0002")
	wantFail(t, tk, test, []Prediction{{CaseID: "0001", File: a}, {CaseID: "0002", File: b}, {CaseID: "0003", File: b}}, "outside the test set: 0003")
	wantFail(t, tk, test, []Prediction{{CaseID: "0001", File: a}, {CaseID: "0001", File: b}}, "case 0001 has more than one prediction")
	// "0001" and "1" are one id once pandas has read the column as integers
	wantFail(t, tk, []task.Case{{ID: "0001"}, {ID: "1"}}, []Prediction{{CaseID: "0001", File: a}, {CaseID: "1", File: b}}, "cases 0001 and 1 both read as id 1")
	wantFail(t, tk, test, []Prediction{{CaseID: "0001", File: a}, {CaseID: "0002", File: writeAnn(t, filepath.Join(dir, "n.json"), &taskspec.Annotation{})}}, "case 0002", "has no score")

	// A complete submission replaces the previous one and leaves nothing beside it.
	parent := t.TempDir()
	sub := filepath.Join(parent, "sub")
	writeFile(t, filepath.Join(sub, "stale.txt"), "x")
	if err := Write(t.Context(), tk, test, []Prediction{{CaseID: "0002", File: b}, {CaseID: "0001", File: a}}, sub); err != nil {
		t.Fatal(err)
	}
	if got := string(readFile(t, filepath.Join(sub, "submission.csv"))); got != "image_id,quality_score\n0001,1\n0002,2\n" {
		t.Errorf("manifest:\n%s", got)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 1 {
		t.Errorf("%d entries beside the submission", len(ents)-1)
	}
	if _, err := os.Stat(filepath.Join(sub, "stale.txt")); err == nil {
		t.Error("the previous submission's file survived")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Write(ctx, tk, test, []Prediction{{CaseID: "0002", File: b}, {CaseID: "0001", File: a}}, sub); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled write: %v", err)
	}
}

func TestBadPredictions(t *testing.T) {
	root := t.TempDir()
	tissue := parseTask(t, `
id: puma-track1-task1
kind: segmentation
dims: 2
labels: [{value: 0, name: background}, {value: 1, name: stroma}, {value: 2, name: blood_vessel},
  {value: 3, name: tumor}, {value: 4, name: epidermis}, {value: 5, name: necrosis}]
data:
  train: {images: ["train/images/{id}.tif"], label: {path: "train/labels/{id}_tissue.geojson", format: puma-tissue}}
  test: {images: ["test/images/{id}.tif"]}
metric: {name: dice}
submission: {columns: [case_id, predicted_mask_path], id_column: case_id, file_column: predicted_mask_path, path: "predictions/{id}.tif"}
`)
	img := filepath.Join(root, "img.tif")
	writeVol(t, img, grid{dims: [4]int{8, 6, 1, 4}}, make([]uint8, 8*6*4))
	test := []task.Case{{ID: "roi_1", Images: []string{img}}}
	seven := make([]uint8, 48)
	seven[10] = 7
	pred := filepath.Join(root, "p.png")
	writeVol(t, pred, grid{dims: [4]int{8, 6, 1, 1}}, seven)
	wantFail(t, tissue, test, []Prediction{{CaseID: "roi_1", File: pred}}, "case roi_1", "holds 7, which is not among the task's labels")
	frac := make([]float32, 48)
	frac[3] = 1.5
	fpred := filepath.Join(root, "f.tif")
	writeVol(t, fpred, grid{dims: [4]int{8, 6, 1, 1}}, frac)
	wantFail(t, tissue, test, []Prediction{{CaseID: "roi_1", File: fpred}}, "holds 1.5; labels are integers")
	small := filepath.Join(root, "s.png")
	writeVol(t, small, grid{dims: [4]int{8, 5, 1, 1}}, make([]uint8, 40))
	wantFail(t, tissue, test, []Prediction{{CaseID: "roi_1", File: small}}, "the prediction "+small+" is 8×5 but the input image "+img+" is 8×6")
	wantFail(t, tissue, test, []Prediction{{CaseID: "roi_1", File: writeFile(t, filepath.Join(root, "x.png"), "not a png")}}, "case roi_1", "cannot be read")

	edges := parseTask(t, `
id: topcow
kind: classification
dims: 3
attributes: [{name: L-A1, classes: ["0", "1"], group: anterior}, {name: L-P1, classes: ["0", "1"]}]
data:
  train: {images: ["a/{id}.nii.gz"], label: {path: "b/{id}.json", format: annotation}}
  test: {images: ["c/{id}.nii.gz"]}
metric: {name: anterior_acc}
submission: {columns: [image_id, predicted_edges_path], id_column: image_id, file_column: predicted_edges_path, path: "p/{id}.json", format: topcow-edges-json}
`)
	ann := writeAnn(t, filepath.Join(root, "e.json"), &taskspec.Annotation{Classes: map[string]int{"L-A1": 1, "L-P1": 0}})
	wantFail(t, edges, []task.Case{{ID: "001"}}, []Prediction{{CaseID: "001", File: ann}}, "attribute L-P1 has no group")
	edges.Submission.Format = "topcow-json"
	wantFail(t, edges, []task.Case{{ID: "001"}}, []Prediction{{CaseID: "001", File: ann}}, `submission.format "topcow-json"`)

	dentex := parseTask(t, `
id: dentex
kind: detection
dims: 2
attributes: [{name: q, classes: [a, b]}, {name: e, classes: [a, b]}, {name: d, classes: [a, b]}]
data:
  train: {images: ["a/{id}.png"], label: {path: "b/{id}.json", format: annotation}}
  test: {images: ["c/{id}.png"]}
metric: {name: ap_mean}
submission: {columns: [image_id, predictions_json], id_column: image_id, file_column: predictions_json, path: "p/{id}.json", format: dentex-json}
`)
	none := writeAnn(t, filepath.Join(root, "none.json"), &taskspec.Annotation{})
	wantFail(t, dentex, []task.Case{{ID: "x"}}, []Prediction{{CaseID: "x", File: none}}, "no case has a detection")
	part := writeAnn(t, filepath.Join(root, "part.json"), &taskspec.Annotation{Boxes: []taskspec.Box{{X: 1, Y: 1, W: 2, H: 2, Attrs: map[string]int{"q": 1}}}})
	wantFail(t, dentex, []task.Case{{ID: "x"}}, []Prediction{{CaseID: "x", File: part}}, "box 0 has no e")
}
