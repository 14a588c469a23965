package predict

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/export"
	"amid/host/task"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/source"
	"amid/viewer/dicom/sr"
)

// SaveMeasurements keeps a reader's measurements on one predicted case of the predict
// run in out with its review: measurements/ID.json beside review.json (the newest
// replaces the one before) and, when the case's image is DICOM, measurements/ID.dcm, a
// structured report of them on the source series (TID 1500 measurement groups, the
// reader its observer). The run's audit log records them (action review.measured, role
// user) as Review records a decision: the case by its place in results.json, the files by
// sha256, and how many measurements of each kind, never a value or a coordinate.
func SaveMeasurements(out string, m *export.Measurements) error {
	res, k, err := predictedCase(out, m.Case)
	if err != nil {
		return err
	}
	c := res.Cases[k]
	if m.Time.IsZero() {
		m.Time = time.Now().UTC()
	}
	outs := map[string]string{}
	srPath := filepath.Join(out, export.MeasurementsDir, m.Case+".dcm")
	// The report first: a measurement its image refuses saves nothing.
	var report *dataset.File
	t, err := PackageTask(res.Package)
	if err != nil {
		return fmt.Errorf("review: case %s's task: %w", m.Case, err)
	}
	if tc, ok := caseOf(t, c.Inputs); ok && dicomInput(tc) && len(m.Measurements) > 0 {
		if report, err = measurementsSR(t, c, m, out); err != nil {
			return fmt.Errorf("review: case %s's measurements as a DICOM SR: %w", m.Case, err)
		}
	}
	log, err := audit.Open(filepath.Join(out, fileAuditDB))
	if err != nil {
		return fmt.Errorf("review: %w", err)
	}
	defer log.Close()
	_, sum, err := export.SaveMeasurements(out, m)
	if err != nil {
		return err
	}
	outs["measurements"] = sum // the file is named by the case: its sha256 alone
	if report != nil {
		if err := dataset.WriteFile(srPath, report); err != nil {
			return fmt.Errorf("review: case %s's measurements as a DICOM SR: %w", m.Case, err)
		}
		if outs["measurements_sr"], err = fileio.PathSHA256(srPath); err != nil {
			return fmt.Errorf("review: %w", err)
		}
	} else if err := os.Remove(srPath); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("review: case %s's earlier measurements report: %w", m.Case, err)
	}
	details, err := json.Marshal(map[string]any{"case": k + 1, "reviewer": m.Reviewer, "count": len(m.Measurements), "kinds": m.Counts()})
	if err != nil {
		return err
	}
	if _, err := log.Append(audit.Entry{Role: audit.RoleUser, Action: export.ActionReviewMeasured, Outputs: outs, Details: details}); err != nil {
		return fmt.Errorf("review: %w", err)
	}
	return exportLog(log, out)
}

// Measurements are the measurements kept with the review of case id of the predict run in
// out: nil when none were saved; a file that no longer reads is an error in one sentence.
func Measurements(out, id string) (*export.Measurements, error) {
	return export.ReadMeasurements(out, id)
}

// MeasurementsSR is the path of case id's measurements as a DICOM SR in the predict run
// out ("" when there is none).
func MeasurementsSR(out, id string) string {
	p := filepath.Join(out, export.MeasurementsDir, id+".dcm")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// caseOf is the one case the inputs give.
func caseOf(t *task.Task, inputs []string) (task.Case, bool) {
	cases, _, err := t.Inputs(inputs)
	if err != nil || len(cases) != 1 {
		return task.Case{}, false
	}
	return cases[0], true
}

// measurementsSR is the structured report of measurements m on case c's DICOM series.
func measurementsSR(t *task.Task, c CaseResult, m *export.Measurements, out string) (*dataset.File, error) {
	tmp, err := os.MkdirTemp(out, ".series-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	images, err := caseImages(t, c.Inputs, tmp)
	if err != nil {
		return nil, err
	}
	grid, src, err := source.Image(images[0])
	if err != nil {
		return nil, err
	}
	groups, err := export.MeasuredSR(grid, m)
	if err != nil {
		return nil, err
	}
	return sr.Encode(&sr.Report{Measured: groups}, grid, src, sr.Options{
		SeriesDescription: "AMID " + t.ID + " measurements",
		SeriesNumber:      9004, // the model's own report is series 9003 (sr.Options' default)
		Reader:            cmp.Or(strings.TrimSpace(m.Reviewer), "Reader"),
		Created:           m.Time,
	})
}
