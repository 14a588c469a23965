package export

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"amid/assets/fileio"
	"amid/plugins/metrics"
	"amid/plugins/taskspec"
	"amid/viewer/edit"
	"amid/viewer/edit/marks"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// Review decisions on a predicted case: right as it is, corrected by the reader (the
// correction kept beside the prediction), or wrong.
const (
	Approved  = "approved"
	Corrected = "corrected"
	Rejected  = "rejected"
)

// CorrectionsDir is the folder of a run's, or a predict run's, corrections.
const CorrectionsDir = "corrections"

// Check refuses a decision that is not Approved, Corrected or Rejected, that names no
// case, or whose correction is not a file of the corrections folder (a corrected case
// needs one, the others have none).
func (d Decision) Check() error {
	if d.Case == "" {
		return errors.New("review: the decision names no case")
	}
	if d.Decision != Approved && d.Decision != Corrected && d.Decision != Rejected {
		return fmt.Errorf("review: decision %q is not %s, %s or %s", d.Decision, Approved, Corrected, Rejected)
	}
	if (d.Decision == Corrected) != (d.Correction != "") {
		return fmt.Errorf("review: a %s decision on case %s with correction %q: a correction goes with %s alone", d.Decision, d.Case, d.Correction, Corrected)
	}
	if d.Correction != "" && (!filepath.IsLocal(d.Correction) || filepath.Dir(filepath.Clean(d.Correction)) != CorrectionsDir) {
		return fmt.Errorf("review: case %s's correction %q is not a file of the %s folder", d.Case, d.Correction, CorrectionsDir)
	}
	return nil
}

// SaveCorrection writes labels, a reader's correction of case id's prediction, as
// corrections/ID.nii.gz in dir, never over the prediction, atomically (a reader never
// finds half a file), and returns its path relative to dir for the Decision.
func SaveCorrection(dir, id string, labels *volume.Volume) (string, error) {
	return saveCorrection(dir, id, ".nii.gz", func(path string) error { return imageio.Write(path, labels) })
}

// SaveAnnotationCorrection writes a, a reader's correction of case id's detection (its
// boxes and points), in the task's annotation format as corrections/ID.json in dir, never
// over the prediction, atomically, and returns its path relative to dir for the Decision.
func SaveAnnotationCorrection(dir, id string, a *taskspec.Annotation) (string, error) {
	b, err := a.Marshal()
	if err != nil {
		return "", fmt.Errorf("review: case %s's correction: %w", id, err)
	}
	return saveCorrection(dir, id, ".json", func(path string) error { return os.WriteFile(path, b, 0o644) })
}

// saveCorrection writes case id's correction as corrections/ID+ext in dir through write,
// which writes a file at the path it is given.
func saveCorrection(dir, id, ext string, write func(path string) error) (string, error) {
	if id == "" || !filepath.IsLocal(id) || filepath.Base(id) != id {
		return "", fmt.Errorf("review: case %q cannot name a file", id)
	}
	rel := filepath.Join(CorrectionsDir, id+ext)
	path := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+id+".partial"+ext)
	if err := write(tmp); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("review: case %s's correction: %w", id, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return rel, fileio.SyncDir(filepath.Dir(path))
}

// CorrectionRecord is what the audit log keeps of a correction: the file's sha256 and how
// many voxels took or lost each label against the prediction (a label map), or how many
// boxes and points of each class were added, removed, moved or reclassed (a detection).
type CorrectionRecord struct {
	SHA256  string         `json:"sha256"`
	Changes []edit.Change  `json:"changes"`
	Marks   []marks.Change `json:"marks,omitempty"`
}

// Counts is what the audit entry of a correction records as its changes: the marks' of a
// detection, else the labels'.
func (r CorrectionRecord) Counts() any {
	if r.Marks != nil {
		return r.Marks
	}
	return r.Changes
}

// IsAnnotationCorrection reports whether decision d's correction is a detection's
// annotation (corrections/ID.json), not a label map.
func IsAnnotationCorrection(d Decision) bool { return strings.HasSuffix(d.Correction, ".json") }

