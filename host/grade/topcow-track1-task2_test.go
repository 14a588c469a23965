package grade

import (
	"math"
	"path/filepath"
	"testing"
)

func TestTopCoWBoxes(t *testing.T) {
	ans, sub := t.TempDir(), t.TempDir()
	// the rexmle notes' 1-D example: [0,10) against [5,15)
	writeFile(t, filepath.Join(ans, "roi_001.txt"), "ROI\nSize (Voxels): 10 1 1\nLocation (Voxels): 0 0 0\n")
	writeJSON(t, filepath.Join(sub, "p", "001.json"), map[string][]int{"size": {10, 1, 1}, "location": {5, 0, 0}})
	writeFile(t, filepath.Join(ans, AnswersCSV), "image_id,label_path\n001,roi_001.txt\n")
	writeFile(t, filepath.Join(sub, SubmissionCSV), "image_id,modality,predicted_bbox_path\n001,ct,p/001.json\n")
	r := gradeDirs(t, "topcow-track1-task2", sub, ans, Options{})
	wantValid(t, r)
	// ReX dilation: ratio 0.5 gives x spans [-5,14] and [0,19] → 15/25 (y, z grow alike);
	// ratio 0.2: x [-2,11] and [3,16], y and z [-1,1] → 9·9/(126+126−81) = 81/171.
	if got := float64(r.Metrics["iou"]); !near(got, 0.6) {
		t.Errorf("iou %v, want 0.6", got)
	}
	if got := float64(r.Metrics["boundary_iou"]); !near(got, 81.0/171) {
		t.Errorf("boundary_iou %v, want 81/171", got)
	}
	r = gradeDirs(t, "topcow-track1-task2", sub, ans, Options{Official: true})
	wantValid(t, r)
	// official: plain IoU 5/15; boundary shells of unit-thick boxes are the boxes
	for _, k := range []string{"iou", "boundary_iou"} {
		if got := float64(r.Metrics[k]); !near(got, 1.0/3) {
			t.Errorf("official %s %v, want 1/3", k, got)
		}
	}
	if math.IsNaN(float64(r.Percentile)) {
		t.Error("no percentile")
	}
	writeFile(t, filepath.Join(sub, "p", "001.json"), `{"size": [10, 1], "location": [5, 0, 0]}`)
	wantProblems(t, gradeDirs(t, "topcow-track1-task2", sub, ans, Options{}), "3 numbers")
}

func TestTopCoWClassification(t *testing.T) {
	ans, sub := t.TempDir(), t.TempDir()
	yml := func(a, p [4]int) string {
		return "anterior:\n  L-A1: " + topcowDigit(a[0]) + "\n  Acom: " + topcowDigit(a[1]) + "\n  3rd-A2: " + topcowDigit(a[2]) + "\n  R-A1: " + topcowDigit(a[3]) +
			"\nposterior:\n  L-Pcom: " + topcowDigit(p[0]) + "\n  L-P1: " + topcowDigit(p[1]) + "\n  R-P1: " + topcowDigit(p[2]) + "\n  R-Pcom: " + topcowDigit(p[3]) + "\n"
	}
	js := func(a, p [4]int) map[string]map[string]int {
		return map[string]map[string]int{
			"anterior":  {"L-A1": a[0], "Acom": a[1], "3rd-A2": a[2], "R-A1": a[3]},
			"posterior": {"L-Pcom": p[0], "L-P1": p[1], "R-P1": p[2], "R-Pcom": p[3]},
		}
	}
	gtA := [][4]int{{1, 1, 0, 1}, {1, 1, 0, 1}, {1, 0, 0, 1}}
	gtP := [][4]int{{0, 1, 1, 0}, {1, 1, 1, 1}, {0, 1, 1, 0}}
	prA := [][4]int{{1, 1, 0, 1}, {1, 0, 0, 1}, {1, 0, 0, 1}}
	prP := [][4]int{{0, 1, 1, 0}, {1, 1, 1, 1}, {0, 1, 1, 1}}
	csvA, csvS := "image_id,label_path\n", "image_id,modality,predicted_edges_path\n"
	for i, id := range []string{"001", "002", "003"} {
		writeFile(t, filepath.Join(ans, id+".yml"), yml(gtA[i], gtP[i]))
		writeJSON(t, filepath.Join(sub, "p", id+".json"), js(prA[i], prP[i]))
		csvA += id + "," + id + ".yml\n"
		csvS += id + ",mr,./p/" + id + ".json\n"
	}
	writeFile(t, filepath.Join(ans, AnswersCSV), csvA)
	writeFile(t, filepath.Join(sub, SubmissionCSV), csvS)
	r := gradeDirs(t, "topcow-track2-task3", sub, ans, Options{})
	wantValid(t, r)
	// anterior: class 1_1_0_1 recall 1/2, class 1_0_0_1 recall 1 → 0.75;
	// posterior: class 0_1_1_0 recall 1/2, class 1_1_1_1 recall 1 → 0.75
	for _, k := range []string{"anterior_acc", "posterior_acc"} {
		if got := float64(r.Metrics[k]); !near(got, 0.75) {
			t.Errorf("%s %v, want 0.75", k, got)
		}
	}
	writeFile(t, filepath.Join(sub, "p", "003.json"), `{"anterior": {"L-A1": 2, "Acom": 0, "3rd-A2": 0, "R-A1": 1}, "posterior": {"L-Pcom": 0, "L-P1": 1, "R-P1": 1, "R-Pcom": 1}}`)
	wantProblems(t, gradeDirs(t, "topcow-track2-task3", sub, ans, Options{}), "edge values are 0 or 1")
}

func topcowDigit(v int) string { return string(rune('0' + v)) }
