package predict

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"amid/host/task"
	"amid/plugins/taskspec"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/derived"
	"amid/viewer/dicom/seg"
	"amid/viewer/dicom/source"
	"amid/viewer/dicom/sr"
	"amid/viewer/imageio"
)

// dicomInput reports whether a case's first image is DICOM (a file or a series folder).
func dicomInput(c task.Case) bool {
	if len(c.Images) == 0 {
		return false
	}
	f, err := imageio.FormatOf(c.Images[0])
	return err == nil && f == imageio.DICOM
}

// SRable reports whether a case's prediction can be written as a DICOM structured report
// (amid/viewer/dicom/sr): a detection, classification or image-quality score whose first
// image is DICOM.
func SRable(t *task.Task, c task.Case) bool {
	switch t.Kind {
	case taskspec.Detection, taskspec.Classification, taskspec.IQA:
		return dicomInput(c)
	}
	return false
}

// Derivable reports whether a case's prediction can be written as a derived DICOM series
// (amid/viewer/dicom/derived): an enhanced image whose first image is DICOM.
func Derivable(t *task.Task, c task.Case) bool {
	return t.Kind == taskspec.Enhancement && dicomInput(c)
}

// SR encodes the annotation pred (the plugin's JSON, read by taskspec.ReadAnnotation
// against the task), a prediction of the DICOM series image, as a structured report that
// references the series; confidence is the case's (Predicted.Confidence; nil when the
// plugin gives none).
func SR(t *task.Task, image, pred string, confidence *float64, o sr.Options) (*dataset.File, error) {
	a, err := taskspec.ReadAnnotation(pred, t.Spec())
	if err != nil {
		return nil, err
	}
	r, err := SRReport(t, a, confidence)
	if err != nil {
		return nil, err
	}
	grid, src, err := source.Image(image)
	if err != nil {
		return nil, err
	}
	f, err := sr.Encode(r, grid, src, o)
	if err != nil {
		return nil, fmt.Errorf("the DICOM SR of its prediction: %w", err)
	}
	return f, nil
}

// SRReport is a prediction as a structured report's content:
//
//   - detection: a finding per box (on the image's one slice), point or 3D box, with its
//     score (a 3D box, of which a case has one, takes the case's confidence); a box's type
//     is the task's one label when it has exactly one (value above 0), else "Clinical
//     finding", and its attributes are coded answers; a point's type is its class;
//   - classification: the class of each attribute, with the case's confidence beside it
//     when there is one attribute, else as a Certainty of Finding derived as the minimum
//     over the heads (the classification plugin's confidence is the least of its heads');
//   - classification of a multi-label attribute: each finding Present or Absent (SNOMED
//     CT), the finding coded as an attribute's class, with the probability that the
//     answer holds as its Certainty where the prediction has probabilities;
//   - iqa: the score as an Image Quality Rating.
//
// A class is coded by the task's label of the same name when that label has a code, else
// in AMID's private scheme (sr.OwnCode): a point class by its name, an attribute's class
// as "attribute=class".
func SRReport(t *task.Task, a *taskspec.Annotation, confidence *float64) (*sr.Report, error) {
	r := &sr.Report{}
	switch t.Kind {
	case taskspec.Detection:
		typ := findingType(t)
		for _, b := range a.Boxes {
			score := b.Score
			r.Findings = append(r.Findings, sr.Finding{Type: typ, Rect: &sr.Rect{X: b.X, Y: b.Y, W: b.W, H: b.H},
				Score: &score, Attributes: attributes(t, b.Attrs)})
		}
		for _, p := range a.Points {
			score := p.Score
			r.Findings = append(r.Findings, sr.Finding{Type: classCode(t, p.Class, OwnClass(p.Class)), Point: &[2]float64{p.X, p.Y}, Score: &score})
		}
		if b := a.Box3D; b != nil {
			r.Findings = append(r.Findings, sr.Finding{Type: typ, Box: &sr.Box{Min: b.Min, Size: b.Size}, Score: confidence})
		}
	case taskspec.Classification:
		if at, ok := t.MultiLabel(); ok {
			r.Evaluations = findings(t, at, a)
			if len(r.Evaluations) == 0 {
				return nil, fmt.Errorf("the classification predicts no finding of %s", at.Name)
			}
			break
		}
		r.Evaluations = attributes(t, a.Classes)
		if len(r.Evaluations) == 0 {
			return nil, fmt.Errorf("the classification predicts no class")
		}
		if confidence != nil {
			if len(r.Evaluations) == 1 {
				r.Evaluations[0].Certainty = confidence
			} else {
				r.Measurements = append(r.Measurements, sr.Measurement{Name: sr.CertaintyOfFinding, Value: 100 * *confidence,
					Units: sr.Percent, Derivation: sr.Minimum})
			}
		}
	case taskspec.IQA:
		if a.Score == nil {
			return nil, fmt.Errorf("the image-quality prediction has no score")
		}
		r.Measurements = append(r.Measurements, sr.Measurement{Name: sr.ImageQualityRating, Value: *a.Score, Units: sr.ScoreUnits})
	default:
		return nil, fmt.Errorf("a %s task's predictions are not written as a structured report", t.Kind)
	}
	return r, nil
}

