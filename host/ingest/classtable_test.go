package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/host/task"
)

// classTask is a classification of image modality whose labels are the CSV label,
// filled in by each test.
func classTask(t *testing.T, attrs, label string) *task.Task {
	t.Helper()
	return parseTask(t, `
id: modality
kind: classification
dims: 2
attributes: `+attrs+`
data:
  train: {images: ["images/{id}.png"], label: `+label+`}
  test: {images: ["test/{id}.png"]}
metric: {name: balanced_accuracy}
submission: {format: csv, id_column: image_id, value_column: label}
`)
}

const modality = `[{name: modality, classes: [CT, MR, PET-NM, US, XR]}]`

// labelsOf converts the table lab for the cases ids (each an image images/<id>.png) and
// returns each case's label file.
func labelsOf(t *testing.T, tk *task.Task, lab string, ids ...string) (map[string]string, error) {
	t.Helper()
	var cases []task.Case
	for _, id := range ids {
		cases = append(cases, task.Case{ID: id, Label: lab, Images: []string{"images/" + id + ".png"}})
	}
	return Labels(context.Background(), tk, cases, t.TempDir())
}

// classOf converts the table for the cases and returns each case's class names.
func classesOf(t *testing.T, tk *task.Task, lab string, ids ...string) (map[string]string, error) {
	t.Helper()
	got, err := labelsOf(t, tk, lab, ids...)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for id, p := range got {
		a := readAnn(t, p, tk)
		var parts []string
		for _, at := range tk.Attributes {
			k, ok := a.Classes[at.Name]
			if !ok {
				t.Fatalf("case %s: no class for %s", id, at.Name)
			}
			parts = append(parts, at.Classes[k])
		}
		out[id] = strings.Join(parts, "/")
	}
	return out, nil
}

// TestClassNames: the issue's table of class names (which stopped at "label "PET-NM" is not
// a finite number"), matched without regard to case; class indices; and the errors that
// name the unknown value and its line, a row without an image and an image without a row.
func TestClassNames(t *testing.T) {
	root := t.TempDir()
	tk := classTask(t, modality, `{path: "train.csv", format: csv, id_column: image_id, value_column: label}`)
	lab := write(t, filepath.Join(root, "train.csv"), "\xef\xbb\xbfimage_id,label\ns06-1,PET-NM\ns01-1, ct \ns02-1,Mr\n\n007,xr\n")
	got, err := classesOf(t, tk, lab, "s06-1", "s01-1", "s02-1", "7")
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"s06-1": "PET-NM", "s01-1": "CT", "s02-1": "MR", "7": "XR"} {
		if got[id] != want {
			t.Errorf("case %s: %s, want %s", id, got[id], want)
		}
	}
	write(t, lab, "image_id,label\na,0\nb,4\nc,3.0\n")
	if got, err = classesOf(t, tk, lab, "a", "b", "c"); err != nil || got["a"] != "CT" || got["b"] != "XR" || got["c"] != "US" {
		t.Errorf("class indices: %v %v", got, err)
	}
	write(t, lab, "image_id,label\na,CT\nb,PET\n")
	_, err = classesOf(t, tk, lab, "a", "b")
	wantErr(t, err, lab, "line 3 (id b), column label", `modality "PET" is not one of its classes CT, MR, PET-NM, US, XR, nor a class index 0–4`)
	write(t, lab, "image_id,label\na,CT\nb,5\n")
	_, err = classesOf(t, tk, lab, "a", "b")
	wantErr(t, err, lab, "line 3", `"5" is not one of its classes`)
	write(t, lab, "image_id,label\na,CT\nb,\n")
	_, err = classesOf(t, tk, lab, "a", "b")
	wantErr(t, err, lab, "line 3", "modality is empty")
	write(t, lab, "image_id,label\na,CT\nb,MR\nghost,US\n")
	_, err = classesOf(t, tk, lab, "a", "b")
	wantErr(t, err, lab, "line 4: id ghost has no training image (images/{id}.png)")
	_, err = classesOf(t, tk, lab, "a", "b", "ghost", "c")
	wantErr(t, err, lab, "case c (images/c.png) has no row")
	write(t, lab, "image_id,label\na,CT\na,MR\n")
	_, err = classesOf(t, tk, lab, "a")
	wantErr(t, err, lab, `line 3 repeats the id "a" of line 2`)
	write(t, lab, "image,label\na,CT\n")
	_, err = classesOf(t, tk, lab, "a")
	wantErr(t, err, lab, `no column "image_id" (header: "image,label")`)
	write(t, lab, "image_id,label\n\"a,CT\n")
	_, err = classesOf(t, tk, lab, "a")
	wantErr(t, err, lab, "line")
	// An id with its file's suffix names the case of that stem.
	write(t, lab, "image_id,label\na.png,CT\n")
	if got, err = classesOf(t, tk, lab, "a"); err != nil || got["a"] != "CT" {
		t.Errorf("an id with its suffix: %v %v", got, err)
	}
}

