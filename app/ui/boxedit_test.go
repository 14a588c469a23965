package ui

import (
	"archive/zip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/audit/audittest"
	"amid/host/export"
	"amid/host/predict"
	"amid/host/run"
	"amid/plugins/taskspec"
	"amid/viewer/edit/marks"
	"amid/viewer/imageio"
	"amid/viewer/volume"
	vwidget "amid/viewer/widget"
)

// annotationData and annotationSubmission are the data and submission of the detection
// tasks here: PNG images, their labels and predictions annotation files.
const (
	annotationData = `data:
  train:
    images: ["train/{id}.png"]
    label: {path: "train/{id}.json", format: annotation}
  test:
    images: ["test/{id}.png"]
`
	annotationSubmission = `submission:
  columns: [case_id, predictions_json]
  id_column: case_id
  file_column: predictions_json
  path: "predictions/{id}.json"
budget: 3m
`
)

// detectionTask is a DENTEX-like task (a box attribute of three diagnoses) whose cases are
// PNG images.
const detectionTask = `id: teeth
kind: detection
dims: 2
attributes:
  - {name: diagnosis, classes: [caries, lesion, impacted]}
` + annotationData + `metric: {name: ap_mean, direction: max}
` + annotationSubmission

// boxPred is the prediction of the detection run's test case c1: two boxes on its 20 × 16
// pixels (caries over x 2..8, y 2..7; lesion over x 12..18, y 8..14).
var boxPred = &taskspec.Annotation{Boxes: []taskspec.Box{
	{X: 2, Y: 2, W: 6, H: 5, Attrs: map[string]int{"diagnosis": 0}, Score: 0.9},
	{X: 12, Y: 8, W: 6, H: 6, Attrs: map[string]int{"diagnosis": 1}, Score: 0.8},
}}

