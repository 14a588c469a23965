package grade

import (
	"context"
	"errors"
	"fmt"

	"amid/plugins/metrics"
)

func init() {
	Register("topcow-track1-task1", topcowSegGrader("topcow-track1-task1"))
	Register("topcow-track2-task1", topcowSegGrader("topcow-track2-task1"))
}

// TopCoW constants of the ReX grader.
var (
	topcowGroup2    = []int64{8, 9, 10, 15}   // R-Pcom, L-Pcom, Acom, 3rd-A2
	topcowAnterior  = []int64{10, 11, 12, 15} // Acom, R-ACA, L-ACA, 3rd-A2
	topcowPosterior = []int64{2, 3, 8, 9}     // R-PCA, L-PCA, R-Pcom, L-Pcom
)

const (
	topcowIoU  = 0.25
	topcowHD95 = 90 // mm, for a class missing from either mask
)

// topcowSegGrader grades TopCoW multiclass segmentation (rexmle.md §6.11 Seg):
// submission.csv image_id,modality,predicted_mask_path naming label maps; answers
// test_labels.csv image_id,label_path. Both are cast to uint8 as SimpleITK's Cast does; a
// prediction on another grid is resampled onto the ground truth's (nearest neighbour).
// Per case, over the classes of the ground truth only: Dice 2I/(G+P+1e-7), Betti-0 error
// (26-connectivity) and HD95 (MONAI border voxels, prediction → ground truth, 90 mm for a
// class missing from either), class-averaged; clDice of the binarised masks (skeletons of
// the (Z, Y, X) arrays). Over cases: means, group-2 detection F1 (IoU ≥ 0.25, pooled), and
// the simplified topology match of anterior and posterior labels (its rate, and its
// balanced accuracy against an all-correct truth, which the grader reports as graph
// accuracy).
func topcowSegGrader(id string) Grader {
	return GraderFunc(func(ctx context.Context, subDir, ansDir string, _ Options) (*Result, error) {
		cases, invalid, err := openFileCases(subDir, ansDir, "image_id", "label_path", "predicted_mask_path", nil)
		if cases == nil {
			return invalid, err
		}
		p := &cases.p
		var dice, cl, b0, hd []float64
		var det [][]metrics.Detection
		var antOK, posOK []string
		truth := []string{}
		err = cases.each(ctx, func(cid, predPath, gtPath string) error {
			gt, pred, dims, sp, err := readLabelPair(predPath, gtPath)
			if err != nil {
				if errors.Is(err, errAnswers) {
					return fmt.Errorf("grade: %s answers %s: %w", id, gtPath, err)
				}
				p.Addf("row %q: %v.", cid, err)
				return nil
			}
			lo, err := metrics.CountLabels(gt, pred)
			if err != nil {
				return err
			}
			classes := lo.GTLabels()
			dice = append(dice, metrics.MeanDice(lo, metrics.DiceRuleOf(id)))
			c, err := metrics.ClDice(binarise01(pred), binarise01(gt), dims, metrics.SkeletonZYX)
			if err != nil {
				return err
			}
			cl = append(cl, c)
			var errs, hds []float64
			var gm, pm []uint8
			for _, l := range classes {
				gm, pm = metrics.LabelMask(gt, l, gm), metrics.LabelMask(pred, l, pm)
				e, err := metrics.Betti0Error(pm, gm, dims)
				if err != nil {
					return err
				}
				errs = append(errs, float64(e))
				h, err := labelHD95(lo[l], pm, gm, dims, sp, topcowHD95)
				if err != nil {
					return err
				}
				hds = append(hds, h)
			}
			if len(classes) == 0 {
				b0, hd = append(b0, 0), append(hd, 0)
			} else {
				b0, hd = append(b0, metrics.NumpyMean(errs)), append(hd, metrics.NumpyMean(hds))
			}
			v := make([]metrics.Detection, len(topcowGroup2))
			for k, l := range topcowGroup2 {
				v[k] = metrics.DetectLabel(lo, l, topcowIoU)
			}
			det = append(det, v)
			antOK = append(antOK, verdict(metrics.TopologyMatch(lo, topcowAnterior, topcowIoU)))
			posOK = append(posOK, verdict(metrics.TopologyMatch(lo, topcowPosterior, topcowIoU)))
			truth = append(truth, "correct")
			return nil
		})
		if err != nil {
			return nil, err
		}
		if !p.Empty() {
			return Invalid(p.List()), nil
		}
		rate := func(v []string) float64 {
			n := 0
			for _, s := range v {
				if s == "correct" {
					n++
				}
			}
			return float64(n) / float64(len(v))
		}
		return Finish(id, "dice", map[string]float64{
			"dice":                metrics.NumpyMean(dice),
			"cldice":              metrics.NumpyMean(cl),
			"b0_error":            metrics.NumpyMean(b0),
			"hd95":                metrics.NumpyMean(hd),
			"f1_grp2":             metrics.DetectionF1(det, len(topcowGroup2)),
			"anterior_graph_acc":  metrics.BalancedAccuracy(truth, antOK),
			"posterior_graph_acc": metrics.BalancedAccuracy(truth, posOK),
			"anterior_topology":   rate(antOK),
			"posterior_topology":  rate(posOK),
		})
	})
}

func verdict(ok bool) string {
	if ok {
		return "correct"
	}
	return "incorrect"
}

func binarise01(l []uint8) []uint8 {
	out := make([]uint8, len(l))
	for i, v := range l {
		if v != 0 {
			out[i] = 1
		}
	}
	return out
}

// labelHD95 is the per-class HD95 of the TopCoW and TopBrain graders: MONAI border
// voxels, prediction → ground truth, numpy's 95th percentile; bound when the class is
// missing from either mask or no distance results.
func labelHD95(o metrics.Overlap, pm, gm []uint8, dims [3]int, sp [3]float64, bound float64) (float64, error) {
	if o.GT == 0 || o.Pred == 0 {
		return bound, nil
	}
	d, err := metrics.MONAISurfaceDistances(pm, gm, dims, sp)
	if err != nil {
		return 0, err
	}
	if len(d) == 0 {
		return bound, nil
	}
	return metrics.NumpyPercentile(d, 95), nil
}

// errAnswers marks a ground-truth file that cannot be read.
var errAnswers = fmt.Errorf("ground truth cannot be read")

// readLabelPair reads a predicted and a ground-truth label map cast to uint8, the
// prediction resampled onto the ground truth's grid when their sizes differ, and returns
// the ground truth's spacing.
func readLabelPair(predPath, gtPath string) (gt, pred []uint8, dims [3]int, sp [3]float64, err error) {
	gv, err := readVol(gtPath)
	if err != nil {
		return nil, nil, dims, sp, fmt.Errorf("%w: %v", errAnswers, err)
	}
	pv, err := readVol(predPath)
	if err != nil {
		return nil, nil, dims, sp, err
	}
	gt, pred = gv.uint8s(), pv.uint8s()
	if pv.dims != gv.dims {
		pred = resampleLike(pv, gv, pred)
	}
	return gt, pred, gv.dims, volZooms(gtPath, gv), nil
}
