package grade

import (
	"context"
	"errors"
	"fmt"

	"amid/plugins/metrics"
)

func init() {
	Register("topbrain-track1", topbrainGrader("topbrain-track1", topbrainSideRoadCT, topbrainValidCT))
	Register("topbrain-track2", topbrainGrader("topbrain-track2", topbrainSideRoadMR, topbrainValidMR))
}

// Side-road vessel labels of the TopBrain graders (SIDEROAD_COMPONENT_LABELS_CT/_MR).
var (
	topbrainSideRoadCT = []int64{8, 9, 10, 15, 16, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 37, 38, 39}
	topbrainSideRoadMR = []int64{8, 9, 10, 15, 16, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 41, 42}
)

// topbrainValidCT and topbrainValidMR are the ReX TopBrain graders'
// valid_neighbors_ct_all.json and valid_neighbors_mr_all.json: the labels each vessel
// label may touch.
var topbrainValidCT = map[int64][]int64{
	1: {2, 3, 23, 24, 25, 26, 27, 28, 29, 30}, 2: {1, 4, 8, 11, 21, 25, 31, 38}, 3: {1, 6, 9, 12, 22, 26, 32, 39},
	4: {2, 5, 8, 11, 31}, 5: {4, 17, 38}, 6: {3, 7, 9, 12, 32}, 7: {6, 19, 39}, 8: {2, 4, 25, 31}, 9: {3, 6, 26, 32},
	10: {11, 12, 15}, 11: {2, 4, 10, 12, 13, 14, 15, 16}, 12: {3, 6, 10, 11, 13, 14, 15, 16}, 13: {11, 12, 14, 15, 16},
	14: {11, 12, 13, 15, 16}, 15: {10, 11, 12, 13, 14, 16}, 16: {11, 12, 13, 14, 15}, 17: {5, 18}, 18: {17},
	19: {7, 20}, 20: {19}, 21: {2, 36, 37, 38}, 22: {3, 36, 37, 39}, 23: {1, 24, 27, 29}, 24: {1, 23, 28, 30},
	25: {1, 2, 8, 38}, 26: {1, 3, 9, 39}, 27: {1, 23, 29}, 28: {1, 24, 30}, 29: {1, 23, 27, 30}, 30: {1, 24, 28, 29},
	31: {2, 4, 8}, 32: {3, 6, 9}, 33: {}, 34: {}, 35: {36, 37, 38, 39}, 36: {21, 22, 35}, 37: {21, 22, 35, 38, 39},
	38: {2, 5, 21, 25, 35, 37}, 39: {3, 7, 22, 26, 35, 37}, 40: {},
}

var topbrainValidMR = map[int64][]int64{
	1: {2, 3, 23, 24, 25, 26, 27, 28, 29, 30}, 2: {1, 4, 8, 11, 21, 25, 31}, 3: {1, 6, 9, 12, 22, 26, 32},
	4: {2, 5, 8, 11, 31, 33}, 5: {4, 17}, 6: {3, 7, 9, 12, 32, 34}, 7: {6, 19}, 8: {2, 4, 25, 31}, 9: {3, 6, 26, 32},
	10: {11, 12, 15}, 11: {2, 4, 10, 12, 13, 14, 15, 16}, 12: {3, 6, 10, 11, 13, 14, 15, 16}, 13: {11, 12, 14, 15, 16},
	14: {11, 12, 13, 15, 16}, 15: {10, 11, 12, 13, 14, 16}, 16: {11, 12, 13, 14, 15}, 17: {5, 18}, 18: {17},
	19: {7, 20}, 20: {19}, 21: {2}, 22: {3}, 23: {1, 24, 27, 29}, 24: {1, 23, 28, 30}, 25: {1, 2, 8}, 26: {1, 3, 9},
	27: {1, 23, 29}, 28: {1, 24, 30}, 29: {1, 23, 27, 30}, 30: {1, 24, 28, 29}, 31: {2, 4, 8}, 32: {3, 6, 9},
	33: {4}, 34: {6}, 35: {37, 39, 41}, 36: {38, 40, 42}, 37: {35, 39}, 38: {36, 40}, 39: {35, 37, 41},
	40: {36, 38, 42}, 41: {35, 39}, 42: {36, 40},
}

const (
	topbrainIoU  = 0.25
	topbrainHD95 = 290 // mm, for a label missing from either mask
)