// Present and Absent are SNOMED CT's answers to whether a finding is there.
var (
	Present = sr.Code{Value: "52101004", Scheme: "SCT", Meaning: "Present"}
	Absent  = sr.Code{Value: "2667000", Scheme: "SCT", Meaning: "Absent"}
)

// findings are the coded answers of a multi-label prediction: each finding of at,
// Present or Absent, with the probability of the answer where a has probabilities.
func findings(t *task.Task, at taskspec.Attribute, a *taskspec.Annotation) []sr.Evaluation {
	f, ok := a.Findings[at.Name]
	p := a.Probs[at.Name]
	if !ok && len(p) == len(at.Classes) {
		f = make([]int, len(p))
		for k, v := range p {
			if v >= 0.5 {
				f[k] = taskspec.FindingPresent
			}
		}
	}
	if len(f) != len(at.Classes) {
		return nil
	}
	var out []sr.Evaluation
	for k, name := range at.Classes {
		e := sr.Evaluation{Name: classCode(t, name, OwnAttributeClass(at.Name, name)), Value: Absent}
		if f[k] == taskspec.FindingPresent {
			e.Value = Present
		}
		if len(p) == len(at.Classes) {
			c := p[k]
			if e.Value == Absent {
				c = 1 - c
			}
			e.Certainty = &c
		}
		out = append(out, e)
	}
	return out
}

// OwnAttribute is the private code of an attribute (a classification head, a box's
// attribute).
func OwnAttribute(name string) sr.Code { return sr.OwnCode(name, name) }

// OwnClass is the private code of a class the task gives no code for: of points, or of
// a one-label detection's label.
func OwnClass(class string) sr.Code { return sr.OwnCode(class, class) }

// OwnAttributeClass is the private code of an attribute's class: "attribute=class".
func OwnAttributeClass(attribute, class string) sr.Code {
	return sr.OwnCode(attribute+"="+class, class)
}

// attributes are the coded answers of classes (attribute name → class index), in the
// task's order of attributes.
func attributes(t *task.Task, classes map[string]int) []sr.Evaluation {
	var out []sr.Evaluation
	for _, at := range t.Attributes {
		k, ok := classes[at.Name]
		if !ok || k < 0 || k >= len(at.Classes) {
			continue
		}
		name := at.Classes[k]
		out = append(out, sr.Evaluation{Name: OwnAttribute(at.Name), Value: classCode(t, name, OwnAttributeClass(at.Name, name))})
	}
	return out
}

// classCode is the code of the task's label called name, own when there is none.
func classCode(t *task.Task, name string, own sr.Code) sr.Code {
	for _, l := range t.Labels {
		if l.Value != 0 && !l.Code.IsZero() && strings.EqualFold(l.Name, name) {
			return sr.Code{Value: l.Code.Value, Scheme: l.Code.Scheme, Meaning: orName(l.Code.Meaning, l.Name)}
		}
	}
	return own
}

// findingType is what a detection finds: the task's one label, else zero (the report's
// "Clinical finding").
func findingType(t *task.Task) sr.Code {
	var fg []taskspec.Label
	for _, l := range t.Labels {
		if l.Value != 0 {
			fg = append(fg, l)
		}
	}
	if len(fg) != 1 {
		return sr.Code{}
	}
	if l := fg[0]; !l.Code.IsZero() {
		return sr.Code{Value: l.Code.Value, Scheme: l.Code.Scheme, Meaning: orName(l.Code.Meaning, l.Name)}
	}
	return OwnClass(fg[0].Name)
}

