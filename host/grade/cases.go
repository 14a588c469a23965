package grade

import "context"

// fileCases is the common shape of graders whose submission names one prediction file per
// test case: the answers' test_labels.csv maps each ID to a ground-truth file, and
// submission.csv maps each ID to a prediction file in column col.
type fileCases struct {
	ids []string          // test IDs, in the answers' order
	gt  map[string]string // ID → ground-truth path
	sub *Submission
	col string
	p   Problems
}

// openFileCases reads the answers (columns idCol and gtCol) and the submission (idCol and
// the file column col, with accepted extensions exts, nil for any). When the submission
// is unusable it returns the invalid result to report instead.
func openFileCases(subDir, ansDir, idCol, gtCol, col string, exts []string) (*fileCases, *Result, error) {
	at, ids, err := ReadAnswers(ansDir, idCol, gtCol)
	if err != nil {
		return nil, nil, err
	}
	c := &fileCases{ids: ids, gt: answerPaths(at, ids, gtCol, ansDir), col: col}
	c.sub = ReadSubmission(subDir, Spec{IDColumn: idCol, FileColumns: []string{col}, Exts: exts}, ids, &c.p)
	if c.sub == nil || !c.sub.Table.Has(col) || !c.sub.Table.Has(idCol) {
		return nil, Invalid(c.p.List()), nil
	}
	return c, nil, nil
}

// each calls fn, in test order, for every case whose prediction file exists (a missing
// one is already among the problems). It stops at the first error of fn or of ctx.
func (c *fileCases) each(ctx context.Context, fn func(id, pred, gt string) error) error {
	for _, id := range c.ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, ok := c.sub.Row[id]; !ok || !fileExists(c.sub.File(id, c.col)) {
			continue
		}
		if err := fn(id, c.sub.File(id, c.col), c.gt[id]); err != nil {
			return err
		}
	}
	return nil
}