// writePNG writes a 20 × 16 grey image, a ramp along x, at path.
func writePNG(t *testing.T, path string) {
	t.Helper()
	v, err := volume.New(volume.Uint8, [4]int{20, 16, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range v.Len() {
		v.SetIndex(i, float64(i%20*10))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := imageio.Write(path, v); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// zipPackage writes a package zip holding task.yaml alone (what a predict run's review
// reads of its package).
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

// showReviewCase opens the finished run dir on the Review screen and shows its one test
// case, id.
func showReviewCase(t *testing.T, a *App, q loop, dir, id string) *reviewScreen {
	t.Helper()
	a.OpenRun(dir)
	a.tabs.SelectIndex(tabReview)
	s := a.review
	q.wait(t, "review cases", func() bool { return s.data != nil && len(s.shown) == 1 })
	s.list.Select(0)
	q.wait(t, "case view", func() bool { return s.loadedID == id })
	return s
}

// openPredictRun writes into out the results of a predict run of the package pkg on one
// case, id, read from input and predicted as pred (a path in out), and loads the run on
// the Use model screen.
func openPredictRun(t *testing.T, a *App, out, pkg, id, input, pred string) *useScreen {
	t.Helper()
	res, _ := json.Marshal(predict.Result{Package: pkg, Cases: []predict.CaseResult{
		{ID: id, Inputs: []string{input}, Predictions: []string{pred}}}, ReviewOrder: []string{id}})
	writeFile(t, filepath.Join(out, predict.FileResults), res)
	a.tabs.SelectIndex(tabUse)
	s := a.use
	s.load(out)
	return s
}

// detectionRun is a finished run of detectionTask with one training case and one test
// case, c1, predicted as boxPred.
func detectionRun(t *testing.T) string {
	t.Helper()
	data := t.TempDir()
	writeFile(t, filepath.Join(data, "task.yaml"), []byte(detectionTask))
	writePNG(t, filepath.Join(data, "train", "c0.png"))
	truth, _ := boxPred.Marshal()
	writeFile(t, filepath.Join(data, "train", "c0.json"), truth)
	writePNG(t, filepath.Join(data, "test", "c1.png"))
	dir := filepath.Join(t.TempDir(), "run")
	writeState(t, dir, &run.State{ID: "run", Phase: run.PhaseDone, Task: filepath.Join(data, "task.yaml"), Data: data})
	pred := filepath.Join(dir, "final", "predictions", "c1.json")
	b, _ := boxPred.Marshal()
	writeFile(t, pred, b)
	preds, _ := json.Marshal(map[string][]string{"c1": {pred}})
	writeFile(t, filepath.Join(dir, "final", "predictions.json"), preds)
	return dir
}

// onVoxel is the window position of the centre of pixel (x, y) in view v: the middle of
// the positions the view shows it at.
func onVoxel(t *testing.T, v *vwidget.SliceView, x, y int) fyne.Position {
	t.Helper()
	var sx, sy, n float32
	size := v.Size()
	for py := float32(0.5); py < size.Height; py++ {
		for px := float32(0.5); px < size.Width; px++ {
			if p, ok := v.ProbeAt(fyne.NewPos(px, py)); ok && p.Voxel[0] == x && p.Voxel[1] == y {
				sx, sy, n = sx+px, sy+py, n+1
			}
		}
	}
	if n == 0 {
		t.Fatalf("pixel (%d, %d) is not shown", x, y)
	}
	return fyne.CurrentApp().Driver().AbsolutePositionForObject(v).Add(fyne.NewPos(sx/n, sy/n))
}

// wantBoxes fails unless the corrector's boxes are want, box by box (place and class).
func wantBoxes(t *testing.T, c *corrector, what string, want ...marks.Box) {
	t.Helper()
	got := c.boxes.editor.Editor.Set().Boxes
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i].Min == want[i].Min && got[i].Max == want[i].Max && got[i].Class == want[i].Class
	}
	if !ok {
		t.Fatalf("%s: boxes %+v, want %+v", what, got, want)
	}
}

// box2 is a 2D box of class k from (x0, y0) to (x1, y1) (z 0..1).
func box2(x0, y0, x1, y1 float64, k int) marks.Box {
	return marks.Box{Min: [3]float64{x0, y0, 0}, Max: [3]float64{x1, y1, 1}, Class: k}
}

// TestReviewCorrectsBoxes corrects a detection on the Review screen through the window:
// each box tool driven by the pointer and checked box by box, the class chosen from the
// bar and by a number key, Ctrl+Z and Ctrl+Shift+Z over the history, and Save correction
// writing corrections/c1.json beside the untouched prediction, recorded in the run's
// audit log with its sha256 and the boxes changed per class.
func TestReviewCorrectsBoxes(t *testing.T) {
	a, q := newApp(t)
	dir := detectionRun(t)
	s := showReviewCase(t, a, q, dir, "c1")
	c := s.corr
	if c.toggle.Disabled() || !slices.Equal(c.tool.Options, boxToolNames) || !slices.Equal(c.label.Options, []string{"caries", "lesion", "impacted"}) || c.radius.Visible() {
		t.Fatalf("the bar offers %v and %v (Correct disabled %v, radius shown %v); want the box tools and the diagnoses", c.tool.Options, c.label.Options, c.toggle.Disabled(), c.radius.Visible())
	}
	c.toggle.SetChecked(true)
	q.drain()
	v := s.view.Left
	cv := a.W.Canvas()
	drag := func(from, to fyne.Position) { test.Drag(cv, to, to.X-from.X, to.Y-from.Y) }
	caries, lesion := box2(2, 2, 8, 7, 0), box2(12, 8, 18, 14, 1)
	wantBoxes(t, c, "the prediction", caries, lesion)

	// Draw box, impacted: from pixel (1, 10) to (4, 13) covers x 1..5, y 10..14.
	c.tool.SetSelected("Draw box")
	c.label.SetSelected("impacted")
	drag(onVoxel(t, v, 1, 10), onVoxel(t, v, 4, 13))
	drawn := box2(1, 10, 5, 14, 2)
	wantBoxes(t, c, "after drawing", caries, lesion, drawn)
	// Move/resize: the caries box dragged from its inside pixel (4, 4) to (5, 5) moves by
	// (1, 1); the lesion box's bottom edge (its last row, 13) dragged to row 15 reaches 16.
	c.tool.SetSelected("Move/resize")
	drag(onVoxel(t, v, 4, 4), onVoxel(t, v, 5, 5))
	caries = box2(3, 3, 9, 8, 0)
	wantBoxes(t, c, "after moving", caries, lesion, drawn)
	drag(onVoxel(t, v, 15, 13), onVoxel(t, v, 15, 15))
	lesion = box2(12, 8, 18, 16, 1)
	wantBoxes(t, c, "after resizing", caries, lesion, drawn)
	// Class: key 1 while the tool is active chooses caries; a tap gives it to the lesion box.
	c.tool.SetSelected("Class")
	test.Type(v, "1")
	if c.label.Selected != "caries" {
		t.Fatalf("key 1 chose %q, want caries", c.label.Selected)
	}
	test.TapCanvas(cv, onVoxel(t, v, 15, 11))
	lesion.Class = 0
	wantBoxes(t, c, "after the class", caries, lesion, drawn)
	// Delete: a tap on the drawn box.
	c.tool.SetSelected("Delete")
	test.TapCanvas(cv, onVoxel(t, v, 2, 12))
	wantBoxes(t, c, "after deleting", caries, lesion)

	keys := cv.(fyne.Shortcutable)
	undo := &desktop.CustomShortcut{KeyName: fyne.KeyZ, Modifier: fyne.KeyModifierShortcutDefault}
	redo := &desktop.CustomShortcut{KeyName: fyne.KeyZ, Modifier: fyne.KeyModifierShortcutDefault | fyne.KeyModifierShift}
	keys.TypedShortcut(undo)
	wantBoxes(t, c, "after undoing the deletion", caries, lesion, drawn)
	keys.TypedShortcut(redo)
	wantBoxes(t, c, "after redoing it", caries, lesion)
	// The plane chosen again shows the case again: the correction and its history go on.
	s.plane.SetSelected("coronal")
	q.wait(t, "the case shown again", func() bool { return s.loadedID == "c1" && c.boxes.editor != nil })
	wantBoxes(t, c, "shown again", caries, lesion)
	if c.save.Disabled() {
		t.Error("Save correction disabled with the correction kept")
	}
	c.toggle.SetChecked(true)
	keys.TypedShortcut(undo)
	wantBoxes(t, c, "shown again, after an undo", caries, lesion, drawn)
	keys.TypedShortcut(redo)
	// The caries box moved; the lesion box resized and made caries (a reclassed box counts
	// under its new class); the drawn box deleted again: no change.
	want := []marks.Change{{Kind: marks.KindBox, Class: 0, Moved: 2, Reclassed: 1}}
	if got := c.boxChanges(); !slices.Equal(got, want) {
		t.Fatalf("changes %+v, want %+v", got, want)
	}
	if c.save.Disabled() {
		t.Fatal("Save correction disabled after edits")
	}
	test.Tap(c.save)
	q.wait(t, "the correction's decision", func() bool { return s.shown[0].Decision == export.Corrected })

	rel := filepath.Join(export.CorrectionsDir, "c1.json")
	got, err := taskspec.ReadAnnotation(filepath.Join(dir, rel), s.data.Spec)
	if err != nil {
		t.Fatal(err)
	}
	// The boxes saved: the caries box moved (scoring 1 now, the reader's), the lesion box
	// resized and made caries.
	saved := []taskspec.Box{
		{X: 3, Y: 3, W: 6, H: 5, Attrs: map[string]int{"diagnosis": 0}, Score: 1},
		{X: 12, Y: 8, W: 6, H: 8, Attrs: map[string]int{"diagnosis": 0}, Score: 1},
	}
	if len(got.Boxes) != len(saved) {
		t.Fatalf("saved %+v, want %+v", got.Boxes, saved)
	}
	for i, b := range got.Boxes {
		w := saved[i]
		if b.X != w.X || b.Y != w.Y || b.W != w.W || b.H != w.H || b.Score != w.Score || b.Attrs["diagnosis"] != w.Attrs["diagnosis"] {
			t.Errorf("saved box %d %+v, want %+v", i, b, w)
		}
	}
	pred, _ := boxPred.Marshal()
	if now, _ := os.ReadFile(filepath.Join(dir, "final", "predictions", "c1.json")); string(now) != string(pred) {
		t.Error("the prediction changed")
	}
	checkBoxAudit(t, filepath.Join(dir, "audit.db"), rel, filepath.Join(dir, rel), want)
}

// checkBoxAudit checks the newest decision of the audit log db: a correction of file rel
// (the path given, "" when the log names it by its sha256 alone) with file's sha256 and
// the changes want.
func checkBoxAudit(t *testing.T, db, rel, file string, want []marks.Change) {
	t.Helper()
	last := audittest.Last(t, db, audit.ActionReviewDecision)
	var det struct {
		Decision, Correction string
		Changes              []marks.Change
	}
	sum, err := fileio.PathSHA256(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(last.Details, &det); err != nil || det.Decision != export.Corrected || det.Correction != rel ||
		!slices.Equal(det.Changes, want) || last.Outputs["correction"] != sum {
		t.Errorf("the correction's audit entry %s %v: want %s, changes %+v, sha256 %s", last.Details, last.Outputs, rel, want, sum)
	}
}

// pointTask is a PUMA-like task of two point classes.
const pointTask = `id: nuclei
kind: detection
dims: 2
points: [tumour, lymphocyte]
point_radius: 3
` + annotationData + `metric: {name: macro_f1, direction: max}
` + annotationSubmission

// TestUseModelCorrectsPoints corrects a detection's points on the Use model screen: a
// predict run of one case (its image a PNG, its package a zip holding pointTask) whose
// prediction has two points; Add point, Move/resize, Delete and Class each driven by the
// pointer and checked point by point; Save correction records the points changed per
// class in the predict run's audit log.
func TestUseModelCorrectsPoints(t *testing.T) {
	a, q := newApp(t)
	out := t.TempDir()
	pkg := zipPackage(t, pointTask)
	img := filepath.Join(t.TempDir(), "c1.png")
	writePNG(t, img)
	pa := &taskspec.Annotation{Points: []taskspec.Point{
		{X: 3, Y: 3, Class: "tumour", Score: 0.9},
		{X: 15, Y: 12, Class: "lymphocyte", Score: 0.8},
	}}
	b, _ := pa.Marshal()
	writeFile(t, filepath.Join(out, "predictions", "c1.json"), b)
	s := openPredictRun(t, a, out, pkg, "c1", img, filepath.Join("predictions", "c1.json"))
	q.wait(t, "the predicted case", func() bool { return s.current != nil && s.corr.view != nil })
	c := s.corr
	if c.toggle.Disabled() || !slices.Equal(c.label.Options, []string{"tumour", "lymphocyte"}) {
		t.Fatalf("the bar offers classes %v (Correct disabled %v); want the point classes", c.label.Options, c.toggle.Disabled())
	}
	c.toggle.SetChecked(true)
	q.drain()
	v := c.view.Left
	cv := a.W.Canvas()
	points := func() []marks.Point { return c.boxes.editor.Editor.Set().Points }
	wantAt := func(what string, want ...[3]float64) {
		t.Helper()
		ps := points()
		ok := len(ps) == len(want)
		for i := 0; ok && i < len(ps); i++ {
			ok = ps[i].At == want[i]
		}
		if !ok {
			t.Fatalf("%s: points %+v, want at %v", what, ps, want)
		}
	}
	// Points sit at their pixels' centres: (3, 3) at 3.5, 3.5.
	p0, p1 := [3]float64{3.5, 3.5, 0.5}, [3]float64{15.5, 12.5, 0.5}
	wantAt("the prediction", p0, p1)
	c.tool.SetSelected("Add point")
	c.label.SetSelected("lymphocyte")
	test.TapCanvas(cv, onVoxel(t, v, 9, 9))
	p2 := [3]float64{9.5, 9.5, 0.5}
	wantAt("after adding", p0, p1, p2)
	if points()[2].Class != 1 {
		t.Errorf("the point added has class %d, want 1 (lymphocyte)", points()[2].Class)
	}
	c.tool.SetSelected("Move/resize")
	test.Drag(cv, onVoxel(t, v, 4, 3), onVoxel(t, v, 4, 3).X-onVoxel(t, v, 3, 3).X, 0) // (3, 3) to (4, 3)
	p0 = [3]float64{4.5, 3.5, 0.5}
	wantAt("after moving", p0, p1, p2)
	c.tool.SetSelected("Class")
	c.label.SetSelected("tumour")
	test.TapCanvas(cv, onVoxel(t, v, 15, 12))
	if points()[1].Class != 0 {
		t.Errorf("after the class: point 1 has class %d, want 0 (tumour)", points()[1].Class)
	}
	c.tool.SetSelected("Delete")
	test.TapCanvas(cv, onVoxel(t, v, 9, 9))
	wantAt("after deleting", p0, p1)
	// The point moved 1 pixel, within the task's 3: moved; the other reclassed to tumour.
	want := []marks.Change{{Kind: marks.KindPoint, Class: 0, Moved: 1, Reclassed: 1}}
	if got := c.boxChanges(); !slices.Equal(got, want) {
		t.Fatalf("changes %+v, want %+v", got, want)
	}
	test.Tap(c.save)
	q.wait(t, "the correction's decision", func() bool { return s.cases[0].Decision == export.Corrected })
	rel := filepath.Join(export.CorrectionsDir, "c1.json")
	got, err := taskspec.ReadAnnotation(filepath.Join(out, rel), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantPts := []taskspec.Point{{X: 4, Y: 3, Class: "tumour", Score: 1}, {X: 15, Y: 12, Class: "tumour", Score: 1}}
	if !slices.Equal(got.Points, wantPts) {
		t.Errorf("saved points %+v, want %+v", got.Points, wantPts)
	}
	checkBoxAudit(t, filepath.Join(out, "audit.db"), "", filepath.Join(out, rel), want)
}

// TestCorrectKeys: on a segmentation's Review, number keys choose the brush's label while
// Correct is on (key 2: the second of the demo task's labels 1–5, bone) and the window
// preset while it is off; the wheel with Shift held makes the brush a step larger a
// notch (the bar's radius follows), and Control with the wheel still zooms.
func TestCorrectKeys(t *testing.T) {
	a, q := newApp(t)
	dir := finishedRun(t)
	s := showReviewCase(t, a, q, dir, "head005")
	c := s.corr
	v := s.view.Left
	test.Type(v, "2")
	if v.Window() != v.Presets()[1].Window {
		t.Errorf("key 2 outside editing: window %v, want the second preset's %v", v.Window(), v.Presets()[1].Window)
	}
	c.toggle.SetChecked(true)
	c.label.SetSelected(c.label.Options[0])
	window := v.Window()
	test.Type(v, "2")
	if c.label.Selected != "2 bone" || c.brush.Label != 2 || v.Window() != window {
		t.Errorf("key 2 while correcting: %q, brush label %d, window %v; want 2 bone and the window kept", c.label.Selected, c.brush.Label, v.Window())
	}
	r := c.radius.Value
	mid := fyne.NewPos(v.Size().Width/2, v.Size().Height/2)
	notch := func() {
		v.Scrolled(&fyne.ScrollEvent{PointEvent: fyne.PointEvent{Position: mid}, Scrolled: fyne.Delta{DY: 10}})
	}
	v.KeyDown(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
	notch()
	v.KeyUp(&fyne.KeyEvent{Name: desktop.KeyShiftLeft})
	if want := r + vwidget.RadiusStep; c.radius.Value != want || c.brush.Radius != want {
		t.Errorf("Shift and a notch up: the bar's radius %v, the brush's %v; want %v", c.radius.Value, c.brush.Radius, want)
	}
	v.KeyDown(&fyne.KeyEvent{Name: desktop.KeyControlLeft})
	notch()
	v.KeyUp(&fyne.KeyEvent{Name: desktop.KeyControlLeft})
	if c.radius.Value != r+vwidget.RadiusStep || v.View().Zoom <= 1 {
		t.Errorf("Control and a notch: radius %v, zoom %v; want the radius kept and the view zoomed", c.radius.Value, v.View().Zoom)
	}
	// A dab, then the case on another plane: the correction goes on there.
	test.TapCanvas(a.W.Canvas(), fyne.CurrentApp().Driver().AbsolutePositionForObject(v).Add(mid))
	q.wait(t, "the dab", func() bool { return len(c.changes()) > 0 })
	dab, ed := c.changes(), c.brush.Editor
	s.plane.SetSelected("coronal")
	q.wait(t, "the case on the coronal plane", func() bool { return s.loadedID == "head005" })
	if c.brush == nil || c.brush.Editor != ed || !slices.Equal(c.changes(), dab) || c.save.Disabled() {
		t.Errorf("on the coronal plane: changes %v, Save enabled %v; want %v kept, to save", c.changes(), !c.save.Disabled(), dab)
	}
	q.drain()
}
