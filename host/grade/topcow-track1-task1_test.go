package grade

import (
	"path/filepath"
	"testing"
)

func TestTopCoWSegmentation(t *testing.T) {
	ans, sub := t.TempDir(), t.TempDir()
	dims, sp := [3]int{16, 12, 10}, [3]float64{0.4, 0.4, 0.6}
	gt := cube(nil, [3]int{2, 2, 2}, [3]int{6, 5, 7}, 11) // R-ACA
	cube(gt, [3]int{7, 2, 2}, [3]int{9, 5, 7}, 10)        // Acom
	cube(gt, [3]int{11, 6, 2}, [3]int{13, 9, 4}, 2)       // R-PCA
	cube(gt, [3]int{11, 6, 6}, [3]int{13, 9, 7}, 2)       // second R-PCA piece
	writeVol(t, filepath.Join(ans, "1.nii.gz"), dims, sp, gt)
	writeVol(t, filepath.Join(sub, "p", "1.nii.gz"), dims, sp, gt)
	pr := cube(nil, [3]int{2, 2, 2}, [3]int{6, 5, 7}, 11)
	cube(pr, [3]int{7, 2, 2}, [3]int{9, 5, 7}, 10)
	cube(pr, [3]int{11, 6, 2}, [3]int{13, 9, 7}, 2) // R-PCA pieces merged
	pr[[3]int{0, 11, 9}] = 9                        // L-Pcom false positive
	writeVol(t, filepath.Join(ans, "2.nii.gz"), dims, sp, gt)
	writeVol(t, filepath.Join(sub, "p", "2.nii.gz"), dims, sp, pr)
	writeFile(t, filepath.Join(ans, AnswersCSV), "image_id,label_path\n1,1.nii.gz\n2,2.nii.gz\n")
	writeFile(t, filepath.Join(sub, SubmissionCSV), "image_id,modality,predicted_mask_path\n1,ct,p/1.nii.gz\n2,ct,p/2.nii.gz\n")
	r := gradeDirs(t, "topcow-track1-task1", sub, ans, Options{})
	wantValid(t, r)
	// case 1 is perfect; case 2: R-PCA has 36+24 = 60 GT voxels and 72 predicted, all 60
	// shared, so its Dice is 120/132; its B0 error is |1−2| = 1; label 9 is ignored by the
	// GT-only class Dice but breaks the posterior topology and is a group-2 FP.
	eps := 1e-7
	// R-ACA (11) has 120 voxels and Acom (10) 72 in both masks
	d1 := (2*120/(240+eps) + 2*72/(144+eps) + 2*60/(120+eps)) / 3
	d2 := (2*120/(240+eps) + 2*72/(144+eps) + 2*60/(132+eps)) / 3
	checks := map[string]float64{
		"dice":                (d1 + d2) / 2,
		"b0_error":            (0 + 1.0/3) / 2,
		"anterior_topology":   1,
		"posterior_topology":  0.5,
		"posterior_graph_acc": 0.5,
		// group 2: Acom (10) TP twice → F1 1; L-Pcom (9) FP once → 0; 8 and 15 TN → 0
		"f1_grp2": 0.25,
	}
	for k, w := range checks {
		if got := float64(r.Metrics[k]); !near(got, w) {
			t.Errorf("%s = %v, want %v", k, got, w)
		}
	}
	if got := float64(r.Metrics["hd95"]); got <= 0 || got > 90 {
		t.Errorf("hd95 %v outside (0, 90]", got)
	}
}
