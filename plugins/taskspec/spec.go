// Package taskspec is what a task plugin is told about a task beyond its kind and
// dimension, and the per-case annotation files the host and the plugins exchange.
//
// The host sends a [Spec] as JSON in protocol.Task.Spec. It is the plugin-facing half of a
// task definition (the host's amid/host/task): label values and names, the attributes of
// boxes and of classifications, the classes of points, the score grid of a regression, and
// the file format predictions must be written in. Plugins never import the host, so the
// host converts every challenge's own label format (GeoJSON, COCO, ROI text, YAML, CSV) into
// the files below before training, and assembles the challenge's submission from the
// prediction files the plugins write in these same formats.
//
// Per kind, a training case's protocol.Case.Label is:
//
//   - segmentation: a label image (any format amid/viewer/imageio reads);
//   - detection: a JSON [Annotation] with Boxes (2D), Points or Box3D set;
//   - classification: a JSON [Annotation] with Classes set;
//   - iqa: a JSON [Annotation] with Score set;
//   - enhancement: the target (high-quality) image.
//
// Predictions are written in the same form: a label image, an image, or an Annotation JSON
// named <case id>.json in the request's output folder.
package taskspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"amid/assets/fileio"
	"amid/plugins/metrics"
)

// Kinds of task.
const (
	Segmentation   = "segmentation"
	Detection      = "detection"
	Classification = "classification"
	IQA            = "iqa"
	Enhancement    = "enhancement"
)

// Kinds lists every task kind.
var Kinds = []string{Segmentation, Detection, Classification, IQA, Enhancement}

// Spec is the plugin-facing part of a task definition.
type Spec struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Dims int    `json:"dims"`
	// Modality is "CT", "MR", "RGB", "US", "XR", "microscopy" or empty; it picks the
	// intensity normalisation.
	Modality string `json:"modality,omitempty"`
	// Channels names the input channels, one image file per channel in protocol.Case.Images
	// when there is more than one file.
	Channels []string `json:"channels,omitempty"`
	// Labels are the segmentation label values with their names; value 0 is background.
	Labels []Label `json:"labels,omitempty"`
	// Instances: segmentation labels are instance ids (cells) rather than classes.
	Instances bool `json:"instances,omitempty"`
	// Attributes are the per-box categorical attributes of 2D detection (DENTEX: quadrant,
	// enumeration, diagnosis) or the binary attributes of classification, with their class
	// names in order (class index = position).
	Attributes []Attribute `json:"attributes,omitempty"`
	// Points are the class names of point detection (nuclei).
	Points []string `json:"points,omitempty"`
	// PointRadius is the matching distance of point detection in pixels.
	PointRadius float64 `json:"point_radius,omitempty"`
	// Box3D: detection of one 3D box per volume.
	Box3D bool `json:"box3d,omitempty"`
	// Score is the range and grid of a regressed score (iqa).
	Score *ScoreRange `json:"score,omitempty"`
	// Output is the file suffix predictions are written with (".nii.gz", ".mha", ".tif",
	// ".png", ".seg.nrrd", ".json"); empty means the input's own format.
	Output string `json:"output,omitempty"`
	// Metric is the task's metric name (amid/plugins/metrics), for a plugin's own validation.
	// A classification may name a clinical metric (metrics.ClinicalNames: auroc,
	// sensitivity_at_youden, specificity_at_sensitivity_0.9, f1_macro, kappa_quadratic,
	// brier, ece), which Check reads; an operating point needs attributes of two classes.
	Metric string `json:"metric,omitempty"`
	// Challenge is the ReX-MLE challenge id whose grader scores the task (empty for a task
	// of the user's own): validation scores with that grader's rules
	// (amid/plugins/metrics.DiceRuleOf, PointsRuleOf).
	Challenge string `json:"challenge,omitempty"`
	// LaneSeconds, set in a Plan request, is the time a lane trains in its first round
	// (its share of the exploration time): a plugin plans each lane small enough to make
	// MinSteps steps in it, and leaves out, saying why, a lane that cannot at its smallest
	// sensible size (0: unknown).
	LaneSeconds float64 `json:"lane_seconds,omitempty"`
	// TrainSeconds, set in a Plan request, is about how long the lane that wins trains in
	// all (its rounds and the final model): the planned total of steps, which the
	// learning-rate schedule spans, is what fits in it (0: unknown).
	TrainSeconds float64 `json:"train_seconds,omitempty"`
	// MinSteps, set in a Plan request, is the fewest steps a lane must make in its first
	// round, by lane name ("" for any other lane), from the learning curves the host records.
	MinSteps map[string]int `json:"min_steps,omitempty"`
}

// Label is one label value of a segmentation.
type Label struct {
	Value int    `json:"value"`
	Name  string `json:"name"`
	// Code and Category name the label's concept in a coding scheme (SNOMED CT "SCT",
	// DICOM "DCM", …): the Segmented Property Type and Category of the label's segment in
	// DICOM SEG predictions, and what DICOM labels' segments are matched by. Optional.
	Code     Code `json:"code,omitzero"`
	Category Code `json:"category,omitzero"`
}

