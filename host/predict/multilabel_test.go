package predict

import (
	"testing"

	"amid/host/task"
	"amid/plugins/taskspec"
	"amid/viewer/dicom/sr"
)

// TestMultiLabelSR: a multi-label prediction is reported as each finding Present or
// Absent, with the probability of that answer; a prediction without findings or
// probabilities is an error.
func TestMultiLabelSR(t *testing.T) {
	at := taskspec.Attribute{Name: "findings", Classes: []string{"Effusion", "Nodule"}, MultiLabel: true}
	tk := &task.Task{Kind: taskspec.Classification, Attributes: []taskspec.Attribute{at}}
	r, err := SRReport(tk, &taskspec.Annotation{Findings: map[string][]int{"findings": {1, 0}}, Probs: map[string][]float64{"findings": {0.75, 0.125}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := r.Evaluations
	// certainties: 0.75 that Effusion is present, 1 − 0.125 that Nodule is absent
	if len(e) != 2 || e[0].Name != OwnAttributeClass("findings", "Effusion") || e[0].Value != Present || *e[0].Certainty != 0.75 ||
		e[1].Value != Absent || *e[1].Certainty != 0.875 || e[1].Name != (sr.Code{Value: "findings=Nodule", Scheme: sr.OwnScheme, Meaning: "Nodule"}) {
		t.Errorf("evaluations %+v", e)
	}
	if r, err := SRReport(tk, &taskspec.Annotation{Findings: map[string][]int{"findings": {0, 1}}}, nil); err != nil || r.Evaluations[1].Value != Present || r.Evaluations[0].Certainty != nil {
		t.Errorf("findings alone: %+v %v", r, err)
	}
	if _, err := SRReport(tk, &taskspec.Annotation{}, nil); err == nil {
		t.Error("a prediction without findings is reported")
	}
}
