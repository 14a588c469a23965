package run

// A run that improves a model package (Options.From; amid run TASK --from PACKAGE): the
// package's model, checked as amid predict checks it, continues training on the task's
// training cases and the cases readers corrected, within the budget.
//
//   - The audit log starts with the package's own log (audit.Log.Continue) and a run.from
//     entry that names the package's manifest.json by its sha256, so the new package's log
//     holds the whole history and export.Verify proves the link (Manifest.Parent).
//   - The corrections are those recorded in the package's own audit log and in the audit
//     logs of the run or predict-run folders given (Options.Corrections; by default the
//     package's run folder, when the package is a run's own RUN/package): each corrected
//     decision's file must still have the sha256 its review.decision entry recorded; one
//     that does not is refused with a sentence, and nothing is learned from it.
//   - Splits stay honest: the package's locked folds are kept (folds.Extend deals the new
//     cases by the same patient-level rule, and the new folds name the parent's hash); a
//     corrected test case leaves the test set for training, and the report says which; the
//     test score is computed on the test cases neither model trained on, and the package's
//     own model is scored on the same cases beside it.
//   - The model: the package's lane continued from its weights on every training case by
//     the final phase's model on all the data ([Runner.trainAllData]): its planned end is
//     twice the package's steps, its learning rate going on down from where the package's
//     schedule would have had it, and it trains on to the reserve at the pace it makes
//     ([Runner.extendAllData]); a union's or ensemble's first member is continued. A lane
//     at its cap (a forest with all its trees: its plan's max_steps) has nothing to
//     continue: it is trained again from the start on each of the kept folds, the
//     corrected cases among their training cases, and its fold models are ensembled
//     ([Runner.trainFolds]), each scored on its fold's validation cases. When the package
//     is itself that lane's fold ensemble, its fold models are scored on the same folds'
//     validation cases (the folds are kept, so none of them trained on its fold's cases)
//     and the package's ensemble stands when its out-of-fold mean is the higher: a change
//     of model is judged on validation evidence ([Runner.keepBetter]).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/catalog"
	"amid/host/evaluate"
	"amid/host/export"
	"amid/host/folds"
	"amid/host/planner"
	"amid/host/predict"
	"amid/host/schedule"
	"amid/host/task"
)

// From is what a run that improves a model package started from (State.From).
type From struct {
	// Package is the package folder (a zip is unpacked into the run's from/package).
	Package string        `json:"package"`
	Parent  export.Parent `json:"parent"`
	// Lane, Plugin and Config are the package's model's lane; Checkpoint the copy of its
	// weights in the run folder, SHA256 their hash and Step the step they reached.
	Lane       string          `json:"lane"`
	Plugin     string          `json:"plugin"`
	Config     json.RawMessage `json:"config"`
	Checkpoint string          `json:"checkpoint"`
	SHA256     string          `json:"sha256"`
	Step       int64           `json:"step"`
	// MaxSteps is the lane's cap in the package's plan (0: none).
	MaxSteps int `json:"max_steps,omitempty"`
	// Members are the package's fold models when it is a fold ensemble (their weights
	// copied into the run), Vote that their label maps are voted.
	Members []predict.Member `json:"members,omitempty"`
	Vote    bool             `json:"vote,omitempty"`
	// Sources are the folders whose recorded corrections were read, the package first.
	Sources   []string    `json:"sources"`
	Corrected []Corrected `json:"corrected,omitempty"`
	// Old is the package's model's score on the test cases the new model is scored on.
	Old *Grade `json:"old,omitempty"`
}

// Corrected is a reader's correction learned from: a training case whose label is the
// corrected label map (copied into the run's from/corrections).
type Corrected struct {
	ID      string   `json:"id"`
	Patient string   `json:"patient"`
	Images  []string `json:"images,omitempty"` // a new patient's images; none for a test case
	Label   string   `json:"label"`
	SHA256  string   `json:"sha256"`
	Source  string   `json:"source"`
	// Test: the case was a test case of the task; it leaves the test set.
	Test bool `json:"test,omitempty"`
}

// fromDir is the run's folder of what it took from the package.
const fromDir = "from"

// ErrCorrection marks a correction that cannot be learned from.
var ErrCorrection = errors.New("correction")