// TestSeveralValueColumns: value_columns fill two attributes from two columns.
func TestSeveralValueColumns(t *testing.T) {
	root := t.TempDir()
	tk := parseTask(t, `
id: modality
kind: classification
dims: 2
attributes: [{name: modality, classes: [CT, MR]}, {name: region, classes: [head, heart]}]
data:
  train: {images: ["images/{id}.png"], label: {path: "train.csv", format: csv, id_column: id, value_columns: {modality: Modality, region: Body part}}}
  test: {images: ["test/{id}.png"]}
metric: {name: balanced_accuracy}
submission: {format: csv, id_column: id, value_columns: {modality: modality, region: region}}
`)
	lab := write(t, filepath.Join(root, "train.csv"), "id,Body part,Modality\na,HEAD,mr\nb,heart,CT\n")
	got, err := classesOf(t, tk, lab, "a", "b")
	if err != nil || got["a"] != "MR/head" || got["b"] != "CT/heart" {
		t.Errorf("classes %v %v", got, err)
	}
	write(t, lab, "id,Body part,Modality\na,HEAD,mr\nb,leg,CT\n")
	_, err = classesOf(t, tk, lab, "a", "b")
	wantErr(t, err, lab, "line 3 (id b), column Body part", `region "leg" is not one of its classes head, heart`)
}

// TestOneHot: ISIC 2019's layout (a column a class, 1.0 and 0.0), and a row with none or
// two classes set, or a cell that is not 0 or 1, named by its line and id.
func TestOneHot(t *testing.T) {
	root := t.TempDir()
	tk := classTask(t, `[{name: lesion, classes: [MEL, NV, BCC, UNK]}]`, `{path: "GroundTruth.csv", format: csv, id_column: image, columns: [MEL, NV, BCC, UNK]}`)
	lab := write(t, filepath.Join(root, "GroundTruth.csv"), "image,MEL,NV,BCC,UNK\nISIC_0000000,0.0,1.0,0.0,0.0\nISIC_0000002,1.0,0.0,0.0,0.0\nISIC_0000004,0,0,1,\n")
	got, err := classesOf(t, tk, lab, "ISIC_0000000", "ISIC_0000002", "ISIC_0000004")
	if err != nil || got["ISIC_0000000"] != "NV" || got["ISIC_0000002"] != "MEL" || got["ISIC_0000004"] != "BCC" {
		t.Errorf("classes %v %v", got, err)
	}
	write(t, lab, "image,MEL,NV,BCC,UNK\nISIC_0000000,0.0,1.0,0.0,0.0\nISIC_0000002,1.0,1.0,0.0,0.0\n")
	_, err = classesOf(t, tk, lab, "ISIC_0000000", "ISIC_0000002")
	wantErr(t, err, lab, "line 3 (id ISIC_0000002): the one-hot columns MEL and NV are all 1; a row has one class")
	write(t, lab, "image,MEL,NV,BCC,UNK\nISIC_0000000,0.0,0.0,0.0,0.0\n")
	_, err = classesOf(t, tk, lab, "ISIC_0000000")
	wantErr(t, err, lab, "line 2 (id ISIC_0000000): none of the one-hot columns MEL, NV, BCC, UNK is 1")
	write(t, lab, "image,MEL,NV,BCC,UNK\nISIC_0000000,0.0,0.5,0.0,0.0\n")
	_, err = classesOf(t, tk, lab, "ISIC_0000000")
	wantErr(t, err, lab, `line 2 (id ISIC_0000000), column NV: "0.5" is not 0 or 1`)
	write(t, lab, "image,MEL,NV,BCC\nISIC_0000000,0.0,1.0,0.0\n")
	_, err = classesOf(t, tk, lab, "ISIC_0000000")
	wantErr(t, err, lab, `no column "UNK"`)
}

