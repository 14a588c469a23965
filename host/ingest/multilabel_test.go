package ingest

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"amid/host/task"
)

// multiTask is a multi-label classification of three findings (CheXpert's and NIH
// ChestX-ray14's names) whose labels are the CSV label, filled in by each test.
func multiTask(t *testing.T, label string) *task.Task {
	t.Helper()
	return parseTask(t, `
id: chest
kind: classification
dims: 2
attributes: [{name: findings, classes: [Atelectasis, Effusion, Infiltration], multi_label: true}]
data:
  train: {images: ["images/{id}.png"], label: `+label+`}
  test: {images: ["test/{id}.png"]}
metric: {name: auroc}
submission: {format: csv, id_column: image_id}
`)
}

// findingsOf converts the table for the cases and returns each case's findings.
func findingsOf(t *testing.T, tk *task.Task, lab string, ids ...string) (map[string][]int, error) {
	t.Helper()
	got, err := labelsOf(t, tk, lab, ids...)
	if err != nil {
		return nil, err
	}
	out := map[string][]int{}
	for id, p := range got {
		a := readAnn(t, p, tk)
		if len(a.Classes) > 0 {
			t.Errorf("case %s: a multi-label case has classes %v", id, a.Classes)
		}
		out[id] = a.Findings["findings"]
	}
	return out, nil
}

// TestFindingNames: NIH ChestX-ray14's Finding Labels, "|"-separated names without regard
// to case, "No Finding" and an empty cell for none; an unknown finding names its line.
func TestFindingNames(t *testing.T) {
	root := t.TempDir()
	tk := multiTask(t, `{path: "Data_Entry.csv", format: csv, id_column: Image Index, value_column: Finding Labels}`)
	lab := write(t, filepath.Join(root, "Data_Entry.csv"), "Image Index,Finding Labels,Patient Age\n"+
		"00000001_000.png,Effusion|Infiltration,58\n00000002_000.png,No Finding,81\n00000003_000.png, atelectasis ,74\n00000004_000.png,,12\n")
	got, err := findingsOf(t, tk, lab, "00000001_000", "00000002_000", "00000003_000", "00000004_000")
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string][]int{"00000001_000": {0, 1, 1}, "00000002_000": {0, 0, 0}, "00000003_000": {1, 0, 0}, "00000004_000": {0, 0, 0}} {
		if !slices.Equal(got[id], want) {
			t.Errorf("case %s: findings %v, want %v", id, got[id], want)
		}
	}
	write(t, lab, "Image Index,Finding Labels\na.png,Effusion\nb.png,Effusion|Hernia\n")
	_, err = findingsOf(t, tk, lab, "a", "b")
	wantErr(t, err, lab, `line 3 (id b.png), column Finding Labels: findings "Hernia" is not one of its findings Atelectasis, Effusion, Infiltration`)
}

// TestFindingColumns: CheXpert's columns of 1.0, 0.0, -1.0 and blank under each policy for
// the uncertain −1, and the errors: a −1 without a policy, a value outside 1/0/−1/blank,
// each naming its line, id and column.
func TestFindingColumns(t *testing.T) {
	root := t.TempDir()
	csv := "Path,Sex,Atelectasis,Effusion,Infiltration\np1,F,1.0,-1.0,\np2,M,0.0,,-1\n"
	for policy, want := range map[string][2][]int{
		task.UncertainIgnore:   {{1, -1, 0}, {0, 0, -1}},
		task.UncertainPositive: {{1, 1, 0}, {0, 0, 1}},
		task.UncertainNegative: {{1, 0, 0}, {0, 0, 0}},
	} {
		tk := multiTask(t, `{path: "train.csv", format: csv, id_column: Path, columns: [Effusion, Atelectasis, Infiltration], uncertain: `+policy+`}`)
		lab := write(t, filepath.Join(root, "train.csv"), csv)
		got, err := findingsOf(t, tk, lab, "p1", "p2")
		if err != nil {
			t.Fatalf("%s: %v", policy, err)
		}
		if !slices.Equal(got["p1"], want[0]) || !slices.Equal(got["p2"], want[1]) {
			t.Errorf("%s: findings %v, want p1 %v p2 %v", policy, got, want[0], want[1])
		}
	}
	tk := multiTask(t, `{path: "train.csv", format: csv, id_column: Path, columns: [Atelectasis, Effusion, Infiltration]}`)
	lab := write(t, filepath.Join(root, "train.csv"), "Path,Atelectasis,Effusion,Infiltration\np1,1,0,0\np2,0,-1.0,1\n")
	_, err := findingsOf(t, tk, lab, "p1", "p2")
	wantErr(t, err, lab, `line 3 (id p2), column Effusion: "-1.0" is uncertain, and the label names no policy for it`)
	write(t, lab, "Path,Atelectasis,Effusion,Infiltration\np1,1,0,0\np2,0,2,1\n")
	_, err = findingsOf(t, tk, lab, "p1", "p2")
	wantErr(t, err, lab, `line 3 (id p2), column Effusion: "2" is not 1, 0, -1 (uncertain) or blank`)
}

