package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"amid/host/task"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

func write(t *testing.T, path, s string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeVol writes a volume of dims d (C = 1 unless d[3] says otherwise) holding data.
func writeVol(t *testing.T, path string, d [4]int, data any) *volume.Volume {
	t.Helper()
	if d[3] == 0 {
		d[3] = 1
	}
	v, err := volume.New(volume.DataType(data), d)
	if err != nil {
		t.Fatal(err)
	}
	v.Data = data
	v.Spacing = [3]float64{0.5, 0.5, 2}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := imageio.Write(path, v); err != nil {
		t.Fatal(err)
	}
	return v
}

func parseTask(t *testing.T, y string) *task.Task {
	t.Helper()
	tk, err := task.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func readAnn(t *testing.T, path string, tk *task.Task) *taskspec.Annotation {
	t.Helper()
	a, err := taskspec.ReadAnnotation(path, tk.Spec())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// wantErr checks that err is an ErrLabel whose one-line message holds every part.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one with %q", parts)
	}
	if !errors.Is(err, ErrLabel) {
		t.Errorf("%v is not ErrLabel", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q lacks %q", err, p)
		}
	}
}

// rows renders a label map as text, one row a line, "." for 0.
func rows(l *label) string {
	var b strings.Builder
	for y := 0; y < l.h; y++ {
		for x := 0; x < l.w; x++ {
			if v := l.pix[y*l.w+x]; v == 0 {
				b.WriteByte('.')
			} else {
				b.WriteByte('0' + v)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func TestFillPolygon(t *testing.T) {
	cases := []struct {
		name string
		xy   [][2]int
		want string
	}{
		// Pillow fills a rectangle with its border rows and columns included.
		{"rectangle", [][2]int{{1, 1}, {4, 1}, {4, 3}, {1, 3}, {1, 1}}, "......\n.1111.\n.1111.\n.1111.\n......\n"},
		// The right triangle traced by hand through polygon_generic: the horizontal top
		// edge is drawn by hline, rows 1–3 span from the vertical edge to the diagonal
		// x = 4 − y, and row 4 is the single apex pixel.
		{"triangle", [][2]int{{0, 0}, {4, 0}, {0, 4}, {0, 0}}, "11111.\n1111..\n111...\n11....\n1.....\n"},
		// A thin spike: the shared vertex (4, 1) is counted once per edge, so row 1 runs
		// from x = 0 to the tip.
		{"spike", [][2]int{{0, 0}, {4, 1}, {0, 2}}, "1.....\n11111.\n1.....\n......\n......\n"},
		// Clipped at the image's edges.
		{"outside", [][2]int{{-3, -3}, {9, -3}, {9, 1}, {-3, 1}}, "111111\n111111\n......\n......\n......\n"},
		{"empty", nil, "......\n......\n......\n......\n......\n"},
	}
	for _, c := range cases {
		l := newLabel(6, 5)
		l.fillPolygon(c.xy, 1)
		if got := rows(l); got != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}

func TestRounding(t *testing.T) {
	// Pillow's ROUND_UP / ROUND_DOWN: halves go away from / toward zero symmetrically.
	for _, c := range []struct {
		f        float32
		up, down int
	}{{2.5, 3, 2}, {2.4, 2, 2}, {2.6, 3, 3}, {-2.5, -3, -2}, {-2.6, -3, -3}, {0, 0, 0}} {
		if u, d := roundUp(c.f), roundDown(c.f); u != c.up || d != c.down {
			t.Errorf("%g: up %d down %d, want %d %d", c.f, u, d, c.up, c.down)
		}
	}
}

const tissueYAML = `
id: puma-tissue
kind: segmentation
dims: 2
labels: [{value: 0, name: background}, {value: 1, name: stroma}, {value: 2, name: blood_vessel},
  {value: 3, name: tumor}, {value: 4, name: epidermis}, {value: 5, name: necrosis}]
data:
  train: {images: ["train/images/{id}.tif"], label: {path: "train/labels/{id}_tissue.geojson", format: puma-tissue}}
  test: {images: ["test/images/{id}.tif"]}
metric: {name: dice}
submission: {columns: [case_id, predicted_mask_path], id_column: case_id, file_column: predicted_mask_path, path: "predictions/{id}.tif"}
`

// tissueGeoJSON is a QuPath-style collection: a stroma rectangle, a tumour rectangle
// drawn over part of it (with a hole, ignored), white background over a corner, a point
// feature and an unknown class (both skipped), and a name-only necrosis MultiPolygon.
const tissueGeoJSON = `{"type": "FeatureCollection", "features": [
 {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [[[0,0],[7,0],[7,5],[0,5],[0,0]]]},
  "properties": {"objectType": "annotation", "classification": {"name": "tissue_stroma", "color": [1,2,3]}}},
 {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [[[2.9,1.2],[5.7,1],[5,3.99],[2,3],[2.9,1.2]], [[3,2],[4,2],[4,3],[3,2]]]},
  "properties": {"classification": {"name": "Tissue_Tumor"}}},
 {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [[[0,0],[1,0],[1,1],[0,1]]]},
  "properties": {"classification": {"name": "tissue_white_background"}}},
 {"type": "Feature", "geometry": {"type": "Point", "coordinates": [1, 1]}, "properties": {"classification": {"name": "tissue_tumor"}}},
 {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [[[0,0],[7,0],[7,5]]]}, "properties": {"classification": {"name": "tissue_other"}}},
 {"type": "Feature", "geometry": {"type": "MultiPolygon", "coordinates": [[[[6,6],[7,6],[7,7],[6,7]]], [[[0,7],[1,7],[0,8]]]]},
  "properties": {"name": "tissue_necrosis"}}
]}`

func TestTissue(t *testing.T) {
	root, out := t.TempDir(), t.TempDir()
	tk := parseTask(t, tissueYAML)
	img := filepath.Join(root, "train/images/roi_001.tif")
	writeVol(t, img, [4]int{8, 9, 1, 4}, make([]uint8, 8*9*4))
	lab := write(t, filepath.Join(root, "train/labels/roi_001_tissue.geojson"), tissueGeoJSON)
	cases := []task.Case{{ID: "roi_001", Images: []string{img}, Label: lab}}
	got, err := Labels(context.Background(), tk, cases, out)
	if err != nil {
		t.Fatal(err)
	}
	p := got["roi_001"]
	if p != filepath.Join(out, "roi_001.png") {
		t.Fatalf("label path %s", p)
	}
	v, err := imageio.Read(p)
	if err != nil {
		t.Fatal(err)
	}
	iv, err := imageio.Read(img)
	if err != nil {
		t.Fatal(err)
	}
	if v.Dims != [4]int{8, 9, 1, 1} || v.Spacing != iv.Spacing || iv.Spacing[0] != 0.5 {
		t.Fatalf("label dims %v spacing %v, want the image's 8×9 grid", v.Dims, v.Spacing)
	}
	l := &label{w: 8, h: 9, pix: v.Data.([]uint8)}
	// Stroma fills [0,7]×[0,5]; the tumour's vertices truncate to (2,1) (5,1) (5,3) (2,3),
	// a rectangle; the background square [0,1]² is drawn last of the three; the necrosis
	// square [6,7]×[6,7] and triangle (0,7) (1,7) (0,8).
	want := "..111111\n" +
		"..333311\n" +
		"11333311\n" +
		"11333311\n" +
		"11111111\n" +
		"11111111\n" +
		"......55\n" +
		"55....55\n" +
		"5.......\n"
	if g := rows(l); g != want {
		t.Errorf("label:\n%s\nwant\n%s", g, want)
	}

	// A second call keeps the file; a changed GeoJSON makes it again.
	st1, _ := os.Stat(p)
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, past, past); err != nil {
		t.Fatal(err)
	}
	if _, err := Labels(context.Background(), tk, cases, out); err != nil {
		t.Fatal(err)
	}
	if st2, _ := os.Stat(p); !st2.ModTime().Equal(past) || st2.Size() != st1.Size() {
		t.Error("an unchanged label was converted again")
	}
	write(t, lab, strings.Replace(tissueGeoJSON, "tissue_necrosis", "tissue_epidermis", 1))
	if _, err := Labels(context.Background(), tk, cases, out); err != nil {
		t.Fatal(err)
	}
	v, _ = imageio.Read(p)
	if v.Data.([]uint8)[6*8+6] != 4 {
		t.Error("a changed label was not converted again")
	}

	// A label value the task lacks and broken JSON are errors naming the file.
	tk.Labels = tk.Labels[:4]
	_, err = Labels(context.Background(), tk, cases, out)
	wantErr(t, err, lab, "feature 5", "label value 4")
	// A ring of 2 points encloses nothing and is left out; the triangle beside it is drawn.
	write(t, lab, `{"features": [{"geometry": {"type": "MultiPolygon", "coordinates": [[[[0,0],[3,3]]], [[[0,0],[6,0],[0,6]]]]}, "properties": {"classification": {"name": "tissue_stroma"}}}]}`)
	if _, err := Labels(context.Background(), tk, cases, out); err != nil {
		t.Fatalf("a degenerate ring: %v", err)
	}
	v, _ = imageio.Read(p)
	if px := v.Data.([]uint8); px[1*8+1] != 1 || px[7*8+7] != 0 {
		t.Errorf("with a degenerate ring beside a triangle: (1,1) is %d, want 1; (7,7) is %d, want 0", px[1*8+1], px[7*8+7])
	}
	write(t, lab, `{"features": [`)
	_, err = Labels(context.Background(), tk, cases, out)
	wantErr(t, err, lab, "not a GeoJSON")
}

func nucleiTask(t *testing.T, points string) *task.Task {
	return parseTask(t, `
id: puma-nuclei
kind: detection
dims: 2
points: `+points+`
point_radius: 15
data:
  train: {images: ["train/images/{id}.tif"], label: {path: "train/labels/{id}_nuclei.geojson", format: puma-nuclei}}
  test: {images: ["test/images/{id}.tif"]}
metric: {name: f1}
submission: {columns: [case_id, predicted_nuclei_path], id_column: case_id, file_column: predicted_nuclei_path, path: "predictions/{id}.json", format: puma-json}
`)
}

func nucleus(class string, x, y float64) string {
	// a closed square of side 4 whose point mean is (x + 8/5, y + 8/5): the closing
	// point (x, y) counts twice, as in the grader's mean
	b, _ := json.Marshal(map[string]any{
		"type":       "Feature",
		"geometry":   map[string]any{"type": "Polygon", "coordinates": [][][2]float64{{{x, y}, {x + 4, y}, {x + 4, y + 4}, {x, y + 4}, {x, y}}}},
		"properties": map[string]any{"classification": map[string]any{"name": class}},
	})
	return string(b)
}

func TestNuclei(t *testing.T) {
	root, out := t.TempDir(), t.TempDir()
	feats := []string{
		nucleus("nuclei_tumor", 10, 10),
		nucleus("nuclei_lymphocyte", 20, 10),
		nucleus("nuclei_plasma_cell", 30, 10),
		nucleus("nuclei_stroma", 40, 10),
		nucleus("nuclei_endothelium", 50, 10),
		nucleus("nuclei_unknown", 60, 10),
		`{"geometry": {"type": "MultiPolygon", "coordinates": []}, "properties": {"classification": {"name": "nuclei_tumor"}}}`,
		`{"geometry": {"type": "Polygon", "coordinates": [[[1,1],[2,2],[3,1]]]}, "properties": {}}`,
	}
	lab := write(t, filepath.Join(root, "n.geojson"), `{"type": "FeatureCollection", "features": [`+strings.Join(feats, ",")+`]}`)
	cases := []task.Case{{ID: "c1", Images: []string{filepath.Join(root, "c1.tif")}, Label: lab}}
	pt := func(x float64, c string) taskspec.Point {
		return taskspec.Point{X: (5*x + 8) / 5, Y: (5*10 + 8) / 5.0, Class: c, Score: 1}
	}
	for _, c := range []struct {
		points string
		want   []taskspec.Point
	}{
		// track 1 (ReX-MLE's corrected map): lymphocytes and plasma cells are TILs, the
		// other raw classes "other", unknown classes dropped
		{"[tumor, TILs, other]", []taskspec.Point{pt(10, "tumor"), pt(20, "TILs"), pt(30, "TILs"), pt(40, "other"), pt(50, "other")}},
		// track 2: every raw class has its own name, in the task's spelling
		{"[tumor, lymphocytes, plasma_cells, histiocytes, melanophages, neutrophils, Stromal_Cells, epithelium, endothelium, apoptotic_cells]",
			[]taskspec.Point{pt(10, "tumor"), pt(20, "lymphocytes"), pt(30, "plasma_cells"), pt(40, "Stromal_Cells"), pt(50, "endothelium")}},
		// any other task: the raw name without its prefix
		{"[tumor, unknown]", []taskspec.Point{pt(10, "tumor"), pt(60, "unknown")}},
	} {
		tk := nucleiTask(t, c.points)
		got, err := Labels(context.Background(), tk, cases, out)
		if err != nil {
			t.Fatal(err)
		}
		a := readAnn(t, got["c1"], tk)
		if !reflect.DeepEqual(a.Points, c.want) {
			t.Errorf("%s: points %+v, want %+v", c.points, a.Points, c.want)
		}
	}
	write(t, lab, `{"features": [`+strings.Replace(nucleus("nuclei_tumor", 1, 1), "[1,1],", "[1,1,0],", 1)+`]}`)
	_, err := Labels(context.Background(), nucleiTask(t, "[tumor, TILs, other]"), cases, out)
	wantErr(t, err, lab, "point 0 has 3 coordinates")
}

func TestTopCoW(t *testing.T) {
	root, out := t.TempDir(), t.TempDir()
	roi := parseTask(t, `
id: topcow-det
kind: detection
dims: 3
box3d: true
data:
  train: {images: ["imagesTr/topcow_ct_{id}_0000.nii.gz"], label: {path: "roi/topcow_ct_{id}.txt", format: topcow-roi}}
  test: {images: ["imagesTs/topcow_ct_{id}_0000.nii.gz"]}
metric: {name: iou}
submission: {columns: [image_id, modality, predicted_bbox_path], id_column: image_id, file_column: predicted_bbox_path, path: "predictions/{id}.json", format: topcow-box-json, const: {modality: ct}}
`)
	lab := write(t, filepath.Join(root, "roi/topcow_ct_001.txt"), "ROI in voxels\nSize (Voxels): 79 62 39\r\nLocation (Voxels): 32 86 0\n")
	cases := []task.Case{{ID: "001", Label: lab}}
	got, err := Labels(context.Background(), roi, cases, out)
	if err != nil {
		t.Fatal(err)
	}
	if b := readAnn(t, got["001"], roi).Box3D; b == nil || *b != (taskspec.Box3D{Min: [3]int{32, 86, 0}, Size: [3]int{79, 62, 39}}) {
		t.Errorf("box %+v", b)
	}
	for _, c := range []struct{ text, want string }{
		{"Size (Voxels): 79 62\nLocation (Voxels): 1 2 3\n", "2 values"},
		{"Size (Voxels): 79 62 0\nLocation (Voxels): 1 2 3\n", "empty along axis 2"},
		{"Size (Voxels): 79 62 3\nLocation (Voxels): 1 -2 3\n", `"-2" is not a voxel count`},
		{"Size (Voxels): 79 62 3\n", "lacks"},
	} {
		write(t, lab, c.text)
		_, err := Labels(context.Background(), roi, cases, out)
		wantErr(t, err, lab, c.want)
	}

	edges := parseTask(t, `
id: topcow-cls
kind: classification
dims: 3
attributes:
  - {name: L-A1, classes: ["0", "1"], group: anterior}
  - {name: Acom, classes: ["0", "1"], group: anterior}
  - {name: 3rd-A2, classes: ["0", "1"], group: anterior}
  - {name: R-A1, classes: ["0", "1"], group: anterior}
  - {name: L-Pcom, classes: ["0", "1"], group: posterior}
  - {name: L-P1, classes: ["0", "1"], group: posterior}
  - {name: R-P1, classes: ["0", "1"], group: posterior}
  - {name: R-Pcom, classes: ["0", "1"], group: posterior}
data:
  train: {images: ["imagesTr/topcow_mr_{id}_0000.nii.gz"], label: {path: "edges/topcow_mr_{id}.yml", format: topcow-edges}}
  test: {images: ["imagesTs/topcow_mr_{id}_0000.nii.gz"]}
metric: {name: balanced_accuracy}
submission: {columns: [image_id, modality, predicted_edges_path], id_column: image_id, file_column: predicted_edges_path, path: "predictions/{id}.json", format: topcow-edges-json, const: {modality: mr}}
`)
	lab = write(t, filepath.Join(root, "edges/topcow_mr_002.yml"), "anterior:\n  L-A1: 1\n  Acom: 1\n  3rd-A2: 0\n  R-A1: 1\nposterior:\n  L-Pcom: 0\n  L-P1: 1\n  R-P1: true\n  R-Pcom: 0\n")
	cases = []task.Case{{ID: "002", Label: lab}}
	got, err = Labels(context.Background(), edges, cases, out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"L-A1": 1, "Acom": 1, "3rd-A2": 0, "R-A1": 1, "L-Pcom": 0, "L-P1": 1, "R-P1": 1, "R-Pcom": 0}
	if c := readAnn(t, got["002"], edges).Classes; !reflect.DeepEqual(c, want) {
		t.Errorf("classes %v, want %v", c, want)
	}
	write(t, lab, "anterior:\n  L-A1: 2\n")
	_, err = Labels(context.Background(), edges, cases, out)
	wantErr(t, err, lab, `edge "L-A1" is 2`)
	write(t, lab, "anterior: {L-A1: 1}\n")
	_, err = Labels(context.Background(), edges, cases, out)
	wantErr(t, err, lab, `region anterior has no edge "Acom"`)
	write(t, lab, "anterior: [\n")
	_, err = Labels(context.Background(), edges, cases, out)
	wantErr(t, err, lab, "not an edge-list YAML")
}

const dentexYAML = `
id: dentex
kind: detection
dims: 2
attributes:
  - {name: quadrant, classes: [q1, q2, q3, q4]}
  - {name: enumeration, classes: [t1, t2, t3, t4, t5, t6, t7, t8]}
  - {name: diagnosis, classes: [impacted, caries, periapical, deep_caries]}
data:
  train: {images: ["train/images/{id}.png"], label: {path: "train/train_quadrant_enumeration_disease.json", format: dentex-coco}}
  test: {images: ["test/images/{id}.png"]}
metric: {name: ap_mean}
submission: {columns: [image_id, predictions_json], id_column: image_id, file_column: predictions_json, path: "predictions/{id}.json", format: dentex-json}
`

func TestDENTEX(t *testing.T) {
	root, out := t.TempDir(), t.TempDir()
	tk := parseTask(t, dentexYAML)
	coco := `{"images": [{"id": 1, "file_name": "train_0.png", "width": 100, "height": 50}, {"id": 7, "file_name": "train_1.png"}],
	 "annotations": [
	  {"id": 1, "image_id": 7, "bbox": [10, 12.5, 30, 20], "area": 600, "iscrowd": 0, "category_id_1": 0, "category_id_2": 7, "category_id_3": 3},
	  {"id": 2, "image_id": 7, "bbox": [50, 5, 8, 9], "category_id_1": 3, "category_id_2": 0, "category_id_3": 1}],
	 "categories_1": [{"id": 0, "name": "1"}]}`
	lab := write(t, filepath.Join(root, "train/train_quadrant_enumeration_disease.json"), coco)
	cases := []task.Case{{ID: "train_0", Label: lab}, {ID: "train_1", Label: lab}}
	got, err := Labels(context.Background(), tk, cases, out)
	if err != nil {
		t.Fatal(err)
	}
	if a := readAnn(t, got["train_0"], tk); len(a.Boxes) != 0 {
		t.Errorf("train_0 boxes %+v, want none", a.Boxes)
	}
	want := []taskspec.Box{
		{X: 10, Y: 12.5, W: 30, H: 20, Score: 1, Attrs: map[string]int{"quadrant": 0, "enumeration": 7, "diagnosis": 3}},
		{X: 50, Y: 5, W: 8, H: 9, Score: 1, Attrs: map[string]int{"quadrant": 3, "enumeration": 0, "diagnosis": 1}},
	}
	if a := readAnn(t, got["train_1"], tk); !reflect.DeepEqual(a.Boxes, want) {
		t.Errorf("train_1 boxes %+v, want %+v", a.Boxes, want)
	}
	_, err = Labels(context.Background(), tk, append(cases, task.Case{ID: "train_9", Label: lab}), out)
	wantErr(t, err, lab, "case train_9")
	write(t, lab, strings.Replace(coco, `"category_id_2": 7`, `"category_id_2": 8`, 1))
	_, err = Labels(context.Background(), tk, cases, out)
	wantErr(t, err, lab, "annotations[0].category_id_2", "8 classes of enumeration")
	write(t, lab, strings.Replace(coco, `[10, 12.5, 30, 20]`, `[10, 12.5, 0, 20]`, 1))
	_, err = Labels(context.Background(), tk, cases, out)
	wantErr(t, err, lab, "annotations[0].bbox")
}

func TestCSV(t *testing.T) {
	root, out := t.TempDir(), t.TempDir()
	tk := parseTask(t, `
id: ldct
kind: iqa
dims: 2
score: {min: 0, max: 4, step: 0.2}
data:
  train: {images: ["train/{id}.tif"], label: {path: "train_labels.csv", format: csv, id_column: image_id, value_column: quality_score}}
  test: {images: ["test/{id}.tif"]}
metric: {name: ldct_score}
submission: {columns: [image_id, quality_score], id_column: image_id, value_column: quality_score}
`)
	lab := write(t, filepath.Join(root, "train_labels.csv"), "\xef\xbb\xbfimage_id,quality_score\n0000,2.4\n0001,0\n17,3.8\n")
	cases := []task.Case{{ID: "0000", Label: lab}, {ID: "0001", Label: lab}, {ID: "0017", Label: lab}}
	got, err := Labels(context.Background(), tk, cases, out)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]float64{"0000": 2.4, "0001": 0, "0017": 3.8} {
		if s := readAnn(t, got[id], tk).Score; s == nil || *s != want {
			t.Errorf("%s score %v, want %g", id, s, want)
		}
	}
	_, err = Labels(context.Background(), tk, append(cases, task.Case{ID: "0002", Label: lab}), out)
	wantErr(t, err, lab, "case 0002 has no row")
	write(t, lab, "image_id,quality_score\n0000,nan\n")
	_, err = Labels(context.Background(), tk, cases[:1], out)
	wantErr(t, err, lab, "line 2", "not a finite number")
}

func TestImageAndAnnotation(t *testing.T) {
	root := t.TempDir()
	tk := parseTask(t, `
id: seg
kind: segmentation
dims: 3
labels: [{value: 0, name: background}, {value: 1, name: lesion}, {value: 3, name: other}]
data:
  train: {images: ["train/{id}_img.nii.gz"], label: {path: "train/{id}_msk.nii.gz"}}
  test: {images: ["test/{id}_img.nii.gz"]}
metric: {name: dice}
submission: {columns: [case_id, p], id_column: case_id, file_column: p, path: "predictions/{id}.nii.gz"}
`)
	img := filepath.Join(root, "train/a_img.nii.gz")
	writeVol(t, img, [4]int{4, 3, 2, 1}, make([]int16, 24))
	msk := filepath.Join(root, "train/a_msk.nii.gz")
	data := make([]uint8, 24)
	data[5], data[7] = 1, 3
	writeVol(t, msk, [4]int{4, 3, 2, 1}, data)
	cases := []task.Case{{ID: "a", Images: []string{img}, Label: msk}}
	got, err := Labels(context.Background(), tk, cases, filepath.Join(root, "unused"))
	if err != nil {
		t.Fatal(err)
	}
	if got["a"] != msk {
		t.Errorf("label %s, want the file itself", got["a"])
	}
	if _, err := os.Stat(filepath.Join(root, "unused")); err == nil {
		t.Error("passing labels through made the output folder")
	}
	// a float mask with a value outside the labels
	fdata := make([]float32, 24)
	fdata[3] = 2
	writeVol(t, msk, [4]int{4, 3, 2, 1}, fdata)
	_, err = Labels(context.Background(), tk, cases, root)
	wantErr(t, err, msk, "value 2")
	data[0] = 9
	writeVol(t, msk, [4]int{4, 3, 2, 1}, data)
	_, err = Labels(context.Background(), tk, cases, root)
	wantErr(t, err, msk, "value 9")
	writeVol(t, msk, [4]int{4, 3, 1, 1}, make([]uint8, 12))
	_, err = Labels(context.Background(), tk, cases, root)
	wantErr(t, err, "case a", msk+" is 4×3 but the image "+img+" is 4×3×2")
	write(t, msk, "not an image")
	_, err = Labels(context.Background(), tk, cases, root)
	wantErr(t, err, msk)

	det := nucleiTask(t, "[tumor, TILs, other]")
	det.Data.Train.Label.Format = task.LabelAnnotation
	ann := write(t, filepath.Join(root, "a.json"), `{"points": [{"x": 1, "y": 2, "class": "TILs", "score": 1}]}`)
	cases = []task.Case{{ID: "a", Label: ann}}
	if got, err := Labels(context.Background(), det, cases, root); err != nil || got["a"] != ann {
		t.Fatalf("annotation: %v %v", got, err)
	}
	write(t, ann, `{"points": [{"x": 1, "y": 2, "class": "lymphocyte", "score": 1}]}`)
	_, err = Labels(context.Background(), det, cases, root)
	wantErr(t, err, ann, "lymphocyte")
}

func TestCancelAndMissing(t *testing.T) {
	tk := parseTask(t, dentexYAML)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Labels(ctx, tk, []task.Case{{ID: "a", Label: "x"}}, t.TempDir()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := Labels(context.Background(), tk, []task.Case{{ID: "a"}}, t.TempDir()); !errors.Is(err, ErrLabel) {
		t.Errorf("no label: %v", err)
	}
	if _, err := Labels(context.Background(), tk, []task.Case{{ID: "a", Label: filepath.Join(t.TempDir(), "none.json")}}, t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
