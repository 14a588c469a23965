package submit

import (
	"context"
	"path/filepath"
	"testing"

	"amid/host/task"
	"amid/plugins/taskspec"
)

// multiYAML is a multi-label classification of CheXpert's first three findings whose
// submission is its class table: the id and one probability column a finding.
const multiYAML = `
id: chest
kind: classification
dims: 2
attributes: [{name: findings, classes: [Atelectasis, Cardiomegaly, Consolidation], multi_label: true}]
data:
  train: {images: ["train/{id}.png"], label: {path: "train.csv", format: csv, id_column: Path, columns: [Atelectasis, Cardiomegaly, Consolidation], uncertain: ignore}}
  test: {images: ["test/{id}.png"]}
metric: {name: auroc}
submission: {format: csv, id_column: Path}
`

// TestMultiLabelTable: the submission of a multi-label task is the id and each finding's
// probability (the plugin's, else 1 and 0 from its findings), in the findings' order; a
// prediction with neither is an error naming the case.
func TestMultiLabelTable(t *testing.T) {
	tk := parseTask(t, multiYAML)
	dir := t.TempDir()
	preds := []Prediction{
		{CaseID: "p1", File: writeAnn(t, filepath.Join(dir, "p1.json"), &taskspec.Annotation{
			Findings: map[string][]int{"findings": {1, 0, 0}}, Probs: map[string][]float64{"findings": {0.75, 0.125, 0.5}}})},
		{CaseID: "p2", File: writeAnn(t, filepath.Join(dir, "p2.json"), &taskspec.Annotation{Findings: map[string][]int{"findings": {0, 1, 1}}})},
	}
	test := []task.Case{{ID: "p1"}, {ID: "p2"}}
	sub := filepath.Join(t.TempDir(), "submission")
	if err := Write(context.Background(), tk, test, preds, sub); err != nil {
		t.Fatal(err)
	}
	want := "Path,Atelectasis,Cardiomegaly,Consolidation\np1,0.75,0.125,0.5\np2,0,1,1\n"
	if got := string(readFile(t, filepath.Join(sub, "submission.csv"))); got != want {
		t.Errorf("submission.csv\n%s\nwant\n%s", got, want)
	}
	none := writeAnn(t, filepath.Join(dir, "n.json"), &taskspec.Annotation{})
	wantFail(t, tk, test, []Prediction{preds[0], {CaseID: "p2", File: none}}, "case p2", "neither probabilities nor findings of findings")
}
