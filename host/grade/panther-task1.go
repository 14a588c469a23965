package grade

import (
	"context"
	"fmt"
	"math"
	"slices"

	"amid/plugins/metrics"
)

func init() {
	Register("panther-task1", pantherGrader("panther-task1"))
	Register("panther-task2", pantherGrader("panther-task2"))
}

// pantherGrader grades PANTHER pancreatic-tumour segmentation, tasks 1 and 2 share the
// grader (rexmle.md §6.3–6.4): submission.csv image_id,predicted_mask_path naming masks
// (MetaImage); answers test_labels.csv image_id,label_path, tumour = label 1.
//
// A prediction of another shape is fitted with zoom(order=0). Its values must be {0},
// {1} or {0, 1}; with both 1 and 2 present the tumour is ==1; with exactly two values
// including 0 it is >0; anything else is invalid. Metrics follow DeepMind's
// surface-distance library with the prediction's spacing as the grader's loader returns
// it: the array axes (Z, Y, X) get the spacings (sz, sx, sy), so the X and Y spacings are
// swapped (harmless for square in-plane voxels, reproduced for exactness). A prediction
// that is all 0 or all non-zero scores Dice 0, surface Dice 0, HD95 = MASD = the image
// diagonal in mm and tumour-burden error = the ground-truth volume. Aggregates: mean Dice
// (dsc), mean surface Dice at 5 mm (msd), mean HD95, mean MASD and the RMSE of the
// tumour-burden errors in mm³.
func pantherGrader(id string) Grader {
	return GraderFunc(func(ctx context.Context, subDir, ansDir string, _ Options) (*Result, error) {
		cases, invalid, err := openFileCases(subDir, ansDir, "image_id", "label_path", "predicted_mask_path", nil)
		if cases == nil {
			return invalid, err
		}
		p := &cases.p
		var dsc, msd, hd95, masd, err2 []float64
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
			gt := gv.where(func(f float64) bool { return f == 1 })
			// the prediction's distinct values decide how it is binarised
			// (0, 1, 2 are always recorded; other values until there are too many to be
			// binary)
			vals := map[float64]bool{}
			for i := 0; i < pv.n(); i++ {
				f := pv.v.AtIndex(i)
				if f == 0 || f == 1 || f == 2 || len(vals) < 8 {
					vals[f] = true
				}
			}
			var keep func(float64) bool
			switch {
			case pantherSubset(vals, 0, 1):
				keep = volNonzero
			case vals[1] && vals[2]:
				keep = func(f float64) bool { return f == 1 }
			case len(vals) == 2 && vals[0]:
				keep = volPositive
			default:
				ks := make([]float64, 0, len(vals))
				for k := range vals {
					ks = append(ks, k)
				}
				slices.Sort(ks)
				p.Addf("row %q: the prediction is not binary (values %v).", cid, ks)
				return nil
			}
			pred := pv.where(keep)
			if pv.dims != gv.dims {
				pred = zoomNearest(pred, pv.dims, gv.dims)
			}
			// spacing as the loader returns it for (Z, Y, X): (sz, sx, sy); in (X, Y, Z)
			// order that is (sy, sx, sz)
			fs := pv.v.Spacing
			sp := [3]float64{fs[1], fs[0], fs[2]}
			c := pantherCase(gt, pred, gv.dims, sp)
			dsc, msd = append(dsc, c[0]), append(msd, c[1])
			hd95, masd = append(hd95, c[2]), append(masd, c[3])
			err2 = append(err2, c[4]*c[4])
			return nil
		})
		if err != nil {
			return nil, err
		}
		if !p.Empty() {
			return Invalid(p.List()), nil
		}
		return Finish(id, "dsc", map[string]float64{
			"dsc":  metrics.NumpyMean(dsc),
			"msd":  metrics.NumpyMean(msd),
			"hd95": metrics.NumpyMean(hd95),
			"masd": metrics.NumpyMean(masd),
			"rmse": math.Sqrt(metrics.NumpyMean(err2)),
		})
	})
}

func pantherSubset(vals map[float64]bool, allowed ...float64) bool {
	for v := range vals {
		if !slices.Contains(allowed, v) {
			return false
		}
	}
	return true
}

// pantherCase returns dice, surface Dice at 5 mm, HD95, MASD and the tumour-burden error
// of one case; sp is in (X, Y, Z) order.
func pantherCase(gt, pred []uint8, dims [3]int, sp [3]float64) [5]float64 {
	vv := sp[2] * sp[1] * sp[0] // np.prod over (Z, Y, X) spacings
	var ng, np int64
	for i := range gt {
		ng += int64(gt[i])
		np += int64(pred[i])
	}
	gtVol := float64(ng) * vv
	if np == 0 || np == int64(len(pred)) {
		a, b, c := float64(dims[2])*sp[2], float64(dims[1])*sp[1], float64(dims[0])*sp[0]
		diag := math.Sqrt(a*a + b*b + c*c)
		return [5]float64{0, 0, diag, diag, gtVol}
	}
	sd, err := metrics.DeepMindSurfaceDistances(gt, pred, dims, sp)
	if err != nil {
		return [5]float64{math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	}
	o, _ := metrics.BinaryOverlap(gt, pred)
	predVol := float64(np) * vv
	return [5]float64{o.Dice(math.NaN()), sd.SurfaceDice(5), sd.RobustHausdorff(95), sd.MASD(), math.Abs(predVol - gtVol)}
}
