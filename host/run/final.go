package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/catalog"
	"amid/host/evaluate"
	"amid/host/grade"
	"amid/host/ingest"
	"amid/host/predict"
	"amid/host/schedule"
	"amid/host/submit"
	"amid/host/task"
)

// predictor predicts with entry's plugin on this machine.
func (r *Runner) predictor(entry *catalog.Entry) *predict.Predictor {
	return &predict.Predictor{Entry: entry, Opts: r.env.Supervisor, Task: r.task}
}

// choose picks exploration's winner (the lane with the best mean validation score when
// none was recorded) and its fold model with the best validation score, and writes why. A
// fold whose validation cases lack classes counts in neither choice while a fold that holds
// every class is there to choose ([LaneState.Mean]).
func (r *Runner) choose() (*LaneState, int, error) {
	ranked := r.ranked()
	if len(ranked) == 0 {
		return nil, 0, errors.New("no lane finished a fold")
	}
	best := ranked[0]
	if w := r.st.lane(r.st.Winner); w != nil {
		best = w
	}
	m, n := best.Mean()
	won := fmt.Sprintf("%s won: mean validation %s %.4f over %d fold(s), the best of %d lanes that finished", best.ID, r.scoreName(), m, n, len(ranked))
	if n == 0 {
		won = fmt.Sprintf("%s won, though no score ranked it: its validation %s is undefined on every fold (%s), and so is every lane's of the %d that finished", best.ID, r.scoreName(), best.Undefined(), len(ranked))
	}
	r.st.Why = []string{won}
	for _, l := range ranked {
		if l == best {
			continue
		}
		lm, ln := l.Mean()
		why := fmt.Sprintf("%s lost: mean validation %.4f over %d fold(s), %.4f below the winner", l.ID, lm, ln, m-lm)
		switch {
		case ln == 0:
			why = fmt.Sprintf("%s lost: its validation is undefined on every fold (%s)", l.ID, l.Undefined())
		case n == 0:
			why = fmt.Sprintf("%s lost: mean validation %.4f over %d fold(s), where the winner's is undefined", l.ID, lm, ln)
		}
		if l.Schedule.Stopped != "" {
			why += "; " + l.Schedule.Stopped
		}
		r.st.Why = append(r.st.Why, why)
	}
	for _, l := range r.st.Lanes {
		if _, n := l.Mean(); n == 0 && l.Undefined() == "" {
			why := "it finished no fold"
			if l.Schedule.Stopped != "" {
				why = l.Schedule.Stopped
			}
			for _, f := range l.Folds {
				if f.Error != "" {
					why = "it failed: " + oneLine(f.Error)
					break
				}
			}
			r.st.Why = append(r.st.Why, fmt.Sprintf("%s lost: %s", l.ID, why))
		}
	}
	r.st.Why = append(r.st.Why, untrusted(r.st.Lanes)...)
	folds := make([]int, 0, len(best.Folds))
	for k, f := range best.Folds {
		if f.Status == FoldDone && len(f.Lacks) == 0 {
			folds = append(folds, k)
		}
	}
	if len(folds) == 0 {
		for k, f := range best.Folds {
			if f.Status == FoldDone {
				folds = append(folds, k)
			}
		}
	}
	sort.Ints(folds)
	fold := folds[0]
	for _, k := range folds {
		// A fold with a score beats one whose score is undefined (no evidence).
		if f, b := best.Folds[k], best.Folds[fold]; f.scored() && (!b.scored() || f.Score > b.Score) {
			fold = k
		}
	}
	if fm := r.st.Final; fm != nil && fm.Error == "" {
		r.st.Why = append(r.st.Why, "final model ("+fm.Mode+"): "+fm.Why)
	}
	return best, fold, nil
}

// finalMade reports whether a final model (all data, or the fold ensemble) was made.
func (r *Runner) finalMade() bool {
	fm := r.st.Final
	return fm != nil && fm.Error == "" && (fm.Checkpoint != "" || fm.Mode == schedule.FinalEnsemble && len(r.st.Union) > 0)
}

