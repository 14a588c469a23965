package run

import (
	"fmt"
	"os"
	"path/filepath"

	"amid/host/audit"
	"amid/host/predict"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/seg"
	"amid/viewer/dicom/source"
	"amid/viewer/fileio"
)

// dicomTest reports whether the test predictions are also written as DICOM SEG: a
// segmentation of classes whose test cases' images are all DICOM.
func (r *Runner) dicomTest() bool {
	if len(r.data.Test) == 0 {
		return false
	}
	for _, c := range r.data.Test {
		if !predict.SEGable(r.task, c) {
			return false
		}
	}
	return true
}

// writeSEGs writes each test case's prediction as a DICOM SEG, final/dicom/<id>.dcm, that
// references the case's source series (see amid/viewer/dicom/seg); in a de-identified
// run the objects go through the Basic Profile first (amid/viewer/dicom/deid).
func (r *Runner) writeSEGs(preds map[string][]string) error {
	dir := r.path("final", "dicom")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range r.data.Test {
		files := preds[c.ID]
		if len(files) == 0 {
			return fmt.Errorf("no test prediction for case %s", c.ID)
		}
		f, err := predict.SEG(r.task, c.Images[0], files[0], seg.Options{
			SeriesDescription: "AMID " + r.task.ID + " prediction",
			Algorithm:         "AMID " + r.st.Chosen,
			SoftwareVersion:   Version,
			Created:           r.st.Created,
		})
		if err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
		if r.st.Deidentify {
			if err := r.deidentifyObject(f, c.ID); err != nil {
				return fmt.Errorf("case %s: %w", c.ID, err)
			}
		}
		if err := dataset.WriteFile(filepath.Join(dir, c.ID+".dcm"), f); err != nil {
			return err
		}
	}
	sum, err := fileio.PathSHA256(dir)
	if err != nil {
		return err
	}
	r.logf("the test predictions were written as DICOM SEG too (%d objects)", len(r.data.Test))
	return r.record(audit.RoleHost, "dicom.written", nil, map[string]string{"dicom": sum},
		map[string]any{"objects": len(r.data.Test), "sop_class": source.SegmentationStorage, "transfer_syntax": dataset.ExplicitVRLittleEndian, "deidentified": r.st.Deidentify})
}