// topbrainGrader grades TopBrain multiclass vessel segmentation (rexmle.md §6.10):
// submission.csv image_id,modality,predicted_mask_path; answers test_labels.csv
// image_id,label_path. Both maps are cast to uint8; a prediction on another grid is
// resampled onto the ground truth's. Per case, over the union of ground-truth and
// predicted labels: Dice (0 when the label is missing from either), clDice of the label
// (skeletons of the (X, Y, Z)-transposed arrays, 0 when missing from either), Betti-0
// error, HD95 (MONAI border voxels, prediction → ground truth, 290 mm when missing) and
// the number of the label's predicted neighbours that the valid-neighbour table does not
// allow; each averaged over labels, then over cases (a case with no label scores 0 on
// all). f1_side_road pools TP/FP/FN of the side-road labels (IoU ≥ 0.25) over cases and
// averages the per-label F1.
func topbrainGrader(id string, sideRoad []int64, valid map[int64][]int64) Grader {
	return GraderFunc(func(ctx context.Context, subDir, ansDir string, _ Options) (*Result, error) {
		cases, invalid, err := openFileCases(subDir, ansDir, "image_id", "label_path", "predicted_mask_path", nil)
		if cases == nil {
			return invalid, err
		}
		p := &cases.p
		var dice, cl, b0, hd, nb []float64
		var det [][]metrics.Detection
		err = cases.each(ctx, func(cid, predPath, gtPath string) error {
			gt, pred, dims, sp, err := readLabelPair(predPath, gtPath)
			if err != nil {
				if errors.Is(err, errAnswers) {
					return fmt.Errorf("grade: %s answers %s: %w", id, gtPath, err)
				}
				p.Addf("row %q: %v.", cid, err)
				return nil
			}
			c, v, err := topbrainCase(gt, pred, dims, sp, sideRoad, valid)
			if err != nil {
				return err
			}
			dice, cl, b0 = append(dice, c[0]), append(cl, c[1]), append(b0, c[2])
			hd, nb = append(hd, c[3]), append(nb, c[4])
			if v != nil {
				det = append(det, v)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if !p.Empty() {
			return Invalid(p.List()), nil
		}
		return Finish(id, "dice", map[string]float64{
			"dice":           metrics.NumpyMean(dice),
			"cldice":         metrics.NumpyMean(cl),
			"b0_error":       metrics.NumpyMean(b0),
			"hd95":           metrics.NumpyMean(hd),
			"neighbor_error": metrics.NumpyMean(nb),
			"f1_side_road":   metrics.DetectionF1(det, len(sideRoad)),
		})
	})
}

// topbrainCase returns the class averages (dice, cldice, b0, hd95, invalid neighbours)
// of one case and its side-road verdicts (nil when the case has no label at all).
func topbrainCase(gt, pred []uint8, dims [3]int, sp [3]float64, sideRoad []int64, valid map[int64][]int64) ([5]float64, []metrics.Detection, error) {
	var out [5]float64
	lo, err := metrics.CountLabels(gt, pred)
	if err != nil {
		return out, nil, err
	}
	labels := lo.AllLabels()
	if len(labels) == 0 {
		return out, nil, nil
	}
	neigh, err := metrics.NeighbourSets(pred, dims)
	if err != nil {
		return out, nil, err
	}
	per := [5][]float64{}
	var gm, pm []uint8
	for _, l := range labels {
		o := lo[l]
		gm, pm = metrics.LabelMask(gt, l, gm), metrics.LabelMask(pred, l, pm)
		c := 0.0
		if o.GT > 0 && o.Pred > 0 {
			if c, err = metrics.ClDice(pm, gm, dims, metrics.SkeletonXYZ); err != nil {
				return out, nil, err
			}
		}
		e, err := metrics.Betti0Error(pm, gm, dims)
		if err != nil {
			return out, nil, err
		}
		h, err := labelHD95(o, pm, gm, dims, sp, topbrainHD95)
		if err != nil {
			return out, nil, err
		}
		per[1] = append(per[1], c)
		per[2] = append(per[2], float64(e))
		per[3] = append(per[3], h)
		per[4] = append(per[4], float64(metrics.InvalidNeighbours(neigh, valid, l)))
	}
	out[0] = metrics.MeanDice(lo, metrics.DiceTopBrain)
	for k := 1; k < len(out); k++ {
		out[k] = metrics.NumpyMean(per[k])
	}
	v := make([]metrics.Detection, len(sideRoad))
	for k, l := range sideRoad {
		v[k] = metrics.DetectLabel(lo, l, topbrainIoU)
	}
	return out, v, nil
}
