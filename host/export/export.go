// Package export writes, zips and verifies AMID's model package: a folder (and a zip of it)
// that holds everything needed to understand, audit and re-run a trained model.
//
// # Layout
//
//	manifest.json     format and AMID versions, task, plugin, audit anchor, every file's size and sha256
//	report.md         the solution report (see Report)
//	reproduce.sh      re-runs prediction with the bundled plugin into OUT/predictions: amid reproduce PACKAGE OUT
//	task.yaml         the task definition
//	fingerprint.json  the dataset fingerprint
//	model_card.json   the model card (see Card), and model_card.md its text
//	plan.json         the planned lanes
//	folds.json        the locked cross-validation folds (amid/host/folds), which a model
//	                  improved from this one (amid run --from) keeps
//	scores.json       per-fold validation scores of every lane (see Scores)
//	review.json       the reviewer's decisions (see Decision)
//	measurements.json the reader's measurements on the cases (see Measurements), and
//	measurements.csv  their table: case, plane, slice, kind, value, unit, coordinates
//	audit.jsonl       the audit log up to and including the export entry
//	plugin/NAME       the plugin binary that trained the model and predicts with it
//	model/config.json the chosen lane's configuration
//	model/...         the weights (checkpoint files)
//	predictions/...   the predictions on the test set
//	dicom/ID.dcm      when the test images are DICOM: each prediction as a DICOM SEG
//	submission/...    the submission files in the challenge's format
//
// # What ties the package to its audit log
//
// [Write] appends one audit entry, action "export" by role host, whose Outputs map every
// file of the package except manifest.json and audit.jsonl (which cannot hash themselves)
// to its sha256, and whose Details hold {"task", "lane", "plugin", "format"}. It then
// exports the log up to that entry as audit.jsonl, so the export entry is the last line,
// and records the log's entry count and last hash in the manifest.
//
// The weights are checked twice: each file under model/ other than config.json must have
// the sha256 that the export entry records for its path, and, when the package names its
// lane (Contents.Lane), a sha256 that some "lane.trained" entry whose Details field "lane"
// (DetailLane) equals that lane lists among its Outputs, under any name (one entry per
// fold; an ensemble's weights may come from several). So the weights shipped are the ones
// the log says were trained.
//
// [Verify] checks all of this on a folder or a zip, and optionally re-runs prediction into
// a clean temporary folder and compares the predictions byte for byte.
package export

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/finite"
	"amid/plugins/compute"
)

// Format is the package format version this program writes; it reads every version up to
// it. Format 2 added the compute identities (Manifest.Compute and Manifest.Trained).
const Format = 2

// Fixed names inside a package.
const (
	FileManifest    = "manifest.json"
	FileReport      = "report.md"
	FileReproduce   = "reproduce.sh"
	FileTask        = "task.yaml"
	FileFingerprint = "fingerprint.json"
	FilePlan        = "plan.json"
	FileScores      = "scores.json"
	FileReview      = "review.json"
	FileAudit       = "audit.jsonl"
	FileModelConfig = "model/config.json"
	FileFolds       = "folds.json"
	DirPlugin       = "plugin"
	DirModel        = "model"
	DirPredictions  = "predictions"
	DirDICOM        = "dicom"
	DirSubmission   = "submission"
)

// DetailLane is the Details field of a "lane.trained" (and the "export") audit entry that
// names the lane.
const DetailLane = "lane"

