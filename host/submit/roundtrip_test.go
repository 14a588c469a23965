package submit

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"amid/host/task"
	"amid/plugins/taskspec"
)

// Round trips: a raw challenge label is ingested into its canonical form, that form is
// submitted as the prediction, and the challenge's grader, given answers prepared from the
// same raw label as ReX-MLE's preparation prepares them, scores it perfect.

func TestRoundTripTopCoW(t *testing.T) {
	root, ans := t.TempDir(), t.TempDir()
	box := parseTask(t, `
id: topcow-track1-task2
kind: detection
dims: 3
box3d: true
data:
  train: {images: ["imagesTr/topcow_ct_{id}_0000.nii.gz"], label: {path: "roi_loc_labelsTr/topcow_ct_{id}.txt", format: topcow-roi}}
  test: {images: ["imagesTs/topcow_ct_{id}_0000.nii.gz"]}
metric: {name: boundary_iou}
submission: {columns: [image_id, modality, predicted_bbox_path], id_column: image_id, file_column: predicted_bbox_path, path: "predictions/{id}.json", format: topcow-box-json, const: {modality: ct}}
`)
	edges := parseTask(t, `
id: topcow-track1-task3
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
  train: {images: ["imagesTr/topcow_ct_{id}_0000.nii.gz"], label: {path: "antpos_edges_labelsTr/topcow_ct_{id}.yml", format: topcow-edges}}
  test: {images: ["imagesTs/topcow_ct_{id}_0000.nii.gz"]}
metric: {name: anterior_acc}
submission: {columns: [image_id, modality, predicted_edges_path], id_column: image_id, file_column: predicted_edges_path, path: "predictions/{id}.json", format: topcow-edges-json, const: {modality: ct}}
`)
	var boxCases, edgeCases []task.Case
	boxRows, edgeRows := map[string]string{}, map[string]string{}
	for i, id := range []string{"001", "017", "125"} {
		roi := fmt.Sprintf("ROI\nSize (Voxels): %d 62 39\nLocation (Voxels): 32 %d 94\n", 70+i, 80+3*i)
		writeFile(t, filepath.Join(root, "roi", id+".txt"), roi)
		writeFile(t, filepath.Join(ans, "roi", id+".txt"), roi)
		boxCases = append(boxCases, task.Case{ID: id, Label: filepath.Join(root, "roi", id+".txt")})
		boxRows[id] = "roi/" + id + ".txt"
		acom, pcom := i%2, (i+1)%2
		yml := fmt.Sprintf("anterior:\n  L-A1: 1\n  Acom: %d\n  3rd-A2: 0\n  R-A1: 1\nposterior:\n  L-Pcom: %d\n  L-P1: 1\n  R-P1: 1\n  R-Pcom: 0\n", acom, pcom)
		writeFile(t, filepath.Join(root, "edges", id+".yml"), yml)
		writeFile(t, filepath.Join(ans, "edges", id+".yml"), yml)
		edgeCases = append(edgeCases, task.Case{ID: id, Label: filepath.Join(root, "edges", id+".yml")})
		edgeRows[id] = "edges/" + id + ".yml"
	}
	answersCSV(t, ans, "image_id,label_path", boxRows)
	r := gradePerfect(t, "topcow-track1-task2", box, boxCases, ingestAll(t, box, boxCases), ans, map[string]float64{"iou": 1, "boundary_iou": 1})
	if r.Primary.Name != "boundary_iou" {
		t.Errorf("primary %s", r.Primary.Name)
	}
	answersCSV(t, ans, "image_id,label_path", edgeRows)
	gradePerfect(t, "topcow-track1-task3", edges, edgeCases, ingestAll(t, edges, edgeCases), ans, map[string]float64{"anterior_acc": 1, "posterior_acc": 1})
}

