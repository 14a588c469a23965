package grade

import (
	"path/filepath"
	"testing"
)

func TestTopBrain(t *testing.T) {
	ans, sub := t.TempDir(), t.TempDir()
	dims, sp := [3]int{20, 10, 10}, [3]float64{0.5, 0.5, 0.5}
	gt := cube(nil, [3]int{2, 4, 4}, [3]int{9, 6, 6}, 1) // BA
	cube(gt, [3]int{10, 4, 4}, [3]int{17, 6, 6}, 2)      // R-P1P2, touching BA
	pr := cube(nil, [3]int{2, 4, 4}, [3]int{9, 6, 6}, 1)
	cube(pr, [3]int{10, 4, 4}, [3]int{17, 6, 6}, 2)
	cube(pr, [3]int{4, 7, 4}, [3]int{5, 8, 5}, 40) // SSS touching BA: not a valid neighbour
	writeVol(t, filepath.Join(ans, "001.nii.gz"), dims, sp, gt)
	writeVol(t, filepath.Join(sub, "p", "001.nii.gz"), dims, sp, pr)
	writeFile(t, filepath.Join(ans, AnswersCSV), "image_id,label_path\n001,001.nii.gz\n")
	writeFile(t, filepath.Join(sub, SubmissionCSV), "image_id,modality,predicted_mask_path\n001,ct,p/001.nii.gz\n")
	r := gradeDirs(t, "topbrain-track1", sub, ans, Options{})
	wantValid(t, r)
	// labels {1, 2, 40} (3-voxel-thick bars: skimage thins 2-thick bars to nothing): 1 and 2 perfect, 40 only predicted (Dice 0, clDice 0, B0 error
	// 1, HD95 290); invalid neighbours: 1 touches 40, 40 touches 1 → (1+0+1)/3; no
	// side-road label anywhere → every F1 is 0.
	want := map[string]float64{
		"dice":           2.0 / 3,
		"cldice":         2.0 / 3,
		"b0_error":       1.0 / 3,
		"hd95":           290.0 / 3,
		"neighbor_error": 2.0 / 3,
		"f1_side_road":   0,
	}
	for k, w := range want {
		if got := float64(r.Metrics[k]); !near(got, w) {
			t.Errorf("%s = %v, want %v", k, got, w)
		}
	}
	// the MR table allows 40 next to 36, 38, 42 only: same verdicts for label 1
	r = gradeDirs(t, "topbrain-track2", sub, ans, Options{})
	wantValid(t, r)
	if got := float64(r.Metrics["neighbor_error"]); !near(got, 2.0/3) {
		t.Errorf("MR neighbor_error %v", got)
	}
}
