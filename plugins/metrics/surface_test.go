package metrics

import (
	"math"
	"testing"
)

func TestSurfaceGolden(t *testing.T) {
	g := loadVolGolden(t)
	for _, c := range g.Binary {
		t.Run(c.Name, func(t *testing.T) {
			gt, pred := binarise(paintVol(c.Dims, c.GT)), binarise(paintVol(c.Dims, c.Pred))
			surfaceCheckCase(t, gt, pred, c.Dims, c.Spacing, c.Want)
		})
	}
}

func surfaceCheckCase(t *testing.T, gt, pred []uint8, dims [3]int, spacing [3]float64, w map[string]any) {
	t.Helper()
	sd, err := DeepMindSurfaceDistances(gt, pred, dims, spacing)
	if err != nil {
		t.Fatal(err)
	}
	check(t, w, "dm_surfels_gt", float64(len(sd.GTToPred)))
	check(t, w, "dm_surfels_pred", float64(len(sd.PredToGT)))
	check(t, w, "dm_area_gt", NumpySum(sd.AreasGT))
	check(t, w, "dm_area_pred", NumpySum(sd.AreasPred))
	check(t, w, "dm_sdice_5", sd.SurfaceDice(5))
	check(t, w, "dm_sdice_1", sd.SurfaceDice(1))
	check(t, w, "dm_hd95", sd.RobustHausdorff(95))
	check(t, w, "dm_hd100", sd.RobustHausdorff(100))
	a, b := sd.AverageDistance()
	check(t, w, "dm_avg_gt_to_pred", a)
	check(t, w, "dm_avg_pred_to_gt", b)
	d, err := MONAISurfaceDistances(pred, gt, dims, spacing)
	if err != nil {
		t.Fatal(err)
	}
	check(t, w, "monai_n", float64(len(d)))
	if len(d) > 0 {
		check(t, w, "monai_hd95_mm", NumpyPercentile(d, 95))
		mx, sum := math.Inf(-1), 0.0
		for _, v := range d {
			mx = math.Max(mx, v)
		}
		sum = NumpySum(d)
		check(t, w, "monai_max_mm", mx)
		check(t, w, "monai_sum_mm", sum)
		dv, err := MONAISurfaceDistances(pred, gt, dims, [3]float64{1, 1, 1})
		if err != nil {
			t.Fatal(err)
		}
		mv := math.Inf(-1)
		for _, v := range dv {
			mv = math.Max(mv, v)
		}
		check(t, w, "monai_max_vox", mv)
	}
}

func TestSurfaceEmpty(t *testing.T) {
	dims := [3]int{4, 4, 4}
	e := make([]uint8, 64)
	sd, err := DeepMindSurfaceDistances(e, e, dims, [3]float64{1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(sd.RobustHausdorff(95), 1) || !math.IsNaN(sd.SurfaceDice(1)) {
		t.Error("both-empty surfaces: want HD95 +Inf and surface Dice NaN as the library gives")
	}
	if _, err := DeepMindSurfaceDistances(e, e[:10], dims, [3]float64{1, 1, 1}); err == nil {
		t.Error("size mismatch accepted")
	}
	d, err := MONAISurfaceDistances(e, e, dims, [3]float64{1, 1, 1})
	if err != nil || len(d) != 0 {
		t.Errorf("both empty: %v %v", d, err)
	}
}
