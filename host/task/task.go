// Package task reads task definitions: a small YAML file that names what to predict (kind,
// dimension, channels, labels), where the data lies (train and test cases as file
// patterns), the metric, the submission contract and the budget.
//
// A definition looks like this (ISLES'22):
//
//	id: isles22
//	title: Ischemic stroke lesion segmentation (ISLES'22)
//	kind: segmentation
//	dims: 3
//	modality: MR
//	challenge: isles22            # the ReX-MLE grader that scores it, if any
//	channels: [dwi, adc, flair]
//	labels: [{value: 0, name: background}, {value: 1, name: lesion}]
//	data:
//	  train:
//	    images: ["train/{id}_dwi.nii.gz", "train/{id}_adc.nii.gz", "train/{id}_flair.nii.gz"]
//	    label: {path: "train/{id}_msk.nii.gz"}
//	  test:
//	    images: ["test/{id}_dwi.nii.gz", "test/{id}_adc.nii.gz", "test/{id}_flair.nii.gz"]
//	  patient: "^(sub-strokecase[0-9]+)"
//	metric: {name: dice, direction: max}
//	submission:
//	  columns: [case_id, predicted_mask_path]
//	  id_column: case_id
//	  file_column: predicted_mask_path
//	  path: "predictions/{id}_pred.nii.gz"
//	budget: 20m
//
// Case ids come from the first image pattern: every file that matches it with one path
// segment in place of {id} is a case. Every error names the file and the field.
//
// Labels drawn in a DICOM tool arrive as DICOM SEG or RTSTRUCT, one object per case
// (format dicom; amid/host/ingest turns them into label maps on the case's image grid).
// Segments and ROIs match the task's labels by name, or segments by code; names maps the
// ones whose names differ (its keys are segment labels, ROI names, code meanings or
// SCHEME:VALUE codes, its values label names; mapping to the background label leaves a
// segment out). The labels' codes also name the segments of DICOM SEG predictions:
//
//	labels:
//	  - {value: 0, name: background}
//	  - {value: 1, name: liver, code: {scheme: SCT, value: "10200004", meaning: Liver}}
//	  - {value: 2, name: lesion, code: {scheme: SCT, value: "52988006", meaning: Lesion}}
//	data:
//	  train:
//	    images: ["train/images/{id}"]          # a series folder per case
//	    label: {path: "train/labels/{id}.dcm", format: dicom, names: {"GTV-1": lesion}}
//	  test:
//	    images: ["test/images/{id}"]
//
// A case may be a DICOM folder, as PACS exports a study: {id} names the folder
// ("train/{id}/", "studies/{id}/CT/"; a last segment of {id} alone finds files and
// folders). The folder is searched through its subfolders, or through its DICOMDIR when
// it has one; localizers, reports, presentation states, key objects, dose reports and
// segmentations are passed over, each with a note in the profile. data.series picks,
// per image pattern, the series to read (amid/viewer/dicom's Selector): its modality,
// a regular expression found in its Series Description (without regard to case), its
// orientation (axial, coronal or sagittal), a minimum slice count (2 unless given, in a
// 3D task: one image is not a volume), and a preference (thinnest slices, most slices)
// when several fit. When the rule leaves no series or several, Resolve's error lists
// each candidate (Series Instance UID, description, slice count, spacing). A series whose
// slices do not lie on a regular grid (gantry tilt, uneven spacing) is resampled onto one
// when read, with a warning in the profile and the audit log:
//
//	channels: [t1, t2]
//	data:
//	  train:
//	    images: ["studies/{id}/", "studies/{id}/"]    # both channels from one study
//	    label: {path: "labels/{id}.nii.gz"}
//	  test:
//	    images: ["test/{id}/", "test/{id}/"]
//	  series:
//	    - {modality: MR, description: "t1", orientation: axial, min_slices: 20, prefer: thinnest}
//	    - {modality: MR, description: "t2", prefer: most}
//
// # Class tables and image folders
//
// A classification's labels may be one CSV (format csv, id_column) whose value_column
// (a task of one attribute) or value_columns (attribute: column) hold class names,
// matched without regard to case, or 0-based class indices (when no class name is an
// integer), or whose one-hot columns, each named as a class of one attribute, set one
// class a row. Or each class is a folder of the image patterns, {class} for a task of
// one attribute, {<attribute>} for several (label format folder, no label path; in the
// test split the folder is read and its name not used):
//
//	attributes: [{name: modality, classes: [CT, MR, US]}]
//	data:
//	  train: {images: ["train/{class}/{id}.png"]}
//	  test: {images: ["test/{id}.png"]}
//	submission: {format: csv, id_column: image_id, value_column: label}
//
// The submission format csv (SubmitClassTable) is the class table: the id, each
// attribute's predicted class name, one probability column a class (see
// Submission.ClassColumns); without columns, in that order.
//
// An attribute may be multi-label (multi_label: true; the task's only attribute, metric
// auroc): each case carries any subset of its findings (its classes), from a value
// column of "|"-separated finding names (NIH ChestX-ray14's Finding Labels; empty or
// "No Finding" for none) or one column per finding (columns) of 1, 0, −1 (uncertain) or
// blank (0), with uncertain naming the policy for −1 (ignore, positive or negative):
//
//	attributes: [{name: findings, classes: [Atelectasis, Effusion, Pneumonia], multi_label: true}]
//	data:
//	  train: {images: ["images/{id}.png"], label: {path: "train.csv", format: csv, id_column: Path, columns: [Atelectasis, Effusion, Pneumonia], uncertain: ignore}}
//	  # or: label: {path: "Data_Entry.csv", format: csv, id_column: Image Index, value_column: Finding Labels}
//	metric: {name: auroc}
//	submission: {format: csv, id_column: Path}
//
// Its class table holds the id and one probability column a finding.
//
// A 2D detection of one attribute may take its boxes as YOLO .txt files (format yolo:
// "class cx cy w h" a line, normalised; classes is YOLO's class list) or Pascal VOC XML
// (format voc), and write its predictions back as either (submission format yolo or voc).
//
// The plugin-facing part of a task is [Task.Spec] (amid/plugins/taskspec).
package task

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"amid/host/yamldoc"

	"amid/plugins/metrics"
	"amid/plugins/taskspec"
	"amid/viewer/dicom"
)

