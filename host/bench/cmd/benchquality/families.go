package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"amid/assets/fileio"
	"amid/host/evaluate"
	"amid/host/task"
)

// family is a task of a kind other than segmentation, on real images: the loop's
// detection, classification, IQA and enhancement plugins judged on real scans rather than
// generated data alone. Most are reporting tasks, which nothing was tuned on; detection
// has a tuning task beside its reporting one (detect.go: ch2-boxes, which a detection
// learner's constants may be fitted on, and inia19-boxes, which reports them).
type family struct {
	ID, Title string
	Kind      string // the task kind (amid/plugins/taskspec)
	// Set is tuning or reporting (tasks.go's task sets); left empty, reporting.
	Set string
	// Labels says where the labels come from, in a sentence.
	Labels string
	// Also names metrics the runs' test predictions are scored with beside the task's own
	// (enhancement: SSIM beside PSNR, as LNCC saturates for a plain smoothing filter).
	Also []string
	// write writes the task folder dir from the real-image cache: task.yaml, the training
	// images and labels, the test images, and the test cases' answers under dir/answers,
	// laid out as the training labels are (the label pattern's file name there, or for a
	// CSV of labels, the same CSV's file name holding the test rows). It returns the
	// shortcuts scored on the test cases with the task's own metric (scoreShortcut), the
	// best of them last.
	write func(ctx context.Context, realdata, dir string) ([]shortcut, error)
}

// families are the tasks of the other kinds, run at 5 and 10 minutes each (allRuns).
var families []family

// set is f's task set: tuning or reporting.
func (f family) set() string {
	if f.Set == "" {
		return reporting
	}
	return f.Set
}

// setName is the word for task set s in what the command prints: "tuning" or
// "reporting".
func setName(s string) string {
	if s == tuning {
		return "tuning"
	}
	return "reporting"
}

// familyOf returns the family task id, if it is one.
func familyOf(id string) (family, bool) {
	for _, f := range families {
		if f.ID == id {
			return f, true
		}
	}
	return family{}, false
}

// scoreShortcut scores a shortcut's predictions (case id: its prediction file, in the
// task's own format) of the test cases of the task at path against answers (case id: its
// answer file, annotation JSON or image) with the host's metric for the task, the one its
// runs' test scores use.
func scoreShortcut(ctx context.Context, path string, preds, answers map[string]string) (*evaluate.Score, error) {
	t, err := task.Load(path)
	if err != nil {
		return nil, err
	}
	// In case order: COCO's AP ranks boxes of equal score in the order their cases come.
	var pairs []evaluate.Pair
	for _, id := range slices.Sorted(maps.Keys(preds)) {
		a, ok := answers[id]
		if !ok {
			return nil, fmt.Errorf("case %s has no answer", id)
		}
		pairs = append(pairs, evaluate.Pair{ID: id, Pred: preds[id], Label: a})
	}
	if len(pairs) != len(answers) {
		return nil, fmt.Errorf("%d predictions for %d answers", len(pairs), len(answers))
	}
	return evaluate.Evaluate(ctx, t.Spec(), pairs)
}

// best appends the best of the shortcuts (the highest score).
func best(out []shortcut) []shortcut {
	if len(out) == 0 {
		return out
	}
	b := out[0]
	for _, s := range out[1:] {
		if s.Score > b.Score {
			b = s
		}
	}
	return append(out, shortcut{Name: "best", Score: b.Score, About: "the best of them: " + b.Name})
}

// alsoScores scores the test predictions of the run in runDir on the task in taskDir with
// each of f's other metrics (f.Also), against the task's answers.
func alsoScores(ctx context.Context, f family, taskDir, runDir string) (map[string]float64, error) {
	if len(f.Also) == 0 {
		return nil, nil
	}
	t, err := task.Load(filepath.Join(taskDir, "task.yaml"))
	if err != nil {
		return nil, err
	}
	var preds map[string][]string
	if err := fileio.ReadJSON(filepath.Join(runDir, "final", "predictions.json"), &preds); err != nil {
		return nil, err
	}
	var pairs []evaluate.Pair
	for _, id := range slices.Sorted(maps.Keys(preds)) {
		files := preds[id]
		if len(files) == 0 {
			return nil, fmt.Errorf("case %s has no prediction", id)
		}
		pairs = append(pairs, evaluate.Pair{ID: id, Pred: files[0], Label: task.Expand(filepath.Join(taskDir, "answers"), filepath.Base(t.Data.Train.Label.Path), id)})
	}
	out := map[string]float64{}
	for _, m := range f.Also {
		spec := *t.Spec()
		spec.Metric = m
		s, err := evaluate.Evaluate(ctx, &spec, pairs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
		out[m] = s.Value
	}
	return out, nil
}

// freshTask empties the task folder dir's own folders (train, test, answers, shortcuts),
// so that a folder written before holds no stale case, and makes the folders sub of it.
func freshTask(dir string, sub ...string) error {
	for _, s := range []string{"train", "test", "answers", "shortcuts"} {
		if err := os.RemoveAll(filepath.Join(dir, s)); err != nil {
			return err
		}
	}
	for _, s := range sub {
		if err := os.MkdirAll(filepath.Join(dir, s), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// writeFamily writes family task f into dir and returns its shortcuts.
func writeFamily(ctx context.Context, realdata, dir string, f family) ([]shortcut, error) {
	sc, err := f.write(ctx, realdata, dir)
	if err != nil {
		return nil, err
	}
	if _, err := task.Load(filepath.Join(dir, "task.yaml")); err != nil {
		return nil, fmt.Errorf("its task.yaml does not read back: %w", err)
	}
	return sc, nil
}
