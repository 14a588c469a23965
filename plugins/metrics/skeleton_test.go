package metrics

import "testing"

func TestSkeletonGolden(t *testing.T) {
	g := loadVolGolden(t)
	for _, c := range g.Binary {
		if _, ok := c.Want["skel_zyx_gt_n"]; !ok {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			gt, pred := binarise(paintVol(c.Dims, c.GT)), binarise(paintVol(c.Dims, c.Pred))
			skeletonCheckCase(t, gt, pred, c.Dims, c.Want)
		})
	}
}

func skeletonCheckCase(t *testing.T, gt, pred []uint8, dims [3]int, w map[string]any) {
	t.Helper()
	for _, o := range []struct {
		name  string
		order SkeletonOrder
	}{{"zyx", SkeletonZYX}, {"xyz", SkeletonXYZ}} {
		s, err := Skeletonize(gt, dims, o.order)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, v := range s {
			n += int(v)
		}
		check(t, w, "skel_"+o.name+"_gt_n", float64(n))
		if got, want := sha8(s), w["skel_"+o.name+"_gt_sha256"]; got != want {
			t.Errorf("%s skeleton differs from skimage's skeletonize (sha256 %s, want %s)", o.name, got, want)
		}
		cl, err := ClDice(pred, gt, dims, o.order)
		if err != nil {
			t.Fatal(err)
		}
		check(t, w, "cldice_"+o.name, cl)
	}
}

func TestSkeletonSimplePoint(t *testing.T) {
	// isolated centre: no neighbours, simple by the library's definition
	if !skeletonIsSimple(1 << 13) {
		t.Error("isolated point not simple")
	}
	// two opposite neighbours (0 and 26) are separate components: not simple
	if skeletonIsSimple(1 | 1<<13 | 1<<26) {
		t.Error("two separate neighbours reported simple")
	}
	// the 128 values of fill_Euler_LUT in skimage 0.19.3 _skeletonize_3d_cy.pyx sum to 72
	// (summed with Python)
	sum := 0
	for _, v := range skeletonEulerLUT {
		sum += int(v)
	}
	if sum != 72 {
		t.Errorf("Euler LUT sums to %d", sum)
	}
}