func TestRoundTripLDCT(t *testing.T) {
	root, ans := t.TempDir(), t.TempDir()
	tk := parseTask(t, `
id: ldct-iqa
kind: iqa
dims: 2
score: {min: 0, max: 4, step: 0.2}
data:
  train: {images: ["train/images/{id}.tif"], label: {path: "train_labels.csv", format: csv, id_column: image_id, value_column: quality_score}}
  test: {images: ["test/images/{id}.tif"]}
metric: {name: score}
submission: {columns: [image_id, quality_score], id_column: image_id, value_column: quality_score}
`)
	raw := "image_id,quality_score\n"
	var cases []task.Case
	rows := map[string]string{}
	for i, q := range []string{"0.2", "3.8", "1.4", "2.6", "0"} {
		id := fmt.Sprintf("%04d", i)
		raw += id + "," + q + "\n"
		rows[id] = q
		cases = append(cases, task.Case{ID: id, Label: filepath.Join(root, "train_labels.csv")})
	}
	writeFile(t, filepath.Join(root, "train_labels.csv"), raw)
	answersCSV(t, ans, "image_id,quality_score", rows)
	// |PLCC| + |SROCC| + |KROCC| of identical scores
	gradePerfect(t, "ldct-iqa", tk, cases, ingestAll(t, tk, cases), ans, map[string]float64{"score": 3})
}

func TestRoundTripDENTEX(t *testing.T) {
	root, ans := t.TempDir(), t.TempDir()
	tk := parseTask(t, `
id: dentex
kind: detection
dims: 2
attributes:
  - {name: quadrant, classes: ["0", "1", "2", "3"]}
  - {name: enumeration, classes: ["0", "1", "2", "3", "4", "5", "6", "7"]}
  - {name: diagnosis, classes: ["0", "1", "2", "3"]}
data:
  train: {images: ["train/images/{id}.png"], label: {path: "train/train_quadrant_enumeration_disease.json", format: dentex-coco}}
  test: {images: ["test/images/{id}.png"]}
metric: {name: ap_mean}
submission: {columns: [image_id, predictions_json], id_column: image_id, file_column: predictions_json, path: "predictions/{id}.json", format: dentex-json}
`)
	type ann struct {
		ID       int        `json:"id"`
		ImageID  int        `json:"image_id"`
		BBox     [4]float64 `json:"bbox"`
		Area     float64    `json:"area"`
		IsCrowd  int        `json:"iscrowd"`
		Cat1     int        `json:"category_id_1"`
		Cat2     int        `json:"category_id_2"`
		Cat3     int        `json:"category_id_3"`
		Segments []int      `json:"segmentation"`
	}
	type img struct {
		ID       int    `json:"id"`
		FileName string `json:"file_name"`
	}
	// Boxes near the top-left corner whose width exceeds x + 50: the grader would read
	// them as [x1, y1, x2, y2] if they were written as [x, y, w, h]. Categories start at 1,
	// the ids the grader declares.
	anns := []ann{
		{ID: 1, ImageID: 3, BBox: [4]float64{5, 8, 120, 60}, Cat1: 1, Cat2: 7, Cat3: 2},
		{ID: 2, ImageID: 3, BBox: [4]float64{300, 200, 40, 90}, Cat1: 2, Cat2: 3, Cat3: 1},
		{ID: 3, ImageID: 4, BBox: [4]float64{12.5, 30, 70.25, 45}, Cat1: 3, Cat2: 1, Cat3: 3},
		{ID: 4, ImageID: 4, BBox: [4]float64{400, 100, 30, 30}, Cat1: 1, Cat2: 2, Cat3: 1},
	}
	imgs := []img{{3, "test_3.png"}, {4, "test_4.png"}}
	for i := range anns {
		anns[i].Area = anns[i].BBox[2] * anns[i].BBox[3]
	}
	writeJSON(t, filepath.Join(root, "coco.json"), map[string]any{"images": imgs, "annotations": anns})
	var cases []task.Case
	rows := map[string]string{}
	for _, im := range imgs {
		id := strings.TrimSuffix(im.FileName, ".png")
		var mine []ann
		for _, a := range anns {
			if a.ImageID == im.ID {
				mine = append(mine, a)
			}
		}
		writeJSON(t, filepath.Join(ans, "gt", id+".json"), map[string]any{"images": []img{im}, "annotations": mine})
		rows[id] = "gt/" + id + ".json"
		cases = append(cases, task.Case{ID: id, Label: filepath.Join(root, "coco.json")})
	}
	answersCSV(t, ans, "image_id,ground_truth_json", rows)
	want := map[string]float64{"ap_mean": 1, "ap50_mean": 1, "ap75_mean": 1, "ar_mean": 1}
	gradePerfect(t, "dentex", tk, cases, ingestAll(t, tk, cases), ans, want)
}

