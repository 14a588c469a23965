package submit

import (
	"context"
	"encoding/xml"
	"path/filepath"
	"strings"
	"testing"

	"amid/host/task"
	"amid/plugins/taskspec"
)

// boxYAML is a 2D detection of three findings whose labels are YOLO files with a class
// list; the submission writes FORMAT files.
const boxYAML = `
id: findings
kind: detection
dims: 2
attributes: [{name: finding, classes: [nodule, mass, cyst]}]
data:
  train: {images: ["images/{id}.png"], label: {path: "labels/{id}.txt", format: yolo, classes: [cyst, nodule]}}
  test: {images: ["test/{id}.png"]}
metric: {name: ap_mean}
submission: {columns: [case_id, prediction], id_column: case_id, file_column: prediction, path: "predictions/{id}.EXT", format: FORMAT}
`

// boxPreds writes a 40 × 20 test image and a prediction of three boxes: a cyst, a nodule
// reaching past the right edge (clipped), and one wholly outside the image (left out).
func boxPreds(t *testing.T) ([]task.Case, []Prediction) {
	t.Helper()
	dir := t.TempDir()
	img := filepath.Join(dir, "test", "a.png")
	writeVol(t, img, grid{dims: [4]int{40, 20, 1, 1}}, make([]uint8, 40*20))
	ann := writeAnn(t, filepath.Join(dir, "a.json"), &taskspec.Annotation{Boxes: []taskspec.Box{
		{X: 0, Y: 5, W: 20, H: 10, Score: 0.75, Attrs: map[string]int{"finding": 2}},
		{X: 30, Y: 0, W: 20, H: 10, Score: 0.5, Attrs: map[string]int{"finding": 0}},
		{X: 50, Y: 0, W: 5, H: 5, Score: 0.25, Attrs: map[string]int{"finding": 0}},
	}})
	return []task.Case{{ID: "a", Images: []string{img}}}, []Prediction{{CaseID: "a", File: ann}}
}

// TestYOLOSubmission: boxes in YOLO's normalised centres and sizes with their score, each
// class the YOLO id the label's class list gives it; a class the list lacks is an error.
func TestYOLOSubmission(t *testing.T) {
	tk := parseTask(t, strings.NewReplacer("EXT", "txt", "FORMAT", FormatYOLO).Replace(boxYAML))
	test, preds := boxPreds(t)
	sub := filepath.Join(t.TempDir(), "submission")
	if err := Write(context.Background(), tk, test, preds, sub); err != nil {
		t.Fatal(err)
	}
	// The cyst is YOLO class 0 at centre (10/40, 10/20), size 20/40 × 10/20; the nodule,
	// clipped to x 30–40, class 1 at (35/40, 5/20), size 10/40 × 10/20.
	want := "0 0.25 0.5 0.5 0.5 0.75\n1 0.875 0.25 0.25 0.5 0.5\n"
	if got := string(readFile(t, filepath.Join(sub, "predictions", "a.txt"))); got != want {
		t.Errorf("a.txt\n%s\nwant\n%s", got, want)
	}
	mass := writeAnn(t, filepath.Join(t.TempDir(), "m.json"), &taskspec.Annotation{Boxes: []taskspec.Box{{X: 1, Y: 1, W: 2, H: 2, Score: 1, Attrs: map[string]int{"finding": 1}}}})
	wantFail(t, tk, test, []Prediction{{CaseID: "a", File: mass}}, "case a", "box 0 is a mass, which the YOLO class list does not hold")
}

// TestVOCSubmission: an object a box with its class name, bndbox in whole pixels clipped
// to the image and its score, and the image's name and size; it reads back as VOC.
func TestVOCSubmission(t *testing.T) {
	tk := parseTask(t, strings.NewReplacer("EXT", "xml", "FORMAT", FormatVOC).Replace(boxYAML))
	test, preds := boxPreds(t)
	sub := filepath.Join(t.TempDir(), "submission")
	if err := Write(context.Background(), tk, test, preds, sub); err != nil {
		t.Fatal(err)
	}
	var doc vocAnnotation
	if err := xml.Unmarshal(readFile(t, filepath.Join(sub, "predictions", "a.xml")), &doc); err != nil {
		t.Fatal(err)
	}
	want := vocAnnotation{XMLName: xml.Name{Local: "annotation"}, Filename: "a.png", Size: vocSize{40, 20, 1}, Objects: []vocObject{
		{Name: "cyst", Pose: "Unspecified", Box: vocBox{0, 5, 20, 15}, Score: 0.75},
		{Name: "nodule", Pose: "Unspecified", Box: vocBox{30, 0, 40, 10}, Score: 0.5},
	}}
	if len(doc.Objects) != 2 || doc.Filename != want.Filename || doc.Size != want.Size || doc.Objects[0] != want.Objects[0] || doc.Objects[1] != want.Objects[1] {
		t.Errorf("a.xml %+v, want %+v", doc, want)
	}
	cls := parseTask(t, iqaYAML)
	cls.Submission.Format = FormatVOC
	wantFail(t, cls, test, preds, "a 2D detection's boxes")
}
