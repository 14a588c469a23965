package export

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"amid/assets/fileio"
	"amid/plugins/taskspec"
	"amid/viewer/edit/marks"
)

// boxSpec is a detection task of one box attribute (3 diagnoses) and two point classes,
// points within 3 pixels being the same object.
var boxSpec = &taskspec.Spec{Kind: taskspec.Detection, Dims: 2,
	Attributes: []taskspec.Attribute{{Name: "diagnosis", Classes: []string{"caries", "lesion", "impacted"}}},
	Points:     []string{"tumour", "lymphocyte"}, PointRadius: 3}

// boxPrediction has two boxes (diagnosis 0 and 1) and one point (lymphocyte).
var boxPrediction = &taskspec.Annotation{
	Boxes: []taskspec.Box{
		{X: 0, Y: 0, W: 10, H: 10, Attrs: map[string]int{"diagnosis": 0}, Score: 0.9},
		{X: 20, Y: 20, W: 10, H: 10, Attrs: map[string]int{"diagnosis": 1}, Score: 0.8},
	},
	Points: []taskspec.Point{{X: 40, Y: 40, Class: "lymphocyte", Score: 0.7}},
}

// TestAnnotationCorrection saves a detection's correction beside its prediction, as
// corrections/ID.json in the annotation format, and records its sha256 and, per class,
// the boxes and points changed: box 0 moved 2 pixels, box 1 given diagnosis 2, a box of
// diagnosis 0 drawn, the point moved 2 pixels (within the task's 3).
func TestAnnotationCorrection(t *testing.T) {
	dir := t.TempDir()
	pred := filepath.Join(dir, "predictions", "c1.json")
	b, err := boxPrediction.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(pred), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pred, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := taskspec.MarksOf(boxPrediction, boxSpec)
	if err != nil {
		t.Fatal(err)
	}
	e := marks.New(s, PointRadius(boxSpec))
	for _, err := range []error{
		e.PlaceBox(0, [3]float64{2, 0, 0}, [3]float64{12, 10, 1}),
		e.ClassBox(1, 2),
		e.MovePoint(0, [3]float64{42.5, 40.5, 0.5}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.AddBox(marks.Box{Min: [3]float64{50, 50, 0}, Max: [3]float64{60, 60, 1}}); err != nil {
		t.Fatal(err)
	}
	a, err := taskspec.AnnotationOf(e.Set(), boxPrediction, boxSpec)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := SaveAnnotationCorrection(dir, "c1", a)
	if err != nil || rel != filepath.Join(CorrectionsDir, "c1.json") {
		t.Fatalf("saved as %q, %v", rel, err)
	}
	d := Decision{Case: "c1", Decision: Corrected, Correction: rel}
	if err := d.Check(); err != nil || !IsAnnotationCorrection(d) {
		t.Fatalf("decision %+v: %v, annotation %v", d, err, IsAnnotationCorrection(d))
	}
	rec, err := RecordAnnotationCorrection(dir, d, pred, boxSpec)
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := fileio.PathSHA256(filepath.Join(dir, rel))
	want := []marks.Change{
		{Kind: marks.KindBox, Class: 0, Added: 1, Moved: 1},
		{Kind: marks.KindBox, Class: 2, Reclassed: 1},
		{Kind: marks.KindPoint, Class: 1, Moved: 1},
	}
	if rec.SHA256 != sum || !slices.Equal(rec.Marks, want) {
		t.Errorf("record %+v, want sha256 %s and changes %+v", rec, sum, want)
	}
	if got, ok := rec.Counts().([]marks.Change); !ok || !slices.Equal(got, want) {
		t.Errorf("counts %v", rec.Counts())
	}
	if now, err := os.ReadFile(pred); err != nil || string(now) != string(b) {
		t.Error("the prediction changed")
	}
	// A correction that breaks the task's rules (a class it does not have) is refused.
	if err := os.WriteFile(filepath.Join(dir, rel), []byte(`{"boxes":[{"x":0,"y":0,"w":1,"h":1,"attrs":{"diagnosis":7},"score":1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := RecordAnnotationCorrection(dir, d, pred, boxSpec); !errors.Is(err, taskspec.ErrAnnotation) {
		t.Errorf("a correction of diagnosis 7: %v", err)
	}
	if _, err := SaveAnnotationCorrection(dir, "../c1", a); err == nil {
		t.Error("a case id that leaves the folder was saved")
	}
}