// nucleusFeature is a raw PUMA nucleus: a closed square ring of side 6 at (x, y).
func nucleusFeature(class string, x, y float64) (map[string]any, [][2]float64) {
	ring := [][2]float64{{x, y}, {x + 6, y}, {x + 6, y + 6}, {x, y + 6}, {x, y}}
	return map[string]any{
		"type":       "Feature",
		"geometry":   map[string]any{"type": "Polygon", "coordinates": [][][2]float64{ring}},
		"properties": map[string]any{"objectType": "annotation", "classification": map[string]any{"name": class, "color": []int{255, 0, 0}}},
	}, ring
}

func TestRoundTripPUMANuclei(t *testing.T) {
	raw := []string{"nuclei_tumor", "nuclei_lymphocyte", "nuclei_plasma_cell", "nuclei_histiocyte", "nuclei_melanophage",
		"nuclei_neutrophil", "nuclei_stroma", "nuclei_epithelium", "nuclei_endothelium", "nuclei_apoptosis"}
	// The answers' class names as ReX-MLE's preparation writes them: track 1 maps every
	// raw class, track 2 maps the plural names it expects and keeps the raw singular ones
	// (which its grader normalises).
	track1 := map[string]string{"nuclei_tumor": "tumor", "nuclei_lymphocyte": "TILs", "nuclei_plasma_cell": "TILs"}
	track2 := map[string]string{"nuclei_tumor": "tumor", "nuclei_epithelium": "epithelium", "nuclei_endothelium": "endothelium"}
	for _, c := range []struct {
		challenge, points string
		gtName            func(string) string
	}{
		{"puma-track1-task2", "[tumor, TILs, other]", func(r string) string {
			if n, ok := track1[r]; ok {
				return n
			}
			return "other"
		}},
		{"puma-track2-task2", "[tumor, lymphocytes, plasma_cells, histiocytes, melanophages, neutrophils, stromal_cells, epithelium, endothelium, apoptotic_cells]",
			func(r string) string {
				if n, ok := track2[r]; ok {
					return n
				}
				return r
			}},
	} {
		t.Run(c.challenge, func(t *testing.T) {
			tk := parseTask(t, `
id: `+c.challenge+`
kind: detection
dims: 2
points: `+c.points+`
point_radius: 15
data:
  train: {images: ["train/images/{id}.tif"], label: {path: "train/labels/{id}_nuclei.geojson", format: puma-nuclei}}
  test: {images: ["test/images/{id}.tif"]}
metric: {name: f1}
submission: {columns: [case_id, predicted_nuclei_path], id_column: case_id, file_column: predicted_nuclei_path, path: "predictions/{id}.json", format: puma-json}
`)
			root, ans := t.TempDir(), t.TempDir()
			var cases []task.Case
			rows := map[string]string{}
			for i, id := range []string{"training_set_metastatic_roi_002", "training_set_primary_roi_011"} {
				var feats []map[string]any
				var polys []map[string]any
				for k, r := range raw {
					// every class in every image, 40 px apart (beyond the 15 px radius)
					f, ring := nucleusFeature(r, float64(10+40*k), float64(20+50*i))
					feats = append(feats, f)
					polys = append(polys, map[string]any{"name": c.gtName(r), "path_points": ring, "score": 1.0})
				}
				writeJSON(t, filepath.Join(root, id+"_nuclei.geojson"), map[string]any{"type": "FeatureCollection", "features": feats})
				writeJSON(t, filepath.Join(ans, "test/labels", id+"_nuclei.json"), map[string]any{"polygons": polys})
				rows[id] = "test/labels/" + id + "_nuclei.json"
				cases = append(cases, task.Case{ID: id, Label: filepath.Join(root, id+"_nuclei.geojson")})
			}
			answersCSV(t, ans, "case_id,label_path", rows)
			gradePerfect(t, c.challenge, tk, cases, ingestAll(t, tk, cases), ans, map[string]float64{"f1": 1})
		})
	}
}