// RecordAnnotationCorrection reads the correction of decision d (in dir), an annotation of
// the task spec, and the prediction pred it corrects, and returns its record: the boxes
// and points of each class added, removed, moved or reclassed (amid/viewer/edit/marks.Diff,
// a point moved within the task's point radius counting as moved).
func RecordAnnotationCorrection(dir string, d Decision, pred string, spec *taskspec.Spec) (CorrectionRecord, error) {
	path := filepath.Join(dir, d.Correction)
	sum, err := fileio.PathSHA256(path)
	if err != nil {
		return CorrectionRecord{}, fmt.Errorf("review: case %s's correction: %w", d.Case, err)
	}
	read := func(what, path string) (marks.Set, error) {
		a, err := taskspec.ReadAnnotation(path, spec)
		if err == nil {
			var s marks.Set
			if s, err = taskspec.MarksOf(a, spec); err == nil {
				return s, nil
			}
		}
		return marks.Set{}, fmt.Errorf("review: case %s's %s %s: %w", d.Case, what, path, err)
	}
	now, err := read("correction", path)
	if err != nil {
		return CorrectionRecord{}, err
	}
	was, err := read("prediction", pred)
	if err != nil {
		return CorrectionRecord{}, err
	}
	ch := marks.Diff(was, now, PointRadius(spec))
	if ch == nil {
		ch = []marks.Change{} // a correction that changed nothing is still a detection's
	}
	return CorrectionRecord{SHA256: sum, Marks: ch}, nil
}

// PointRadius is the distance (pixels) within which a point of the task spec is the same
// object: the task's own, else the PUMA challenge's matching radius the detection plugin
// validates with.
func PointRadius(spec *taskspec.Spec) float64 {
	if spec != nil && spec.PointRadius > 0 {
		return spec.PointRadius
	}
	return metrics.PUMAMatchRadius
}

// RecordCorrection reads the correction of decision d (in dir) and the prediction pred it
// corrects, which must lie on the same grid, and returns its record.
func RecordCorrection(dir string, d Decision, pred string) (CorrectionRecord, error) {
	path := filepath.Join(dir, d.Correction)
	sum, err := fileio.PathSHA256(path)
	if err != nil {
		return CorrectionRecord{}, fmt.Errorf("review: case %s's correction: %w", d.Case, err)
	}
	now, err := imageio.Read(path)
	if err != nil {
		return CorrectionRecord{}, fmt.Errorf("review: case %s's correction: %w", d.Case, err)
	}
	was, err := imageio.ReadLabels(pred, now)
	if err != nil {
		return CorrectionRecord{}, fmt.Errorf("review: case %s's prediction %s: %w", d.Case, pred, err)
	}
	ch, err := edit.Diff(was, now)
	if err != nil {
		return CorrectionRecord{}, fmt.Errorf("review: case %s's correction against its prediction: %w", d.Case, err)
	}
	return CorrectionRecord{SHA256: sum, Changes: ch}, nil
}

// ReadDecisions reads the decisions file at path (every decision in the order made, as
// AppendDecision writes it) and returns the newest decision on each case, in the order
// the cases were first decided; none when the file does not exist.
func ReadDecisions(path string) ([]Decision, error) {
	var all []Decision
	err := fileio.ReadJSON(path, &all)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	latest := map[string]int{}
	var out []Decision
	for _, d := range all {
		if i, ok := latest[d.Case]; ok {
			out[i] = d
			continue
		}
		latest[d.Case] = len(out)
		out = append(out, d)
	}
	return out, nil
}

// AppendDecision appends d to the decisions file at path (atomically: the file holds the
// old list or the new one) and returns the hex sha256 of what it wrote, for the audit
// entry that records the decision.
func AppendDecision(path string, d Decision) (string, error) {
	var all []Decision
	if err := fileio.ReadJSON(path, &all); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	b, err := json.MarshalIndent(append(all, d), "", "  ")
	if err != nil {
		return "", err
	}
	b = append(b, '\n')
	if err := fileio.Write(path, b); err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