// MaxFileBytes bounds a task file.
const MaxFileBytes = 1 << 20

// ErrInvalid marks a task definition that breaks the schema.
var ErrInvalid = errors.New("invalid task definition")

// Task is one task definition.
type Task struct {
	ID          string `yaml:"id"`
	Title       string `yaml:"title"`
	Description string `yaml:"description"`
	Kind        string `yaml:"kind"`
	Dims        int    `yaml:"dims"`
	Modality    string `yaml:"modality"`
	// Challenge is the ReX-MLE challenge id whose grader scores the submission.
	Challenge   string               `yaml:"challenge"`
	Channels    []string             `yaml:"channels"`
	Labels      []taskspec.Label     `yaml:"labels"`
	Instances   bool                 `yaml:"instances"`
	Attributes  []taskspec.Attribute `yaml:"attributes"`
	Points      []string             `yaml:"points"`
	PointRadius float64              `yaml:"point_radius"`
	Box3D       bool                 `yaml:"box3d"`
	Score       *taskspec.ScoreRange `yaml:"score"`
	Data        Data                 `yaml:"data"`
	Metric      Metric               `yaml:"metric"`
	Submission  Submission           `yaml:"submission"`
	Budget      Duration             `yaml:"budget"`
	Leaderboard string               `yaml:"leaderboard"` // a challenge id of assets/leaderboards
	Extra       map[string]any       `yaml:"extra"`

	// Path is the file the task was read from, empty when built in code.
	Path string `yaml:"-"`
}

// Data says where a task's cases lie, relative to the data folder.
type Data struct {
	Train Split `yaml:"train"`
	Test  Split `yaml:"test"`
	// Patient is a regular expression on the case id whose first group names the patient
	// (empty: each case is its own patient). Folds never split a patient.
	Patient string `yaml:"patient"`
	// Series picks, per image pattern, the series of a case whose image is a DICOM folder
	// (see the package doc); a pattern without one takes the folder's only image series.
	Series []dicom.Selector `yaml:"series"`
}