func TestRoundTripPUMATissue(t *testing.T) {
	tk := parseTask(t, `
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
	root, ans := t.TempDir(), t.TempDir()
	const w, h = 40, 30
	names := []string{"tissue_stroma", "tissue_blood_vessel", "tissue_tumor", "tissue_epidermis", "tissue_necrosis"}
	var cases []task.Case
	rows := map[string]string{}
	for i, id := range []string{"roi_001", "roi_002"} {
		img := filepath.Join(root, "test/images", id+".tif")
		writeVol(t, img, grid{dims: [4]int{w, h, 1, 4}}, make([]uint8, w*h*4))
		// one rectangle per class, the answers drawn by hand: Pillow fills a rectangle
		// with its border rows and columns included
		gt := make([]uint8, w*h)
		var feats []map[string]any
		for k, n := range names {
			x0, y0, x1, y1 := 2+7*k, 3+i, 7+7*k, 20+i
			ring := [][2]float64{{float64(x0), float64(y0)}, {float64(x1), float64(y0)}, {float64(x1), float64(y1)}, {float64(x0), float64(y1)}, {float64(x0), float64(y0)}}
			feats = append(feats, map[string]any{
				"type":       "Feature",
				"geometry":   map[string]any{"type": "Polygon", "coordinates": [][][2]float64{ring}},
				"properties": map[string]any{"classification": map[string]any{"name": n}},
			})
			for y := y0; y <= y1; y++ {
				for x := x0; x <= x1; x++ {
					gt[y*w+x] = uint8(k + 1)
				}
			}
		}
		writeJSON(t, filepath.Join(root, "labels", id+"_tissue.geojson"), map[string]any{"type": "FeatureCollection", "features": feats})
		writeVol(t, filepath.Join(ans, "test/labels", id+".tif"), grid{dims: [4]int{w, h, 1, 1}}, gt)
		rows[id] = "test/labels/" + id + ".tif"
		cases = append(cases, task.Case{ID: id, Images: []string{img}, Label: filepath.Join(root, "labels", id+"_tissue.geojson")})
	}
	answersCSV(t, ans, "case_id,label_path", rows)
	preds := ingestAll(t, tk, cases)
	want := map[string]float64{"dice": 1}
	for _, n := range names {
		want[n] = 1
	}
	gradePerfect(t, "puma-track1-task1", tk, cases, preds, ans, want)
}

// TestJSONForms checks the bytes graders read for the annotation formats.
func TestJSONForms(t *testing.T) {
	dir := t.TempDir()
	tk := parseTask(t, `
id: puma
kind: detection
dims: 2
points: [tumor, TILs, other]
data:
  train: {images: ["a/{id}.tif"], label: {path: "b/{id}.json", format: annotation}}
  test: {images: ["c/{id}.tif"]}
metric: {name: f1}
submission: {columns: [case_id, predicted_nuclei_path], id_column: case_id, file_column: predicted_nuclei_path, path: "predictions/{id}.json", format: puma-json}
`)
	empty := writeAnn(t, filepath.Join(dir, "e.json"), &taskspec.Annotation{})
	one := writeAnn(t, filepath.Join(dir, "o.json"), &taskspec.Annotation{Points: []taskspec.Point{{X: 1.5, Y: 2, Class: "TILs", Score: 0.25}}})
	sub := filepath.Join(dir, "sub")
	test := []task.Case{{ID: "a"}, {ID: "b"}}
	if err := Write(t.Context(), tk, test, []Prediction{{CaseID: "b", File: one}, {CaseID: "a", File: empty}}, sub); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{
		"a": `{"nuclei":[]}`,
		"b": `{"nuclei":[{"centroid":[1.5,2],"class":"TILs","confidence":0.25}]}`,
	} {
		var v any
		b := readFile(t, filepath.Join(sub, "predictions", id+".json"))
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		c, _ := json.Marshal(v)
		var w any
		_ = json.Unmarshal([]byte(want), &w)
		d, _ := json.Marshal(w)
		if string(c) != string(d) {
			t.Errorf("%s: %s, want %s", id, c, d)
		}
	}
	if got := string(readFile(t, filepath.Join(sub, "submission.csv"))); got != "case_id,predicted_nuclei_path\na,predictions/a.json\nb,predictions/b.json\n" {
		t.Errorf("manifest:\n%s", got)
	}
}

// TestPlainAnnotations writes the submission of plain detection and classification tasks
// (no challenge, no submission format): each case's file is the plugin's annotation,
// checked against the task and read back by taskspec as the same annotation. Before the
// annotation format existed, such a task failed with "unknown image format (extension
// ".json")"; a format that does not suit the task's predictions is refused by name.
func TestPlainAnnotations(t *testing.T) {
	dir := t.TempDir()
	plain := func(kind, extra string) *task.Task {
		return parseTask(t, `
id: plain-`+kind+`
kind: `+kind+`
dims: 2
attributes: [{name: finding, classes: [normal, nodule, mass, effusion, other]}]
data:
  train: {images: ["a/{id}.png"], label: {path: "b/{id}.json", format: annotation}}
  test: {images: ["c/{id}.png"]}
metric: {name: `+map[string]string{"detection": "ap_mean", "classification": "balanced_accuracy"}[kind]+`}
submission: {columns: [case_id, prediction], id_column: case_id, file_column: prediction, path: "predictions/{id}.json"`+extra+`}
`)
	}
	anns := map[string]map[string]*taskspec.Annotation{
		"detection": {
			"p1": {Boxes: []taskspec.Box{{X: 10, Y: 12.5, W: 30, H: 20, Attrs: map[string]int{"finding": 2}, Score: 0.75}}},
			"p2": {},
		},
		"classification": {
			"p1": {Classes: map[string]int{"finding": 4}},
			"p2": {Classes: map[string]int{"finding": 0}},
		},
	}
	test := []task.Case{{ID: "p1"}, {ID: "p2"}}
	for kind, byID := range anns {
		tk := plain(kind, "")
		if got := DefaultFormat(tk); got != FormatAnnotation {
			t.Errorf("%s: default format %q, want %q", kind, got, FormatAnnotation)
		}
		var preds []Prediction
		for id, a := range byID {
			preds = append(preds, Prediction{CaseID: id, File: writeAnn(t, filepath.Join(dir, kind, id+".json"), a)})
		}
		sub := filepath.Join(dir, kind+"-sub")
		if err := Write(t.Context(), tk, test, preds, sub); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		for id, want := range byID {
			path := filepath.Join(sub, "predictions", id+".json")
			if _, err := taskspec.ReadAnnotation(path, tk.Spec()); err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			wb, _ := want.Marshal()
			if gb := readFile(t, path); string(gb) != string(wb) {
				t.Errorf("%s %s: wrote %s, want the annotation %s", kind, id, gb, wb)
			}
		}
		if got := string(readFile(t, filepath.Join(sub, "submission.csv"))); got != "case_id,prediction\np1,predictions/p1.json\np2,predictions/p2.json\n" {
			t.Errorf("%s manifest:\n%s", kind, got)
		}
		// An annotation the task does not allow (class 5 of 5) is refused with the case.
		bad := writeAnn(t, filepath.Join(dir, kind, "bad.json"), &taskspec.Annotation{Classes: map[string]int{"finding": 5}})
		wantFail(t, tk, test, []Prediction{{CaseID: "p1", File: bad}, {CaseID: "p2", File: byIDFile(preds, "p2")}}, "case p1")
		// Images are not what these tasks predict.
		wantFail(t, plain(kind, ", format: image"), test, preds, "annotations, not images")
	}
}

func byIDFile(preds []Prediction, id string) string {
	for _, p := range preds {
		if p.CaseID == id {
			return p.File
		}
	}
	return ""
}