// Contents is what Write puts into a package. Paths name files and folders on disk that
// are copied; the other fields are written as JSON (or YAML, Markdown) files.
type Contents struct {
	TaskID        string    // required
	AMIDVersion   string    // required
	Created       time.Time // zero: now
	Plugin        Plugin    // required: name, version and the binary's path
	EngineVersion string    // optional: the training engine's version
	// Compute is what computed the predictions; Trained what trained the weights (one
	// entry per distinct identity). Both are optional: a plugin may not report them.
	Compute compute.Identity
	Trained []compute.Identity
	// Lane is the chosen lane's ID as its lane.trained entries name it in Details "lane".
	// When set, those entries must record the sha256 of every checkpoint.
	Lane string

	Task        []byte // task.yaml, required
	Fingerprint any    // fingerprint.json; nil writes {}
	Plan        any    // plan.json; nil writes []
	Folds       any    // folds.json; nil writes none
	Scores      Scores
	Review      []Decision
	ModelConfig any // model/config.json; nil writes {}

	Checkpoints []string // weight files, copied to model/<base name>; at least one
	Predictions string   // folder copied to predictions/ (every plain file under it); "" for none
	DICOM       string   // folder of DICOM SEG predictions, copied to dicom/; "" for none
	// Corrections is the folder of the review's corrections (the label maps of the
	// corrected decisions), copied to corrections/ so that a model can learn from them;
	// "" for none.
	Corrections string
	Submission  string // folder copied to submission/; "" for none
	// Measurements are the reader's measurements on the cases (measure.go), written as
	// measurements.json and its table measurements.csv; none writes neither.
	Measurements []*Measurements

	Report Report
	// Card is the model card, written as model_card.json and model_card.md; nil writes
	// none.
	Card *Card

	// Audit is the run's audit log; Write appends the export entry to it. Required.
	Audit *audit.Log
	// Parent, when set, is the package this model was improved from: the audit log
	// continues the parent's, and its run.from entry names the parent's manifest.
	Parent *Parent
}

// Parent is a manifest's record of the package a model was improved from: the sha256 of
// its manifest.json, and its audit log's entry count and last hash, which Audit's log
// holds as its first entries, followed by the run.from entry that names the manifest.
type Parent struct {
	SHA256   string `json:"sha256"`
	Entries  int    `json:"audit_entries"`
	LastHash string `json:"audit_last_hash"`
}

// Plugin names the plugin that trained the model.
type Plugin struct {
	Name    string
	Version string
	Binary  string // path of the executable, copied to plugin/<base name>
}

// Scores are the per-fold validation scores of every lane (scores.json).
type Scores struct {
	Metric         string       `json:"metric"`
	HigherIsBetter bool         `json:"higher_is_better"`
	Lanes          []LaneScores `json:"lanes"`
}

// LaneScores are one lane's validation scores.
type LaneScores struct {
	Lane   string      `json:"lane"`
	Plugin string      `json:"plugin"`
	Status string      `json:"status"` // done, failed, cancelled
	Reason string      `json:"reason,omitempty"`
	Folds  []FoldScore `json:"folds"`
}

// FoldScore is a lane's metric on one validation fold.
type FoldScore struct {
	Fold  int     `json:"fold"`
	Score float64 `json:"score"`
	Cases int     `json:"cases,omitempty"`
}

// Mean is the mean score over the folds, NaN when there are none.
func (l LaneScores) Mean() float64 {
	if len(l.Folds) == 0 {
		return math.NaN()
	}
	var s float64
	for _, f := range l.Folds {
		s += f.Score
	}
	return s / float64(len(l.Folds))
}

// Decision is one review decision (review.json).
type Decision struct {
	Case     string    `json:"case"`
	Decision string    `json:"decision"` // approved, corrected, rejected
	Reviewer string    `json:"reviewer,omitempty"`
	Time     time.Time `json:"time"`
	Note     string    `json:"note,omitempty"`
	// Correction is the reader's corrected label map of a corrected case, relative to the
	// run's folder (corrections/ID.nii.gz; SaveCorrection), or a detection's corrected
	// boxes and points (corrections/ID.json; SaveAnnotationCorrection).
	Correction string `json:"correction,omitempty"`
}

// Manifest is manifest.json.
type Manifest struct {
	Format        int          `json:"format"`
	AMIDVersion   string       `json:"amid_version"`
	Created       time.Time    `json:"created"`
	TaskID        string       `json:"task_id"`
	Lane          string       `json:"lane,omitempty"`
	Plugin        PluginRecord `json:"plugin"`
	EngineVersion string       `json:"engine_version,omitempty"`
	// Compute is what computed predictions/: a re-run under the same identity must give
	// the same bytes, under another it must agree within compute.Table (format 2; zero
	// when the plugin did not report it, and then only the same bytes pass).
	Compute compute.Identity `json:"compute,omitzero"`
	// Trained is what trained the weights under model/, one entry per distinct identity.
	Trained []compute.Identity `json:"trained,omitempty"`
	Audit   AuditRecord        `json:"audit"`
	// Parent is the package this model was improved from; nil for a first model.
	Parent *Parent `json:"parent,omitempty"`
	// Files lists every file of the package but manifest.json, sorted by path.
	Files []File `json:"files"`
}

