package ui

import (
	"bytes"
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"amid/host/export"
	"amid/host/predict"
	"amid/host/run"
	"amid/host/synth"
	"amid/viewer/dicom/dicomtest"
	"amid/viewer/imageio"
	"amid/viewer/measure"
)

// openReviewCase opens the finished run dir in a new desktop (as after a restart) and
// shows its one test case, head005, on the Review screen.
func openReviewCase(t *testing.T, dir string) (*reviewScreen, loop) {
	t.Helper()
	a, q := newApp(t)
	a.W.Resize(fyne.NewSize(1400, 900))
	s := showReviewCase(t, a, q, dir, "head005")
	q.drain()
	return s, q
}

// measureText is what the measurements' side list shows.
func measureText(b *measureBar) string {
	var out strings.Builder
	for _, o := range test.LaidOutObjects(b.list) {
		if l, ok := o.(*widget.Label); ok {
			out.WriteString(l.Text + "\n")
		}
	}
	return out.String()
}

// measureThroughScreen draws a length on the Review screen's current case as a reader
// does, from the centre of voxel (10, 10) to that of (13, 14) of its axial plane with the
// Length tool, and saves it; it returns the length. On the demo head CT's 4.8 mm voxels
// (synth.DemoSpacing) that is 4.8 · √(3² + 4²) = 24 mm.
func measureThroughScreen(t *testing.T, a *App, q loop, s *reviewScreen) measure.Measurement {
	t.Helper()
	b := s.measures
	if !b.save.Disabled() {
		t.Error("Save measurements is enabled with nothing to save")
	}
	b.tool.SetSelected("Length")
	if k := b.meas.Kind(); k != measure.Length {
		t.Fatalf("tool %q, want length", k)
	}
	v := s.view.Left
	z := float64(v.Slice()) + 0.5
	from, to := [3]float64{10.5, 10.5, z}, [3]float64{13.5, 14.5, z}
	base := fyne.CurrentApp().Driver().AbsolutePositionForObject(v)
	p, r := v.PositionOf(from), v.PositionOf(to)
	test.Drag(a.W.Canvas(), base.Add(r), r.X-p.X, r.Y-p.Y)
	q.drain()
	if len(b.rows) != 1 {
		t.Fatalf("%d measurements listed, want the length; the bar says %q", len(b.rows), b.note.Text)
	}
	want := synth.DemoSpacing[0] * 5 // √(3² + 4²) voxels
	if got, _ := b.rows[0].Value("length"); math.Abs(got.Value-want) > 0.5 {
		// The canvas places the pointer to within a pixel: a fraction of a voxel.
		t.Errorf("length %v mm, want about %v", got.Value, want)
	}
	if text := measureText(b); !strings.Contains(text, "1  Length · axial") {
		t.Errorf("the side list says %q", text)
	}
	if b.save.Disabled() {
		t.Fatal("Save measurements is disabled with a length to save")
	}
	test.Tap(b.save)
	q.wait(t, "saved", func() bool { return strings.HasPrefix(b.note.Text, "Saved 1 measurements") })
	b.tool.SetSelected(measureTools[0])
	return b.rows[0]
}

