package predict

import (
	"archive/zip"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/export"
	"amid/host/task"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/seg"
)

// FileReview holds the decisions a reader made on a predict run's cases (every decision
// in the order made: export.ReadDecisions gives the newest per case).
const FileReview = "review.json"

// Review records a reader's decision on one predicted case of the predict run in out
// (Apply's output folder): it is appended to review.json and to the run's own audit log
// (action review.decision, role user), whose export audit.jsonl is written again. As
// Apply's entries, the audit entry names the case by its place in results.json and its
// prediction files by sha256, never by a name or identifier; the decision, reviewer and
// note are the reader's own words.
func Review(out string, d export.Decision) error {
	if err := d.Check(); err != nil {
		return err
	}
	res, k, err := predictedCase(out, d.Case)
	if err != nil {
		return err
	}
	c := res.Cases[k]
	in := map[string]string{}
	for i, p := range c.Predictions {
		s, err := fileio.PathSHA256(filepath.Join(out, p))
		if err != nil {
			return fmt.Errorf("review: case %s: %w", d.Case, err)
		}
		in[fmt.Sprintf("prediction%d", i+1)] = s
	}
	dicom := map[string]string{"seg": c.SEG, "sr": c.SR}
	if c.Derived != "" {
		ents, err := os.ReadDir(filepath.Join(out, c.Derived))
		if err != nil {
			return fmt.Errorf("review: case %s: %w", d.Case, err)
		}
		for i, e := range ents {
			dicom[fmt.Sprintf("derived%d", i+1)] = filepath.Join(c.Derived, e.Name())
		}
	}
	for key, rel := range dicom {
		if rel == "" {
			continue
		}
		s, err := fileio.PathSHA256(filepath.Join(out, rel))
		if err != nil {
			return fmt.Errorf("review: case %s: %w", d.Case, err)
		}
		in[key] = s
	}
	if d.Time.IsZero() {
		d.Time = time.Now().UTC()
	}
	outs := map[string]string{}
	var changes any
	if d.Decision == export.Corrected {
		var rec export.CorrectionRecord
		var err error
		if export.IsAnnotationCorrection(d) {
			var t *task.Task
			if t, err = PackageTask(res.Package); err != nil {
				return fmt.Errorf("review: case %s's task: %w", d.Case, err)
			}
			rec, err = export.RecordAnnotationCorrection(out, d, filepath.Join(out, c.Predictions[0]), t.Spec())
		} else {
			rec, err = export.RecordCorrection(out, d, filepath.Join(out, c.Predictions[0]))
		}
		if err != nil {
			return err
		}
		outs["correction"], changes = rec.SHA256, rec.Counts()
		if c.SEG != "" && !export.IsAnnotationCorrection(d) {
			// What goes back to the PACS: the correction as a DICOM SEG beside it.
			sum, err := correctionSEG(out, res.Package, c, d)
			if err != nil {
				return fmt.Errorf("review: case %s's correction: %w", d.Case, err)
			}
			outs["correction_seg"] = sum
		}
	}
	log, err := audit.Open(filepath.Join(out, fileAuditDB))
	if err != nil {
		return fmt.Errorf("review: %w", err)
	}
	defer log.Close()
	sum, err := export.AppendDecision(filepath.Join(out, FileReview), d)
	if err != nil {
		return fmt.Errorf("review: %w", err)
	}
	outs[FileReview] = sum
	det := map[string]any{"case": k + 1, "decision": d.Decision, "reviewer": d.Reviewer, "note": d.Note}
	if changes != nil {
		det["changes"] = changes // the correction's file is named by the case: its sha256 alone
	}
	details, err := json.Marshal(det)
	if err != nil {
		return err
	}
	if _, err := log.Append(audit.Entry{Role: audit.RoleUser, Action: audit.ActionReviewDecision, Inputs: in,
		Outputs: outs, Details: details}); err != nil {
		return fmt.Errorf("review: %w", err)
	}
	return exportLog(log, out)
}

