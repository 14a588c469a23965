package metrics

import (
	"strconv"
	"testing"
)

func TestTopologyGolden(t *testing.T) {
	g := loadVolGolden(t)
	for _, c := range g.Labels {
		t.Run(c.Name, func(t *testing.T) {
			gt, pred := paintVol(c.Dims, c.GT), paintVol(c.Dims, c.Pred)
			lo, err := CountLabels(gt, pred)
			if err != nil {
				t.Fatal(err)
			}
			labels := c.Want["labels"].(map[string]any)
			var gm, pm []uint8
			for _, l := range lo.AllLabels() {
				w := labels[strconv.FormatInt(l, 10)].(map[string]any)
				gm = LabelMask(gt, l, gm)
				pm = LabelMask(pred, l, pm)
				b0, err := Betti0Error(pm, gm, c.Dims)
				if err != nil {
					t.Fatal(err)
				}
				check(t, w, "b0_error", float64(b0))
				if _, ok := w["hd95_monai"]; ok {
					d, err := MONAISurfaceDistances(pm, gm, c.Dims, c.Spacing)
					if err != nil {
						t.Fatal(err)
					}
					check(t, w, "hd95_monai", NumpyPercentile(d, 95))
				}
			}
			nb, err := NeighbourSets(pred, c.Dims)
			if err != nil {
				t.Fatal(err)
			}
			want := c.Want["pred_neighbours"].(map[string]any)
			for a := 1; a < 256; a++ {
				w, ok := want[strconv.Itoa(a)].([]any)
				if !ok {
					if nb[a] != nil {
						t.Errorf("label %d: neighbours %v, reference has none", a, nb[a])
					}
					continue
				}
				if len(w) != len(nb[a]) {
					t.Errorf("label %d: neighbours %v, reference %v", a, nb[a], w)
					continue
				}
				for i := range w {
					if int(w[i].(float64)) != int(nb[a][i]) {
						t.Errorf("label %d: neighbours %v, reference %v", a, nb[a], w)
						break
					}
				}
			}
			gb, pb := binarise(gt), binarise(pred)
			for _, o := range []struct {
				key   string
				order SkeletonOrder
			}{{"cldice_binary_zyx", SkeletonZYX}, {"cldice_binary_xyz", SkeletonXYZ}} {
				cl, err := ClDice(pb, gb, c.Dims, o.order)
				if err != nil {
					t.Fatal(err)
				}
				check(t, c.Want, o.key, cl)
			}
		})
	}
}

func TestDetection(t *testing.T) {
	lo := LabelOverlaps{
		8:  {GT: 10, Pred: 10, Inter: 4}, // IoU 4/16 = 0.25 → TP (≥)
		9:  {GT: 10, Pred: 10, Inter: 3}, // IoU 3/17 → FN
		10: {Pred: 3},                    // FP
	}
	want := map[int64]Detection{8: DetectTP, 9: DetectFN, 10: DetectFP, 15: DetectTN}
	for l, w := range want {
		if got := DetectLabel(lo, l, 0.25); got != w {
			t.Errorf("label %d: %v, want %v", l, got, w)
		}
	}
	// two cases, two labels: label A TP+FN → 2/3; label B TN only → 0
	v := [][]Detection{{DetectTP, DetectTN}, {DetectFN, DetectTN}}
	if got := DetectionF1(v, 2); !closeTo(got, (2.0/3+0)/2) {
		t.Errorf("F1 %v", got)
	}
	if !TopologyMatch(lo, []int64{8, 15}, 0.25) || TopologyMatch(lo, []int64{8, 10}, 0.25) {
		t.Error("topology match")
	}
	valid := map[int64][]int64{1: {2}}
	var nb [256][]uint8
	nb[1] = []uint8{2, 3, 4}
	if got := InvalidNeighbours(nb, valid, 1); got != 2 {
		t.Errorf("invalid neighbours %d, want 2", got)
	}
}
