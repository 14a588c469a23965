package grade

import (
	"context"
	"fmt"

	"amid/plugins/metrics"
)

func init() { Register("neurips-cellseg", GraderFunc(gradeCellSeg)) }

// gradeCellSeg grades NeurIPS-CellSeg (rexmle.md §6.2): submission.csv
// image_id,predicted_mask_path naming instance masks (TIFF, PNG, BMP, …; cast to int32);
// answers test_labels.csv image_id,label_path. A prediction of another size is resized to
// the GT's with PIL NEAREST after the grader's cast to uint16. f1_0.5 … f1_0.9 are the mean
// over images of metrics.CellSegF1 at each threshold; f1_0.5 is primary.
func gradeCellSeg(ctx context.Context, subDir, ansDir string, _ Options) (*Result, error) {
	at, ids, err := ReadAnswers(ansDir, "image_id", "label_path")
	if err != nil {
		return nil, err
	}
	gtPath := answerPaths(at, ids, "label_path", ansDir)
	var p Problems
	spec := Spec{IDColumn: "image_id", FileColumns: []string{"predicted_mask_path"}}
	s := ReadSubmission(subDir, spec, ids, &p)
	if s == nil || !s.Table.Has("predicted_mask_path") || !s.Table.Has("image_id") {
		return Invalid(p.List()), nil
	}
	th := metrics.CellSegThresholds
	sums := make([]float64, len(th))
	n := 0
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, ok := s.Row[id]; !ok || !fileExists(s.File(id, "predicted_mask_path")) {
			continue
		}
		path := s.File(id, "predicted_mask_path")
		pp, err := readPlane(path)
		if err != nil {
			p.Addf("row %q: %v.", id, err)
			continue
		}
		if pp.C != 1 {
			p.Addf("row %q: %s has %d channels; an instance mask has one.", id, s.Value(id, "predicted_mask_path"), pp.C)
			continue
		}
		gp, err := readPlane(gtPath[id])
		if err != nil {
			return nil, fmt.Errorf("grade: neurips-cellseg answers: %w", err)
		}
		gt, pred := gp.int32s(), pp.int32s()
		if pp.W != gp.W || pp.H != gp.H {
			u := make([]uint16, len(pred))
			for i, v := range pred {
				u[i] = uint16(v)
			}
			u = resizeNearestPIL(u, pp.W, pp.H, gp.W, gp.H)
			pred = make([]int32, len(u))
			for i, v := range u {
				pred[i] = int32(v)
			}
		}
		res, err := metrics.CellSegF1(gt, pred, gp.W, gp.H, th)
		if err != nil {
			p.Addf("row %q: %s: %v.", id, s.Value(id, "predicted_mask_path"), err)
			continue
		}
		for k := range th {
			sums[k] += res[k].F1
		}
		n++
	}
	if !p.Empty() {
		return Invalid(p.List()), nil
	}
	m := map[string]float64{}
	for k, t := range th {
		m[fmt.Sprintf("f1_%.1f", t)] = sums[k] / float64(n)
	}
	return Finish("neurips-cellseg", "f1_0.5", m)
}