// final predicts the test set with the chosen lane and writes the submission.
func (r *Runner) final(ctx context.Context) error {
	r.st.Kept = r.reserve(r.models())
	left, kept := r.remaining().Round(10*time.Millisecond), r.st.Kept.Round(10*time.Millisecond)
	if left < 0 {
		// The phases before ran past the budget (a machine busy with other work slows
		// every step past what the limits planned): said as such, not as a negative time.
		r.logf("the final phases start %v past the budget; %v was kept for them", -left, kept)
	} else {
		r.logf("the final phases start with %v of the budget left; %v was kept for them", left, kept)
	}
	var best *LaneState
	var fold int
	if r.st.From != nil {
		r.chooseFrom()
		best = r.st.Lanes[0]
	} else {
		var err error
		if best, fold, err = r.choose(); err != nil {
			return err
		}
		r.st.Chosen, r.st.ChosenFold = best.ID, fold
	}
	for _, w := range r.st.Why {
		r.logf("%s", w)
	}
	if !r.finalMade() && r.st.From == nil {
		if err := r.tryUnion(ctx, best); err != nil {
			return err
		}
	}
	if r.st.From != nil {
		// The package's configuration (its post-processing, chosen on its validation
		// cases) with the continued model's planned steps.
		if err := r.applyConfig(best); err != nil {
			return err
		}
	} else if r.st.Union == nil || r.st.Vote {
		// Chosen on fold 0's validation cases with the fold model, and applied to the
		// final model, which has no held-out cases.
		if err := r.choosePostprocess(ctx, best, fold); err != nil {
			return err
		}
		if err := r.applyConfig(best); err != nil {
			return err
		}
	}
	if len(r.data.Test) == 0 {
		r.logf("the task has no test cases: no submission to write")
		return nil
	}
	ck := r.members()[0]
	for _, m := range r.members() {
		sum, err := fileio.SHA256(m.Checkpoint)
		if err != nil {
			return err
		}
		if sum != m.SHA256 {
			return fmt.Errorf("checkpoint %s changed since training (sha256 %s, recorded %s)", m.Checkpoint, sum, m.SHA256)
		}
	}
	preds, err := r.predictChosen(ctx, r.data.Test, r.path("final", "predictions"))
	if err != nil {
		return err
	}
	r.st.Compute = preds.Compute
	r.logf("the test predictions were computed with %s", preds.Compute)
	if _, err := writeJSON(r.path("final", "predictions.json"), preds.Files); err != nil {
		return err
	}
	if sure := finiteConfidence(preds.Confidence); len(sure) > 0 {
		// What Review sorts the cases by, the least sure first.
		if _, err := writeJSON(r.path("final", FileConfidence), sure); err != nil {
			return err
		}
	}
	if err := r.writeSubmission(ctx, preds.Files, r.path("submission")); err != nil {
		return err
	}
	if kind := r.dicomTest(); kind != "" {
		if err := r.writeDICOM(kind, preds.Files, finiteConfidence(preds.Confidence)); err != nil {
			return err
		}
	}
	subSum, err := fileio.PathSHA256(r.path("submission"))
	if err != nil {
		return err
	}
	return r.record(audit.RoleHost, "submission.written", map[string]string{"checkpoint": ck.SHA256}, map[string]string{"submission": subSum},
		map[string]any{"lane": best.ID, "fold": fold, "cases": len(r.data.Test), "why": r.st.Why, "compute": preds.Compute})
}

func (r *Runner) writeSubmission(ctx context.Context, preds map[string][]string, dir string) error {
	list := make([]submit.Prediction, 0, len(r.data.Test))
	for _, c := range r.data.Test {
		list = append(list, submit.Prediction{CaseID: c.ID, File: preds[c.ID][0], Images: c.Images})
	}
	return submit.Write(ctx, r.task, r.data.Test, list, dir)
}

// verify is the gate before export: the grader (when answers are given) accepts the
// submission, the chosen checkpoint is the one trained, and predicting again from scratch
// gives byte-identical files.
func (r *Runner) verify(ctx context.Context) error {
	if r.st.Chosen == "" {
		return errors.New("no chosen lane")
	}
	details := map[string]any{}
	if len(r.data.Test) > 0 {
		if r.st.Answers != "" && r.task.Challenge != "" {
			res, err := grade.Grade(ctx, r.task.Challenge, r.path("submission"), r.st.Answers, grade.Options{})
			if err != nil {
				return fmt.Errorf("grading: %w", err)
			}
			g := &Grade{Valid: res.Valid, Errors: res.Errors, Primary: res.Primary.Name, Score: orZero(float64(res.Primary.Value)),
				Percentile: orZero(float64(res.Percentile)), Metrics: map[string]float64{}}
			for k, v := range res.Metrics {
				if f := float64(v); !math.IsNaN(f) && !math.IsInf(f, 0) {
					g.Metrics[k] = f
				}
			}
			r.st.TestScore = g
			details["grader_valid"] = res.Valid
			details["test_score"] = g.Score
			if !res.Valid {
				return fmt.Errorf("the %s grader refused the submission: %v", r.task.Challenge, res.Errors)
			}
			r.logf("the %s grader accepts the submission: %s = %.4f", r.task.Challenge, g.Primary, g.Score)
		}
		if r.st.Answers != "" && r.task.Challenge == "" {
			if err := r.scoreTest(ctx, details); err != nil {
				return err
			}
		}
		again := r.path("final", "reproduce")
		re, err := r.predictChosen(ctx, r.data.Test, again)
		if err != nil {
			return fmt.Errorf("reproduction: %w", err)
		}
		if re.Compute != r.st.Compute {
			return fmt.Errorf("predicting again ran with %s, the test predictions with %s", re.Compute, r.st.Compute)
		}
		diff, err := sameTree(r.path("final", "predictions"), again)
		if err != nil {
			return err
		}
		if len(diff) > 0 {
			return fmt.Errorf("predicting again gave different bytes for %v", diff)
		}
		details["reproducible"] = true
		r.logf("predicting the test set again gives byte-identical files")
		if err := os.RemoveAll(again); err != nil {
			return err
		}
	}
	return r.record(audit.RoleHost, "run.verified", nil, nil, details)
}

