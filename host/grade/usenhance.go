package grade

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"amid/plugins/metrics"
)

func init() { Register("usenhance", GraderFunc(gradeUSenhance)) }

// gradeUSenhance grades USenhance (rexmle.md §6.14): submission.csv
// image_id,enhanced_image_path; answers test_labels.csv image_id,ground_truth_path. Each
// image is read as PIL's convert('L') gives it; a prediction of another size is resized to
// the GT's with cv2 INTER_LINEAR; LNCC, SSIM and PSNR (data range over both images) are
// averaged over the test images (PSNR of an identical image is +Inf, and so is its mean).
// As the grader does, a path that does not exist is retried without its first folder.
func gradeUSenhance(ctx context.Context, subDir, ansDir string, _ Options) (*Result, error) {
	at, ids, err := ReadAnswers(ansDir, "image_id", "ground_truth_path")
	if err != nil {
		return nil, err
	}
	gtPath := answerPaths(at, ids, "ground_truth_path", ansDir)
	var p Problems
	s := ReadSubmission(subDir, Spec{IDColumn: "image_id", Columns: []string{"enhanced_image_path"}}, ids, &p)
	if s == nil || !s.Table.Has("enhanced_image_path") || !s.Table.Has("image_id") {
		return Invalid(p.List()), nil
	}
	type pair struct{ pred, gt metrics.Image }
	pairs := make([]pair, 0, len(ids))
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, ok := s.Row[id]; !ok {
			continue
		}
		path, ok := usenhanceResolve(s, id, &p)
		if !ok {
			continue
		}
		pp, err := readPlane(path)
		if err != nil {
			p.Addf("row %q: %v.", id, err)
			continue
		}
		pred, err := pp.grayPIL()
		if err != nil {
			p.Addf("row %q: %s: %v.", id, path, err)
			continue
		}
		gp, err := readPlane(gtPath[id])
		if err != nil {
			return nil, fmt.Errorf("grade: usenhance answers: %w", err)
		}
		gt, err := gp.grayPIL()
		if err != nil {
			return nil, fmt.Errorf("grade: usenhance answers %s: %w", gtPath[id], err)
		}
		if pred.W != gt.W || pred.H != gt.H {
			pred = metrics.ResizeLinear(pred, gt.W, gt.H)
		}
		if gt.W < 7 || gt.H < 7 {
			p.Addf("row %q: the image is %d×%d, smaller than SSIM's 7×7 window.", id, gt.W, gt.H)
			continue
		}
		pairs = append(pairs, pair{pred, gt})
	}
	if !p.Empty() {
		return Invalid(p.List()), nil
	}
	var sl, ss, sp float64
	for _, q := range pairs {
		l, err := metrics.LNCC(q.pred, q.gt)
		if err != nil {
			return nil, err
		}
		dr := metrics.DataRange(q.pred, q.gt)
		sm, err := metrics.SSIM(q.pred, q.gt, dr)
		if err != nil {
			return nil, err
		}
		ps, err := metrics.PSNR(q.pred, q.gt, dr)
		if err != nil {
			return nil, err
		}
		sl += l
		ss += sm
		sp += ps
	}
	n := float64(len(pairs))
	return Finish("usenhance", "lncc", map[string]float64{"lncc": sl / n, "ssim": ss / n, "psnr": sp / n})
}

// usenhanceResolve finds the enhanced image of id, retrying without the first folder as
// the grader does, and records a problem when neither exists.
func usenhanceResolve(s *Submission, id string, p *Problems) (string, bool) {
	rel := s.Value(id, "enhanced_image_path")
	if !checkRelPath(id, "enhanced_image_path", rel, p) {
		return "", false
	}
	path := s.File(id, "enhanced_image_path")
	if fileExists(path) {
		return path, true
	}
	if parts := strings.Split(filepath.ToSlash(rel), "/"); len(parts) > 1 {
		alt := filepath.Join(s.Dir, filepath.FromSlash(strings.Join(parts[1:], "/")))
		if fileExists(alt) {
			return alt, true
		}
	}
	p.Addf("row %q: enhanced_image_path %q does not exist in the submission folder.", id, rel)
	return "", false
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// answerPaths maps each test id to the absolute path in column col of the answers.
func answerPaths(t *Table, ids []string, col, dir string) map[string]string {
	c, _ := t.Column(col)
	m := make(map[string]string, len(ids))
	for i, id := range ids {
		m[id] = filepath.Join(dir, filepath.FromSlash(c[i]))
	}
	return m
}