// Split is one split's file patterns.
type Split struct {
	// Images are one pattern per channel file, each with {id}.
	Images []string `yaml:"images"`
	// Suffixes are other file endings the first image pattern's file may have in place of
	// its own, for folders that mix formats (NeurIPS-CellSeg holds .png, .bmp, .tif and
	// .tiff images side by side): "train/images/{id}.png" with suffixes [".bmp", ".tif"]
	// also finds train/images/{id}.bmp and train/images/{id}.tif. A case's first image is
	// the first of these files that exists, the pattern's own ending first.
	Suffixes []string `yaml:"suffixes"`
	// Label is where a case's label comes from (train only).
	Label LabelSource `yaml:"label"`
}

// Label formats a LabelSource may name. Per-case formats have {id} in the path; table
// formats name one file holding every case.
const (
	LabelImage       = "image"        // a label image per case (default)
	LabelAnnotation  = "annotation"   // a taskspec.Annotation JSON per case
	LabelPUMATissue  = "puma-tissue"  // PUMA tissue GeoJSON per case
	LabelPUMANuclei  = "puma-nuclei"  // PUMA nuclei GeoJSON per case
	LabelTopCoWROI   = "topcow-roi"   // TopCoW ROI text per case
	LabelTopCoWEdges = "topcow-edges" // TopCoW edge YAML per case
	LabelDENTEX      = "dentex-coco"  // one COCO JSON with category_id_1/2/3 (table)
	LabelCSV         = "csv"          // one CSV with an id and a value column (table)
	LabelDICOM       = "dicom"        // a DICOM SEG or RTSTRUCT per case
	LabelFolder      = "folder"       // the class folders of the image patterns ({class})
	LabelYOLO        = "yolo"         // a YOLO .txt of boxes per case (class cx cy w h)
	LabelVOC         = "voc"          // a Pascal VOC XML of boxes per case
)

var labelFormats = []string{LabelImage, LabelAnnotation, LabelPUMATissue, LabelPUMANuclei, LabelTopCoWROI, LabelTopCoWEdges, LabelDENTEX, LabelCSV, LabelDICOM, LabelFolder, LabelYOLO, LabelVOC}

// Table reports whether format keeps every case's label in one file.
func Table(format string) bool { return format == LabelDENTEX || format == LabelCSV }

// LabelSource names a label file pattern (or table file) and its format.
type LabelSource struct {
	Path   string `yaml:"path"`
	Format string `yaml:"format"`
	// IDColumn and ValueColumn are a csv label's case id and value: an image-quality
	// score, or the class (name or index) of a classification's only attribute.
	IDColumn    string `yaml:"id_column"`
	ValueColumn string `yaml:"value_column"`
	// ValueColumns maps each attribute of a classification to its csv column.
	ValueColumns map[string]string `yaml:"value_columns"`
	// Columns are one-hot csv columns, each named as a class of one attribute (matched
	// without regard to case): a row sets exactly one of them to 1, the others to 0.
	Columns []string `yaml:"columns"`
	// Classes are a YOLO label's class list (format yolo; data.yaml's names): class id k
	// is Classes[k], a class of the task's box attribute. Without it, class id k is the
	// attribute's class k.
	Classes []string `yaml:"classes"`
	// Uncertain is what a multi-label attribute's uncertain label (−1 in its 0/1 columns,
	// as CheXpert's) means: UncertainIgnore (left out of the loss and the metric),
	// UncertainPositive or UncertainNegative. A −1 in a table without it is an error.
	Uncertain string `yaml:"uncertain"`
	// Names maps DICOM segments and ROIs to the task's labels (format dicom): segment
	// label, ROI name, code meaning or SCHEME:VALUE code → label name.
	Names map[string]string `yaml:"names"`
}