// checkPackageMeasurements checks that the package dest carries the length m measured on
// case id in its table, and that a copy of it with the value changed does not verify.
func checkPackageMeasurements(t *testing.T, dest, id string, m measure.Measurement) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dest, export.FileMeasurementsTable))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("%s: %q, %v; want its header and the length", export.FileMeasurementsTable, rows, err)
	}
	value := strconv.FormatFloat(m.Values[0].Value, 'g', -1, 64)
	if r := rows[1]; r[0] != id || r[3] != "axial" || r[6] != "length" || r[8] != value || r[9] != "mm" {
		t.Errorf("the table's row %q, want case %s's length of %s mm", r, id, value)
	}
	changed := filepath.Join(t.TempDir(), "pkg")
	if err := os.CopyFS(changed, os.DirFS(dest)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(changed, export.FileMeasurementsTable)
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, bytes.Replace(b, []byte(","+value+","), []byte(",1"+value+","), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := export.Verify(context.Background(), changed, export.VerifyOptions{}); err == nil || !strings.Contains(err.Error(), export.FileMeasurementsTable) {
		t.Errorf("a changed value in %s: %v, want a failure naming it", export.FileMeasurementsTable, err)
	}
}

// TestReviewMeasurements draws a length on a finished run's test case on the Review
// screen (measureThroughScreen). Save measurements keeps it with the case's review; a new
// desktop shows it again on the case; a saved file that no longer reads says so in one
// line and the case still opens and takes a decision.
func TestReviewMeasurements(t *testing.T) {
	dir := finishedRun(t)
	s, q := openReviewCase(t, dir)
	m := measureThroughScreen(t, s.a, q, s)
	b := s.measures
	if !b.save.Disabled() {
		t.Error("Save measurements is enabled after saving")
	}
	saved, err := run.Measurements(dir, "head005")
	if err != nil || saved == nil || len(saved.Measurements) != 1 || saved.Measurements[0].Values[0] != m.Values[0] {
		t.Fatalf("saved %+v, %v", saved, err)
	}

	// After a restart: a new desktop shows the case with its length.
	s2, _ := openReviewCase(t, dir)
	if rows := s2.measures.rows; len(rows) != 1 || rows[0].Values[0] != saved.Measurements[0].Values[0] || rows[0].Points[0] != saved.Measurements[0].Points[0] {
		t.Fatalf("after reopening: %+v, want %+v", rows, saved.Measurements)
	}
	if !strings.Contains(s2.measures.note.Text, "1 saved measurements") || !s2.measures.save.Disabled() {
		t.Errorf("after reopening the bar says %q, save disabled %v", s2.measures.note.Text, s2.measures.save.Disabled())
	}
	// Undo goes back no further than what was saved.
	s2.measures.step(false)
	if len(s2.measures.rows) != 1 || !s2.measures.save.Disabled() {
		t.Errorf("Undo after reopening leaves %d measurements, save disabled %v", len(s2.measures.rows), s2.measures.save.Disabled())
	}

	// A saved file that no longer reads: one line, and the review goes on.
	path := filepath.Join(dir, export.MeasurementsDir, "head005.json")
	if err := os.WriteFile(path, []byte(`{"case":"head005","measurements":[{"kind":"length"`), 0o644); err != nil {
		t.Fatal(err)
	}
	s3, q3 := openReviewCase(t, dir)
	if n := s3.measures.note.Text; !strings.Contains(n, "head005.json no longer read") || strings.Contains(n, "\n") || len(s3.measures.rows) != 0 {
		t.Errorf("an unreadable file: the bar says %q with %d rows", n, len(s3.measures.rows))
	}
	s3.decide(run.Approved)
	q3.wait(t, "decision", func() bool { return s3.shown[0].Decision == run.Approved })
}

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

// TestUseModelMeasurements measures a predict run's DICOM case on the Use model screen (a
// synthetic head CT series of 6 slices, its package a zip holding ctTask): a length drawn
// from the centre of voxel (10, 10) to that of (13, 14) and saved is kept with the predict
// run's review, and written as a DICOM SR on the series, which dciodvfy accepts.
func TestUseModelMeasurements(t *testing.T) {
	a, q := newApp(t)
	a.W.Resize(fyne.NewSize(1400, 900))
	out := t.TempDir()
	pkg := zipPackage(t, ctTask)
	study := filepath.Join(t.TempDir(), "study")
	_, labels, err := synth.HeadSeries(study, 6)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(out, "predictions"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := imageio.Write(filepath.Join(out, "predictions", "study.nii.gz"), labels); err != nil {
		t.Fatal(err)
	}
	s := openPredictRun(t, a, out, pkg, "study", study, filepath.Join("predictions", "study.nii.gz"))
	q.wait(t, "the predicted case", func() bool { return s.current != nil && s.measures.meas != nil })
	b := s.measures
	b.tool.SetSelected("Length")
	v := s.corr.view.Left
	cv := a.W.Canvas()
	from, to := onVoxel(t, v, 10, 10), onVoxel(t, v, 13, 14)
	test.Drag(cv, to, to.X-from.X, to.Y-from.Y)
	q.drain()
	if len(b.rows) != 1 || b.save.Disabled() {
		t.Fatalf("%d measurements listed (the bar says %q), save disabled %v", len(b.rows), b.note.Text, b.save.Disabled())
	}
	test.Tap(b.save)
	q.wait(t, "saved", func() bool {
		return strings.HasPrefix(b.note.Text, "Saved") || strings.Contains(b.note.Text, "review:")
	})
	saved, err := predict.Measurements(out, "study")
	if err != nil || saved == nil || len(saved.Measurements) != 1 {
		t.Fatalf("saved %+v, %v (the bar says %q)", saved, err, b.note.Text)
	}
	path := predict.MeasurementsSR(out, "study")
	if path == "" {
		t.Fatal("no DICOM SR of the measurements")
	}
	out2 := dicomtest.Dciodvfy(t, path)
	t.Logf("dciodvfy: %s", out2)
	if strings.Contains(out2, "Person Name") {
		t.Errorf("dciodvfy doubts the reader's name: %s", out2)
	}
}