// Code is a coded concept: a value in a coding scheme, with its meaning.
type Code struct {
	Scheme  string `json:"scheme"`
	Value   string `json:"value"`
	Meaning string `json:"meaning,omitempty"`
}

// IsZero reports whether c names no concept.
func (c Code) IsZero() bool { return c.Scheme == "" && c.Value == "" }

// Attribute is one categorical attribute with its classes in index order. Group gathers
// attributes that are judged together (TopCoW's anterior and posterior edge vectors).
//
// A MultiLabel attribute is a classification's set of findings: Classes names them, and
// each case carries any subset of them (Annotation.Findings), predicted with one
// probability per finding (Annotation.Probs, independent, not summing to 1).
type Attribute struct {
	Name       string   `json:"name"`
	Classes    []string `json:"classes"`
	Group      string   `json:"group,omitempty"`
	MultiLabel bool     `json:"multi_label,omitempty"`
}

// ScoreRange is the range of a regressed score and its grid step (0 when continuous).
type ScoreRange struct {
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	Step float64 `json:"step,omitempty"`
}

// Annotation is a per-case annotation or prediction file of a non-image task.
type Annotation struct {
	// Boxes are 2D boxes in pixels.
	Boxes []Box `json:"boxes,omitempty"`
	// Points are point objects (nuclei centroids) in pixels.
	Points []Point `json:"points,omitempty"`
	// Box3D is one 3D box in voxels of the case's first image.
	Box3D *Box3D `json:"box3d,omitempty"`
	// Classes maps attribute name to class index.
	Classes map[string]int `json:"classes,omitempty"`
	// Findings maps a multi-label attribute's name to each of its findings in class
	// order: 1 present, 0 absent, −1 uncertain (a label under the "ignore" policy, left
	// out of the loss and of the metric). A prediction holds 1 where the finding's
	// probability is at least 0.5.
	Findings map[string][]int `json:"findings,omitempty"`
	// Probs maps attribute name to a prediction's probability of each of the attribute's
	// classes, in class order: what the metrics that rank or calibrate need (AUROC,
	// sensitivity at a threshold, Brier score, calibration error). Optional; a ground
	// truth has none. For a multi-label attribute, each finding's own probability.
	Probs map[string][]float64 `json:"probs,omitempty"`
	// Score is a regressed score.
	Score *float64 `json:"score,omitempty"`
}

// Box is a 2D box: X, Y the top-left corner, W, H the size, in pixels; Attrs maps
// attribute name to class index; Score in [0, 1] (1 for ground truth).
type Box struct {
	X     float64        `json:"x"`
	Y     float64        `json:"y"`
	W     float64        `json:"w"`
	H     float64        `json:"h"`
	Attrs map[string]int `json:"attrs,omitempty"`
	Score float64        `json:"score"`
}

// Point is a point object with its class name and score.
type Point struct {
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
	Class string  `json:"class"`
	Score float64 `json:"score"`
}

// Box3D is an axis-aligned box in voxels: Min the 0-based minimum corner (x, y, z), Size
// the extent per axis.
type Box3D struct {
	Min  [3]int `json:"min"`
	Size [3]int `json:"size"`
}

// MaxFileBytes bounds an annotation or spec file a reader accepts.
const MaxFileBytes = 64 << 20

// ErrSpec marks a spec or annotation that breaks these rules.
var ErrSpec = errors.New("invalid task specification")

// ErrAnnotation marks an annotation file that cannot be used.
var ErrAnnotation = errors.New("invalid annotation")

// Parse decodes and checks a Spec. An empty input is an error.
func Parse(b []byte) (*Spec, error) {
	var s Spec
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Check reports the first rule s breaks.
func (s *Spec) Check() error {
	known := false
	for _, k := range Kinds {
		known = known || k == s.Kind
	}
	switch {
	case !known:
		return fmt.Errorf("%w: kind %q is not one of %v", ErrSpec, s.Kind, Kinds)
	case s.Dims != 2 && s.Dims != 3:
		return fmt.Errorf("%w: dims %d is not 2 or 3", ErrSpec, s.Dims)
	}
	seen := map[int]bool{}
	for _, l := range s.Labels {
		if l.Value < 0 || seen[l.Value] {
			return fmt.Errorf("%w: label value %d is negative or repeated", ErrSpec, l.Value)
		}
		for _, c := range []Code{l.Code, l.Category} {
			if !c.IsZero() && (c.Scheme == "" || c.Value == "") {
				return fmt.Errorf("%w: label %q: a code needs both its scheme and its value", ErrSpec, l.Name)
			}
		}
		seen[l.Value] = true
	}
	names := map[string]bool{}
	for _, a := range s.Attributes {
		if a.MultiLabel && a.Name != "" && !names[a.Name] && len(a.Classes) < 1 {
			return fmt.Errorf("%w: multi-label attribute %q has no finding", ErrSpec, a.Name)
		}
		if a.Name == "" || names[a.Name] || (len(a.Classes) < 2 && !a.MultiLabel) {
			return fmt.Errorf("%w: attribute %q is unnamed, repeated or has fewer than 2 classes", ErrSpec, a.Name)
		}
		names[a.Name] = true
	}
	if err := s.checkMultiLabel(); err != nil {
		return err
	}
	if s.Kind == Classification && metrics.IsClinical(s.Metric) {
		c, err := metrics.ParseClinical(s.Metric)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrSpec, err)
		}
		for _, a := range s.Attributes {
			if c.Operating() && len(a.Classes) != 2 {
				return fmt.Errorf("%w: metric %s is judged at an operating point, which needs attributes of two classes, and %s has %d", ErrSpec, c.Name, a.Name, len(a.Classes))
			}
		}
	}
	if r := s.Score; r != nil && (!(r.Max > r.Min) || r.Step < 0 || math.IsInf(r.Max-r.Min, 0)) {
		return fmt.Errorf("%w: score range [%g, %g] step %g", ErrSpec, r.Min, r.Max, r.Step)
	}
	return nil
}