// TestMultiLabelTask: the task file's rules for a multi-label attribute, each an error
// naming its field.
func TestMultiLabelTask(t *testing.T) {
	base := `
id: chest
kind: classification
dims: 2
attributes: [{name: findings, classes: [Atelectasis, Effusion], multi_label: true}]
data:
  train: {images: ["images/{id}.png"], label: {path: "t.csv", format: csv, id_column: id, columns: [Atelectasis, Effusion], uncertain: ignore}}
  test: {images: ["test/{id}.png"]}
metric: {name: auroc}
submission: {format: csv, id_column: id}
`
	tk, err := task.Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"id", "Atelectasis", "Effusion"}; !slices.Equal(tk.Submission.Columns, want) {
		t.Errorf("submission columns %v, want %v", tk.Submission.Columns, want)
	}
	for _, c := range []struct{ old, new, want string }{
		{"metric: {name: auroc}", "metric: {name: balanced_accuracy}", "metric.name"},
		{"uncertain: ignore", "uncertain: maybe", `uncertain: "maybe" is not ignore, positive or negative`},
		{"columns: [Atelectasis, Effusion], uncertain", "columns: [Atelectasis], uncertain", "finding Effusion of findings has no column"},
		{"submission: {format: csv, id_column: id}", "submission: {format: csv, id_column: id, value_column: label}", "findings is multi-label"},
		{"multi_label: true}]", "multi_label: true}, {name: view, classes: [AP, PA]}]", "the task's only attribute"},
		{"images/{id}.png", "images/{class}/{id}.png", "one class folder cannot name"},
	} {
		y := strings.Replace(base, c.old, c.new, 1)
		if c.old == "images/{id}.png" { // one folder a class, and no label file
			y = strings.Replace(y, `, label: {path: "t.csv", format: csv, id_column: id, columns: [Atelectasis, Effusion], uncertain: ignore}`, "", 1)
		}
		if _, err := task.Parse([]byte(y)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s → %s: %v, want an error with %q", c.old, c.new, err, c.want)
		}
	}
	single := strings.Replace(base, ", multi_label: true", "", 1)
	if _, err := task.Parse([]byte(single)); err == nil || !strings.Contains(err.Error(), "uncertain") {
		t.Errorf("a policy on a single-label task: %v", err)
	}
}

// FuzzFindings: any bytes give, for a finding-names table and a table of finding columns
// under each policy (and none), rows whose findings are 1, 0 or −1 (−1 only under ignore),
// or an error on one line; never a panic.
func FuzzFindings(f *testing.F) {
	f.Add([]byte("id,Finding Labels\na,Effusion|Infiltration\nb,No Finding\nc,\n"))
	f.Add([]byte("id,Finding Labels,Atelectasis,Effusion,Infiltration\na,x,1.0,-1.0,\nb,,0,,-1\n"))
	f.Add([]byte("id,Atelectasis,Effusion,Infiltration\na,2,,\n"))
	f.Add([]byte("id,Finding Labels\na,||\n"))
	tabs := tableTasks(f, "{name: findings, classes: [Atelectasis, Effusion, Infiltration], multi_label: true}", "auroc", "{format: csv, id_column: id}",
		`{path: "t.csv", format: csv, id_column: id, value_column: Finding Labels}`,
		`{path: "t.csv", format: csv, id_column: id, columns: [Atelectasis, Effusion, Infiltration]}`,
		`{path: "t.csv", format: csv, id_column: id, columns: [Atelectasis, Effusion, Infiltration], uncertain: ignore}`,
		`{path: "t.csv", format: csv, id_column: id, columns: [Atelectasis, Effusion, Infiltration], uncertain: positive}`,
		`{path: "t.csv", format: csv, id_column: id, columns: [Atelectasis, Effusion, Infiltration], uncertain: negative}`,
	)
	fuzzTables(f, tabs, func(t *testing.T, tk *task.Task, tab *classTable) {
		for id, r := range tab.rows {
			fs := r.findings["findings"]
			if len(fs) != 3 {
				t.Fatalf("row %s: findings %v", id, r.findings)
			}
			for _, v := range fs {
				if v < -1 || v > 1 || (v == -1 && tk.Data.Train.Label.Uncertain != task.UncertainIgnore) {
					t.Fatalf("row %s: findings %v under policy %q", id, fs, tk.Data.Train.Label.Uncertain)
				}
			}
		}
	})
}
