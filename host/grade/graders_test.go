package grade

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// writeImage writes a w×h image with c channels holding data ([]uint8, []uint16 or []int32).
func writeImage(t *testing.T, path string, w, h, c int, data any) {
	t.Helper()
	v, err := volume.New(volume.DataType(data), [4]int{w, h, 1, c})
	if err != nil {
		t.Fatal(err)
	}
	v.Data = data
	writeFile(t, path, "") // creates the folder
	if err := imageio.Write(path, v); err != nil {
		t.Fatal(err)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(b))
}

func gradeDirs(t *testing.T, id, sub, ans string, opt Options) *Result {
	t.Helper()
	r, err := Grade(context.Background(), id, sub, ans, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func wantValid(t *testing.T, r *Result) {
	t.Helper()
	if !r.Valid {
		t.Fatalf("invalid: %v", r.Errors)
	}
}

// wantProblems checks that the result is invalid and lists every expected problem.
func wantProblems(t *testing.T, r *Result, subs ...string) {
	t.Helper()
	if r.Valid {
		t.Fatalf("valid, want invalid with %d problems", len(subs))
	}
	all := strings.Join(r.Errors, "\n")
	for _, s := range subs {
		if !strings.Contains(all, s) {
			t.Errorf("problems lack %q:\n%s", s, all)
		}
	}
	if len(r.Errors) != len(subs) {
		t.Errorf("%d problems, want %d:\n%s", len(r.Errors), len(subs), all)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestLDCT(t *testing.T) {
	ans, sub := t.TempDir(), t.TempDir()
	var a, s strings.Builder
	a.WriteString("image_id,quality_score\n")
	s.WriteString("image_id,quality_score\n")
	for i := 0; i < 20; i++ {
		q := float64((i*7)%20) / 5
		fmt.Fprintf(&a, "%04d,%g\n", i, q)
		fmt.Fprintf(&s, "%04d,%g\n", i, q)
	}
	writeFile(t, filepath.Join(ans, AnswersCSV), a.String())
	writeFile(t, filepath.Join(sub, SubmissionCSV), s.String())
	r := gradeDirs(t, "ldct-iqa", sub, ans, Options{})
	wantValid(t, r)
	// Perfect prediction: PLCC = SROCC = KROCC = 1, score 3, above every row (best 2.7427).
	if !near(float64(r.Primary.Value), 3) || r.MeanPosition != 1 || r.Percentile != 1 || r.Medal != MedalGold {
		t.Errorf("perfect: %+v", r)
	}
	// Broken: test ID 0000 missing, an extra ID, a non-numeric score.
	body := strings.Replace(s.String(), "0000,", "9999,", 1)
	body = strings.Replace(body, "0005,", "0005,abc", 1)
	writeFile(t, filepath.Join(sub, SubmissionCSV), body)
	r = gradeDirs(t, "ldct-iqa", sub, ans, Options{})
	wantProblems(t, r, "lacks 1 test IDs: 0", "not in the test set: 9999", "not a number for 1 IDs: 5")
}

func grayRamp(w, h, seed int) []uint8 {
	d := make([]uint8, w*h)
	for i := range d {
		d[i] = uint8((i*37 + seed*11 + (i/w)*(i%w)) % 251)
	}
	return d
}

func TestUSenhance(t *testing.T) {
	ans, sub := t.TempDir(), t.TempDir()
	a := "image_id,ground_truth_path\n"
	s := "image_id,enhanced_image_path\n"
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("breast_%d", i)
		d := grayRamp(24, 20, i)
		writeImage(t, filepath.Join(ans, "gt", id+".png"), 24, 20, 1, d)
		writeImage(t, filepath.Join(sub, "predictions", id+".png"), 24, 20, 1, d)
		a += id + ",gt/" + id + ".png\n"
		s += id + ",predictions/" + id + ".png\n"
	}
	writeFile(t, filepath.Join(ans, AnswersCSV), a)
	writeFile(t, filepath.Join(sub, SubmissionCSV), s)
	r := gradeDirs(t, "usenhance", sub, ans, Options{})
	wantValid(t, r)
	// Identical images: LNCC 1, SSIM 1, PSNR +Inf: best on all three metrics.
	if !near(float64(r.Metrics["lncc"]), 1) || !near(float64(r.Metrics["ssim"]), 1) || !math.IsInf(float64(r.Metrics["psnr"]), 1) || r.MeanPosition != 1 {
		t.Errorf("perfect: %+v", r)
	}
	// The grader's fallback: "enhanced/x.png" is found as "x.png" when the first folder
	// does not exist. Break three rules: missing file, absolute path, extra ID.
	writeImage(t, filepath.Join(sub, "breast_1.png"), 24, 20, 1, grayRamp(24, 20, 1))
	s = "image_id,enhanced_image_path\nbreast_0,predictions/nope.png\nbreast_1,enhanced/breast_1.png\nbreast_2,/abs/x.png\nliver_9,predictions/breast_0.png\n"
	writeFile(t, filepath.Join(sub, SubmissionCSV), s)
	r = gradeDirs(t, "usenhance", sub, ans, Options{})
	wantProblems(t, r, `row "breast_0": enhanced_image_path "predictions/nope.png" does not exist`, `"/abs/x.png" is an absolute path`, "not in the test set: liver_9")
}

// cellBlobs draws n 4×4 cells on a w×h int32 map, away from the border.
func cellBlobs(w, h, n int) []int32 {
	d := make([]int32, w*h)
	for k := 0; k < n; k++ {
		x0, y0 := 4+(k%5)*7, 4+(k/5)*7
		for y := y0; y < y0+4; y++ {
			for x := x0; x < x0+4; x++ {
				d[y*w+x] = int32(k + 1)
			}
		}
	}
	return d
}

func TestNeurIPSCellSeg(t *testing.T) {
	ans, sub := t.TempDir(), t.TempDir()
	a := "image_id,label_path\n"
	s := "image_id,predicted_mask_path\n"
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("cell_%05d", i)
		d := cellBlobs(48, 40, 10+i)
		writeImage(t, filepath.Join(ans, "labels", id+"_label.tiff"), 48, 40, 1, d)
		writeImage(t, filepath.Join(sub, "predictions", id+"_label.tiff"), 48, 40, 1, d)
		a += id + ",labels/" + id + "_label.tiff\n"
		s += id + ",predictions/" + id + "_label.tiff\n"
	}
	writeFile(t, filepath.Join(ans, AnswersCSV), a)
	writeFile(t, filepath.Join(sub, SubmissionCSV), s)
	r := gradeDirs(t, "neurips-cellseg", sub, ans, Options{})
	wantValid(t, r)
	for _, k := range []string{"f1_0.5", "f1_0.6", "f1_0.7", "f1_0.8", "f1_0.9"} {
		if !near(float64(r.Metrics[k]), 1) {
			t.Errorf("perfect %s = %v", k, r.Metrics[k])
		}
	}
	if r.Primary.Name != "f1_0.5" || r.MeanPosition != 1 {
		t.Errorf("perfect: %+v", r)
	}
	// A prediction at half size is resized (nearest) and stays valid.
	half := make([]uint16, 24*20)
	full := cellBlobs(48, 40, 10)
	for y := 0; y < 20; y++ {
		for x := 0; x < 24; x++ {
			half[y*24+x] = uint16(full[(2*y)*48+2*x])
		}
	}
	writeImage(t, filepath.Join(sub, "predictions", "cell_00000_label.tiff"), 24, 20, 1, half)
	wantValid(t, gradeDirs(t, "neurips-cellseg", sub, ans, Options{}))
	// Broken: an RGB prediction, a missing file, a repeated ID.
	writeImage(t, filepath.Join(sub, "predictions", "rgb.png"), 48, 40, 3, make([]uint8, 48*40*3))
	s = "image_id,predicted_mask_path\ncell_00000,predictions/rgb.png\ncell_00001,predictions/none.tiff\ncell_00002,predictions/cell_00002_label.tiff\ncell_00002,predictions/cell_00002_label.tiff\n"
	writeFile(t, filepath.Join(sub, SubmissionCSV), s)
	r = gradeDirs(t, "neurips-cellseg", sub, ans, Options{})
	wantProblems(t, r, "has 3 channels", `"predictions/none.tiff" does not exist`, "repeats 1 IDs: cell_00002")
}

func TestPUMATissue(t *testing.T) {
	for _, id := range []string{"puma-track1-task1", "puma-track2-task1"} {
		ans, sub := t.TempDir(), t.TempDir()
		a := "case_id,image_path,label_path\n"
		s := "case_id,predicted_mask_path\n"
		for i := 0; i < 2; i++ {
			cid := fmt.Sprintf("training_set_metastatic_roi_%03d", i)
			d := make([]uint8, 64*64)
			for k := range d {
				d[k] = uint8((k / 64 / 11) % 6) // bands of classes 0–5
			}
			writeImage(t, filepath.Join(ans, "labels", cid+".tif"), 64, 64, 1, d)
			writeImage(t, filepath.Join(sub, "predictions", cid+".tif"), 64, 64, 1, d)
			a += cid + ",images/" + cid + ".tif,labels/" + cid + ".tif\n"
			s += cid + ",predictions/" + cid + ".tif\n"
		}
		writeFile(t, filepath.Join(ans, AnswersCSV), a)
		writeFile(t, filepath.Join(sub, SubmissionCSV), s)
		r := gradeDirs(t, id, sub, ans, Options{})
		wantValid(t, r)
		// All five classes present and predicted exactly: Dice 1 each.
		if !near(float64(r.Primary.Value), 1) || r.Primary.Name != "dice" || r.Medal != MedalGold {
			t.Errorf("%s perfect: %+v", id, r)
		}
		bad := make([]uint8, 64*64)
		bad[5] = 7
		writeImage(t, filepath.Join(sub, "predictions", "bad.tif"), 64, 64, 1, bad)
		s = "case_id,predicted_mask_path\ntraining_set_metastatic_roi_000,predictions/bad.tif\ntraining_set_metastatic_roi_001,predictions/gone.tif\n"
		writeFile(t, filepath.Join(sub, SubmissionCSV), s)
		r = gradeDirs(t, id, sub, ans, Options{})
		wantProblems(t, r, "holds class 7", `"predictions/gone.tif" does not exist`)
	}
}

// pumaPoly is a square nucleus polygon around (x, y) in the PUMA JSON form.
func pumaPoly(name string, x, y float64) map[string]any {
	return map[string]any{"name": name, "score": 1, "path_points": [][]float64{{x - 2, y - 2}, {x + 2, y - 2}, {x + 2, y + 2}, {x - 2, y + 2}}}
}

func TestPUMANuclei(t *testing.T) {
	cases := []struct {
		id      string
		classes []string
	}{
		{"puma-track1-task2", []string{"tumor", "TILs", "other"}},
		{"puma-track2-task2", []string{"tumor", "lymphocytes", "plasma_cells", "histiocytes", "melanophages", "neutrophils", "stromal_cells", "epithelium", "endothelium", "apoptotic_cells"}},
	}
	for _, c := range cases {
		ans, sub := t.TempDir(), t.TempDir()
		a := "case_id,image_path,label_path\n"
		s := "case_id,predicted_nuclei_path\n"
		for i := 0; i < 2; i++ {
			cid := fmt.Sprintf("roi_%03d", i)
			var polys []map[string]any
			for k, cl := range c.classes {
				polys = append(polys, pumaPoly(cl, float64(20+40*k), float64(30+20*i)))
			}
			writeJSON(t, filepath.Join(ans, "labels", cid+".json"), map[string]any{"polygons": polys})
			writeJSON(t, filepath.Join(sub, "predictions", cid+".json"), map[string]any{"polygons": polys})
			a += cid + ",images/" + cid + ".tif,labels/" + cid + ".json\n"
			s += cid + ",predictions/" + cid + ".json\n"
		}
		writeFile(t, filepath.Join(ans, AnswersCSV), a)
		writeFile(t, filepath.Join(sub, SubmissionCSV), s)
		r := gradeDirs(t, c.id, sub, ans, Options{})
		wantValid(t, r)
		if !near(float64(r.Primary.Value), 1) || r.Primary.Name != "f1" || r.Medal != MedalGold {
			t.Errorf("%s perfect: %+v", c.id, r)
		}
		// Broken: not a JSON object, a non-numeric score, a missing file.
		writeFile(t, filepath.Join(sub, "predictions", "list.json"), "[1,2]")
		writeJSON(t, filepath.Join(sub, "predictions", "score.json"), map[string]any{"nuclei": []any{map[string]any{"class": c.classes[0], "centroid": []float64{1, 2}, "confidence": "high"}}})
		s = "case_id,predicted_nuclei_path\nroi_000,predictions/list.json\nroi_001,predictions/score.json\nroi_002,predictions/x.json\n"
		writeFile(t, filepath.Join(sub, SubmissionCSV), s)
		r = gradeDirs(t, c.id, sub, ans, Options{})
		wantProblems(t, r, "not a JSON object", "score high is not a number", "not in the test set: roi_002")
	}
}

// PUMA track 2: one image holds only tumour nuclei, found exactly. ReX averages each class
// over the images where it occurs (tumour 1) and counts the 9 others as 0: 1/10. The
// official code averages over classes that occur anywhere (tumour only): 1.
func TestPUMAT2OfficialAveraging(t *testing.T) {
	ans, sub := t.TempDir(), t.TempDir()
	polys := []map[string]any{pumaPoly("tumor", 50, 50)}
	writeJSON(t, filepath.Join(ans, "l.json"), map[string]any{"polygons": polys})
	writeJSON(t, filepath.Join(sub, "p.json"), map[string]any{"polygons": polys})
	writeFile(t, filepath.Join(ans, AnswersCSV), "case_id,label_path\nr1,l.json\n")
	writeFile(t, filepath.Join(sub, SubmissionCSV), "case_id,predicted_nuclei_path\nr1,p.json\n")
	rex := gradeDirs(t, "puma-track2-task2", sub, ans, Options{})
	off := gradeDirs(t, "puma-track2-task2", sub, ans, Options{Official: true})
	if !near(float64(rex.Primary.Value), 0.1) || !near(float64(off.Primary.Value), 1) {
		t.Errorf("ReX %v (want 0.1), official %v (want 1)", rex.Primary.Value, off.Primary.Value)
	}
}

func TestDENTEX(t *testing.T) {
	ans, sub := t.TempDir(), t.TempDir()
	a := "image_id,ground_truth_json\n"
	s := "image_id,predictions_json\n"
	annID := 1
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("train_%d", 100+i)
		var anns, preds []map[string]any
		for k := 0; k < 4; k++ {
			box := []float64{float64(10 + 60*k), float64(20 + 5*i), 40, 30}
			ann := map[string]any{"id": annID, "image_id": 100 + i, "bbox": box, "area": 1200, "iscrowd": 0,
				"category_id_1": 1 + k, "category_id_2": 1 + (k+i)%8, "category_id_3": 1 + (k*3)%4}
			annID++
			anns = append(anns, ann)
			preds = append(preds, map[string]any{"image_id": name, "bbox": box, "category_id_1": 1 + k,
				"category_id_2": 1 + (k+i)%8, "category_id_3": 1 + (k*3)%4, "score": 0.9 - 0.1*float64(k)})
		}
		writeJSON(t, filepath.Join(ans, "ground_truth", name+".json"), map[string]any{
			"images": []map[string]any{{"id": 100 + i, "file_name": name + ".png"}}, "annotations": anns})
		writeJSON(t, filepath.Join(sub, "predictions", name+".json"), preds)
		a += name + ",ground_truth/" + name + ".json\n"
		s += name + ",predictions/" + name + ".json\n"
	}
	writeFile(t, filepath.Join(ans, AnswersCSV), a)
	writeFile(t, filepath.Join(sub, SubmissionCSV), s)
	r := gradeDirs(t, "dentex", sub, ans, Options{})
	wantValid(t, r)
	// Every box found with its exact categories: AP, AP50, AP75 and AR are 1 (to the
	// precision 1/(1+ε) of pycocotools) for each aspect.
	for _, k := range []string{"ap_mean", "ap50_mean", "ap75_mean", "ar_mean", "ap_quadrant", "ap_enumeration", "ap_diagnosis"} {
		if !near(float64(r.Metrics[k]), 1) {
			t.Errorf("perfect %s = %v", k, r.Metrics[k])
		}
	}
	if r.Primary.Name != "ap_mean" || r.MeanPosition != 1 || len(r.Metrics) != 32 {
		t.Errorf("perfect: primary %v mean position %v, %d metrics (want 16 + 16 positions)", r.Primary, r.MeanPosition, len(r.Metrics))
	}
	// Broken: a detection on an image outside the test set, a detection without bbox, a
	// missing test ID.
	writeJSON(t, filepath.Join(sub, "predictions", "foreign.json"), []map[string]any{{"image_id": 555, "bbox": []float64{0, 0, 5, 5}}})
	writeJSON(t, filepath.Join(sub, "predictions", "nobox.json"), []map[string]any{{"score": 1}})
	s = "image_id,predictions_json\ntrain_100,predictions/foreign.json\ntrain_101,predictions/nobox.json\n"
	writeFile(t, filepath.Join(sub, SubmissionCSV), s)
	r = gradeDirs(t, "dentex", sub, ans, Options{})
	wantProblems(t, r, "image_id 555 is not an image of the test set", "detection 0 has no bbox", "lacks 1 test IDs: train_102")
	// No detection anywhere: pycocotools' loadRes fails, so the ReX grader rejects it.
	for i := 0; i < 3; i++ {
		writeJSON(t, filepath.Join(sub, "predictions", fmt.Sprintf("train_%d.json", 100+i)), []any{})
	}
	writeFile(t, filepath.Join(sub, SubmissionCSV), "image_id,predictions_json\ntrain_100,predictions/train_100.json\ntrain_101,predictions/train_101.json\ntrain_102,predictions/train_102.json\n")
	wantProblems(t, gradeDirs(t, "dentex", sub, ans, Options{}), "no detection at all")
}
