package grade

import (
	"context"
	"fmt"
	"math"

	"amid/plugins/metrics"
)

func init() { Register("seg_a", GraderFunc(gradeSEGA)) }

// gradeSEGA grades SEG.A aortic-vessel-tree segmentation (rexmle.md §6.9): submission.csv
// image_id,predicted_mask_path naming masks (NRRD or any 3D format); answers
// test_labels.csv image_id,label_path. Masks are value > 0. Per case: Dice (1 when both
// are empty) and the Hausdorff distance as the ReX grader computes it: MONAI border voxels,
// the largest distance from a predicted border voxel to the ground-truth border (one
// direction), in voxel units because the grader's spacing lookup finds none; 0 when both
// are empty or equal, the image diagonal when one is empty. dsc_50pc and hd_50pc are the
// medians over cases. With Options.Official the distance is the symmetric Hausdorff
// distance in millimetres (ground-truth spacing), as the leaderboard reports it.
func gradeSEGA(ctx context.Context, subDir, ansDir string, opt Options) (*Result, error) {
	const id = "seg_a"
	cases, invalid, err := openFileCases(subDir, ansDir, "image_id", "label_path", "predicted_mask_path", nil)
	if cases == nil {
		return invalid, err
	}
	p := &cases.p
	var dice, hd []float64
	err = cases.each(ctx, func(cid, predPath, gtPath string) error {
		pv, err := readVol(predPath)
		if err != nil {
			p.Addf("row %q: %v.", cid, err)
			return nil
		}
		gv, err := readVol(gtPath)
		if err != nil {
			return fmt.Errorf("grade: %s answers: %w", id, err)
		}
		gt := gv.where(volPositive)
		pred := pv.where(volPositive)
		if pv.dims != gv.dims {
			pred = zoomNearest(pred, pv.dims, gv.dims)
		}
		o, err := metrics.BinaryOverlap(gt, pred)
		if err != nil {
			return err
		}
		dice = append(dice, o.Dice(1))
		sp := [3]float64{1, 1, 1}
		if opt.Official {
			sp = gv.v.Spacing
		}
		h, err := segaHausdorff(gt, pred, o, gv.dims, sp, opt.Official)
		if err != nil {
			return err
		}
		hd = append(hd, h)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !p.Empty() {
		return Invalid(p.List()), nil
	}
	return Finish(id, "dsc_50pc", map[string]float64{
		"dsc_50pc": metrics.NumpyMedian(dice),
		"hd_50pc":  metrics.NumpyMedian(hd),
	})
}

// segaHausdorff is compute_hausdorff_distance of the ReX SEG.A grader (symmetric adds the
// ground truth → prediction direction).
func segaHausdorff(gt, pred []uint8, o metrics.Overlap, dims [3]int, sp [3]float64, symmetric bool) (float64, error) {
	switch {
	case o.GT == 0 && o.Pred == 0:
		return 0, nil
	case o.GT == 0 || o.Pred == 0:
		a, b, c := float64(dims[2])*sp[2], float64(dims[1])*sp[1], float64(dims[0])*sp[0]
		return math.Sqrt(a*a + b*b + c*c), nil
	case o.Inter == o.GT && o.Inter == o.Pred:
		return 0, nil
	}
	d, err := metrics.MONAISurfaceDistances(pred, gt, dims, sp)
	if err != nil {
		return 0, err
	}
	if symmetric {
		e, err := metrics.MONAISurfaceDistances(gt, pred, dims, sp)
		if err != nil {
			return 0, err
		}
		d = append(d, e...)
	}
	h := 0.0
	for _, v := range d {
		h = math.Max(h, v)
	}
	return h, nil
}
