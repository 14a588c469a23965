package run

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/host/task"
	"amid/plugins/taskspec"
)

// A task whose labels are a table (an IQA task's CSV of scores) is scored on its test set
// against the same CSV's file name in the answers folder holding the test rows: before,
// such a run had no test score at all.
func TestScoreTestTableAnswers(t *testing.T) {
	dir := t.TempDir()
	def := `id: quality
kind: iqa
dims: 2
modality: CT
channels: [ct]
score: {min: 0, max: 4, step: 0.2}
data:
  train:
    images: ["train/{id}.png"]
    label: {path: train_labels.csv, format: csv, id_column: image_id, value_column: quality_score}
  test:
    images: ["test/{id}.png"]
metric: {name: plcc_srocc_krocc}
submission: {id_column: case_id, columns: [case_id, score], value_column: score}
`
	if err := os.WriteFile(filepath.Join(dir, "task.yaml"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(filepath.Join(dir, "task.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	answers := filepath.Join(dir, "answers")
	if err := os.MkdirAll(answers, 0o755); err != nil {
		t.Fatal(err)
	}
	truth := map[string]float64{"a": 0.4, "b": 1.0, "c": 2.2, "d": 3.6}
	csv := "image_id,quality_score\na,0.4\nb,1.0\nc,2.2\nd,3.6\n"
	if err := os.WriteFile(filepath.Join(answers, "train_labels.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	score := func(pred map[string]float64) (float64, error) {
		preds := map[string][]string{}
		var cases []task.Case
		for id, v := range pred {
			p := filepath.Join(t.TempDir(), id+".json")
			b, err := (&taskspec.Annotation{Score: &v}).Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			preds[id] = []string{p}
			cases = append(cases, task.Case{ID: id})
		}
		r := &Runner{dir: t.TempDir(), task: tk, data: &task.Dataset{Test: cases}, st: &State{Answers: answers}}
		s, err := r.testScore(context.Background(), preds)
		if err != nil {
			return 0, err
		}
		return s.Value, nil
	}
	// A linear map of the truth: PLCC, SROCC and KROCC are 1 each, and the metric sums
	// them (LDCT-IQA's score).
	linear := map[string]float64{}
	for id, v := range truth {
		linear[id] = 0.5*v + 1
	}
	if v, err := score(linear); err != nil || math.Abs(v-3) > 1e-9 {
		t.Fatalf("a linear map of the answers scores %v, %v; want 3", v, err)
	}
	// Two cases swapped score lower.
	swapped := map[string]float64{"a": 0.4, "b": 2.2, "c": 1.0, "d": 3.6}
	if v, err := score(swapped); err != nil || v >= 3 {
		t.Fatalf("two swapped cases score %v, %v; want below 3", v, err)
	}
	// A test case the answers do not hold is an error that names it.
	missing := map[string]float64{"a": 0.4, "b": 1.0, "c": 2.2, "e": 3.6}
	if _, err := score(missing); err == nil || !strings.Contains(err.Error(), "case e") || !strings.Contains(err.Error(), answers) {
		t.Fatalf("a case without an answer: %v", err)
	}
}