// PluginRecord is the manifest's record of the plugin.
type PluginRecord struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Binary  string `json:"binary"` // path inside the package, plugin/NAME
	SHA256  string `json:"sha256"`
}

// AuditRecord anchors the audit log: its entry count and last hash (the export entry's).
type AuditRecord struct {
	File     string `json:"file"`
	Entries  int    `json:"entries"`
	LastHash string `json:"last_hash"`
}

// File is one file of the package: its slash-separated path, size and sha256.
type File struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

func (c *Contents) check() error {
	switch {
	case c.TaskID == "":
		return errors.New("export: the task ID is empty")
	case c.AMIDVersion == "":
		return errors.New("export: the AMID version is empty")
	case c.Plugin.Name == "" || c.Plugin.Version == "" || c.Plugin.Binary == "":
		return errors.New("export: the plugin's name, version and binary are all required")
	case len(c.Task) == 0:
		return errors.New("export: the task definition (task.yaml) is empty")
	case len(c.Checkpoints) == 0:
		return errors.New("export: no checkpoint files to put under model/")
	case c.Audit == nil:
		return errors.New("export: no audit log")
	}
	seen := map[string]string{"config.json": "model/config.json"}
	for _, p := range c.Checkpoints {
		b := filepath.Base(p)
		if prev, ok := seen[b]; ok {
			return fmt.Errorf("export: checkpoints %s and %s would both be model/%s", prev, p, b)
		}
		seen[b] = p
	}
	for _, l := range c.Scores.Lanes {
		for _, f := range l.Folds {
			if math.IsNaN(f.Score) || math.IsInf(f.Score, 0) {
				return fmt.Errorf("export: lane %s fold %d: score %v is not a finite number (record a failed fold in the lane's status instead)", l.Lane, f.Fold, f.Score)
			}
		}
	}
	return nil
}

// Write lays out a package in dir, which must not exist or be empty, and returns its
// manifest. It builds the package in a sibling folder and renames it into place, so dir
// holds a complete package or nothing. It appends the export entry to c.Audit (see the
// package doc); if c.Lane is set and the log's lane.trained entry for it does not record a
// checkpoint's sha256, Write fails before appending.
func Write(dir string, c Contents) (*Manifest, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("export: %s exists and is not empty", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("export: %w", err)
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".partial-")
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	m, err := write(tmp, &c)
	if err != nil {
		return nil, err
	}
	if err := fileio.SyncDir(tmp); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	os.Remove(dir) // an empty folder only
	if err := os.Rename(tmp, dir); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	done = true
	fileio.SyncDir(parent)
	return m, nil
}

