package run

import (
	"fmt"
	"os"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/predict"
	"amid/viewer/dicom/dataset"
)

// dicomTest is the kind of DICOM object (predict.ObjectKind) the test predictions are
// also written as: a segmentation's SEG, a detection's, classification's or image-quality
// score's structured report, an enhancement's derived series, when every test case's
// images are DICOM; "" otherwise.
func (r *Runner) dicomTest() string {
	if len(r.data.Test) == 0 {
		return ""
	}
	kind := predict.ObjectKind(r.task, r.data.Test[0])
	for _, c := range r.data.Test[1:] {
		if predict.ObjectKind(r.task, c) != kind {
			return ""
		}
	}
	return kind
}

// objectNames are the kinds of DICOM object as the log and reports say them.
var objectNames = map[string]string{predict.ObjectSEG: "DICOM SEG", predict.ObjectSR: "DICOM SR", predict.ObjectDerived: "derived DICOM series"}

// writeDICOM writes each test case's prediction as the DICOM objects of kind (dicomTest)
// into final/dicom/ (predict.ObjectPath: ID.dcm, a derived series' folder ID/), each
// referencing the case's source series as `amid predict` writes them (predict.Objects);
// conf are the cases' finite confidences, which a structured report states. In a de-identified
// run the objects go through the Basic Profile first (amid/viewer/dicom/deid).
func (r *Runner) writeDICOM(kind string, preds map[string][]string, conf map[string]float64) error {
	dir := r.path("final", "dicom")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	n := predict.Naming{Task: r.task.ID, Lane: r.st.Chosen, Version: Version, Created: r.st.Created,
		DeviceUID: dataset.UIDFrom("amid run", r.st.ID+" "+r.st.Created.String())}
	if l := r.st.lane(r.st.Chosen); l != nil {
		n.Plugin = l.Plugin
	}
	objects := 0
	for _, c := range r.data.Test {
		files := preds[c.ID]
		if len(files) == 0 {
			return fmt.Errorf("no test prediction for case %s", c.ID)
		}
		var sure *float64
		if v, ok := conf[c.ID]; ok {
			sure = &v
		}
		fs, _, err := predict.Objects(r.task, c, files[0], sure, n)
		if err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
		for _, f := range fs {
			if r.st.Deidentify {
				if err := r.deidentifyObject(f, c.ID); err != nil {
					return fmt.Errorf("case %s: %w", c.ID, err)
				}
			}
		}
		paths, err := predict.WriteObjects(dir, kind, c.ID, fs)
		if err != nil {
			return err
		}
		objects += len(paths)
	}
	sum, err := fileio.PathSHA256(dir)
	if err != nil {
		return err
	}
	r.logf("the test predictions were written as %s too (%d objects)", objectNames[kind], objects)
	return r.record(audit.RoleHost, "dicom.written", nil, map[string]string{"dicom": sum},
		map[string]any{"kind": kind, "objects": objects, "transfer_syntax": dataset.ExplicitVRLittleEndian, "deidentified": r.st.Deidentify})
}
