// Package submit assembles a task's submission folder, the folder the challenge's grader
// reads, from the prediction files plugins write in the canonical forms of
// amid/plugins/taskspec (a label image, an image, or an Annotation JSON per case).
//
// The folder holds the manifest t.Submission.CSV with t.Submission.Columns in order (the
// case id, the prediction file's path relative to the folder, or the value itself for an
// image-quality score, and the constant columns) and, for file columns, one file per case
// at t.Submission.Path:
//
//   - images are written again in the format of the path's suffix (.nii.gz, .mha,
//     .seg.nrrd, .tif, .png, …) on the grid of the case's first input image (its dims,
//     spacing, origin and direction); a segmentation is stored as integers, every value
//     one of the task's labels;
//   - annotations are written in AMID's own annotation JSON (format annotation, the
//     default of a detection, classification or image-quality task: the canonical
//     taskspec.Annotation the plugin wrote, checked against the task and written again
//     with its keys in order; the README's "AMID's annotation format" describes it), or
//     in a challenge's JSON by t.Submission.Format: dentex-json
//     (a list of detections with image_id, bbox [x, y, w, h], category_id_1/2/3 and
//     score), puma-json ({"nuclei": [{"centroid", "class", "confidence"}]}),
//     topcow-box-json ({"size", "location"}, location the minimum corner) and
//     topcow-edges-json ({"anterior": {...}, "posterior": {...}} of 0/1 values), or as the
//     dataset's own boxes were: yolo (class cx cy w h score, normalised) or voc (Pascal
//     VOC XML), each on its case's first image;
//   - a classification's class table (format csv) has no files: the manifest holds, for
//     each case, each attribute's predicted class name and each class's probability, in
//     the columns task.Submission.ClassColumns names.
//
// Write checks that every test case has exactly one prediction, that no two case ids read
// alike once the grader's CSV reader has parsed them, and reads the result back as the
// grader does. It builds the folder beside its destination and renames it into place, so
// a failure or a crash never leaves half a submission.
package submit

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"amid/host/grade"
	"amid/host/task"
	"amid/plugins/taskspec"
)

// Prediction is one test case's prediction.
type Prediction struct {
	CaseID string
	// File is the plugin's canonical prediction file.
	File string
	// Images are the case's input images, for geometry; when empty, those of the test
	// case are used.
	Images []string
}

// Submission formats of annotation predictions (task.Submission.Format).
const (
	FormatDENTEX     = "dentex-json"
	FormatPUMA       = "puma-json"
	FormatTopCoWBox  = "topcow-box-json"
	FormatTopCoWEdge = "topcow-edges-json"
	// FormatAnnotation is AMID's own annotation JSON (taskspec.Annotation), the default
	// for a task whose predictions are annotations.
	FormatAnnotation = "annotation"
	// FormatImage is an image by the path's suffix, the default for a task whose
	// predictions are images.
	FormatImage = "image"
	// FormatClassTable is a classification's class table (task.SubmitClassTable): no
	// files; a row a case with its id, each attribute's class name and each class's
	// probability.
	FormatClassTable = task.SubmitClassTable
	// FormatYOLO is a YOLO .txt a case, a line a box: class cx cy w h score, normalised
	// to the image, class the label source's YOLO class id (data.train.label.classes).
	FormatYOLO = "yolo"
	// FormatVOC is a Pascal VOC XML a case: its image's size, and an object a box with
	// its class name, its bndbox in whole pixels and its score.
	FormatVOC = "voc"
)

// jsonFormats are the formats of annotation predictions (JSON, and YOLO and VOC files).
var jsonFormats = []string{FormatAnnotation, FormatDENTEX, FormatPUMA, FormatTopCoWBox, FormatTopCoWEdge, FormatYOLO, FormatVOC}

// DefaultFormat is the submission format of a task that names none: images for a
// segmentation or enhancement task, AMID's annotation JSON for the others.
func DefaultFormat(t *task.Task) string {
	if t.Spec().Output == ".json" {
		return FormatAnnotation
	}
	return FormatImage
}

// ErrSubmission marks predictions that cannot make a valid submission.
var ErrSubmission = errors.New("cannot make the submission")

func fail(format string, args ...any) error {
	return fmt.Errorf("submit: %w: %s", ErrSubmission, fmt.Sprintf(format, args...))
}

