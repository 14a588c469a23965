package submit

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"amid/host/task"
	"amid/plugins/taskspec"
)

// classYAML is a classification of two attributes whose submission is a class table: the
// id, each attribute's class name, a constant, and a probability column a class (other
// shared by both attributes, so written attribute:class).
const classYAML = `
id: modality
kind: classification
dims: 2
attributes: [{name: modality, classes: [CT, MR, other]}, {name: region, classes: [head, other]}]
data:
  train: {images: ["train/{id}.png"], label: {path: "train.csv", format: csv, id_column: image_id, value_columns: {modality: modality, region: region}}}
  test: {images: ["test/{id}.png"]}
metric: {name: balanced_accuracy}
submission: {format: csv, id_column: image_id, value_columns: {modality: modality, region: region}, const: {site: A}, columns: [image_id, modality, region, site, ct, MR, "modality:other", head, "region:other"]}
`

// TestClassTable: the class table holds the predicted class names and the plugin's
// probabilities, or 1 and 0 where a prediction has none; a prediction without a class is
// an error naming the case.
func TestClassTable(t *testing.T) {
	tk := parseTask(t, classYAML)
	dir := t.TempDir()
	preds := []Prediction{
		{CaseID: "001", File: writeAnn(t, filepath.Join(dir, "001.json"), &taskspec.Annotation{
			Classes: map[string]int{"modality": 1, "region": 0},
			Probs:   map[string][]float64{"modality": {0.25, 0.5, 0.25}, "region": {0.875, 0.125}}})},
		{CaseID: "x", File: writeAnn(t, filepath.Join(dir, "x.json"), &taskspec.Annotation{Classes: map[string]int{"modality": 2, "region": 1}})},
	}
	test := []task.Case{{ID: "001"}, {ID: "x"}}
	sub := filepath.Join(t.TempDir(), "submission")
	if err := Write(context.Background(), tk, test, preds, sub); err != nil {
		t.Fatal(err)
	}
	want := "image_id,modality,region,site,ct,MR,modality:other,head,region:other\n" +
		"001,MR,head,A,0.25,0.5,0.25,0.875,0.125\n" +
		"x,other,other,A,0,0,1,0,1\n"
	if got := string(readFile(t, filepath.Join(sub, "submission.csv"))); got != want {
		t.Errorf("submission.csv\n%s\nwant\n%s", got, want)
	}
	missing := writeAnn(t, filepath.Join(dir, "m.json"), &taskspec.Annotation{Classes: map[string]int{"modality": 2}})
	wantFail(t, tk, test, []Prediction{preds[0], {CaseID: "x", File: missing}}, "case x", "has no class for attribute region")
	iqa := parseTask(t, iqaYAML)
	iqa.Submission.Format = FormatClassTable
	wantFail(t, iqa, test, preds, "class table")
}

// TestClassTableDefault: one attribute's class table by default: the id, the class name
// and a probability column per class named as the class.
func TestClassTableDefault(t *testing.T) {
	tk := parseTask(t, strings.NewReplacer(
		"attributes: [{name: modality, classes: [CT, MR, other]}, {name: region, classes: [head, other]}]", "attributes: [{name: modality, classes: [CT, MR, PET-NM]}]",
		"value_columns: {modality: modality, region: region}}}", "value_column: label}}",
		"submission: {format: csv, id_column: image_id, value_columns: {modality: modality, region: region}, const: {site: A}, columns: [image_id, modality, region, site, ct, MR, \"modality:other\", head, \"region:other\"]}", "submission: {format: csv, id_column: image_id, value_column: label}",
	).Replace(classYAML))
	dir := t.TempDir()
	preds := []Prediction{{CaseID: "s06-1", File: writeAnn(t, filepath.Join(dir, "a.json"), &taskspec.Annotation{
		Classes: map[string]int{"modality": 2}, Probs: map[string][]float64{"modality": {0.125, 0.25, 0.625}}})}}
	sub := filepath.Join(t.TempDir(), "submission")
	if err := Write(context.Background(), tk, []task.Case{{ID: "s06-1"}}, preds, sub); err != nil {
		t.Fatal(err)
	}
	want := "image_id,label,CT,MR,PET-NM\ns06-1,PET-NM,0.125,0.25,0.625\n"
	if got := string(readFile(t, filepath.Join(sub, "submission.csv"))); got != want {
		t.Errorf("submission.csv\n%s\nwant\n%s", got, want)
	}
}
