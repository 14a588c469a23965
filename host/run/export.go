package run

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"amid/assets/fileio"
	"amid/host/deidentify"
	"amid/host/export"
	"amid/host/predict"
	"amid/host/profile"
	"amid/host/schedule"
	"amid/host/supervisor"
	"amid/host/task"
	"amid/plugins/compute"
)

// Version is AMID's version: the CLI's and the desktop's, recorded in packages, reports
// and the DICOM objects AMID writes; set at link time with
// -ldflags "-X amid/host/run.Version=…".
var Version = "dev"

// export writes the model package and its zip into the run folder.
func (r *Runner) export(ctx context.Context) error {
	began := r.now()
	dir := r.path("package")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := r.exportInto(ctx, dir); err != nil {
		return err
	}
	if err := export.Zip(dir, r.path("package.zip")); err != nil {
		return err
	}
	r.st.Package = dir
	r.logf("package written: %s (and %s) in %v", dir, r.path("package.zip"), r.now().Sub(began).Round(10*time.Millisecond))
	return nil
}

// exportInto writes the model package into dir.
func (r *Runner) exportInto(ctx context.Context, dir string) error {
	best := r.st.lane(r.st.Chosen)
	model := r.members()[0]
	entry, err := r.env.Catalog.Find(best.Plugin)
	if err != nil {
		return err
	}
	version := ""
	if p, err := supervisor.Start(ctx, entry, r.env.Supervisor); err == nil {
		if d, err := p.Describe(ctx); err == nil {
			version = d.Version
		}
		p.Kill()
	}
	fold := r.st.ChosenFold
	if fm := r.st.Final; r.finalMade() && fm.Mode == schedule.FinalAllData {
		fold = -1 // every training case
	}
	mc := predict.ModelConfig{Lane: best.ID, Fold: fold, Plugin: best.Plugin, PluginConfig: model.PluginConfig,
		Checkpoint: filepath.Base(model.Checkpoint), Data: r.st.Data, Vote: r.st.Vote, Deidentified: r.st.Deidentify}
	if r.st.Deidentify {
		mc.Data = ""
	}
	for _, c := range r.data.Test {
		tc := predict.TestCase{ID: c.ID}
		for _, p := range c.Images {
			s, err := fileio.PathSHA256(p)
			if err != nil {
				return err
			}
			tc.SHA256 = append(tc.SHA256, s)
		}
		mc.Test = append(mc.Test, tc)
	}
	rawTask, err := os.ReadFile(r.st.Task)
	if err != nil {
		return err
	}
	var fp, plan any
	if err := fileio.ReadJSON(r.path("fingerprint.json"), &fp); err != nil {
		return err
	}
	var fingerprint profile.Fingerprint
	if err := fileio.ReadJSON(r.path("fingerprint.json"), &fingerprint); err != nil {
		return err
	}
	if err := fileio.ReadJSON(r.path("plan.json"), &plan); err != nil {
		return err
	}
	c := export.Contents{
		TaskID: r.task.ID, AMIDVersion: Version, Plugin: export.Plugin{Name: best.Plugin, Version: version, Binary: entry.Path},
		Lane: r.chosenLane(),
		Task: rawTask, Fingerprint: fp, Plan: plan, Scores: r.scores(), ModelConfig: mc,
		Checkpoints: []string{model.Checkpoint}, Report: r.solutionReport(), Audit: r.audit, Card: r.card(&fingerprint, version),
	}
	if r.st.Union != nil {
		// Each member's checkpoint under its lane's name (they share the file name
		// final.ckpt in the run), recorded by the union's lane.trained entry.
		c.Checkpoints = nil
		for _, m := range r.st.Union {
			dst := r.path("final", "members", m.Lane+".ckpt")
			if err := copyFile(m.Checkpoint, dst); err != nil {
				return err
			}
			c.Checkpoints = append(c.Checkpoints, dst)
			mc.Members = append(mc.Members, predict.Member{Lane: m.Lane, PluginConfig: m.PluginConfig, Checkpoint: filepath.Base(dst), SHA256: m.SHA256})
		}
		c.ModelConfig = mc
	}
	if len(r.data.Test) > 0 {
		c.Predictions, c.Submission = r.path("final", "predictions"), r.path("submission")
		if _, err := os.Stat(r.path("final", "dicom")); err == nil {
			c.DICOM = r.path("final", "dicom")
		}
	}
	var fl json.RawMessage
	if err := fileio.ReadJSON(r.path("folds.json"), &fl); err != nil {
		return err
	}
	c.Folds = fl
	if fr := r.st.From; fr != nil {
		p := fr.Parent
		c.Parent = &p
	}
	c.Compute, c.Trained = r.st.Compute, r.trainedOn()
	if err := r.reviewDecisions(&c); err != nil {
		return err
	}
	if _, err := os.Stat(r.path(export.CorrectionsDir)); err == nil {
		c.Corrections = r.path(export.CorrectionsDir)
	}
	if c.Measurements, err = export.AllMeasurements(r.dir); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	_, err = export.Write(dir, c)
	return err
}

