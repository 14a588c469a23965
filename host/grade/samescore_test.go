package grade

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"amid/plugins/metrics"
	"amid/plugins/metrics/metricstest"
)

// tolerance is the largest difference allowed between two callers' figures: their sums may
// differ in the last bits (the cases' means are of three values near 1).
const tolerance = 1e-12

// TestSameScoreAsValidation grades the cross-caller cases of amid/plugins/metrics/metricstest
// (which the host's validation, the plugins' and the Review screen score too) and gets the
// numbers worked out there.
func TestSameScoreAsValidation(t *testing.T) {
	for _, id := range metricstest.DiceChallenges[1:] {
		ans, sub := t.TempDir(), t.TempDir()
		a, s := "image_id,label_path\n", "image_id,modality,predicted_mask_path\n"
		for _, c := range metricstest.LabelCases() {
			if err := metricstest.WriteLabels(filepath.Join(ans, c.ID+".nii.gz"), c.Dims, c.Truth); err != nil {
				t.Fatal(err)
			}
			if err := metricstest.WriteLabels(filepath.Join(sub, "p", c.ID+".nii.gz"), c.Dims, c.Pred); err != nil {
				t.Fatal(err)
			}
			a += fmt.Sprintf("%s,%s.nii.gz\n", c.ID, c.ID)
			s += fmt.Sprintf("%s,ct,p/%s.nii.gz\n", c.ID, c.ID)
		}
		writeFile(t, filepath.Join(ans, AnswersCSV), a)
		writeFile(t, filepath.Join(sub, SubmissionCSV), s)
		r := gradeDirs(t, id, sub, ans, Options{})
		wantValid(t, r)
		if got, want := float64(r.Metrics["dice"]), metricstest.WantDice(id); math.Abs(got-want) > tolerance {
			t.Errorf("%s: dice %v, want %v", id, got, want)
		}
	}

	ans, sub := t.TempDir(), t.TempDir()
	a, s := "image_id,label_path\n", "image_id,predicted_mask_path\n"
	for _, c := range metricstest.InstanceCases() {
		dims := [3]int{c.W, c.H, 1}
		if err := metricstest.WriteLabels(filepath.Join(ans, c.ID+".tif"), dims, metricstest.Uint16(c.Truth)); err != nil {
			t.Fatal(err)
		}
		if err := metricstest.WriteLabels(filepath.Join(sub, "p", c.ID+".tif"), dims, metricstest.Uint16(c.Pred)); err != nil {
			t.Fatal(err)
		}
		a += fmt.Sprintf("%s,%s.tif\n", c.ID, c.ID)
		s += fmt.Sprintf("%s,p/%s.tif\n", c.ID, c.ID)
	}
	writeFile(t, filepath.Join(ans, AnswersCSV), a)
	writeFile(t, filepath.Join(sub, SubmissionCSV), s)
	r := gradeDirs(t, "neurips-cellseg", sub, ans, Options{})
	wantValid(t, r)
	if got := float64(r.Metrics["f1_0.5"]); math.Abs(got-metricstest.WantInstanceF1) > tolerance {
		t.Errorf("neurips-cellseg: f1_0.5 %v, want %v", got, metricstest.WantInstanceF1)
	}

	const id = "puma-track1-task2"
	ans, sub = t.TempDir(), t.TempDir()
	a, s = "case_id,image_path,label_path\n", "case_id,predicted_nuclei_path\n"
	for _, c := range metricstest.PointCases() {
		for _, side := range []struct {
			path   string
			points []metrics.Nucleus
		}{{filepath.Join(ans, c.ID+".json"), c.Truth}, {filepath.Join(sub, "p", c.ID+".json"), c.Pred}} {
			var polys []map[string]any
			for _, p := range side.points {
				polys = append(polys, pumaPoly(p.Class, p.X, p.Y))
			}
			writeJSON(t, side.path, map[string]any{"polygons": polys})
		}
		a += fmt.Sprintf("%s,%s.tif,%s.json\n", c.ID, c.ID, c.ID)
		s += fmt.Sprintf("%s,p/%s.json\n", c.ID, c.ID)
	}
	writeFile(t, filepath.Join(ans, AnswersCSV), a)
	writeFile(t, filepath.Join(sub, SubmissionCSV), s)
	r = gradeDirs(t, id, sub, ans, Options{})
	wantValid(t, r)
	if got, want := float64(r.Metrics["f1"]), metricstest.WantPointsF1(id); math.Abs(got-want) > tolerance {
		t.Errorf("%s: f1 %v, want %v", id, got, want)
	}
}