// Metric is the task's metric.
type Metric struct {
	Name      string         `yaml:"name"`
	Direction string         `yaml:"direction"` // max (default) or min
	Params    map[string]any `yaml:"params"`
}

// Submission is the submission contract: a CSV manifest and the files it names.
type Submission struct {
	CSV     string   `yaml:"csv"` // default submission.csv
	Columns []string `yaml:"columns"`
	// IDColumn holds the case id; FileColumn the prediction file's path relative to the
	// submission folder; ValueColumn a value written into the CSV itself (IQA scores).
	IDColumn    string `yaml:"id_column"`
	FileColumn  string `yaml:"file_column"`
	ValueColumn string `yaml:"value_column"`
	// Path is the prediction file's pattern with {id}.
	Path string `yaml:"path"`
	// Format is how a prediction file is written: an image format by the path's suffix,
	// or one of dentex-json, puma-json, topcow-box-json, topcow-edges-json; or csv, a
	// classification's class table (SubmitClassTable): no files, the manifest holds each
	// case's class names (ValueColumn, ValueColumns) and class probabilities.
	Format string `yaml:"format"`
	// ValueColumns maps each attribute of a classification to the column of its predicted
	// class name (format csv).
	ValueColumns map[string]string `yaml:"value_columns"`
	// Const are columns with one value for every row (TopCoW's modality).
	Const map[string]string `yaml:"const"`
}

// Duration is a time.Duration written as "20m" in YAML.
type Duration time.Duration