// Write writes the submission of task t for the test cases test, from preds (one per test
// case), into the folder dir, replacing what dir held.
func Write(ctx context.Context, t *task.Task, test []task.Case, preds []Prediction, dir string) error {
	s := t.Submission
	format := s.Format
	if format == "" {
		format = DefaultFormat(t)
	}
	if !slices.Contains(jsonFormats, format) && format != FormatImage && format != FormatClassTable {
		return fail("submission.format %q is not one of %v, %s or %s", s.Format, jsonFormats, FormatImage, FormatClassTable)
	}
	if (format == FormatImage) != (DefaultFormat(t) == FormatImage) && s.FileColumn != "" {
		if format == FormatImage {
			return fail("a %s task's predictions are annotations, not images: submission.format %q must be one of %v", t.Kind, s.Format, jsonFormats)
		}
		return fail("a %s task's predictions are images: submission.format %q must be %s", t.Kind, s.Format, FormatImage)
	}
	if (format == FormatYOLO || format == FormatVOC) && (t.Kind != taskspec.Detection || t.Dims != 2) {
		return fail("submission.format %s is a 2D detection's boxes; this is a %dD %s task", format, t.Dims, t.Kind)
	}
	var cols map[string]task.ClassColumn
	if format == FormatClassTable {
		if t.Kind != taskspec.Classification || s.FileColumn != "" {
			return fail("submission.format %s is a classification's class table, without a file column", FormatClassTable)
		}
		var err error
		if cols, err = s.ClassColumns(t.Attributes); err != nil {
			return fail("%v", err)
		}
	} else if s.FileColumn == "" && s.ValueColumn == "" {
		return fail("the task's submission has neither a file column nor a value column")
	}
	byID, err := match(test, preds)
	if err != nil {
		return err
	}
	csvName := s.CSV
	if csvName == "" {
		csvName = grade.SubmissionCSV
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = os.RemoveAll(tmp)
		}
	}()
	w := &writer{t: t, spec: t.Spec(), format: format, dir: tmp, cols: cols}
	rows := make([][]string, 0, len(test))
	for _, c := range test {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := byID[c.ID]
		if len(p.Images) == 0 {
			p.Images = c.Images
		}
		row, err := w.row(p)
		if err != nil {
			return err
		}
		rows = append(rows, row)
	}
	if format == FormatDENTEX && w.detections == 0 {
		return fail("no case has a detection; the DENTEX grader rejects a submission without any")
	}
	if err := writeCSV(filepath.Join(tmp, filepath.FromSlash(csvName)), s.Columns, rows); err != nil {
		return err
	}
	if err := selfCheck(tmp, csvName, s); err != nil {
		return err
	}
	if err := install(tmp, dir); err != nil {
		return err
	}
	done = true
	return nil
}

// match pairs every test case with exactly one prediction.
func match(test []task.Case, preds []Prediction) (map[string]Prediction, error) {
	want := make(map[string]bool, len(test))
	for _, c := range test {
		if want[c.ID] {
			return nil, fail("test case %s appears twice", c.ID)
		}
		want[c.ID] = true
	}
	byID := make(map[string]Prediction, len(preds))
	var extra []string
	for _, p := range preds {
		if _, dup := byID[p.CaseID]; dup {
			return nil, fail("case %s has more than one prediction", p.CaseID)
		}
		if !want[p.CaseID] {
			extra = append(extra, p.CaseID)
		}
		byID[p.CaseID] = p
	}
	var missing []string
	for _, c := range test {
		if _, ok := byID[c.ID]; !ok {
			missing = append(missing, c.ID)
		}
	}
	switch {
	case len(missing) > 0:
		return nil, fail("%d test cases have no prediction: %s", len(missing), list(missing))
	case len(extra) > 0:
		return nil, fail("%d predictions are for cases outside the test set: %s", len(extra), list(extra))
	}
	return byID, nil
}

func list(ids []string) string {
	slices.Sort(ids)
	if len(ids) > 10 {
		return strings.Join(ids[:10], ", ") + fmt.Sprintf(" and %d more", len(ids)-10)
	}
	return strings.Join(ids, ", ")
}

// writer converts one prediction at a time into the temporary folder.
type writer struct {
	t          *task.Task
	spec       *taskspec.Spec
	format     string
	dir        string
	detections int
	cols       map[string]task.ClassColumn // a class table's columns
}

// row writes p's file (if any) and returns its CSV row.
func (w *writer) row(p Prediction) ([]string, error) {
	s := w.t.Submission
	if w.format == FormatClassTable {
		return w.classRow(p)
	}
	var rel, value string
	if s.FileColumn != "" {
		rel = strings.ReplaceAll(s.Path, "{id}", p.CaseID)
		dst := filepath.Join(w.dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, fmt.Errorf("submit: %w", err)
		}
		var err error
		if w.format == FormatImage {
			err = w.image(p, dst)
		} else {
			err = w.annotation(p, dst)
		}
		if err != nil {
			return nil, err
		}
	}
	if s.ValueColumn != "" {
		a, err := taskspec.ReadAnnotation(p.File, w.spec)
		if err != nil {
			return nil, fail("case %s: %v", p.CaseID, err)
		}
		if a.Score == nil {
			return nil, fail("case %s: %s has no score", p.CaseID, p.File)
		}
		value = strconv.FormatFloat(*a.Score, 'g', -1, 64)
	}
	row := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		switch c {
		case s.IDColumn:
			row[i] = p.CaseID
		case s.FileColumn:
			row[i] = rel
		case s.ValueColumn:
			row[i] = value
		default:
			row[i] = s.Const[c]
		}
	}
	return row, nil
}