// startFrom opens a run that improves a package: it checks the package as amid predict
// does, continues its audit log, records run.from, copies the weights and the locked
// folds, and gathers the corrections. It runs first in prepare, on an empty log.
func (r *Runner) startFrom(ctx context.Context, pkg string, sources []string) error {
	if st, err := os.Stat(pkg); err == nil && !st.IsDir() {
		dir := r.path(fromDir, "package")
		if err := export.Unpack(pkg, dir); err != nil {
			return err
		}
		pkg = dir
	}
	if _, err := export.Verify(ctx, pkg, export.VerifyOptions{}); err != nil {
		return fmt.Errorf("the package %s fails its check, so nothing was trained from it: %w", pkg, err)
	}
	pk, err := predict.Open(pkg)
	if err != nil {
		return err
	}
	if pk.Task.ID != r.task.ID {
		return fmt.Errorf("the package %s is a model of task %s, not of %s", pkg, pk.Task.ID, r.task.ID)
	}
	if pk.Model.Deidentified || r.st.Deidentify {
		// Its cases are named by pseudonyms whose key stays in its run folder.
		return fmt.Errorf("the package %s or this run is de-identified, and improving a model across pseudonyms is not built: improve it from a run that is not", pkg)
	}
	man, err := fileio.PathSHA256(filepath.Join(pkg, export.FileManifest))
	if err != nil {
		return err
	}
	parentFolds, err := folds.Load(filepath.Join(pkg, export.FileFolds))
	if err != nil {
		return fmt.Errorf("the package %s holds no locked folds (%s), which a model improved from it keeps: export it again from its run: %w", pkg, export.FileFolds, err)
	}
	f, err := os.Open(filepath.Join(pkg, export.FileAudit))
	if err != nil {
		return err
	}
	entries, err := audit.ReadJSONL(f)
	f.Close()
	if err != nil {
		return err
	}
	have, err := r.audit.Entries()
	switch n := len(entries); {
	case err != nil:
		return err
	case len(have) == 0:
		if err := r.audit.Continue(entries); err != nil {
			return err
		}
	case len(have) < n || have[n-1].Hash != pk.Manifest.Audit.LastHash:
		return fmt.Errorf("the run's audit log does not begin with the package's: it was started from another package")
	} // else a preparation resumed after the log was continued: it goes on from it
	mc := pk.Model
	fr := &From{Package: pkg, Parent: export.Parent{SHA256: man, Entries: pk.Manifest.Audit.Entries, LastHash: pk.Manifest.Audit.LastHash},
		Lane: mc.Lane, Plugin: mc.Plugin, Config: mc.PluginConfig, Sources: []string{pkg}}
	ck := mc.Checkpoint
	if len(mc.Members) > 0 {
		ck, fr.Config, fr.Vote = mc.Members[0].Checkpoint, mc.Members[0].PluginConfig, mc.Vote
		for _, m := range mc.Members {
			src := filepath.Join(pkg, export.DirModel, m.Checkpoint)
			m.Checkpoint = r.path(fromDir, "model", m.Checkpoint)
			if err := copyFile(src, m.Checkpoint); err != nil {
				return err
			}
			fr.Members = append(fr.Members, m)
		}
	}
	fr.Checkpoint = r.path(fromDir, "model", filepath.Base(ck))
	if err := copyFile(filepath.Join(pkg, export.DirModel, ck), fr.Checkpoint); err != nil {
		return err
	}
	if fr.SHA256, err = fileio.SHA256(fr.Checkpoint); err != nil {
		return err
	}
	fr.Step = trainedSteps(entries, fr.SHA256)
	var plan Plan
	if err := fileio.ReadJSON(filepath.Join(pkg, export.FilePlan), &plan); err != nil {
		return err
	}
	for _, l := range plan.Lanes {
		if unsafeName.ReplaceAllString(l.Name, "_") == fr.Lane {
			fr.MaxSteps = l.MaxSteps
		}
	}
	if err := copyFile(filepath.Join(pkg, export.FileFolds), r.path(fromDir, export.FileFolds)); err != nil {
		return err
	}
	r.st.From = fr
	if err := r.record(audit.RoleHost, audit.ActionRunFrom, map[string]string{export.FileManifest: man, "checkpoint": fr.SHA256, "folds": parentFolds.Hash},
		nil, map[string]any{"task": r.task.ID, "lane": fr.Lane, "plugin": fr.Plugin, "step": fr.Step, "parent_audit_entries": fr.Parent.Entries, "parent_audit_last_hash": fr.Parent.LastHash}); err != nil {
		return err
	}
	if runDir := filepath.Dir(filepath.Clean(fr.Package)); len(sources) == 0 && runDir != r.dir && exists(filepath.Join(runDir, stateFileName)) {
		// A run's own package (RUN/package, written before its review): the run's
		// review is where its corrections are recorded.
		sources = []string{runDir}
	}
	for _, src := range append([]string{pkg}, sources...) {
		if err := r.gatherCorrections(src, src == pkg, entries); err != nil {
			return err
		}
	}
	if len(sources) > 0 {
		fr.Sources = append(fr.Sources, sources...)
	}
	moved := 0
	for _, c := range fr.Corrected {
		if c.Test {
			moved++
		}
	}
	r.logf("continuing %s's lane %s from step %d (its manifest's sha256 %s); corrected cases learned from: %d, of them test cases that leave the test set: %d",
		pkg, fr.Lane, fr.Step, man[:12], len(fr.Corrected), moved)
	return r.save()
}