func orName(meaning, name string) string {
	if meaning != "" {
		return meaning
	}
	return name
}

// Derived encodes the enhanced image pred (on the grid of the DICOM series image) as a
// derived series of the source's SOP Class, one file per slice, each naming its source
// instance (see amid/viewer/dicom/derived).
func Derived(image, pred string, o derived.Options) ([]*dataset.File, error) {
	img, err := imageio.Read(pred)
	if err != nil {
		return nil, err
	}
	grid, src, err := source.Image(image)
	if err != nil {
		return nil, err
	}
	files, err := derived.Encode(img, grid, src, o)
	if err != nil {
		return nil, fmt.Errorf("the derived DICOM series of its prediction: %w", err)
	}
	return files, nil
}

// Naming is what a prediction's DICOM objects say of the model that made it.
type Naming struct {
	Task, Lane, Plugin, Version string
	// DeviceUID is the structured report's Device UID: one per model (a package's
	// manifest, a run).
	DeviceUID string
	Created   time.Time
}

// The kinds of DICOM object a prediction is written as (Objects).
const (
	ObjectSEG     = "seg"
	ObjectSR      = "sr"
	ObjectDerived = "derived"
)

// ObjectKind is the kind of DICOM object case c's prediction is written as: a SEG
// (SEGable), a structured report (SRable) or a derived series (Derivable); "" when its
// prediction has no DICOM form (its image is not DICOM).
func ObjectKind(t *task.Task, c task.Case) string {
	switch {
	case SEGable(t, c):
		return ObjectSEG
	case SRable(t, c):
		return ObjectSR
	case Derivable(t, c):
		return ObjectDerived
	}
	return ""
}

// ObjectPath is where, relative to a results folder's dicom/, the objects of a kind of
// case id go: ID.dcm, or for a derived series its folder ID/ (one file a slice,
// derived.Name).
func ObjectPath(kind, id string) string {
	if kind == ObjectDerived {
		return id
	}
	return id + ".dcm"
}

// WriteObjects writes the DICOM objects files of kind for case id under dir, at
// ObjectPath (a derived series one file a slice, derived.Name), and returns their paths.
func WriteObjects(dir, kind, id string, files []*dataset.File) ([]string, error) {
	var paths []string
	for i, f := range files {
		path := filepath.Join(dir, ObjectPath(kind, id))
		if kind == ObjectDerived {
			path = filepath.Join(path, derived.Name(i))
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return paths, err
		}
		if err := dataset.WriteFile(path, f); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// Objects encodes case c's prediction pred as the DICOM objects of its ObjectKind, which
// it returns too (none and "" for a case with no DICOM form); confidence is the case's
// (nil when the plugin gives none), which a structured report states.
func Objects(t *task.Task, c task.Case, pred string, confidence *float64, n Naming) ([]*dataset.File, string, error) {
	kind := ObjectKind(t, c)
	var f *dataset.File
	var err error
	switch kind {
	case ObjectSEG:
		f, err = SEG(t, c.Images[0], pred, seg.Options{
			SeriesDescription: "AMID " + n.Task + " prediction",
			Algorithm:         "AMID " + n.Lane,
			SoftwareVersion:   n.Version,
			Created:           n.Created,
		})
	case ObjectSR:
		f, err = SR(t, c.Images[0], pred, confidence, sr.Options{
			SeriesDescription: "AMID " + n.Task + " prediction",
			DeviceName:        "AMID " + n.Lane,
			DeviceModel:       n.Task,
			DeviceUID:         n.DeviceUID,
			SoftwareVersion:   n.Version,
			Created:           n.Created,
		})
	case ObjectDerived:
		files, err := Derived(c.Images[0], pred, derived.Options{
			SeriesDescription: "AMID " + n.Task + " enhanced",
			Description:       fmt.Sprintf("enhanced by the AMID model of task %s (lane %s, plugin %s)", n.Task, n.Lane, n.Plugin),
			SoftwareVersion:   n.Version,
			Created:           n.Created,
		})
		return files, kind, err
	default:
		return nil, "", nil
	}
	if err != nil {
		return nil, kind, err
	}
	return []*dataset.File{f}, kind, nil
}