// classRow is p's row of a class table: the id, each attribute's predicted class name
// and each class's probability (the plugin's, else 1 for the predicted class and 0 for
// the others; a multi-label attribute's findings each their own probability), and the
// constant columns.
func (w *writer) classRow(p Prediction) ([]string, error) {
	s := w.t.Submission
	a, err := taskspec.ReadAnnotation(p.File, w.spec)
	if err != nil {
		return nil, fail("case %s: %v", p.CaseID, err)
	}
	row := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		cc, ok := w.cols[c]
		switch {
		case c == s.IDColumn:
			row[i] = p.CaseID
		case !ok:
			row[i] = s.Const[c]
		default:
			at, _ := w.spec.Attribute(cc.Attr)
			if at.MultiLabel {
				v, err := findingProb(a, at, cc.Class)
				if err != nil {
					return nil, fail("case %s: the prediction %s %v", p.CaseID, p.File, err)
				}
				row[i] = strconv.FormatFloat(v, 'g', -1, 64)
				continue
			}
			k, ok := a.Classes[cc.Attr]
			if !ok {
				return nil, fail("case %s: the prediction %s has no class for attribute %s", p.CaseID, p.File, cc.Attr)
			}
			if cc.Class < 0 {
				row[i] = at.Classes[k]
				continue
			}
			v := 0.0
			if probs, ok := a.Probs[cc.Attr]; ok {
				v = probs[cc.Class]
			} else if k == cc.Class {
				v = 1
			}
			row[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
	}
	return row, nil
}

// findingProb is a multi-label prediction's probability of finding k of attribute at:
// the plugin's, else 1 where the prediction holds the finding and 0 where not.
func findingProb(a *taskspec.Annotation, at taskspec.Attribute, k int) (float64, error) {
	if p, ok := a.Probs[at.Name]; ok {
		return p[k], nil
	}
	f, ok := a.Findings[at.Name]
	if !ok {
		return 0, fmt.Errorf("has neither probabilities nor findings of %s", at.Name)
	}
	if f[k] == taskspec.FindingPresent {
		return 1, nil
	}
	return 0, nil
}

func writeCSV(path string, header []string, rows [][]string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	cw := csv.NewWriter(f)
	_ = cw.Write(header)
	_ = cw.WriteAll(rows)
	if err := cw.Error(); err != nil {
		f.Close()
		return fmt.Errorf("submit: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("submit: %s: %w", path, err)
	}
	return nil
}

// selfCheck reads the manifest back as the graders read it: the ids, as pandas parses the
// column, must stay distinct, and (for the standard manifest name) every file must be a
// regular file inside the folder.
func selfCheck(dir, csvName string, s task.Submission) error {
	tab, err := grade.ReadTable(filepath.Join(dir, filepath.FromSlash(csvName)))
	if err != nil {
		return fmt.Errorf("submit: reading the manifest back: %w", err)
	}
	ids, _ := tab.IDStrings(s.IDColumn)
	raw, _ := tab.Column(s.IDColumn)
	seen := make(map[string]string, len(ids))
	for i, id := range ids {
		if prev, dup := seen[id]; dup {
			return fail("cases %s and %s both read as id %s in the grader's CSV reader", prev, raw[i], id)
		}
		seen[id] = raw[i]
	}
	if csvName != grade.SubmissionCSV {
		return nil
	}
	var p grade.Problems
	spec := grade.Spec{IDColumn: s.IDColumn}
	if s.FileColumn != "" {
		spec.FileColumns = []string{s.FileColumn}
	}
	grade.ReadSubmission(dir, spec, ids, &p)
	if !p.Empty() {
		return fail("the written submission breaks the grader's rules: %s", strings.Join(p.List(), " "))
	}
	return nil
}

// install moves the finished folder tmp to dir, replacing dir.
func install(tmp, dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.Rename(tmp, dir); err != nil {
			return fmt.Errorf("submit: %w", err)
		}
		return nil
	}
	old, err := os.MkdirTemp(filepath.Dir(tmp), "."+filepath.Base(dir)+".old-")
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	// a unique name beside dir: the placeholder goes, the old submission takes its name
	if err := os.Remove(old); err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	if err := os.Rename(dir, old); err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.Rename(old, dir)
		return fmt.Errorf("submit: %w", err)
	}
	if err := os.RemoveAll(old); err != nil {
		return fmt.Errorf("submit: the previous submission stays at %s: %w", old, err)
	}
	return nil
}