// UnmarshalYAML reads a duration such as "90s", "20m" or "1h30m".
func (d *Duration) UnmarshalYAML(b []byte) error {
	var s string
	if err := yaml.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("budget %q is not a duration such as 20m or 1h30m", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as text.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Load reads and validates the task file at path.
func Load(path string) (*Task, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", path, ErrInvalid, MaxFileBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t.Path = path
	return t, nil
}

// Parse decodes and validates a task definition.
func Parse(b []byte) (*Task, error) {
	var t Task
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("%w: the file is empty", ErrInvalid)
	}
	if err := yamldoc.Unmarshal(b, &t, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, oneLine(yaml.FormatError(err, false, false)))
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &t, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// fieldErr is a validation error naming the field.
func fieldErr(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
}

var (
	idRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)
	suffixRE = regexp.MustCompile(`^(\.[A-Za-z0-9]+)+$`)
)

// Validate checks every rule of the schema and reports the first broken one, naming the
// field. It fills defaults (metric direction, submission CSV name, label format).
func (t *Task) Validate() error {
	switch {
	case !idRE.MatchString(t.ID):
		return fieldErr("id", "%q must be lower-case letters, digits, '.', '_' or '-'", t.ID)
	case !slices.Contains(taskspec.Kinds, t.Kind):
		return fieldErr("kind", "%q is not one of %v", t.Kind, taskspec.Kinds)
	case t.Dims != 2 && t.Dims != 3:
		return fieldErr("dims", "%d is not 2 or 3", t.Dims)
	case t.Budget < 0:
		return fieldErr("budget", "negative")
	}
	if err := t.Data.Train.check("data.train", true); err != nil {
		return err
	}
	if err := t.Data.Test.check("data.test", false); err != nil {
		return err
	}
	if err := t.Data.checkSeries(); err != nil {
		return err
	}
	if err := t.checkNames(); err != nil {
		return err
	}

	if n := len(t.Channels); n > 0 && len(t.Data.Train.Images) > 1 && n != len(t.Data.Train.Images) {
		return fieldErr("channels", "%d names for %d image patterns in data.train.images", n, len(t.Data.Train.Images))
	}
	if len(t.Data.Test.Images) != len(t.Data.Train.Images) {
		return fieldErr("data.test.images", "%d patterns, but data.train.images has %d", len(t.Data.Test.Images), len(t.Data.Train.Images))
	}
	if t.Data.Patient != "" {
		re, err := regexp.Compile(t.Data.Patient)
		if err != nil {
			return fieldErr("data.patient", "%v", err)
		}
		if re.NumSubexp() < 1 {
			return fieldErr("data.patient", "%q has no group naming the patient", t.Data.Patient)
		}
	}
	switch t.Kind {
	case taskspec.Segmentation:
		if len(t.Labels) < 2 && !t.Instances {
			return fieldErr("labels", "a segmentation needs background and at least one label")
		}
	case taskspec.Detection:
		if len(t.Points) == 0 && !t.Box3D && t.Dims != 2 {
			return fieldErr("points", "a 3D detection without box3d needs point classes")
		}
	case taskspec.Classification:
		if len(t.Attributes) == 0 {
			return fieldErr("attributes", "a classification needs at least one attribute")
		}
	case taskspec.IQA:
		if t.Score == nil {
			return fieldErr("score", "an image-quality task needs its score range")
		}
	}
	if err := t.checkClassLabels(); err != nil {
		return err
	}
	if err := t.checkBoxLabels(); err != nil {
		return err
	}
	if t.Metric.Name == "" {
		return fieldErr("metric.name", "missing")
	}
	if t.Kind == taskspec.Enhancement {
		if _, err := metrics.ImageMetric(t.Metric.Name); err != nil {
			return fieldErr("metric.name", "an enhancement is validated with an image metric: %v", err)
		}
	}
	switch t.Metric.Direction {
	case "":
		t.Metric.Direction = "max"
	case "max", "min":
	default:
		return fieldErr("metric.direction", "%q is not max or min", t.Metric.Direction)
	}
	if err := t.Submission.check(t); err != nil {
		return err
	}
	if err := t.Spec().Check(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

func (s *Split) check(field string, train bool) error {
	if len(s.Images) == 0 {
		return fieldErr(field+".images", "no image pattern")
	}
	for i, p := range s.Images {
		if err := checkPattern(withoutPlaceholders(p), true); err != nil {
			return fieldErr(fmt.Sprintf("%s.images[%d]", field, i), "%v", err)
		}
	}
	if len(s.Suffixes) > 0 && strings.Contains(Suffix(s.Images[0]), "{id}") {
		return fieldErr(field+".suffixes", "%q has no file ending after {id} to replace", s.Images[0])
	}
	for i, x := range s.Suffixes {
		if !suffixRE.MatchString(x) {
			return fieldErr(fmt.Sprintf("%s.suffixes[%d]", field, i), "%q is not a file ending such as .png or .nii.gz", x)
		}
	}
	l := &s.Label
	if !train {
		if l.Path != "" {
			return fieldErr(field+".label", "the test split has no labels")
		}
		return nil
	}
	if l.Format == "" && l.Path == "" && len(Placeholders(s.Images[0])) > 0 {
		l.Format = LabelFolder
	}
	if l.Format == LabelFolder {
		if l.Path != "" {
			return fieldErr(field+".label.path", "a folder label is the images' class folders and names no file")
		}
		return nil
	}
	if l.Path == "" {
		return fieldErr(field+".label.path", "missing")
	}
	if l.Format == "" {
		l.Format = LabelImage
	}
	if !slices.Contains(labelFormats, l.Format) {
		return fieldErr(field+".label.format", "%q is not one of %v", l.Format, labelFormats)
	}
	if err := checkPattern(l.Path, !Table(l.Format)); err != nil {
		return fieldErr(field+".label.path", "%v", err)
	}
	if l.Format == LabelCSV && l.IDColumn == "" {
		return fieldErr(field+".label", "a csv label needs id_column and value_column")
	}
	return nil
}

// checkNames checks the DICOM label name mapping: only for format dicom, and onto the
// task's label names.
func (t *Task) checkNames() error {
	l := t.Data.Train.Label
	if len(l.Names) == 0 {
		return nil
	}
	if l.Format != LabelDICOM {
		return fieldErr("data.train.label.names", "only a dicom label has names to map")
	}
	known := make([]string, len(t.Labels))
	for i, x := range t.Labels {
		known[i] = x.Name
	}
	for k, v := range l.Names {
		if strings.TrimSpace(k) == "" || !slices.Contains(known, v) {
			return fieldErr("data.train.label.names", "%q → %q: the label must be one of %v", k, v, known)
		}
	}
	return nil
}

// checkPattern checks a relative slash-separated path pattern, with exactly one {id} when
// withID.
func checkPattern(p string, withID bool) error {
	switch {
	case p == "":
		return errors.New("empty pattern")
	case strings.HasPrefix(p, "/") || strings.Contains(p, "\\"):
		return fmt.Errorf("%q must be a relative path with '/'", p)
	case slices.Contains(strings.Split(p, "/"), ".."):
		return fmt.Errorf("%q leaves the data folder", p)
	case strings.ContainsAny(strings.ReplaceAll(p, "{id}", ""), "*?[]{}"):
		return fmt.Errorf("%q has glob characters or braces other than {id}", p)
	}
	n := strings.Count(p, "{id}")
	if withID && n != 1 {
		return fmt.Errorf("%q must hold {id} exactly once", p)
	}
	if !withID && n != 0 {
		return fmt.Errorf("%q is one file for all cases and must not hold {id}", p)
	}
	return nil
}

func (s *Submission) check(t *Task) error {
	if s.CSV == "" {
		s.CSV = "submission.csv"
	}
	if s.Format == SubmitClassTable {
		return s.checkClassTable(t)
	}
	if len(s.ValueColumns) > 0 {
		return fieldErr("submission.value_columns", "names a classification's class columns, in format %s", SubmitClassTable)
	}
	switch {
	case len(s.Columns) == 0:
		return fieldErr("submission.columns", "missing")
	case !slices.Contains(s.Columns, s.IDColumn):
		return fieldErr("submission.id_column", "%q is not one of the columns %v", s.IDColumn, s.Columns)
	case (s.FileColumn == "") == (s.ValueColumn == ""):
		return fieldErr("submission", "exactly one of file_column and value_column must be set")
	case s.FileColumn != "" && !slices.Contains(s.Columns, s.FileColumn):
		return fieldErr("submission.file_column", "%q is not one of the columns %v", s.FileColumn, s.Columns)
	case s.ValueColumn != "" && !slices.Contains(s.Columns, s.ValueColumn):
		return fieldErr("submission.value_column", "%q is not one of the columns %v", s.ValueColumn, s.Columns)
	}
	if s.FileColumn != "" {
		if err := checkPattern(s.Path, true); err != nil {
			return fieldErr("submission.path", "%v", err)
		}
	}
	for c := range s.Const {
		if !slices.Contains(s.Columns, c) {
			return fieldErr("submission.const", "%q is not one of the columns %v", c, s.Columns)
		}
	}
	for _, c := range s.Columns {
		if c != s.IDColumn && c != s.FileColumn && c != s.ValueColumn {
			if _, ok := s.Const[c]; !ok {
				return fieldErr("submission.columns", "column %q has no source: not the id, file or value column and not in const", c)
			}
		}
	}
	return nil
}

// Spec is the plugin-facing part of the task.
func (t *Task) Spec() *taskspec.Spec {
	s := &taskspec.Spec{
		ID: t.ID, Kind: t.Kind, Dims: t.Dims, Modality: t.Modality, Channels: t.Channels,
		Labels: t.Labels, Instances: t.Instances, Attributes: t.Attributes, Points: t.Points,
		PointRadius: t.PointRadius, Box3D: t.Box3D, Score: t.Score, Metric: t.Metric.Name,
		Challenge: t.Challenge,
	}
	if t.Submission.FileColumn != "" {
		s.Output = Suffix(t.Submission.Path)
	}
	if t.Kind != taskspec.Segmentation && t.Kind != taskspec.Enhancement {
		s.Output = ".json"
	}
	return s
}

// Suffix is a path's file suffix, with the double suffixes .nii.gz and .seg.nrrd kept
// whole.
func Suffix(path string) string {
	base := path[strings.LastIndex(path, "/")+1:]
	for _, s := range []string{".nii.gz", ".seg.nrrd"} {
		if strings.HasSuffix(base, s) {
			return s
		}
	}
	if i := strings.LastIndex(base, "."); i >= 0 {
		return base[i:]
	}
	return ""
}