// trainedOn lists what trained the chosen model's checkpoints, each identity once.
func (r *Runner) trainedOn() []compute.Identity {
	var ids []compute.Identity
	add := func(sha string, id compute.Identity) {
		for _, m := range r.members() {
			if m.SHA256 == sha && !id.IsZero() && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	for _, l := range r.st.Lanes {
		for _, k := range slices.Sorted(maps.Keys(l.Folds)) {
			add(l.Folds[k].SHA256, l.Folds[k].Compute)
		}
	}
	if fm := r.st.Final; fm != nil {
		add(fm.SHA256, fm.Compute)
	}
	return ids
}

// reviewDecisions adds the run's review decisions.
func (r *Runner) reviewDecisions(c *export.Contents) error {
	ds, err := Decisions(r.dir)
	c.Review = ds
	return err
}

func (r *Runner) scores() export.Scores {
	// A metric lower is better (Brier, ECE) is ranked and kept negated: neg_<name>.
	s := export.Scores{Metric: r.scoreName(), HigherIsBetter: true}
	for _, l := range r.st.Lanes {
		ls := export.LaneScores{Lane: l.ID, Plugin: l.Plugin, Status: "done"}
		for _, k := range slices.Sorted(maps.Keys(l.Folds)) {
			f := l.Folds[k]
			if f.Status == FoldDone {
				ls.Folds = append(ls.Folds, export.FoldScore{Fold: k, Score: f.Score})
			} else if f.Error != "" {
				ls.Status, ls.Reason = "failed", oneLine(f.Error)
			}
		}
		if len(ls.Folds) > 0 {
			ls.Status = "done"
		}
		s.Lanes = append(s.Lanes, ls)
	}
	return s
}

// finalMode names how the submitted model was made.
func (r *Runner) finalMode() string {
	if r.finalMade() {
		return r.st.Final.Mode
	}
	if r.st.Union != nil {
		return "union"
	}
	return "fold model"
}

// finalText says how the final model was made, for the report.
func (r *Runner) finalText() string {
	fm := r.st.Final
	if fm == nil {
		return ""
	}
	if !r.finalMade() {
		return " The final model could not be made (" + oneLine(fm.Error) + "); the fold model is submitted."
	}
	if fm.Mode == schedule.FinalAllData {
		return fmt.Sprintf(" Final model: continued on all %d training cases from step %d to step %d (planned %d) in %v. Rule: %s How it applied: %s",
			len(r.data.Train), fm.FromStep, fm.Steps, fm.Until, fm.Took.Round(1e9), fm.Rule, fm.Why)
	}
	oof := fmt.Sprintf("%.4f", fm.OutOfFold)
	if w := r.st.lane(r.st.Chosen); w != nil && w.Undefined() != "" {
		oof = "undefined on every fold" // OutOfFold's 0 is a placeholder
	}
	return fmt.Sprintf(" Final model: the ensemble of the %d fold models, out-of-fold validation %s. Rule: %s How it applied: %s", len(r.st.Union), oof, fm.Rule, fm.Why)
}

func (r *Runner) solutionReport() export.Report {
	t := r.task
	best := r.st.lane(r.st.Chosen)
	model := r.members()[0]
	m, n := best.Mean()
	rep := export.Report{
		Title:     firstNonEmpty(t.Title, t.ID),
		Challenge: fmt.Sprintf("%s. %d-D %s, modality %s; %d training and %d test cases.", firstNonEmpty(t.Description, t.Title, t.ID), t.Dims, t.Kind, firstNonEmpty(t.Modality, "unspecified"), len(r.data.Train), len(r.data.Test)),
		Evaluation: fmt.Sprintf("The task's metric is %s (%s is better). Validation uses the host's own %s metric on %d locked patient-level folds; the test set is scored only by the challenge's grader, when its answers are given.",
			t.Metric.Name, t.Metric.Direction, t.Kind, r.st.Folds),
		Method:         fmt.Sprintf("Planner %s; %d lanes explored on the first fold by successive halving from checkpoints (%d rounds), then the final model (%s) within a %v budget.", r.st.Planner, len(r.st.Lanes), len(r.st.Rounds), r.finalMode(), r.st.Budget),
		Architecture:   fmt.Sprintf("Plugin %s, lane %s: %s", best.Plugin, best.ID, best.Rationale),
		Training:       fmt.Sprintf("Configuration:\n\n```json\n%s\n```\n\nFold %d model: %d steps in %v.%s", string(model.PluginConfig), r.st.ChosenFold, best.Folds[r.st.ChosenFold].Steps, best.Folds[r.st.ChosenFold].Took.Round(1e9), r.finalText()),
		Inference:      fmt.Sprintf("The fold %d model predicts each test case with the plugin's Predict; the host converts the predictions into the submission contract (%s).", r.st.ChosenFold, strings.Join(t.Submission.Columns, ", ")),
		PostProcessing: "As configured in the lane's configuration; none is chosen on the test set.",
		Result:         fmt.Sprintf("Mean validation %s %.4f over %d fold(s).", t.Metric.Name, m, n),
		Chosen:         best.ID,
	}
	if n == 0 {
		rep.Result = fmt.Sprintf("The validation %s is undefined on every fold: %s.", t.Metric.Name, best.Undefined())
	}
	if g := r.st.TestScore; g != nil && g.Valid {
		rep.Result += fmt.Sprintf(" The challenge's grader scores the test submission %s = %.4f.", g.Primary, g.Score)
	}
	if fr := r.st.From; fr != nil {
		rep.Method = fmt.Sprintf("Improved from the model package whose manifest's sha256 is %s (lane %s at step %d): its model continued on every training case, %d of them corrected by readers, within a %v budget; its locked folds kept.",
			fr.Parent.SHA256, fr.Lane, fr.Step, len(fr.Corrected), r.st.Budget)
		if fr.Old != nil {
			rep.Result += fmt.Sprintf(" On the same test cases, which neither model trained on, the package it was improved from scores %s %.4f.", fr.Old.Primary, fr.Old.Score)
		}
	}
	rep.Data = r.dataText()
	for _, l := range r.st.Lanes {
		why := ""
		for _, w := range r.st.Why {
			if strings.HasPrefix(w, l.ID+" ") {
				why = w
			}
		}
		rep.Candidates = append(rep.Candidates, export.Candidate{Lane: l.ID, Plugin: l.Plugin, Summary: oneLine(l.Rationale), Why: why})
	}
	return rep
}

// objectTexts say, by kind of DICOM object (predict.ObjectKind), what the package's
// dicom/ holds, up to what it references.
var objectTexts = map[string]string{
	predict.ObjectSEG:     "The test predictions are also DICOM SEG objects (`dicom/<case>.dcm`): one binary segment per label, with the task's label names and codes, frames only where there is foreground, ",
	predict.ObjectSR:      "The test predictions are also DICOM structured reports (`dicom/<case>.dcm`, Comprehensive 3D SR, TID 1500 measurement reports): a finding per box, point or class, with its score and the model's confidence, ",
	predict.ObjectDerived: "The test predictions are also derived DICOM series (`dicom/<case>/`, one DERIVED\\SECONDARY image a slice, each naming its source image), ",
}

// dataText is the report's Data and privacy section: what the DICOM SEG predictions
// reference, what de-identification did, what the data allows, and why the budget was
// not all used where it was not (as the export began).
func (r *Runner) dataText() string {
	var parts []string
	if r.st.Deidentify {
		parts = append(parts, "The run was de-identified from its start: every case id is a pseudonym (a keyed hash; the key stays in the run folder and is not in this package), in the store, the audit log, the review decisions, the file names and this report.")
	}
	if _, err := os.Stat(r.path("final", "dicom")); err == nil {
		s := objectTexts[r.dicomTest()]
		if r.st.Deidentify {
			s += "put through PS3.15's Basic Application Level Confidentiality Profile with their UIDs replaced. Their references (patient, study, series and source images) therefore no longer match the studies in PACS; they fit only the source series de-identified with the same run's key."
		} else {
			s += "referencing their source series, study and patient by the original UIDs, so they can be sent back to PACS beside their images."
		}
		parts = append(parts, s)
	}
	if len(r.st.Limits) > 0 {
		parts = append(parts, "What the data allows: "+strings.Join(r.st.Limits, "; ")+".")
	}
	if u := budgetUnused(r.st, r.spent()); u != "" {
		parts = append(parts, upperFirst(u))
	}
	return strings.Join(parts, " ")
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// Reproduce re-runs a package's prediction into out/predictions: it starts the package's
// own plugin binary (trusted by the sha256 the manifest records, which the caller has
// verified), reads the test cases from the data folder the package names (or data, when
// not empty), checks their bytes against the recorded sha256s, and predicts with the
// package's weights. It asks the plugin for the compute identity the manifest records
// (the worker split, and the kernels when this CPU can run them: compute.Env) and returns
// the identity the re-run had.
func Reproduce(ctx context.Context, pkg, out, data string, opts supervisor.Options) (compute.Identity, error) {
	var none compute.Identity
	pk, err := predict.Open(pkg)
	if err != nil {
		return none, err
	}
	t, mc := pk.Task, pk.Model
	if data == "" {
		data = mc.Data
	}
	var d *task.Dataset
	if mc.Deidentified {
		d, err = resolveDeidentified(t, pkg, out, data)
	} else {
		d, err = t.Resolve(data)
	}
	if err != nil {
		return none, err
	}
	if _, err := predict.Align(ctx, d, filepath.Join(out, "channels")); err != nil {
		return none, err
	}
	byID := map[string]task.Case{}
	for _, c := range d.Test {
		byID[c.ID] = c
	}
	cases := make([]task.Case, 0, len(mc.Test))
	for _, tc := range mc.Test {
		c, ok := byID[tc.ID]
		if !ok {
			return none, fmt.Errorf("test case %s of the package is not in %s", tc.ID, data)
		}
		for i, p := range c.Images {
			s, err := fileio.PathSHA256(p)
			if err != nil {
				return none, err
			}
			if i < len(tc.SHA256) && s != tc.SHA256[i] {
				return none, fmt.Errorf("test image %s changed since the package was made (sha256 %s, recorded %s)", p, s, tc.SHA256[i])
			}
		}
		cases = append(cases, c)
	}
	if mc.Deidentified {
		// The package's plugin reads copies of the test cases, as the run's did.
		h, err := deidentify.MakeHanded(ctx, t.Spec(), &task.Dataset{Test: cases}, nil, filepath.Join(out, deidentify.HandedDir), "")
		if err != nil {
			return none, err
		}
		if cases, err = h.Cases(cases); err != nil {
			return none, err
		}
	}
	pr, err := pk.Predictor(opts)
	if err != nil {
		return none, err
	}
	p, err := pk.Predict(ctx, pr, cases, filepath.Join(out, "predictions"))
	if err != nil {
		return none, err
	}
	return p.Compute, nil
}

// resolveDeidentified resolves the test cases of a de-identified package: in the data
// folder given, else the one its run folder (the package's parent, where the key stays)
// recorded, with the run's pseudonyms.
func resolveDeidentified(t *task.Task, pkg, out, data string) (*task.Dataset, error) {
	runDir := filepath.Dir(filepath.Clean(pkg))
	st, err := LoadState(runDir)
	if err != nil {
		return nil, fmt.Errorf("the package's cases are pseudonymous, and its run folder, which holds the key that names them, is not %s: %w", runDir, err)
	}
	k, err := deidentify.LoadKeys(runDir)
	if err != nil {
		return nil, err
	}
	if data == "" {
		data = st.Data
	}
	d, err := t.Resolve(data)
	if err != nil {
		return nil, err
	}
	if err := deidentify.Pseudonymize(t, d, k, filepath.Join(out, "cases")); err != nil {
		return nil, err
	}
	return d, nil
}

// copyFile copies src to dst, creating dst's folder.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return fileio.Write(dst, b)
}