// orZero maps NaN and infinities to 0, which JSON can hold.
func orZero(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

func jsonOf(v any) ([]byte, error) { return json.Marshal(v) }

// sameTree lists the relative paths whose bytes differ between two folders, or that
// exist in only one.
func sameTree(a, b string) ([]string, error) {
	files := map[string]bool{}
	for _, root := range []string{a, b} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			files[rel] = true
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var diff []string
	for rel := range files {
		x, errA := os.ReadFile(filepath.Join(a, rel))
		y, errB := os.ReadFile(filepath.Join(b, rel))
		if errA != nil || errB != nil || !bytes.Equal(x, y) {
			diff = append(diff, rel)
		}
	}
	sort.Strings(diff)
	return diff, nil
}

// scoreTest scores the test predictions of a task without a challenge grader against
// answers laid out like its training labels (the label pattern's file name, in the answers
// folder: a table of labels, such as an IQA task's CSV of scores, is the same file name
// holding the test cases' rows), with the host's validation metric.
func (r *Runner) scoreTest(ctx context.Context, details map[string]any) error {
	var preds map[string][]string
	if err := fileio.ReadJSON(r.path("final", "predictions.json"), &preds); err != nil {
		return err
	}
	s, err := r.testScore(ctx, preds)
	if err != nil {
		return err
	}
	r.st.TestScore = &Grade{Valid: true, Primary: s.Metric, Score: s.Value, Metrics: s.Extra, PerCase: s.PerCase}
	details["test_score"] = s.Value
	r.logf("test %s against the answers in %s: %.4f on %d cases", s.Metric, r.st.Answers, s.Value, s.Cases)
	if r.st.From != nil {
		return r.scoreOld(ctx, details)
	}
	return nil
}

// testScore scores predictions (case id: files) of the test cases against the answers.
func (r *Runner) testScore(ctx context.Context, preds map[string][]string) (*evaluate.Score, error) {
	pattern := r.task.Data.Train.Label.Path
	answers := make([]task.Case, len(r.data.Test))
	for i, c := range r.data.Test {
		if len(preds[c.ID]) == 0 {
			return nil, fmt.Errorf("no test prediction for case %s", c.ID)
		}
		answers[i] = task.Case{ID: c.ID, Images: c.Images, Label: task.Expand(r.st.Answers, filepath.Base(pattern), c.ID)}
	}
	// The answers in the task's label format become the host's canonical labels, as the
	// training labels do (a table's rows one annotation a case).
	labels, err := ingest.Labels(ctx, r.task, answers, r.path("final", "answers"))
	if err != nil {
		return nil, fmt.Errorf("reading the test answers in %s: %w", r.st.Answers, err)
	}
	var pairs []evaluate.Pair
	for _, c := range r.data.Test {
		pairs = append(pairs, evaluate.Pair{ID: c.ID, Pred: preds[c.ID][0], Label: labels[c.ID]})
	}
	s, err := evaluate.EvaluateWith(ctx, r.task.Spec(), pairs, evaluate.Options{Thresholds: r.thresholds()})
	if err != nil {
		return nil, fmt.Errorf("scoring the test set against %s: %w", r.st.Answers, err)
	}
	return s, nil
}

// thresholds are the operating points the chosen model's validation chose (a
// classification judged by sensitivity or specificity, evaluate.Thresholds): the chosen
// fold's, or for a model of several folds or of all the data the median over its validated
// folds (the mean of the middle two for an even count). Nil when the metric has none.
func (r *Runner) thresholds() map[string]float64 {
	best := r.st.lane(r.st.Chosen)
	if best == nil {
		return nil
	}
	if f, ok := best.Folds[r.st.ChosenFold]; ok && r.st.Union == nil && !(r.finalMade() && r.st.Final.Mode == schedule.FinalAllData) {
		return evaluate.Thresholds(f.Extra)
	}
	each := map[string][]float64{}
	for _, f := range best.Folds {
		if f.Status == FoldDone && f.Undefined == "" {
			for k, v := range evaluate.Thresholds(f.Extra) {
				each[k] = append(each[k], v)
			}
		}
	}
	if len(each) == 0 {
		return nil
	}
	out := map[string]float64{}
	for k, v := range each {
		sort.Float64s(v)
		out[k] = v[(len(v)-1)/2]/2 + v[len(v)/2]/2
	}
	return out
}

// members are the chosen model's members: the union's or the fold ensemble's, the final
// model trained on all data, or the chosen lane's fold model.
func (r *Runner) members() []predict.Member {
	if r.st.Union != nil {
		return r.st.Union
	}
	best := r.st.lane(r.st.Chosen)
	if fm := r.st.Final; r.finalMade() && fm.Mode == schedule.FinalAllData {
		return []predict.Member{{Lane: best.ID + ".all", PluginConfig: fm.Config, Checkpoint: fm.Checkpoint, SHA256: fm.SHA256}}
	}
	f := best.Folds[r.st.ChosenFold]
	return []predict.Member{{Lane: best.ID, PluginConfig: best.Config, Checkpoint: f.Checkpoint, SHA256: f.SHA256}}
}

// applyConfig gives the final model the chosen lane's configuration (its post-processing
// chosen on validation cases), the all-data model with its own planned total of steps, a
// cascade's fold models each with the low-resolution network of its fold.
func (r *Runner) applyConfig(l *LaneState) error {
	if !r.finalMade() {
		return nil
	}
	if r.st.Final.Mode == schedule.FinalAllData {
		cfg, err := withSteps(l.Config, r.st.Final.Until)
		if err != nil {
			return err
		}
		r.st.Final.Config = cfg
		return nil
	}
	cfg, err := withSteps(l.Config, r.st.Final.Until)
	if err != nil {
		return err
	}
	for i, m := range r.st.Union {
		c := cfg
		if ref := cascadeOf(m.PluginConfig); ref != nil {
			// A cascade's member keeps the low-resolution network of its own fold.
			if c, err = withCascade(cfg, *ref); err != nil {
				return err
			}
		}
		r.st.Union[i].PluginConfig = c
	}
	return nil
}

// chosenLane names the chosen model in the audit log's lane.trained entries and the
// package: "<lane>.f<k>", "<lane>.all", or the union's or ensemble's name.
func (r *Runner) chosenLane() string {
	if r.st.Union != nil {
		return r.unionLane()
	}
	if fm := r.st.Final; r.finalMade() && fm.Mode == schedule.FinalAllData {
		return r.st.Chosen + ".all"
	}
	return fmt.Sprintf("%s.f%d", r.st.Chosen, r.st.ChosenFold)
}

// predictChosen predicts cases into out with the chosen model.
func (r *Runner) predictChosen(ctx context.Context, cases []task.Case, out string) (*predict.Predicted, error) {
	best := r.st.lane(r.st.Chosen)
	if r.st.Union == nil {
		m := r.members()[0]
		return r.predict(ctx, best.Plugin, m.PluginConfig, m.Checkpoint, cases, out)
	}
	entry, err := r.env.Catalog.Find(best.Plugin)
	if err != nil {
		return nil, err
	}
	if cases, err = r.handed.Cases(cases); err != nil {
		return nil, err
	}
	return r.predictor(entry).Union(ctx, r.st.Union, r.st.Vote, cases, out)
}

// untrusted says, a sentence per fold, which finished folds of the lanes lack classes in
// their validation cases and so were not trusted to choose.
func untrusted(lanes []*LaneState) []string {
	lacks := map[int][]string{}
	for _, l := range lanes {
		for k, f := range l.Folds {
			if f.Status == FoldDone && len(f.Lacks) > 0 {
				lacks[k] = f.Lacks
			}
		}
	}
	ks := make([]int, 0, len(lacks))
	for k := range lacks {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	var why []string
	for _, k := range ks {
		why = append(why, fmt.Sprintf("fold %d's validation cases lack %s: its scores count only where no fold holding every class was scored", k, strings.Join(lacks[k], ", ")))
	}
	return why
}

// FileConfidence, in a run's final folder, holds each test case's confidence where the
// plugin gives one (protocol.Prediction.Confidence), for Review's order.
const FileConfidence = "confidence.json"

// finiteConfidence is c without the values JSON cannot hold (none, from the built-in
// plugins).
func finiteConfidence(c map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for id, v := range c {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			out[id] = v
		}
	}
	return out
}