func write(root string, c *Contents) (*Manifest, error) {
	created := c.Created
	if created.IsZero() {
		created = time.Now()
	}
	created = created.UTC().Truncate(time.Second)
	binary := DirPlugin + "/" + filepath.Base(c.Plugin.Binary)
	m := &Manifest{
		Format:        Format,
		AMIDVersion:   c.AMIDVersion,
		Created:       created,
		TaskID:        c.TaskID,
		Lane:          c.Lane,
		Plugin:        PluginRecord{Name: c.Plugin.Name, Version: c.Plugin.Version, Binary: binary},
		EngineVersion: c.EngineVersion,
		Compute:       c.Compute,
		Trained:       c.Trained,
		Parent:        c.Parent,
	}
	orEmpty := func(v any, empty string) any {
		if v == nil {
			return json.RawMessage(empty)
		}
		return v
	}
	review := c.Review
	if review == nil {
		review = []Decision{}
	}
	scores := c.Scores
	if scores.Lanes == nil {
		scores.Lanes = []LaneScores{}
	}
	for _, f := range []struct {
		name string
		v    any
	}{
		{FileFingerprint, orEmpty(c.Fingerprint, "{}")},
		{FilePlan, orEmpty(c.Plan, "[]")},
		{FileScores, scores},
		{FileReview, review},
		{FileModelConfig, orEmpty(c.ModelConfig, "{}")},
		{FileFolds, c.Folds},
	} {
		if f.v == nil {
			continue
		}
		b, err := json.MarshalIndent(f.v, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("export: %s: %w", f.name, err)
		}
		if err := writeFile(root, f.name, append(b, '\n'), 0o644); err != nil {
			return nil, err
		}
	}
	if err := writeFile(root, FileTask, c.Task, 0o644); err != nil {
		return nil, err
	}
	if c.Card != nil {
		if err := finite.Check(c.Card); err != nil {
			return nil, fmt.Errorf("export: %s: %w", FileCard, err)
		}
		b, err := json.MarshalIndent(c.Card, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("export: %s: %w", FileCard, err)
		}
		if err := writeFile(root, FileCard, append(b, '\n'), 0o644); err != nil {
			return nil, err
		}
		if err := writeFile(root, FileCardText, []byte(RenderCard(c.Card)), 0o644); err != nil {
			return nil, err
		}
	}
	if err := writeFile(root, FileReproduce, []byte(reproduceScript(binary)), 0o755); err != nil {
		return nil, err
	}
	if err := writeFile(root, FileReport, []byte(RenderReport(m, c.Report, scores)), 0o644); err != nil {
		return nil, err
	}
	if err := copyFile(c.Plugin.Binary, filepath.Join(root, filepath.FromSlash(binary)), 0o755); err != nil {
		return nil, err
	}
	var weights []string
	for _, p := range c.Checkpoints {
		rel := DirModel + "/" + filepath.Base(p)
		if err := copyFile(p, filepath.Join(root, filepath.FromSlash(rel)), 0o644); err != nil {
			return nil, err
		}
		weights = append(weights, rel)
	}
	for _, t := range []struct{ src, dst string }{{c.Predictions, DirPredictions}, {c.Submission, DirSubmission}, {c.DICOM, DirDICOM}, {c.Corrections, CorrectionsDir}} {
		if t.src == "" && (t.dst == DirDICOM || t.dst == CorrectionsDir) {
			continue
		}
		if err := os.MkdirAll(filepath.Join(root, t.dst), 0o755); err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		if t.src != "" {
			if err := copyTree(t.src, filepath.Join(root, t.dst)); err != nil {
				return nil, err
			}
		}
	}
	if err := writeMeasurements(root, c.Measurements); err != nil {
		return nil, err
	}

	files, err := listFiles(root)
	if err != nil {
		return nil, err
	}
	outputs := map[string]string{}
	for _, f := range files {
		outputs[f.Path] = f.SHA256
		if f.Path == binary {
			m.Plugin.SHA256 = f.SHA256
		}
	}
	entries, err := c.Audit.Entries()
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if c.Lane != "" {
		for _, w := range weights {
			if err := checkTrained(entries, c.Lane, w, outputs[w]); err != nil {
				return nil, fmt.Errorf("export: %w", err)
			}
		}
	}
	details, _ := json.Marshal(map[string]any{"task": c.TaskID, DetailLane: c.Lane, "plugin": c.Plugin.Name, "format": Format})
	e, err := c.Audit.Append(audit.Entry{Role: audit.RoleHost, Action: audit.ActionExport, Outputs: outputs, Details: details})
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if entries, err = c.Audit.Entries(); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	entries = entries[:e.Seq] // later appends by others belong to the run, not the package
	if err := audit.Verify(entries); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if err := checkParent(entries, c.Parent); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	var log bytes.Buffer
	if err := audit.WriteJSONL(&log, entries); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if err := writeFile(root, FileAudit, log.Bytes(), 0o644); err != nil {
		return nil, err
	}
	h := sha256.Sum256(log.Bytes())
	files = append(files, File{Path: FileAudit, Size: int64(log.Len()), SHA256: hex.EncodeToString(h[:])})
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	m.Files = files
	m.Audit = AuditRecord{File: FileAudit, Entries: len(entries), LastHash: e.Hash}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("export: manifest: %w", err)
	}
	if err := writeFile(root, FileManifest, append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	return m, nil
}