// trainedSteps is the step the lane.trained (or final.extended) entry that recorded the
// weights sum says they reached; 0 when none does.
func trainedSteps(entries []audit.Entry, sum string) int64 {
	var steps int64
	for _, e := range entries {
		if e.Outputs["checkpoint"] != sum {
			continue
		}
		var d struct {
			Steps int64 `json:"steps"`
		}
		if json.Unmarshal(e.Details, &d) == nil && d.Steps > 0 {
			steps = d.Steps
		}
	}
	return steps
}

// gatherCorrections adds the corrected decisions recorded in src: the package (whose log
// is entries), a run folder (run.json) or a predict run's folder (results.json, made with
// the same package). Each correction's file must have the sha256 that the newest
// review.decision entry on its case recorded.
func (r *Runner) gatherCorrections(src string, isPackage bool, entries []audit.Entry) error {
	fr := r.st.From
	var res *predict.Result
	switch {
	case isPackage:
	case exists(filepath.Join(src, stateFileName)):
		var err error
		if entries, err = verifiedLog(src); err != nil {
			return err
		}
	case exists(filepath.Join(src, predict.FileResults)):
		res = &predict.Result{}
		if err := fileio.ReadJSON(filepath.Join(src, predict.FileResults), res); err != nil {
			return err
		}
		if res.ManifestSHA256 != fr.Parent.SHA256 {
			return fmt.Errorf("%w: the predict run %s was made with the package whose manifest's sha256 is %s, not with %s", ErrCorrection, src, res.ManifestSHA256, fr.Parent.SHA256)
		}
		var err error
		if entries, err = verifiedLog(src); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: %s is neither a run folder (run.json) nor a predict run's folder (%s)", ErrCorrection, src, predict.FileResults)
	}
	ds, err := export.ReadDecisions(filepath.Join(src, reviewFile))
	if err != nil {
		return err
	}
	for _, d := range ds {
		if d.Decision != export.Corrected {
			continue
		}
		if err := d.Check(); err != nil {
			return fmt.Errorf("%w in %s: %w", ErrCorrection, src, err)
		}
		key := any(d.Case) // a run's entries name the case, a predict run's its place
		var rc *predict.CaseResult
		if res != nil {
			k := slices.IndexFunc(res.Cases, func(c predict.CaseResult) bool { return c.ID == d.Case })
			if k < 0 {
				return fmt.Errorf("%w: case %s of %s's review is not among its results", ErrCorrection, d.Case, src)
			}
			key, rc = float64(k+1), &res.Cases[k]
		}
		recorded := recordedCorrection(entries, key)
		path := filepath.Join(src, d.Correction)
		sum, err := fileio.SHA256(path)
		if err != nil {
			return fmt.Errorf("%w: case %s's correction: %w", ErrCorrection, d.Case, err)
		}
		if recorded == "" {
			return fmt.Errorf("%w: case %s's correction %s is not recorded in %s's audit log, so it is not learned from", ErrCorrection, d.Case, path, src)
		}
		if sum != recorded {
			return fmt.Errorf("%w: case %s's correction %s has sha256 %s, but %s's audit log recorded %s: it was changed after it was recorded, so it is not learned from", ErrCorrection, d.Case, path, sum, src, recorded)
		}
		ext := strings.TrimPrefix(filepath.Base(d.Correction), d.Case) // .nii.gz, or a detection's .json
		c := Corrected{SHA256: sum, Source: src, Label: r.path(fromDir, export.CorrectionsDir, sum[:16]+ext)}
		if rc != nil {
			c.ID = "corrected-" + sum[:12] // a new patient's case, named by no file or identifier
			c.Patient, c.Images = c.ID, rc.Inputs
		} else {
			c.ID, c.Test = d.Case, true
		}
		if err := copyFile(path, c.Label); err != nil {
			return err
		}
		fr.Corrected = slices.DeleteFunc(fr.Corrected, func(o Corrected) bool { return o.ID == c.ID })
		fr.Corrected = append(fr.Corrected, c)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// verifiedLog is the entries of the audit log of the run or predict-run folder dir, whose
// chain must hold.
func verifiedLog(dir string) ([]audit.Entry, error) {
	lg, err := audit.OpenReadOnly(filepath.Join(dir, "audit.db"), "")
	if err != nil {
		return nil, fmt.Errorf("corrections in %s: %w", dir, err)
	}
	defer lg.Close()
	if err := lg.Verify(); err != nil {
		return nil, fmt.Errorf("corrections in %s: %w", dir, err)
	}
	return lg.Entries()
}

// recordedCorrection is the correction's sha256 that the newest review.decision entry on
// case key (a case id, or a predict run's case number) recorded; "" when none did.
func recordedCorrection(entries []audit.Entry, key any) string {
	sum := ""
	for _, e := range entries {
		if e.Action != audit.ActionReviewDecision {
			continue
		}
		var d struct {
			Case any `json:"case"`
		}
		if json.Unmarshal(e.Details, &d) != nil || d.Case != key {
			continue
		}
		sum = e.Outputs["correction"] // "" when the newest decision on the case was not a correction
	}
	return sum
}

// applyFrom makes d the improving run's cases: each corrected test case leaves the test
// set and trains with its correction; each corrected new patient's case trains. The
// corrections' files must still be those gathered.
func (r *Runner) applyFrom(d *task.Dataset) error {
	fr := r.st.From
	if fr == nil {
		return nil
	}
	format := r.task.Data.Train.Label.Format
	if format == "" {
		format = task.LabelImage
	}
	for _, c := range fr.Corrected {
		// A label map trains a task of label images, a detection's annotation JSON one
		// of annotations: the formats the task's own labels are read in.
		if boxes := strings.HasSuffix(c.Label, ".json"); !(boxes && format == task.LabelAnnotation || !boxes && format == task.LabelImage) {
			return fmt.Errorf("%w: case %s's correction %s cannot train a task whose labels are %s", ErrCorrection, c.ID, filepath.Base(c.Label), format)
		}
		sum, err := fileio.SHA256(c.Label)
		if err != nil {
			return err
		}
		if sum != c.SHA256 {
			return fmt.Errorf("%w: the copy %s of a correction has sha256 %s, gathered as %s", ErrCorrection, c.Label, sum, c.SHA256)
		}
		if !c.Test {
			if slices.ContainsFunc(d.Train, func(t task.Case) bool { return t.ID == c.ID }) {
				continue
			}
			nc, unread, err := r.task.Inputs(c.Images)
			if err != nil {
				return err
			}
			if len(unread) > 0 || len(nc) != 1 {
				return fmt.Errorf("%w: the images of corrected case %s (%s) do not read as one case", ErrCorrection, c.ID, strings.Join(c.Images, ", "))
			}
			tc := nc[0]
			tc.ID, tc.Patient, tc.Label = c.ID, c.Patient, c.Label
			d.Train = append(d.Train, tc)
			continue
		}
		k := slices.IndexFunc(d.Test, func(t task.Case) bool { return t.ID == c.ID })
		if k < 0 {
			return fmt.Errorf("%w: corrected case %s is not a test case of the task in %s", ErrCorrection, c.ID, d.Root)
		}
		tc := d.Test[k]
		tc.Label = c.Label
		d.Test = slices.Delete(d.Test, k, k+1)
		d.Train = append(d.Train, tc)
	}
	return nil
}

// extendFolds extends the package's locked folds with the training cases they do not hold.
func (r *Runner) extendFolds(train []task.Case, classes map[string][]string) (*folds.Folds, error) {
	parent, err := folds.Load(r.path(fromDir, export.FileFolds))
	if err != nil {
		return nil, err
	}
	return folds.Extend(parent, train, classes)
}

// planFrom plans the package's lane alone, its fold 0 the package's weights: exploration
// has nothing to choose, and the final model continues it.
func (r *Runner) planFrom(ctx context.Context) error {
	fr := r.st.From
	entries, err := r.plugins(ctx)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(entries, func(e *catalog.Entry) bool { return e.Name == fr.Plugin }) {
		return fmt.Errorf("the plugin %s that trained the package is not installed here, or does not take this task", fr.Plugin)
	}
	l := &LaneState{Lane: planner.Lane{Name: fr.Lane, Plugin: fr.Plugin, Config: fr.Config, Device: r.st.Device,
		Rationale: fmt.Sprintf("the lane of the package whose manifest's sha256 is %s, continued from its weights", fr.Parent.SHA256)}, ID: fr.Lane}
	l.MaxSteps = fr.MaxSteps
	l.Folds = map[int]FoldState{0: fr.fold()}
	l.Schedule = schedule.Lane{ID: l.ID, MinSteps: 1, MaxSteps: fr.MaxSteps, Overhead: (3 * r.st.PluginStart).Seconds(), Span: evaluate.Span(r.task.Spec())}
	r.st.Lanes, r.st.Winner = []*LaneState{l}, l.ID
	r.st.WinnerWhy = "the package's lane, continued"
	sum, err := writeJSON(r.path("plan.json"), Plan{Lanes: []planner.Lane{l.Lane}, FinalRule: "the package's model continued on every training case, the corrected ones among them, until the reserve"})
	if err != nil {
		return err
	}
	return r.record(audit.RolePlanner, "plan.made", nil, map[string]string{"plan.json": sum}, map[string]any{"lanes": []string{l.ID}, "from": fr.Parent.SHA256})
}

// fold is the package's model as the lane's fold 0: what is submitted when no new model
// can be made.
func (fr *From) fold() FoldState {
	return FoldState{Status: FoldDone, Checkpoint: fr.Checkpoint, SHA256: fr.SHA256, Steps: fr.Step}
}

// capped reports that the package's lane has reached its cap: it cannot be continued.
func (fr *From) capped() bool { return fr.MaxSteps > 0 && fr.Step >= int64(fr.MaxSteps) }

// continueFrom makes the improved model: the package's model continued on every training
// case, or, for a lane at its cap, trained again on every kept fold and ensembled.
func (r *Runner) continueFrom(ctx context.Context) error {
	fr, w := r.st.From, r.st.Lanes[0]
	if fm := r.st.Final; fm != nil && (fm.Checkpoint != "" || fm.Error != "" || len(r.st.Union) > 0) {
		return nil // made before a resume
	}
	if fr.capped() {
		return r.retrainFrom(ctx, w)
	}
	if r.st.Final == nil {
		until := fr.Step + max(fr.Step, 1)
		why := fmt.Sprintf("the package's model (step %d) continued on all %d training cases (corrected: %d) to step %d, and on at the pace it makes until the reserve",
			fr.Step, len(r.data.Train), len(fr.Corrected), until)
		r.st.Final = &FinalModel{Mode: schedule.FinalAllData, Lane: w.ID, Rule: "continued", Why: why, Until: until, From: fr.Checkpoint, FromStep: fr.Step}
		r.logf("final model: %s", why)
		if err := r.record(audit.RoleHost, "final.planned", nil, nil, map[string]any{"mode": schedule.FinalAllData, "lane": w.ID, "rule": "continued", "why": why, "until": until}); err != nil {
			return err
		}
		if err := r.save(); err != nil {
			return err
		}
	}
	err := r.trainAllData(ctx, w)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		r.st.Final.Error = err.Error()
		note := fmt.Sprintf("the package's model could not be trained further (%v): it is submitted as it was", err)
		r.logf("%s", note)
		r.st.Notes = append(r.st.Notes, note)
		return r.record(audit.RoleHost, "final.failed", nil, nil, map[string]any{"mode": schedule.FinalAllData, "reason": err.Error()})
	}
	return nil
}

// retrainFrom trains the capped lane w again from the start on every kept fold, to its
// cap, and ensembles the fold models; the package's model stands when that fails.
func (r *Runner) retrainFrom(ctx context.Context, w *LaneState) error {
	fr := r.st.From
	if r.st.Final == nil {
		why := fmt.Sprintf("the package's lane is at its cap (step %d of %d) and cannot be continued: it is trained again from the start on each of the %d folds, the corrected cases (%d) among their training cases, and its fold models are ensembled",
			fr.Step, fr.MaxSteps, r.st.Folds, len(fr.Corrected))
		r.st.Final = &FinalModel{Mode: schedule.FinalEnsemble, Lane: w.ID, Rule: "retrained at its cap", Why: why, Until: int64(fr.MaxSteps)}
		w.Folds = map[int]FoldState{} // no fold of the package's is a model of these folds
		r.logf("final model: %s", why)
		if err := r.record(audit.RoleHost, "final.planned", nil, nil, map[string]any{"mode": schedule.FinalEnsemble, "lane": w.ID, "rule": "retrained at its cap", "why": why, "until": fr.MaxSteps}); err != nil {
			return err
		}
		if err := r.save(); err != nil {
			return err
		}
	}
	err := r.trainFolds(ctx, w)
	if err == nil {
		err = r.keepBetter(ctx, w)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		r.st.Final.Error, r.st.Union = err.Error(), nil
		w.Folds = map[int]FoldState{0: fr.fold()}
		note := fmt.Sprintf("the package's lane could not be trained again on every fold (%v): the package's model is submitted as it was", err)
		r.logf("%s", note)
		r.st.Notes = append(r.st.Notes, note)
		return r.record(audit.RoleHost, "final.failed", nil, nil, map[string]any{"mode": schedule.FinalEnsemble, "reason": err.Error()})
	}
	return nil
}

// keepBetter scores each of the package's fold models on its kept fold's validation cases
// beside the retrained fold model of that fold, and makes the package's ensemble the
// final model again when its out-of-fold mean over those folds is higher (a package may
// hold fewer folds' models than were retrained: the time held only some). Nothing to
// compare unless the package is a voted fold ensemble of w's lane.
func (r *Runner) keepBetter(ctx context.Context, w *LaneState) error {
	fr, fm := r.st.From, r.st.Final
	if !fr.Vote || len(fr.Members) == 0 {
		return nil
	}
	fl, err := r.folds()
	if err != nil {
		return err
	}
	var was, now float64
	n := 0
	for _, m := range fr.Members {
		var k int
		if _, err := fmt.Sscanf(strings.TrimPrefix(m.Lane, w.ID+"."), "f%d", &k); err != nil || k >= fl.K || !strings.HasPrefix(m.Lane, w.ID+".") {
			return nil // not a fold model of this lane's folds
		}
		_, val, err := fl.Split(r.data.Train, k)
		if err != nil {
			return err
		}
		s, err := r.validate(ctx, r.path(fromDir, "val", fmt.Sprintf("f%d", k)), w, w.Plugin, m.PluginConfig, m.Checkpoint, val)
		if err != nil {
			return fmt.Errorf("the package's fold model %s on fold %d: %w", m.Lane, k, err)
		}
		if f := w.Folds[k]; f.scored() && s.Undefined == "" {
			was, now, n = was+s.Value, now+f.Score, n+1
		}
	}
	if n == 0 {
		return nil
	}
	was, now = was/float64(n), now/float64(n)
	kept := was > now
	r.logf("on the validation cases of the %d kept folds the package has models of (the corrected cases among them), the package's fold models score %.4f out of fold, the retrained ones %.4f", n, was, now)
	if err := r.record(audit.RoleHost, "final.compared", nil, nil, map[string]any{"package_out_of_fold": was, "retrained_out_of_fold": now, "folds": n, "package_kept": kept}); err != nil {
		return err
	}
	if kept {
		r.st.Union = slices.Clone(fr.Members)
		fm.Why += fmt.Sprintf("; on the same folds the package's own fold models score %.4f out of fold against the retrained %.4f, so the package's ensemble stands", was, now)
		fm.OutOfFold = was
		r.st.Notes = append(r.st.Notes, fmt.Sprintf("the corrections did not improve the model on validation (out of fold %.4f retrained against %.4f for the package's): the package's ensemble is submitted", now, was))
	}
	return r.save()
}

// chooseFrom is the final phase's choice in an improving run: the continued model.
func (r *Runner) chooseFrom() {
	fr := r.st.From
	r.st.Chosen, r.st.ChosenFold = r.st.Lanes[0].ID, 0
	r.st.Why = []string{fmt.Sprintf("%s improved from the package whose manifest's sha256 is %s", r.st.Chosen, fr.Parent.SHA256)}
	if fm := r.st.Final; fm != nil {
		r.st.Why = append(r.st.Why, "final model ("+fm.Mode+"): "+fm.Why)
	}
	var moved []string
	for _, c := range fr.Corrected {
		if c.Test {
			moved = append(moved, c.ID)
		}
	}
	if len(moved) > 0 {
		r.st.Why = append(r.st.Why, fmt.Sprintf("the corrected test cases (%s) trained the model and left the test set: the test score is computed on the test cases neither model trained on (%d)",
			strings.Join(moved, ", "), len(r.data.Test)))
	}
}

// scoreOld predicts the test cases with the package's own model and scores them against
// the answers, beside the new model's score.
func (r *Runner) scoreOld(ctx context.Context, details map[string]any) error {
	fr := r.st.From
	pk, err := predict.Open(fr.Package)
	if err != nil {
		return err
	}
	pr, err := pk.Predictor(r.env.Supervisor)
	if err != nil {
		return err
	}
	cases, err := r.handed.Cases(r.data.Test)
	if err != nil {
		return err
	}
	began := time.Now()
	p, err := pk.Predict(ctx, pr, cases, r.path(fromDir, "predictions"))
	if err != nil {
		return fmt.Errorf("the package's own model on the test cases: %w", err)
	}
	s, err := r.testScore(ctx, p.Files)
	if err != nil {
		return err
	}
	fr.Old = &Grade{Valid: true, Primary: s.Metric, Score: s.Value, Metrics: s.Extra, PerCase: s.PerCase}
	details["old_test_score"] = s.Value
	r.logf("the package's own model on the same %d test cases: %s %.4f (predicted in %v)", s.Cases, s.Metric, s.Value, time.Since(began).Round(time.Second))
	return nil
}

// text is the report's section on the package a run improved: the corrected cases, and
// the old model's test score beside the new one's on the same cases; "" for a first run.
func (fr *From) text() string {
	if fr == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Improved from a package\n\nThe package whose manifest's sha256 is %s (lane %s, step %d), its audit log continued here. ", fr.Parent.SHA256, fr.Lane, fr.Step)
	var moved, added []string
	for _, c := range fr.Corrected {
		if c.Test {
			moved = append(moved, c.ID)
		} else {
			added = append(added, c.ID)
		}
	}
	fmt.Fprintf(&b, "Corrections learned from: %d (from %s).", len(fr.Corrected), strings.Join(fr.Sources, ", "))
	if len(moved) > 0 {
		fmt.Fprintf(&b, " Corrected test cases moved to training, out of the test set: %s.", strings.Join(moved, ", "))
	}
	if len(added) > 0 {
		fmt.Fprintf(&b, " New patients' corrected cases added to training: %s.", strings.Join(added, ", "))
	}
	b.WriteString("\n\n")
	if fr.Old != nil {
		fmt.Fprintf(&b, "On the test cases neither model trained on, the package's own model scores %s %.4f.\n\n", fr.Old.Primary, fr.Old.Score)
	}
	return b.String()
}
