package predict

import (
	"fmt"

	"amid/host/task"
	"amid/plugins/taskspec"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/seg"
	"amid/viewer/dicom/source"
	"amid/viewer/imageio"
)

// SEGLabels are the task's labels as segments, with their codes.
func SEGLabels(labels []taskspec.Label) []seg.Label {
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

// SEGable reports whether a case's prediction can be written as a DICOM SEG: a
// segmentation of classes (not instances) whose first image is DICOM.
func SEGable(t *task.Task, c task.Case) bool {
	return t.Kind == taskspec.Segmentation && !t.Instances && dicomInput(c)
}

// SEG encodes the label map pred, a prediction of the DICOM series image, as a DICOM SEG
// that references the series (see amid/viewer/dicom/seg).
func SEG(t *task.Task, image, pred string, o seg.Options) (*dataset.File, error) {
	lab, err := imageio.Read(pred)
	if err != nil {
		return nil, err
	}
	_, src, err := source.Image(image)
	if err != nil {
		return nil, err
	}
	f, err := seg.Encode(lab, src, SEGLabels(t.Labels), o)
	if err != nil {
		return nil, fmt.Errorf("the DICOM SEG of its prediction: %w", err)
	}
	return f, nil
}