// Attribute returns the attribute called name.
func (s *Spec) Attribute(name string) (Attribute, bool) {
	for _, a := range s.Attributes {
		if a.Name == name {
			return a, true
		}
	}
	return Attribute{}, false
}

// Snap puts v on the score grid and inside its range.
func (r ScoreRange) Snap(v float64) float64 {
	if r.Step > 0 {
		v = r.Min + math.Round((v-r.Min)/r.Step)*r.Step
	}
	return math.Min(math.Max(v, r.Min), r.Max)
}

// ReadAnnotation reads the annotation file at path and checks it against s.
func ReadAnnotation(path string, s *Spec) (*Annotation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", path, ErrAnnotation, MaxFileBytes)
	}
	a, err := DecodeAnnotation(b, s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// DecodeAnnotation decodes an annotation and checks it against s (nil s: no check).
func DecodeAnnotation(b []byte, s *Spec) (*Annotation, error) {
	var a Annotation
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAnnotation, err)
	}
	if s != nil {
		if err := a.Check(s); err != nil {
			return nil, err
		}
	}
	return &a, nil
}

func finite(v ...float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// Check reports the first rule a breaks against s.
func (a *Annotation) Check(s *Spec) error {
	for i, b := range a.Boxes {
		if !finite(b.X, b.Y, b.W, b.H, b.Score) || b.W <= 0 || b.H <= 0 {
			return fmt.Errorf("%w: box %d (%g, %g, %g×%g) is not a finite box of positive size", ErrAnnotation, i, b.X, b.Y, b.W, b.H)
		}
		for name, c := range b.Attrs {
			at, ok := s.Attribute(name)
			if !ok || c < 0 || c >= len(at.Classes) {
				return fmt.Errorf("%w: box %d has attribute %s = %d, outside the task's attributes", ErrAnnotation, i, name, c)
			}
		}
	}
	for i, p := range a.Points {
		if !finite(p.X, p.Y, p.Score) {
			return fmt.Errorf("%w: point %d is not finite", ErrAnnotation, i)
		}
		if len(s.Points) > 0 && !contains(s.Points, p.Class) {
			return fmt.Errorf("%w: point %d has class %q, not one of %v", ErrAnnotation, i, p.Class, s.Points)
		}
	}
	if b := a.Box3D; b != nil {
		for k := range 3 {
			if b.Size[k] <= 0 || b.Min[k] < 0 {
				return fmt.Errorf("%w: 3D box min %v size %v has a negative corner or an empty side", ErrAnnotation, b.Min, b.Size)
			}
		}
	}
	for name, c := range a.Classes {
		at, ok := s.Attribute(name)
		if !ok || c < 0 || c >= len(at.Classes) || at.MultiLabel {
			return fmt.Errorf("%w: class %s = %d is outside the task's attributes (a multi-label attribute has findings, not a class)", ErrAnnotation, name, c)
		}
	}
	if err := a.checkFindings(s); err != nil {
		return err
	}
	for name, p := range a.Probs {
		at, ok := s.Attribute(name)
		if !ok || len(p) != len(at.Classes) {
			return fmt.Errorf("%w: probabilities of %s: %d values for an attribute of the task with %d classes", ErrAnnotation, name, len(p), len(at.Classes))
		}
		for k, v := range p {
			if !finite(v) || v < 0 || v > 1 {
				return fmt.Errorf("%w: probability %d of %s is %g, not in [0, 1]", ErrAnnotation, k, name, v)
			}
		}
	}
	if a.Score != nil && !finite(*a.Score) {
		return fmt.Errorf("%w: the score is not finite", ErrAnnotation)
	}
	return nil
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// Marshal encodes a as indented JSON with a final newline, the same bytes every time.
func (a *Annotation) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// WriteFile writes a, as Marshal encodes it, to path atomically and durably
// (amid/assets/fileio's Write), so a reader never sees half of an annotation.
func (a *Annotation) WriteFile(path string) error {
	b, err := a.Marshal()
	if err != nil {
		return err
	}
	return fileio.Write(path, b)
}