// predictedCase reads the results of the predict run in out and finds case id among them,
// which must have a prediction; k is its place in results.json.
func predictedCase(out, id string) (res *Result, k int, err error) {
	res = &Result{}
	if err := fileio.ReadJSON(filepath.Join(out, FileResults), res); err != nil {
		return nil, 0, fmt.Errorf("review: %s is not a finished predict run: %w", out, err)
	}
	k = slices.IndexFunc(res.Cases, func(c CaseResult) bool { return c.ID == id })
	if k < 0 || len(res.Cases[k].Predictions) == 0 {
		return nil, 0, fmt.Errorf("review: case %s has no prediction in %s", id, out)
	}
	return res, k, nil
}

// Decisions are the newest review decision on each case of the predict run in out.
func Decisions(out string) ([]export.Decision, error) {
	return export.ReadDecisions(filepath.Join(out, FileReview))
}

// correctionSEG writes the correction of decision d on case c, whose input is DICOM, as a
// DICOM SEG beside it (corrections/ID.dcm: the segments the reader drew, SEMIAUTOMATIC)
// and returns its sha256. The task's labels come from the package pkg, a folder or its zip.
func correctionSEG(out, pkg string, c CaseResult, d export.Decision) (string, error) {
	t, err := PackageTask(pkg)
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(out, ".series-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	images, err := caseImages(t, c.Inputs, tmp)
	if err != nil {
		return "", err
	}
	f, err := SEG(t, images[0], filepath.Join(out, d.Correction), seg.Options{
		SeriesDescription: "AMID " + t.ID + " prediction, corrected",
		Algorithm:         "AMID, corrected by " + cmp.Or(d.Reviewer, "a reader"),
		Corrected:         true,
		Created:           d.Time,
	})
	if err != nil {
		return "", err
	}
	path := strings.TrimSuffix(filepath.Join(out, d.Correction), ".nii.gz") + ".dcm"
	if err := dataset.WriteFile(path, f); err != nil {
		return "", err
	}
	return fileio.PathSHA256(path)
}

// CaseImages are the images a predict run read for the case whose inputs are given (a
// CaseResult's Inputs), with the package pkg (a folder or its zip): each DICOM series the
// task's selector chose in a study folder is linked alone under dir (which the caller
// removes), so that a reader of the image sees that series, as the model did.
func CaseImages(pkg string, inputs []string, dir string) ([]string, error) {
	t, err := PackageTask(pkg)
	if err != nil {
		return nil, err
	}
	return caseImages(t, inputs, dir)
}

func caseImages(t *task.Task, inputs []string, dir string) ([]string, error) {
	cases, _, err := t.Inputs(inputs)
	if err != nil {
		return nil, err
	}
	if len(cases) != 1 || len(cases[0].Images) == 0 {
		return nil, fmt.Errorf("the inputs %s no longer give one case", strings.Join(inputs, ", "))
	}
	ds := &task.Dataset{Test: cases}
	if err := ds.LinkSeries(dir); err != nil {
		return nil, err
	}
	return ds.Test[0].Images, nil
}

// PackageTask is the task of the package pkg: a folder, or its zip (whose one top folder
// holds task.yaml).
func PackageTask(pkg string) (*task.Task, error) {
	if st, err := os.Stat(pkg); err == nil && st.IsDir() {
		p, err := Open(pkg)
		if err != nil {
			return nil, err
		}
		return p.Task, nil
	}
	zr, err := zip.OpenReader(pkg)
	if err != nil {
		return nil, fmt.Errorf("the package %s: %w", pkg, err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if top, name, ok := strings.Cut(f.Name, "/"); ok && top != "" && name == export.FileTask {
			r, err := f.Open()
			if err != nil {
				return nil, err
			}
			b, err := io.ReadAll(io.LimitReader(r, 1<<20))
			r.Close()
			if err != nil {
				return nil, err
			}
			return task.Parse(b)
		}
	}
	return nil, fmt.Errorf("the package %s holds no %s", pkg, export.FileTask)
}
