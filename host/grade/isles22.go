package grade

import (
	"context"
	"fmt"
	"math"
	"strings"

	"amid/plugins/metrics"
	"amid/viewer/nifti"
)

func init() { Register("isles22", GraderFunc(gradeISLES22)) }

// gradeISLES22 grades ISLES'22 stroke-lesion segmentation (rexmle.md §6.1):
// submission.csv case_id,predicted_mask_path naming NIfTI masks (non-zero = lesion);
// answers test_labels.csv case_id,mask_path. A prediction of another shape is fitted to
// the ground truth with scipy's zoom(order=0). Per case: Dice (1 when both are empty),
// lesion-wise F1 and |Δ lesion count| with 26-connected components, |Δ volume| in ml
// from the ground truth's voxel size; each is averaged over cases.
func gradeISLES22(ctx context.Context, subDir, ansDir string, _ Options) (*Result, error) {
	const id = "isles22"
	cases, invalid, err := openFileCases(subDir, ansDir, "case_id", "mask_path", "predicted_mask_path", nil)
	if cases == nil {
		return invalid, err
	}
	p := &cases.p
	var dice, f1, count, vol []float64
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
		gt := gv.where(volNonzero)
		pred := pv.where(volNonzero)
		if pv.dims != gv.dims {
			pred = zoomNearest(pred, pv.dims, gv.dims)
		}
		o, err := metrics.BinaryOverlap(gt, pred)
		if err != nil {
			return err
		}
		lf, err := metrics.LesionF1(gt, pred, gv.dims, metrics.Conn26, 1)
		if err != nil {
			return err
		}
		lc, err := metrics.LesionCountDiff(gt, pred, gv.dims, metrics.Conn26)
		if err != nil {
			return err
		}
		dice = append(dice, o.Dice(1))
		f1 = append(f1, lf)
		count = append(count, float64(lc))
		vol = append(vol, metrics.AbsVolumeDiff(o, metrics.ISLESVoxelML(volZooms(gtPath, gv))))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !p.Empty() {
		return Invalid(p.List()), nil
	}
	return Finish(id, "dice", map[string]float64{
		"dice":              metrics.NumpyMean(dice),
		"lesion_f1":         metrics.NumpyMean(f1),
		"lesion_count_diff": metrics.NumpyMean(count),
		"abs_volume_diff":   metrics.NumpyMean(vol),
	})
}

// volZooms is the spacing the Python graders see for a NIfTI file: nibabel's
// header.get_zooms() and SimpleITK's GetSpacing() both give the absolute pixdim 1–3, not
// the affine's column norms; other formats fall back to the volume's spacing.
func volZooms(path string, v *vol) [3]float64 {
	low := strings.ToLower(path)
	if strings.HasSuffix(low, ".nii") || strings.HasSuffix(low, ".nii.gz") {
		if h, err := nifti.ReadHeader(path); err == nil {
			return [3]float64{math.Abs(h.Pixdim[1]), math.Abs(h.Pixdim[2]), math.Abs(h.Pixdim[3])}
		}
	}
	return v.v.Spacing
}