// checkTrained reports when no lane.trained entry for lane lists sum among its Outputs.
// Every fold of a lane has its own entry, so an ensemble's weights may come from several.
func checkTrained(entries []audit.Entry, lane, file, sum string) error {
	var seqs []string
	for _, e := range entries {
		if e.Action != audit.ActionLaneTrained || detail(e, DetailLane) != lane {
			continue
		}
		for _, v := range e.Outputs {
			if v == sum {
				return nil
			}
		}
		seqs = append(seqs, fmt.Sprint(e.Seq))
	}
	if len(seqs) == 0 {
		return fmt.Errorf("%s: the audit log has no lane.trained entry for lane %s", file, lane)
	}
	return fmt.Errorf("%s: sha256 %s is not among the weights that the lane.trained entries for lane %s (seq %s) record", file, sum, lane, strings.Join(seqs, ", "))
}

// checkParent reports when entries do not continue the chain of parent p's package: its
// export entry at seq p.Entries with hash p.LastHash, followed by the run.from entry that
// names p's manifest. Nothing to check without a parent.
func checkParent(entries []audit.Entry, p *Parent) error {
	if p == nil {
		return nil
	}
	if p.Entries < 1 || p.Entries >= len(entries) {
		return fmt.Errorf("the parent package's audit log has %d entries, and this one %d: it does not continue the parent's", p.Entries, len(entries))
	}
	end, from := entries[p.Entries-1], entries[p.Entries]
	if end.Hash != p.LastHash || end.Action != audit.ActionExport {
		return fmt.Errorf("entry seq %d is %s with hash %s, not the parent package's export entry %s: the log does not continue the parent's", end.Seq, end.Action, end.Hash, p.LastHash)
	}
	if from.Action != audit.ActionRunFrom || from.Inputs[FileManifest] != p.SHA256 {
		return fmt.Errorf("entry seq %d (%s) does not name the parent package's manifest (sha256 %s) as the run.from entry after its export must", from.Seq, from.Action, p.SHA256)
	}
	return nil
}

// detail returns the string Details field key of e, "" when absent.
func detail(e audit.Entry, key string) string {
	var m map[string]any
	if json.Unmarshal(e.Details, &m) != nil {
		return ""
	}
	s, _ := m[key].(string)
	return s
}

func writeFile(root, rel string, data []byte, mode os.FileMode) error {
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("export: %s: %w", rel, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("export: %s: %w", rel, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("export: %s: %w", rel, err)
	}
	return os.Chmod(p, mode)
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer in.Close()
	if st, err := in.Stat(); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("export: %s is not a plain file", src)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("export: copy %s: %w", src, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return fmt.Errorf("export: %s: %w", dst, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("export: %s: %w", dst, err)
	}
	return os.Chmod(dst, mode)
}

// copyTree copies every plain file under src into dst; anything else (a link, a device)
// is an error naming it.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		case d.Type().IsRegular():
			return copyFile(p, filepath.Join(dst, rel), 0o644)
		default:
			return fmt.Errorf("export: %s is not a plain file or folder", p)
		}
	})
}

// listFiles lists every plain file under root with its size and sha256, sorted.
func listFiles(root string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		sum, err := fileio.SHA256(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files = append(files, File{Path: filepath.ToSlash(rel), Size: info.Size(), SHA256: sum})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// reproduceScript is reproduce.sh for the plugin binary at binary (package path).
func reproduceScript(binary string) string {
	return `#!/bin/sh
# Re-runs this package's prediction with its bundled plugin binary (` + binary + `) and
# weights (model/) on the test cases of task.yaml, and writes the predictions to
# OUT_DIR/predictions, laid out as this package's predictions/ folder. It calls
# "amid reproduce PACKAGE_DIR OUT_DIR"; the amid program is $AMID when set, else the one on
# PATH.
#
# "amid verify PACKAGE_DIR" does the same into a clean temporary folder and compares every
# file with predictions/ byte for byte.
#
# Usage: ./reproduce.sh OUT_DIR
set -eu
if [ "$#" -ne 1 ]; then
	echo "usage: $0 OUT_DIR" >&2
	exit 2
fi
pkg=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
exec "${AMID:-amid}" reproduce "$pkg" "$1"
`
}

// cleanRel says whether p is a clean, relative, slash-separated path inside a package.
func cleanRel(p string) bool {
	return fs.ValidPath(p) && p != "." && !strings.Contains(p, `\`) && path.Clean(p) == p
}
