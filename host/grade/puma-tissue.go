package grade

import (
	"context"
	"fmt"

	"amid/plugins/metrics"
)

func init() {
	Register("puma-track1-task1", pumaTissueGrader("puma-track1-task1"))
	Register("puma-track2-task1", pumaTissueGrader("puma-track2-task1"))
}

// pumaTissueSize is the size the PUMA tissue graders resize every mask to (nearest).
const pumaTissueSize = 1024

// pumaTissueGrader grades PUMA tissue segmentation (rexmle.md §6.5–6.6; both tracks share
// data and grader): submission.csv case_id,predicted_mask_path naming label maps (TIF or
// PNG; first channel of a multi-channel image; cast to uint8 with wrap-around; a value
// above 5 makes the submission invalid); answers test_labels.csv case_id,label_path. Every
// mask is resized to 1024×1024 (PIL NEAREST) and dice is the micro Dice over classes 1–5.
func pumaTissueGrader(id string) Grader {
	return GraderFunc(func(ctx context.Context, subDir, ansDir string, _ Options) (*Result, error) {
		at, ids, err := ReadAnswers(ansDir, "case_id", "label_path")
		if err != nil {
			return nil, err
		}
		gtPath := answerPaths(at, ids, "label_path", ansDir)
		var p Problems
		s := ReadSubmission(subDir, Spec{IDColumn: "case_id", FileColumns: []string{"predicted_mask_path"}}, ids, &p)
		if s == nil || !s.Table.Has("predicted_mask_path") || !s.Table.Has("case_id") {
			return Invalid(p.List()), nil
		}
		var tc metrics.TissueCounts
		for _, cid := range ids {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if _, ok := s.Row[cid]; !ok || !fileExists(s.File(cid, "predicted_mask_path")) {
				continue
			}
			rel := s.Value(cid, "predicted_mask_path")
			pp, err := readPlane(s.File(cid, "predicted_mask_path"))
			if err != nil {
				p.Addf("row %q: %v.", cid, err)
				continue
			}
			pred := pp.uint8s()
			mx := uint8(0)
			for _, v := range pred {
				mx = max(mx, v)
			}
			if mx > 5 {
				p.Addf("row %q: %s holds class %d; classes are 0–5.", cid, rel, mx)
				continue
			}
			gp, err := readPlane(gtPath[cid])
			if err != nil {
				return nil, fmt.Errorf("grade: %s answers: %w", id, err)
			}
			gt := gp.uint8s()
			if gp.W != pumaTissueSize || gp.H != pumaTissueSize {
				gt = resizeNearestPIL(gt, gp.W, gp.H, pumaTissueSize, pumaTissueSize)
			}
			if pp.W != pumaTissueSize || pp.H != pumaTissueSize {
				pred = resizeNearestPIL(pred, pp.W, pp.H, pumaTissueSize, pumaTissueSize)
			}
			tc.Add(gt, pred)
		}
		if !p.Empty() {
			return Invalid(p.List()), nil
		}
		dice, per := tc.MicroDice()
		m := map[string]float64{"dice": dice}
		for i, name := range []string{"tissue_stroma", "tissue_blood_vessel", "tissue_tumor", "tissue_epidermis", "tissue_necrosis"} {
			m[name] = per[i]
		}
		return Finish(id, "dice", m)
	})
}
