package predict

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/export"
	"amid/host/profile"
	"amid/host/supervisor"
	"amid/host/task"
	"amid/plugins/compute"
	"amid/plugins/taskspec"
	"amid/viewer/dicom/dataset"
)

// Files Apply writes in its output folder, besides predictions/ and dicom/.
const (
	FileResults = "results.json" // what happened to each case (Result)
	FileVolumes = "volumes.csv"  // segmentation: each label's voxels and volume per case
	FileAudit   = "audit.jsonl"  // the predict run's own audit log, exported
	fileAuditDB = "audit.db"     // the same log in its bbolt file
	workDir     = ".work"
)

// ErrOutput marks an output folder Apply will not write into.
var ErrOutput = errors.New("the output folder")

// Options tune Apply.
type Options struct {
	Supervisor supervisor.Options
	// Progress, when set, hears of each case as it ends: its number (from 1) of total.
	Progress func(k, total int, c CaseResult)
	// Version is AMID's version, written into each DICOM SEG, SR and derived series.
	Version string
	// Card, when set, hears the package's model card once the package is verified (nil
	// for a package made before cards), so that its intended use and limits can be shown
	// once before anything is predicted.
	Card func(*export.Card)
	// Send, when set, receives each case's DICOM SEG, SR or derived series as soon as it
	// is written (the PACS the study came from); a refusal fails the case and keeps its
	// files.
	Send Sender
	// Probabilities asks a segmentation package for each case's probability map too
	// (protocol.Prediction.Probabilities; a fold ensemble's is its members' mean), written
	// to probabilities/. A package of another kind is refused.
	Probabilities bool
}

// CaseResult is what Apply did with one case. Paths are relative to the output folder.
type CaseResult struct {
	ID          string   `json:"id"`
	Inputs      []string `json:"inputs"`
	Predictions []string `json:"predictions,omitempty"`
	SEG         string   `json:"dicom_seg,omitempty"`
	// SR is the DICOM structured report of a detection, classification or image-quality
	// score of DICOM input (SRable); Derived the folder of the derived DICOM series of an
	// enhancement of DICOM input (Derivable), one file per slice.
	SR      string `json:"dicom_sr,omitempty"`
	Derived string `json:"dicom_derived,omitempty"`
	// Probabilities is the case's probability map, when asked for (Options.Probabilities)
	// and its plugin writes one: a float32 NIfTI on the prediction's grid, one channel per
	// label of the task, background first.
	Probabilities string `json:"probabilities,omitempty"`
	// Confidence is how sure the model is of the case, from 0 to 1 (nil when its plugin
	// does not say; see protocol.Prediction.Confidence).
	Confidence *float64 `json:"confidence,omitempty"`
	// Warnings say what the model never saw in training (see profile.Admit), and that a
	// probability map asked for was not written.
	Warnings []string `json:"warnings,omitempty"`
	// Sent: the SEG, SR or derived series was stored in the PACS the case came from
	// (Options.Send).
	Sent bool `json:"sent,omitempty"`
	// Error says why the case has no prediction, or why it was not sent; the other
	// cases are predicted.
	Error   string  `json:"error,omitempty"`
	Seconds float64 `json:"seconds"`
}

// DICOM names the DICOM object Apply wrote for the case: "DICOM SEG", "DICOM SR",
// "derived DICOM series", or "" when none.
func (c CaseResult) DICOM() string {
	switch {
	case c.SEG != "":
		return "DICOM SEG"
	case c.SR != "":
		return "DICOM SR"
	case c.Derived != "":
		return "derived DICOM series"
	}
	return ""
}

// Result is results.json: what one Apply did.
type Result struct {
	Package        string           `json:"package"`
	ManifestSHA256 string           `json:"manifest_sha256"`
	Task           string           `json:"task"`
	Lane           string           `json:"lane"`
	Compute        compute.Identity `json:"compute,omitzero"`
	Cases          []CaseResult     `json:"cases"`
	Failed         int              `json:"failed"`
	// ReviewOrder is the predicted cases' ids, the least sure first (by Confidence; the
	// cases without one last, in input order): the order to look at them in.
	ReviewOrder []string `json:"review_order"`
}

