package run

import (
	"fmt"
	"os"
	"path/filepath"

	"amid/host/audit"
	"amid/plugins/taskspec"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/seg"
	"amid/viewer/dicom/source"
	"amid/viewer/fileio"
	"amid/viewer/imageio"
)

// dicomTest reports whether the test predictions are also written as DICOM SEG: a
// segmentation of classes whose test cases' images are all DICOM.
func (r *Runner) dicomTest() bool {
	if r.task.Kind != taskspec.Segmentation || r.task.Instances || len(r.data.Test) == 0 {
		return false
	}
	for _, c := range r.data.Test {
		if len(c.Images) == 0 {
			return false
		}
		if f, err := imageio.FormatOf(c.Images[0]); err != nil || f != imageio.DICOM {
			return false
		}
	}
	return true
}

// segLabels are the task's labels as segments, with their codes.
func segLabels(labels []taskspec.Label) []seg.Label {
	var out []seg.Label
	for _, l := range labels {
		if l.Value == 0 {
			continue
		}
		out = append(out, seg.Label{Value: l.Value, Name: l.Name,
			Type:     seg.Code{Value: l.Code.Value, Scheme: l.Code.Scheme, Meaning: l.Code.Meaning},
			Category: seg.Code{Value: l.Category.Value, Scheme: l.Category.Scheme, Meaning: l.Category.Meaning}})
	}
	return out
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
	labels := segLabels(r.task.Labels)
	for _, c := range r.data.Test {
		files := preds[c.ID]
		if len(files) == 0 {
			return fmt.Errorf("no test prediction for case %s", c.ID)
		}
		lab, err := imageio.Read(files[0])
		if err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
		_, src, err := source.Image(c.Images[0])
		if err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
		f, err := seg.Encode(lab, src, labels, seg.Options{
			SeriesDescription: "AMID " + r.task.ID + " prediction",
			Algorithm:         "AMID " + r.st.Chosen,
			SoftwareVersion:   Version,
			Created:           r.st.Created,
		})
		if err != nil {
			return fmt.Errorf("case %s: the DICOM SEG of its prediction: %w", c.ID, err)
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
