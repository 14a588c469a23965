package predict

import (
	"archive/zip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"amid/assets/fileio"
	"amid/host/audit/audittest"
	"amid/host/export"
	"amid/viewer/dicom/dicomtest"
	"amid/viewer/dicom/source"
	"amid/viewer/dicom/sr"
	"amid/viewer/measure"
)

// ctTask is a segmentation task whose case is a DICOM CT series folder.
const ctTask = `id: headct
kind: segmentation
dims: 3
channels: [ct]
labels: [{value: 0, name: background}, {value: 1, name: lesion}]
data:
  train:
    images: ["train/{id}/"]
    label: {path: "labels/{id}.nii.gz"}
  test:
    images: ["test/{id}/"]
metric: {name: dice}
submission:
  columns: [case_id, predicted_mask_path]
  id_column: case_id
  file_column: predicted_mask_path
  path: "predictions/{id}.nii.gz"
`

// zipPackage writes a package zip holding task.yaml alone (what PackageTask reads).
func zipPackage(t *testing.T, taskYAML string) string {
	t.Helper()
	pkg := filepath.Join(t.TempDir(), "pkg.zip")
	f, err := os.Create(pkg)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	w, err := zw.Create("pkg/" + export.FileTask)
	if err == nil {
		_, err = w.Write([]byte(taskYAML))
	}
	if err != nil || zw.Close() != nil || f.Close() != nil {
		t.Fatalf("the package's zip: %v", err)
	}
	return pkg
}

// TestSaveMeasurementsDICOM keeps a reader's measurements on a predict run's DICOM case:
// the record reads back equal, a DICOM SR of them is written beside it, which dciodvfy and
// dsrdump accept and whose groups hold the values, and the audit log names the case by
// its place and the files by sha256.
func TestSaveMeasurementsDICOM(t *testing.T) {
	study, _ := series(t, 6) // 6 slices of the synthetic head CT
	out := t.TempDir()
	if err := os.MkdirAll(filepath.Join(out, "predictions"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(out, "predictions", "study.nii.gz"), []byte("a prediction"), 0o644)
	res, _ := json.Marshal(Result{Package: zipPackage(t, ctTask), Cases: []CaseResult{
		{ID: "other", Predictions: []string{"predictions/other.nii.gz"}},
		{ID: "study", Inputs: []string{study}, Predictions: []string{"predictions/study.nii.gz"}}}})
	if err := os.WriteFile(filepath.Join(out, FileResults), res, 0o644); err != nil {
		t.Fatal(err)
	}
	grid, _, err := source.Image(study)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := measure.NewSet(grid, measure.UnitHU)
	mid := [3]float64{float64(grid.Dims[0]) / 2, float64(grid.Dims[1]) / 2}
	for _, m := range []measure.Measurement{
		{Kind: measure.Length, Axis: 2, Slice: 3, Points: [][3]float64{{mid[0] - 10, mid[1]}, {mid[0] + 10, mid[1] + 5}}},
		{Kind: measure.Ellipse, Axis: 2, Slice: 2, Points: [][3]float64{{mid[0] - 8, mid[1] - 5}, {mid[0] + 8, mid[1] + 5}}},
		{Kind: measure.Angle, Axis: 0, Slice: int(mid[0]), Points: [][3]float64{{0, mid[1] - 10, 1}, {0, mid[1], 3}, {0, mid[1] + 10, 1}}},
	} {
		if _, err := set.Add(m); err != nil {
			t.Fatal(err)
		}
	}
	m := &export.Measurements{Case: "study", Reviewer: "Ann Reader", Unit: measure.UnitHU, Measurements: set.List()}
	if err := SaveMeasurements(out, m); err != nil {
		t.Fatal(err)
	}
	back, err := Measurements(out, "study")
	if err != nil || !reflect.DeepEqual(back.Measurements, m.Measurements) {
		t.Fatalf("read back %+v, %v", back, err)
	}
	path := MeasurementsSR(out, "study")
	if path == "" {
		t.Fatal("no DICOM SR of the measurements")
	}
	t.Logf("dciodvfy: %s", dicomtest.Dciodvfy(t, path))
	if bin := dicomtest.Tool(t, "dsrdump", "dcmtk"); bin != "" {
		b, err := exec.Command(bin, "-Ee", path).CombinedOutput()
		if err != nil || strings.Contains(string(b), "E: ") || strings.Contains(string(b), "W: ") {
			t.Errorf("dsrdump: %v\n%s", err, b)
		}
	}
	d, err := sr.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if g := d.Groups(); len(g) != 3 || g[0].First(sr.LengthCode) == nil || g[1].First(sr.MeanCode) == nil ||
		g[1].First(sr.MeanCode).Units != sr.HounsfieldUnit || g[2].First(sr.AngleCode) == nil {
		t.Errorf("groups %+v", g)
	}
	srSum, _ := fileio.PathSHA256(path)
	jsonSum, _ := fileio.PathSHA256(filepath.Join(out, "measurements", "study.json"))
	entries := audittest.Entries(t, filepath.Join(out, fileAuditDB))
	last := entries[len(entries)-1]
	var det map[string]any
	json.Unmarshal(last.Details, &det)
	if last.Action != export.ActionReviewMeasured || last.Outputs["measurements"] != jsonSum || last.Outputs["measurements_sr"] != srSum ||
		det["case"] != 2.0 || strings.Contains(string(last.Details), "study") {
		t.Errorf("audit entry %s %v", last.Details, last.Outputs)
	}
	if _, err := os.Stat(filepath.Join(out, FileAudit)); err != nil {
		t.Errorf("the audit log was not exported: %v", err)
	}

	// Every measurement deleted: the report goes too.
	if err := SaveMeasurements(out, &export.Measurements{Case: "study"}); err != nil {
		t.Fatal(err)
	}
	if MeasurementsSR(out, "study") != "" {
		t.Error("the report of no measurements stays")
	}
	// A measurement off the image saves nothing.
	bad := &export.Measurements{Case: "study", Measurements: []measure.Measurement{{Kind: measure.Probe, Axis: 2, Slice: 0,
		Points: [][3]float64{{float64(grid.Dims[0]) + 5, 1, 0.5}}}}}
	if err := SaveMeasurements(out, bad); err == nil || !strings.Contains(err.Error(), "outside the image") {
		t.Errorf("a measurement off the image: %v", err)
	}
	if back, _ := Measurements(out, "study"); back == nil || len(back.Measurements) != 0 {
		t.Errorf("the refused save changed the record: %+v", back)
	}
}