// Apply predicts the cases in inputs (see task.Task.Inputs) with the model package in
// the folder pkg (or its zip, unpacked into out's work folder), into out (a new or empty
// folder). It verifies the package first
// (export.Verify: files, sha256s, audit chain, weights) and refuses a changed one. Each
// case is checked against the package's data contract (profile.Admit), brought onto one
// grid (Align) and predicted alone through the package's own plugin, ensemble and
// configuration, so that one bad case loses no other's result. out then holds
// predictions/ (the task's own format, as the package's predictions/), for DICOM input
// dicom/ID.dcm (a DICOM SEG of a segmentation, a structured report of a detection,
// classification or image-quality score) or dicom/ID/ (an enhancement's derived series,
// one file per slice), volumes.csv (segmentation), each case's probability map in
// probabilities/ when asked for (Options.Probabilities; named as the plugin names it, the
// built-in one ID_probabilities.nii.gz),
// results.json and the predict run's own audit log (audit.jsonl), whose first entry
// names the package's manifest and audit anchor and whose entries record inputs and
// outputs by sha256 alone, never by name (a failure by its stage: the reason, which may
// name a file, is in results.json). An error means nothing was predicted, or the
// results could not be recorded; failed cases are in Result.
func Apply(ctx context.Context, pkg string, inputs []string, out string, o Options) (*Result, error) {
	if ents, err := os.ReadDir(out); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("%w %s holds files already: give a new or empty folder", ErrOutput, out)
	}
	given := pkg
	if st, err := os.Stat(pkg); err == nil && !st.IsDir() {
		// A package.zip runs from its files unpacked into the work folder, verified there.
		dir := filepath.Join(out, workDir, "package")
		if err := export.Unpack(pkg, dir); err != nil {
			return nil, err
		}
		pkg = dir
	}
	if _, err := export.Verify(ctx, pkg, export.VerifyOptions{}); err != nil {
		return nil, fmt.Errorf("the package %s fails its check, so nothing was predicted: %w", pkg, err)
	}
	pk, err := Open(pkg)
	if err != nil {
		return nil, err
	}
	if o.Card != nil {
		card, err := export.ReadCard(os.DirFS(pkg))
		if err != nil {
			return nil, err
		}
		o.Card(card)
	}
	var fp profile.Fingerprint
	if err := fileio.ReadJSON(filepath.Join(pkg, export.FileFingerprint), &fp); err != nil {
		return nil, err
	}
	cases, unread, err := pk.Task.Inputs(inputs)
	if err != nil {
		return nil, err
	}
	if o.Probabilities && pk.Task.Kind != taskspec.Segmentation {
		return nil, fmt.Errorf("a probability map is a segmentation's, and the package %s is a %s model: its confidence per case is in %s", given, pk.Task.Kind, FileResults)
	}
	pr, err := pk.Predictor(o.Supervisor)
	if err != nil {
		return nil, err
	}
	pr.Probabilities = o.Probabilities
	manSum, err := fileio.PathSHA256(filepath.Join(pkg, export.FileManifest))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	log, err := audit.Open(filepath.Join(out, fileAuditDB))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	a := &applied{pk: pk, pr: pr, fp: &fp, out: out, log: log, o: o,
		res: &Result{Package: given, ManifestSHA256: manSum, Task: pk.Task.ID, Lane: pk.Manifest.Lane}}
	if err := a.record("predict.started", map[string]string{export.FileManifest: manSum}, nil, map[string]any{
		"package_audit_last_hash": pk.Manifest.Audit.LastHash, "task": pk.Task.ID, "lane": pk.Manifest.Lane,
		"plugin": pk.Manifest.Plugin.Name, "plugin_sha256": pk.Manifest.Plugin.SHA256, "amid_version": o.Version, "cases": len(cases), "unread": len(unread),
	}); err != nil {
		return nil, err
	}
	total := len(cases) + len(unread)
	for k, u := range unread {
		cr := CaseResult{ID: u.ID, Inputs: []string{u.Input}, Error: u.Err.Error()}
		a.res.Cases = append(a.res.Cases, cr)
		a.res.Failed++
		if err := a.record("predict.failed", nil, nil, map[string]any{"input": k + 1, "stage": "input"}); err != nil {
			return nil, err
		}
		if o.Progress != nil {
			o.Progress(k+1, total, cr)
		}
	}
	var vols []VolumeRow
	for k, c := range cases {
		if err := ctx.Err(); err != nil {
			return a.res, err
		}
		cr, rows, err := a.one(ctx, k, c)
		if err != nil {
			return a.res, err
		}
		vols = append(vols, rows...)
		a.res.Cases = append(a.res.Cases, cr)
		if cr.Error != "" {
			a.res.Failed++
		}
		if o.Progress != nil {
			o.Progress(len(unread)+k+1, total, cr)
		}
	}
	return a.res, a.finish(vols)
}

