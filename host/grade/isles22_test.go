package grade

import (
	"math"
	"path/filepath"
	"testing"

	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// writeVol writes a 3D uint8 volume with the given spacing; set lists voxels (x, y, z)
// and their values.
func writeVol(t *testing.T, path string, dims [3]int, sp [3]float64, set map[[3]int]uint8) {
	t.Helper()
	v, err := volume.New(volume.Uint8, [4]int{dims[0], dims[1], dims[2], 1})
	if err != nil {
		t.Fatal(err)
	}
	v.Spacing = sp
	d := v.Data.([]uint8)
	for p, val := range set {
		d[(p[2]*dims[1]+p[1])*dims[0]+p[0]] = val
	}
	writeFile(t, path, "")
	if err := imageio.Write(path, v); err != nil {
		t.Fatal(err)
	}
}

// cube lists the voxels of [lo, hi] (inclusive) with value val.
func cube(m map[[3]int]uint8, lo, hi [3]int, val uint8) map[[3]int]uint8 {
	if m == nil {
		m = map[[3]int]uint8{}
	}
	for z := lo[2]; z <= hi[2]; z++ {
		for y := lo[1]; y <= hi[1]; y++ {
			for x := lo[0]; x <= hi[0]; x++ {
				m[[3]int{x, y, z}] = val
			}
		}
	}
	return m
}

func TestISLES22(t *testing.T) {
	ans, sub := t.TempDir(), t.TempDir()
	dims, sp := [3]int{10, 10, 10}, [3]float64{1, 1, 2}
	// case A: a 2×2×2 lesion found, a one-voxel lesion missed, one false positive voxel
	gtA := cube(nil, [3]int{2, 2, 2}, [3]int{3, 3, 3}, 1)
	gtA[[3]int{8, 8, 8}] = 1
	prA := cube(nil, [3]int{2, 2, 2}, [3]int{3, 3, 3}, 1)
	prA[[3]int{0, 9, 0}] = 1
	writeVol(t, filepath.Join(ans, "a_msk.nii.gz"), dims, sp, gtA)
	writeVol(t, filepath.Join(sub, "predictions", "a.nii.gz"), dims, sp, prA)
	// case B: both empty
	writeVol(t, filepath.Join(ans, "b_msk.nii.gz"), dims, sp, nil)
	writeVol(t, filepath.Join(sub, "predictions", "b.nii.gz"), dims, sp, nil)
	writeFile(t, filepath.Join(ans, AnswersCSV), "case_id,mask_path\na,a_msk.nii.gz\nb,b_msk.nii.gz\n")
	writeFile(t, filepath.Join(sub, SubmissionCSV), "case_id,predicted_mask_path\na,predictions/a.nii.gz\nb,predictions/b.nii.gz\n")
	r := gradeDirs(t, "isles22", sub, ans, Options{})
	wantValid(t, r)
	// A: Dice 2·8/(9+9), lesion F1 TP=1 FN=1 FP=1 → 1/(1+1) = 0.5, counts 2 vs 2, equal
	// volumes; B: both empty → Dice 1, F1 1.
	want := map[string]float64{
		"dice":              (16.0/18 + 1) / 2,
		"lesion_f1":         (0.5 + 1) / 2,
		"lesion_count_diff": 0,
		"abs_volume_diff":   0,
	}
	for k, w := range want {
		if got := float64(r.Metrics[k]); !near(got, w) {
			t.Errorf("%s = %v, want %v", k, got, w)
		}
	}
	// a missing prediction file makes the submission invalid
	writeFile(t, filepath.Join(sub, SubmissionCSV), "case_id,predicted_mask_path\na,predictions/a.nii.gz\nb,predictions/nope.nii.gz\n")
	r = gradeDirs(t, "isles22", sub, ans, Options{})
	if r.Valid {
		t.Error("missing prediction accepted")
	}
}

func TestPANTHER(t *testing.T) {
	ans, sub := t.TempDir(), t.TempDir()
	dims := [3]int{12, 10, 8}
	sp := [3]float64{0.5, 0.75, 2}
	gt := cube(nil, [3]int{0, 0, 0}, [3]int{11, 9, 7}, 2) // pancreas everywhere
	cube(gt, [3]int{3, 3, 2}, [3]int{6, 6, 4}, 1)         // tumour
	writeVol(t, filepath.Join(ans, "c1.mha"), dims, sp, gt)
	writeVol(t, filepath.Join(ans, "c2.mha"), dims, sp, gt)
	// c1: tumour predicted one voxel wider in x, with a pancreas label 2 (kept ==1)
	pr := cube(nil, [3]int{0, 0, 0}, [3]int{1, 1, 1}, 2)
	cube(pr, [3]int{3, 3, 2}, [3]int{7, 6, 4}, 1)
	writeVol(t, filepath.Join(sub, "p", "c1.mha"), dims, sp, pr)
	// c2: all zero → the fixed worst-case values
	writeVol(t, filepath.Join(sub, "p", "c2.mha"), dims, sp, nil)
	writeFile(t, filepath.Join(ans, AnswersCSV), "image_id,label_path\nc1,c1.mha\nc2,c2.mha\n")
	writeFile(t, filepath.Join(sub, SubmissionCSV), "image_id,predicted_mask_path\nc1,p/c1.mha\nc2,p/c2.mha\n")
	r := gradeDirs(t, "panther-task1", sub, ans, Options{})
	wantValid(t, r)
	// c1: tumour 4×4×3 = 48 voxels, prediction 5×4×3 = 60 voxels, all 48 shared; c2 Dice 0
	d1 := 2.0 * 48 / (48 + 60)
	if got := float64(r.Metrics["dsc"]); !near(got, d1/2) {
		t.Errorf("dsc %v, want %v", got, d1/2)
	}
	// c2 HD95 = image diagonal with the loader's spacing (sz, sx, sy) on (Z, Y, X):
	// sqrt((8·2)² + (10·0.5)² + (12·0.75)²); c1's HD95 is one voxel step in x, which the
	// grader measures with the swapped spacing sy = 0.75 mm.
	diag := math.Sqrt(16*16 + 5*5 + 9*9)
	if got := float64(r.Metrics["hd95"]); !near(got, (diag+0.75)/2) {
		t.Errorf("hd95 %v, want (%v + 0.75)/2", got, diag)
	}
	// burden errors: c1 12 voxels × 0.75 mm³, c2 48 voxels × 0.75 mm³
	rmse := math.Sqrt((9*9 + 36*36) / 2.0)
	if got := float64(r.Metrics["rmse"]); !near(got, rmse) {
		t.Errorf("rmse %v, want %v", got, rmse)
	}
	// three labels is not binary
	writeVol(t, filepath.Join(sub, "p", "c2.mha"), dims, sp, map[[3]int]uint8{{0, 0, 0}: 3, {1, 0, 0}: 4})
	r = gradeDirs(t, "panther-task1", sub, ans, Options{})
	wantProblems(t, r, "not binary")
}

func TestSEGA(t *testing.T) {
	ans, sub := t.TempDir(), t.TempDir()
	dims, sp := [3]int{10, 10, 10}, [3]float64{0.5, 0.5, 0.5}
	gt := cube(nil, [3]int{2, 2, 2}, [3]int{5, 5, 5}, 1)
	pr := cube(nil, [3]int{2, 2, 2}, [3]int{5, 5, 5}, 1)
	pr[[3]int{9, 5, 5}] = 1 // an outlier 4 voxels from the cube's border
	for _, c := range []string{"K1", "K2", "K3"} {
		writeVol(t, filepath.Join(ans, c+".seg.nrrd"), dims, sp, gt)
	}
	writeVol(t, filepath.Join(sub, "p", "K1.seg.nrrd"), dims, sp, gt) // identical
	writeVol(t, filepath.Join(sub, "p", "K2.seg.nrrd"), dims, sp, pr)
	writeVol(t, filepath.Join(sub, "p", "K3.seg.nrrd"), dims, sp, nil) // empty
	writeFile(t, filepath.Join(ans, AnswersCSV), "image_id,label_path\nK1,K1.seg.nrrd\nK2,K2.seg.nrrd\nK3,K3.seg.nrrd\n")
	writeFile(t, filepath.Join(sub, SubmissionCSV), "image_id,predicted_mask_path\nK1,p/K1.seg.nrrd\nK2,p/K2.seg.nrrd\nK3,p/K3.seg.nrrd\n")
	r := gradeDirs(t, "seg_a", sub, ans, Options{})
	wantValid(t, r)
	// Dice 1, 2·64/129, 0 → median 128/129; HD in voxels 0, 4, diagonal √300 → median 4
	if got := float64(r.Metrics["dsc_50pc"]); !near(got, 128.0/129) {
		t.Errorf("dsc_50pc %v", got)
	}
	if got := float64(r.Metrics["hd_50pc"]); !near(got, 4) {
		t.Errorf("hd_50pc %v, want 4 voxels", got)
	}
	r = gradeDirs(t, "seg_a", sub, ans, Options{Official: true})
	if got := float64(r.Metrics["hd_50pc"]); !near(got, 2) {
		t.Errorf("official hd_50pc %v, want 4 voxels × 0.5 mm", got)
	}
}

// TestZoomNearest checks the shape-fitting resample against scipy: each row is
// scipy.ndimage.zoom(np.arange(n_in, dtype=np.int32), [n_out/n_in], order=0) printed by
// scipy 1.10.1 (Debian 12); zoom is separable, so each axis is checked alone.
func TestZoomNearest(t *testing.T) {
	for _, c := range []struct {
		from, to int
		want     []int
	}{
		{5, 8, []int{0, 1, 1, 2, 2, 3, 3, 4}},
		{8, 5, []int{0, 2, 4, 5, 7}},
		{7, 3, []int{0, 3, 6}},
		{10, 21, []int{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9}},
		{21, 10, []int{0, 2, 4, 7, 9, 11, 13, 16, 18, 20}},
		{6, 13, []int{0, 0, 1, 1, 2, 2, 3, 3, 3, 4, 4, 5, 5}},
		{2, 9, []int{0, 0, 0, 0, 1, 1, 1, 1, 1}},
		{9, 2, []int{0, 8}},
	} {
		for axis := 0; axis < 3; axis++ {
			from, to := [3]int{1, 1, 1}, [3]int{1, 1, 1}
			from[axis], to[axis] = c.from, c.to
			src := make([]uint8, c.from)
			for i := range src {
				src[i] = uint8(i)
			}
			got := zoomNearest(src, from, to)
			for i, w := range c.want {
				if int(got[i]) != w {
					t.Errorf("axis %d, %d→%d: %v, scipy %v", axis, c.from, c.to, got, c.want)
					break
				}
			}
		}
	}
}
