package grade

import (
	"context"
	"math"
	"strconv"
	"strings"

	"amid/plugins/metrics"
)

func init() { Register("ldct-iqa", GraderFunc(gradeLDCT)) }

// gradeLDCT grades LDCT-IQA (rexmle.md §6.13): submission.csv image_id,quality_score with
// one numeric score per test image (an empty cell is NaN, as pandas reads it); score =
// |PLCC| + |SROCC| + |KROCC| over all test images against answers test_labels.csv
// (image_id, quality_score). A constant prediction gives NaN correlations and a NaN
// score, as scipy does.
func gradeLDCT(ctx context.Context, subDir, ansDir string, _ Options) (*Result, error) {
	at, ids, err := ReadAnswers(ansDir, "image_id", "quality_score")
	if err != nil {
		return nil, err
	}
	gtCol, _ := at.Column("quality_score")
	gt := make([]float64, len(gtCol))
	for i, s := range gtCol {
		if gt[i], err = parsePandasFloat(s); err != nil {
			return nil, err
		}
	}
	var p Problems
	s := ReadSubmission(subDir, Spec{IDColumn: "image_id", Columns: []string{"quality_score"}}, ids, &p)
	if s == nil || !s.Table.Has("quality_score") || !s.Table.Has("image_id") {
		return Invalid(p.List()), nil
	}
	var bad []string
	pred := make([]float64, len(ids))
	for i, id := range ids {
		if _, ok := s.Row[id]; !ok {
			continue
		}
		v, err := parsePandasFloat(s.Value(id, "quality_score"))
		if err != nil {
			bad = append(bad, id)
		}
		pred[i] = v
	}
	if len(bad) > 0 {
		p.Addf("quality_score is not a number for %d IDs: %s.", len(bad), listIDs(bad))
	}
	if !p.Empty() {
		return Invalid(p.List()), nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	score, plcc, srocc, krocc := metrics.LDCTScore(pred, gt)
	return Finish("ldct-iqa", "score", map[string]float64{"score": score, "plcc": plcc, "srocc": srocc, "krocc": krocc})
}

// parsePandasFloat parses a numeric CSV cell as pandas does: empty → NaN, "nan"/"inf"
// spellings accepted.
func parsePandasFloat(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return math.NaN(), nil
	}
	return strconv.ParseFloat(t, 64)
}