// applied is one Apply under way.
type applied struct {
	pk  *Package
	pr  *Predictor
	fp  *profile.Fingerprint
	out string
	log *audit.Log
	o   Options
	res *Result
}

func (a *applied) record(action string, in, outs map[string]string, details map[string]any) error {
	d, err := json.Marshal(details)
	if err != nil {
		return err
	}
	_, err = a.log.Append(audit.Entry{Role: audit.RoleHost, Action: action, Inputs: in, Outputs: outs, Details: d})
	return err
}

// one predicts case k. A case the model refuses or fails on is a CaseResult with Error;
// the error returned is one that stops the whole Apply (the audit log cannot be written).
func (a *applied) one(ctx context.Context, k int, c task.Case) (CaseResult, []VolumeRow, error) {
	began := time.Now()
	cr := CaseResult{ID: c.ID, Inputs: append([]string(nil), c.Images...)}
	in := map[string]string{}
	for i, p := range c.Images {
		s, err := fileio.PathSHA256(p)
		if err != nil {
			s = ""
		}
		if s != "" {
			in[fmt.Sprintf("image%d", i+1)] = s
		}
	}
	fail := func(stage string, err error) (CaseResult, []VolumeRow, error) {
		cr.Error = err.Error()
		cr.Seconds = time.Since(began).Seconds()
		return cr, nil, a.record("predict.failed", in, nil, map[string]any{"case": k + 1, "stage": stage})
	}
	work := filepath.Join(a.out, workDir, fmt.Sprintf("%d", k+1))
	d := &task.Dataset{Test: []task.Case{c}}
	if _, err := Align(ctx, d, filepath.Join(work, "channels")); err != nil {
		return fail("read", err)
	}
	c = d.Test[0]
	warns, err := profile.Admit(a.fp, a.pk.Task, c)
	if err != nil {
		return fail("contract", err)
	}
	cr.Warnings = warns
	p, err := a.pk.Predict(ctx, a.pr, []task.Case{c}, filepath.Join(work, "predictions"))
	if err != nil {
		if ctx.Err() != nil {
			return cr, nil, ctx.Err()
		}
		return fail("prediction", err)
	}
	a.res.Compute = p.Compute
	if v, ok := p.Confidence[c.ID]; ok {
		cr.Confidence = &v
	}
	outs := map[string]string{}
	for i, f := range p.Files[c.ID] {
		rel := filepath.Join("predictions", filepath.Base(f))
		s, err := a.keep(f, rel)
		if err != nil {
			return cr, nil, err
		}
		outs[fmt.Sprintf("prediction%d", i+1)] = s
		cr.Predictions = append(cr.Predictions, rel)
	}
	if m, ok := p.Probabilities[c.ID]; ok {
		rel := filepath.Join("probabilities", filepath.Base(m))
		s, err := a.keep(m, rel)
		if err != nil {
			return cr, nil, err
		}
		outs["probabilities"] = s
		cr.Probabilities = rel
	} else if a.o.Probabilities {
		cr.Warnings = append(cr.Warnings, fmt.Sprintf("the package's plugin %s wrote no probability map", a.pk.Manifest.Plugin.Name))
	}
	var rows []VolumeRow
	if len(cr.Predictions) > 0 {
		pred := filepath.Join(a.out, cr.Predictions[0])
		stage, err := a.dicom(ctx, c, pred, began, &cr, outs)
		if err != nil {
			if stage == "" {
				return cr, nil, err
			}
			return fail(stage, err)
		}
		if rows, err = Volumes(a.pk.Task, c.ID, pred); err != nil {
			return fail("volumes", err)
		}
	}
	cr.Seconds = time.Since(began).Seconds()
	details := map[string]any{"case": k + 1, "seconds": cr.Seconds}
	if cr.Confidence != nil {
		details["confidence"] = *cr.Confidence
	}
	if a.o.Send != nil {
		details["sent"] = cr.Sent
	}
	if len(warns) > 0 {
		details["warnings"] = warns
	}
	return cr, rows, a.record("predict.case", in, outs, details)
}