// TestFolderLabels: a case whose class is its folder becomes an annotation of that class,
// kept while the folder and class stay.
func TestFolderLabels(t *testing.T) {
	root := t.TempDir()
	tk := parseTask(t, `
id: modality
kind: classification
dims: 2
attributes: `+modality+`
data:
  train: {images: ["train/{class}/{id}.png"]}
  test: {images: ["test/{id}.png"]}
metric: {name: balanced_accuracy}
submission: {format: csv, id_column: image_id, value_column: label}
`)
	for _, f := range []string{"train/ct/a.png", "train/Pet-NM/b.png", "train/MR/c.png", "test/d.png"} {
		write(t, filepath.Join(root, f), "")
	}
	d, err := tk.Resolve(root)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	got, err := Labels(context.Background(), tk, d.Train, out)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"a": "CT", "b": "PET-NM", "c": "MR"} {
		if a := readAnn(t, got[id], tk); tk.Attributes[0].Classes[a.Classes["modality"]] != want {
			t.Errorf("case %s: %v, want %s", id, a.Classes, want)
		}
	}
	st, err := os.Stat(got["a"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Labels(context.Background(), tk, d.Train, out); err != nil {
		t.Fatal(err)
	}
	if st2, err := os.Stat(got["a"]); err != nil || !st2.ModTime().Equal(st.ModTime()) {
		t.Errorf("the converted label was written again: %v", err)
	}
	c := d.Train[0]
	c.Classes = nil
	_, err = Labels(context.Background(), tk, []task.Case{c}, out)
	wantErr(t, err, "case a has no class folder")
}

// tableTasks parses, for each label file of labels, a 2D classification of the attribute
// attr whose training labels it reads, scored by metric, with the given submission.
func tableTasks(f *testing.F, attr, metric, submission string, labels ...string) []*task.Task {
	f.Helper()
	var tabs []*task.Task
	for _, l := range labels {
		tk, err := task.Parse([]byte(`
id: f
kind: classification
dims: 2
attributes: [` + attr + `]
data:
  train: {images: ["i/{id}.png"], label: ` + l + `}
  test: {images: ["t/{id}.png"]}
metric: {name: ` + metric + `}
submission: ` + submission + `
`))
		if err != nil {
			f.Fatal(err)
		}
		tabs = append(tabs, tk)
	}
	return tabs
}

// fuzzTables fuzzes parseClassTable on each task of tabs: an error is one line, and a
// table read is checked by check.
func fuzzTables(f *testing.F, tabs []*task.Task, check func(t *testing.T, tk *task.Task, tab *classTable)) {
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, tk := range tabs {
			tab, err := parseClassTable(b, tk)
			if err != nil {
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("error spans lines: %q", err)
				}
				continue
			}
			check(t, tk, tab)
		}
	})
}

// FuzzClassTable: any bytes give, for a class-name table and a one-hot table, rows whose
// classes lie in the attribute (one a row), or an error that names a line or the header;
// never a panic.
func FuzzClassTable(f *testing.F) {
	f.Add([]byte("image_id,label\ns06-1,PET-NM\n007,ct\na.png,4\n"))
	f.Add([]byte("image_id,label,MEL,NV\na,1.0,0,1\nb,,1,1\n"))
	f.Add([]byte("\xef\xbb\xbfimage_id\n\"a\nb\"\n"))
	f.Add([]byte("image_id,label\n,\n\n"))
	tabs := tableTasks(f, "{name: a, classes: [MEL, NV, PET-NM, CT, XR]}", "balanced_accuracy", "{format: csv, id_column: image_id, value_column: label}",
		`{path: "t.csv", format: csv, id_column: image_id, value_column: label}`,
		`{path: "t.csv", format: csv, id_column: image_id, columns: [MEL, NV]}`,
	)
	fuzzTables(f, tabs, func(t *testing.T, _ *task.Task, tab *classTable) {
		for id, r := range tab.rows {
			if k, ok := tab.key(id); !ok || k != id {
				t.Fatalf("id %q read but found as %q", id, k)
			}
			if c, ok := r.classes["a"]; !ok || c < 0 || c >= 5 || len(r.classes) != 1 {
				t.Fatalf("id %q: classes %v", id, r.classes)
			}
		}
	})
}