// keep moves the file f written in the work folder to rel in the output folder and returns
// its sha256.
func (a *applied) keep(f, rel string) (string, error) {
	dst := filepath.Join(a.out, rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(f, dst); err != nil {
		return "", err
	}
	return fileio.PathSHA256(dst)
}

// dicom writes the DICOM objects of case c's prediction pred into dicom/ (a SEG, a
// structured report or a derived series: SEGable, SRable, Derivable), records their
// sha256s in outs and their path in cr, and stores them in the PACS (Options.Send). A
// failure to encode is returned with its stage ("dicom"); a failure to write, with none
// (it stops the Apply); a refusal of the PACS is cr.Error.
func (a *applied) dicom(ctx context.Context, c task.Case, pred string, began time.Time, cr *CaseResult, outs map[string]string) (string, error) {
	t, man := a.pk.Task, a.pk.Manifest
	files, kind, err := Objects(t, c, pred, cr.Confidence, Naming{
		Task: t.ID, Lane: man.Lane, Plugin: man.Plugin.Name, Version: a.o.Version,
		DeviceUID: dataset.UIDFrom("amid model package", a.res.ManifestSHA256), Created: began,
	})
	if err != nil {
		return "dicom", err
	}
	rel := filepath.Join("dicom", ObjectPath(kind, c.ID))
	switch kind {
	case ObjectSEG:
		cr.SEG = rel
	case ObjectSR:
		cr.SR = rel
	case ObjectDerived:
		cr.Derived = rel
	default:
		return "", nil
	}
	paths, err := WriteObjects(filepath.Join(a.out, "dicom"), kind, c.ID, files)
	if err != nil {
		return "", err
	}
	for i, path := range paths {
		name := kind
		if kind == ObjectDerived {
			name = fmt.Sprintf("%s%d", kind, i+1)
		}
		s, err := fileio.PathSHA256(path)
		if err != nil {
			return "", err
		}
		outs[name] = s
	}
	if a.o.Send != nil {
		// A refusal keeps the case's files and records them: the case fails at the send
		// alone.
		if err := a.o.Send.Store(ctx, paths); err != nil {
			cr.Error = fmt.Sprintf("the %s was not stored in the PACS: %v", cr.DICOM(), err)
		} else {
			cr.Sent = true
		}
	}
	return "", nil
}

// finish writes volumes.csv and results.json, records the end and exports the log.
func (a *applied) finish(vols []VolumeRow) error {
	var done []CaseResult
	for _, c := range a.res.Cases {
		if len(c.Predictions) > 0 {
			done = append(done, c)
		}
	}
	sort.SliceStable(done, func(i, j int) bool {
		ci, cj := done[i].Confidence, done[j].Confidence
		return ci != nil && (cj == nil || *ci < *cj)
	})
	a.res.ReviewOrder = []string{}
	for _, c := range done {
		a.res.ReviewOrder = append(a.res.ReviewOrder, c.ID)
	}
	outs := map[string]string{}
	if len(vols) > 0 {
		if err := fileio.Write(filepath.Join(a.out, FileVolumes), VolumesCSV(a.pk.Task, vols)); err != nil {
			return err
		}
		s, err := fileio.PathSHA256(filepath.Join(a.out, FileVolumes))
		if err != nil {
			return err
		}
		outs[FileVolumes] = s
	}
	b, err := json.MarshalIndent(a.res, "", "  ")
	if err != nil {
		return err
	}
	if err := fileio.Write(filepath.Join(a.out, FileResults), append(b, '\n')); err != nil {
		return err
	}
	s, err := fileio.PathSHA256(filepath.Join(a.out, FileResults))
	if err != nil {
		return err
	}
	outs[FileResults] = s
	if err := a.record("predict.done", nil, outs, map[string]any{
		"cases": len(a.res.Cases), "failed": a.res.Failed, "compute": a.res.Compute,
	}); err != nil {
		return err
	}
	if err := exportLog(a.log, a.out); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(a.out, workDir))
}

// exportLog writes the predict run's audit log as audit.jsonl in out, atomically.
func exportLog(log *audit.Log, out string) error {
	return fileio.WriteWith(filepath.Join(out, FileAudit), log.ExportJSONL)
}
