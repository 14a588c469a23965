package task

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"amid/plugins/taskspec"
)

// classTask is a classification of one attribute whose labels are a class-name CSV and
// whose submission is a class table with the default columns.
const classTask = `id: modality
kind: classification
dims: 2
attributes: [{name: modality, classes: [CT, MR, PET-NM, US, XR]}]
data:
  train:
    images: ["images/{id}.png"]
    label: {path: "train.csv", format: csv, id_column: image_id, value_column: label}
  test:
    images: ["test/{id}.png"]
metric: {name: balanced_accuracy}
submission: {format: csv, id_column: image_id, value_column: label}
`

// folderTask is classTask whose training images are in one folder a class, the label.
var folderTask = strings.Replace(classTask, `images: ["images/{id}.png"]
    label: {path: "train.csv", format: csv, id_column: image_id, value_column: label}`, `images: ["train/{class}/{id}.png"]`, 1)

// testFoldersTask is folderTask whose test images are in class folders too.
var testFoldersTask = strings.Replace(folderTask, `images: ["test/{id}.png"]`, `images: ["test/{class}/{id}.png"]`, 1)

// TestClassTableTask: a class-name CSV parses, and the class table's columns default to
// the id, the class name and one probability column per class, in class order.
func TestClassTableTask(t *testing.T) {
	tk, err := Parse([]byte(classTask))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"image_id", "label", "CT", "MR", "PET-NM", "US", "XR"}
	if !slices.Equal(tk.Submission.Columns, want) {
		t.Errorf("columns %v, want %v", tk.Submission.Columns, want)
	}
	cols, err := tk.Submission.ClassColumns(tk.Attributes)
	if err != nil {
		t.Fatal(err)
	}
	if cols["label"] != (ClassColumn{Attr: "modality", Class: -1}) || cols["PET-NM"] != (ClassColumn{Attr: "modality", Class: 2}) {
		t.Errorf("class columns %v", cols)
	}
	if got := tk.ValueColumns(); got["modality"] != "label" || len(got) != 1 {
		t.Errorf("value columns %v", got)
	}
}

// TestClassTableTwoAttributes: value_columns fill two attributes; their shared class name
// gets attribute:class probability columns.
func TestClassTableTwoAttributes(t *testing.T) {
	src := strings.Replace(classTask, "attributes: [{name: modality, classes: [CT, MR, PET-NM, US, XR]}]", "attributes: [{name: modality, classes: [CT, MR, other]}, {name: region, classes: [head, other]}]", 1)
	src = strings.Replace(src, "value_column: label}", "value_columns: {modality: Modality, region: Region}}", 1)
	src = strings.Replace(src, "submission: {format: csv, id_column: image_id, value_column: label}", "submission: {format: csv, id_column: image_id, value_columns: {modality: modality, region: region}}", 1)
	tk, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"image_id", "modality", "region", "CT", "MR", "modality:other", "head", "region:other"}
	if !slices.Equal(tk.Submission.Columns, want) {
		t.Errorf("columns %v, want %v", tk.Submission.Columns, want)
	}
	if got := tk.ValueColumns(); got["modality"] != "Modality" || got["region"] != "Region" {
		t.Errorf("value columns %v", got)
	}
}

// TestOneHotTask: one-hot columns name the classes of one attribute, in any order and
// case, a subset of them allowed.
func TestOneHotTask(t *testing.T) {
	src := strings.Replace(classTask, "value_column: label}", "columns: [mr, CT, US]}", 1)
	tk, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	a, idx, err := tk.OneHot()
	if err != nil || a.Name != "modality" || !slices.Equal(idx, []int{1, 0, 3}) {
		t.Errorf("one-hot %s %v %v", a.Name, idx, err)
	}
}

// TestFolderTask: a {class} folder in the image patterns is the label.
func TestFolderTask(t *testing.T) {
	tk, err := Parse([]byte(folderTask))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Data.Train.Label.Format != LabelFolder {
		t.Errorf("label format %q, want %s", tk.Data.Train.Label.Format, LabelFolder)
	}
	if got := Placeholders("train/{class}/{id}.png"); !slices.Equal(got, []string{"class"}) {
		t.Errorf("placeholders %v", got)
	}
}

// TestClassLabelsInvalid: each broken rule of a class table, a one-hot table, a folder
// layout or a class-table submission names its field.
func TestClassLabelsInvalid(t *testing.T) {
	folder := folderTask
	two := strings.Replace(classTask, "attributes: [{name: modality, classes: [CT, MR, PET-NM, US, XR]}]", "attributes: [{name: modality, classes: [CT, MR]}, {name: region, classes: [head, chest]}]", 1)
	cases := []struct{ src, from, to, field string }{
		{classTask, "value_column: label}", "}", "value_column"},
		{classTask, "value_column: label}", "value_columns: {organ: label}}", "data.train.label.value_columns"},
		{classTask, "value_column: label}", "columns: [CT, MRI]}", "data.train.label.columns"},
		{classTask, "value_column: label}", "columns: [CT, ct]}", "named twice"},
		{classTask, "value_column: label}", "value_column: label, columns: [CT, MR]}", "filled by column label and by the one-hot columns"},
		{classTask, "classes: [CT, MR,", "classes: [CT, ct, MR,", "differ only in case"},
		{classTask, "id_column: image_id, value_column: label}\n  test", "value_column: label}\n  test", "id_column"},
		{classTask, "submission: {format: csv, id_column: image_id, value_column: label}", "submission: {format: csv, id_column: image_id, columns: [image_id, label, CT]}", "column \"label\" has no source"},
		{classTask, "submission: {format: csv, id_column: image_id, value_column: label}", "submission: {format: csv, id_column: image_id, file_column: f, columns: [image_id, f], path: \"p/{id}.json\"}", "submission.file_column"},
		{classTask, "submission: {format: csv, id_column: image_id, value_column: label}", "submission: {format: csv, id_column: image_id, value_columns: {organ: label}}", "submission.value_columns"},
		{classTask, "submission: {format: csv, id_column: image_id, value_column: label}", "submission: {format: csv, id_column: image_id, columns: [image_id, label], value_column: label, const: {label: x}}", "no class name and no class probability"},
		{two, "value_column: label}", "value_column: label}", "this task has 2"},
		{two, "value_column: label}", "value_columns: {modality: m}}", "attribute region has no column"},
		{strings.Replace(two, "value_column: label}", "value_columns: {modality: m, region: r}}", 1), "submission: {format: csv, id_column: image_id, value_column: label}", "submission: {format: csv, id_column: image_id, value_column: label}", "submission.value_column"},
		{folder, "train/{class}/{id}.png", "train/{organ}/{id}.png", "{organ} is not {id}, {class} or an attribute"},
		{folder, "train/{class}/{id}.png", "train/{class}/{class}/{id}.png", "twice"},
		{folder, "train/{class}/{id}.png\"]", "train/{class}/{id}.png\"]\n    label: {path: \"x.csv\", format: csv, id_column: a, value_column: b}", "the class comes from the image folders"},
		{folder, "train/{class}/{id}.png\"]", "train/{id}.png\"]\n    label: {format: folder}", "has no class folder"},
		{folder, "train/{class}/{id}.png\"]", "train/{class}/{id}.png\"]\n    label: {format: folder, path: labels.csv}", "names no file"},
		{folder, "train/{class}/{id}.png\"]", "train/{id}/{class}.png\"]", "data.train.images[0]"},
		{strings.Replace(two, "value_column: label}", "value_columns: {modality: m, region: r}}", 1), "images/{id}.png", "{class}/{id}.png", "{class} names the class of a task's only attribute"},
		{strings.Replace(folder, "kind: classification", "kind: iqa\nscore: {min: 0, max: 1}", 1), "metric: {name: balanced_accuracy}\nsubmission: {format: csv, id_column: image_id, value_column: label}", "metric: {name: plcc}\nsubmission: {columns: [image_id, label], id_column: image_id, value_column: label}", "gives a classification its class"},
		{strings.Replace(classTask, "kind: classification", "kind: iqa\nscore: {min: 0, max: 1}", 1), "submission: {format: csv, id_column: image_id, value_column: label}", "submission: {columns: [image_id, label], id_column: image_id, value_column: label}", "one-hot columns fill"},
	}
	for _, c := range cases {
		src := strings.Replace(c.src, c.from, c.to, 1)
		if src == c.src && c.from != c.to {
			t.Fatalf("%q is not in the task", c.from)
		}
		if c.field == "one-hot columns fill" {
			src = strings.Replace(src, "value_column: label}\n  test", "value_column: label, columns: [a]}\n  test", 1)
		}
		_, err := Parse([]byte(src))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s → %s: error %v does not name %s", c.from, c.to, err, c.field)
		}
	}
}

// TestClassOf: class names without regard to case, indices where no class is a number,
// and the error naming the value and the classes.
func TestClassOf(t *testing.T) {
	a := taskspec.Attribute{Name: "modality", Classes: []string{"CT", "MR", "PET-NM"}}
	for v, want := range map[string]int{"CT": 0, " mr ": 1, "pet-nm": 2, "2": 2, "1.0": 1} {
		if k, err := ClassOf(a, v); err != nil || k != want {
			t.Errorf("%q: %d %v, want %d", v, k, err, want)
		}
	}
	for v, msg := range map[string]string{"PET": `modality "PET" is not one of its classes CT, MR, PET-NM, nor a class index 0–2`, "3": "not one", "-1": "not one", "1.5": "not one", "": "modality is empty", "NaN": "not one"} {
		if _, err := ClassOf(a, v); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want %q", v, err, msg)
		}
	}
	// Grades named 1 to 4: "1" is the grade, never the index of grade 2.
	g := taskspec.Attribute{Name: "grade", Classes: []string{"1", "2", "3", "4"}}
	if k, err := ClassOf(g, "1"); err != nil || k != 0 {
		t.Errorf("grade 1: %d %v", k, err)
	}
	if _, err := ClassOf(g, "0"); err == nil || strings.Contains(err.Error(), "index") {
		t.Errorf("grade 0: %v", err)
	}
}

// TestFolderResolve: one folder per class, matched without regard to case; the class of
// each case from its folder; a folder that is not a class, or a case in two folders, is
// an error naming the folder; the test split's class folders are read as well.
func TestFolderResolve(t *testing.T) {
	tk, err := Parse([]byte(testFoldersTask))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	touch(t, root, "train/ct/a.png", "train/ct/b.png", "train/MR/c.png", "train/Us/d.png", "train/.hidden/e.png",
		"train/notes.txt", "test/CT/f.png", "test/unknown/.keep")
	if _, err := tk.Resolve(root); err == nil || !strings.Contains(err.Error(), "test/unknown is not a class") {
		t.Fatalf("a test folder that is not a class: %v", err)
	}
	touch(t, root, "test/xr/.keep")
	if err := removeAll(root, "test/unknown"); err != nil {
		t.Fatal(err)
	}
	d, err := tk.Resolve(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range d.Train {
		got = append(got, c.ID+"="+tk.Attributes[0].Classes[c.Classes["modality"]])
		if !strings.HasSuffix(c.Label, "/train/"+map[string]string{"a": "ct", "b": "ct", "c": "MR", "d": "Us"}[c.ID]) {
			t.Errorf("case %s: label %s, want its folder", c.ID, c.Label)
		}
	}
	if want := "a=CT b=CT c=MR d=US"; strings.Join(got, " ") != want {
		t.Errorf("classes %s, want %s", strings.Join(got, " "), want)
	}
	if len(d.Test) != 1 || d.Test[0].ID != "f" || d.Test[0].Label != "" || d.Test[0].Classes != nil {
		t.Errorf("test cases %+v", d.Test)
	}
	touch(t, root, "train/Mri/x.png")
	if _, err := tk.Resolve(root); err == nil || !errors.Is(err, ErrData) || !strings.Contains(err.Error(), `train folder `+root+`/train/Mri is not a class: modality "Mri" is not one of its classes`) {
		t.Errorf("a folder that is not a class: %v", err)
	}
	if err := removeAll(root, "train/Mri"); err != nil {
		t.Fatal(err)
	}
	touch(t, root, "train/MR/a.png")
	if _, err := tk.Resolve(root); err == nil || !strings.Contains(err.Error(), "train case a is in the folders "+root+"/train/MR and "+root+"/train/ct") {
		t.Errorf("a case in two folders: %v", err)
	}
}

func removeAll(root, rel string) error { return os.RemoveAll(filepath.Join(root, rel)) }

// FuzzClassOf: any value gives a class of the attribute or an error naming the
// attribute, never a panic.
func FuzzClassOf(f *testing.F) {
	for _, s := range []string{"CT", "mr", "2", "2.0", "-0", "1e0", "9223372036854775808", " ", "PET-NM\x00"} {
		f.Add(s)
	}
	a := taskspec.Attribute{Name: "modality", Classes: []string{"CT", "MR", "PET-NM"}}
	f.Fuzz(func(t *testing.T, v string) {
		k, err := ClassOf(a, v)
		if err == nil && (k < 0 || k >= len(a.Classes)) {
			t.Fatalf("%q gives class %d", v, k)
		}
		if err != nil && !strings.Contains(err.Error(), "modality") {
			t.Fatalf("%q: %v does not name the attribute", v, err)
		}
	})
}

// FuzzFolderResolve: any folder names under a {class} layout give cases whose classes
// are the attribute's, or an error saying which folder is not a class; never a panic.
func FuzzFolderResolve(f *testing.F) {
	f.Add("ct", "MR", "a")
	f.Add("ct", "CT", "b")
	f.Add("1", "x y", "c")
	f.Add("..", ".", "d")
	tk, err := Parse([]byte(folderTask))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, d1, d2, id string) {
		root := t.TempDir()
		for _, d := range []string{d1, d2} {
			if d == "" || strings.ContainsAny(d, "/\\\x00") || d == "." || d == ".." || len(d) > 100 {
				return
			}
			if err := os.MkdirAll(filepath.Join(root, "train", d), 0o755); err != nil {
				return
			}
			if id != "" && !strings.ContainsAny(id, "/\\\x00") && len(id) < 100 {
				_ = os.WriteFile(filepath.Join(root, "train", d, id+".png"), nil, 0o644)
			}
		}
		ds, err := tk.Resolve(root)
		if err != nil {
			if !errors.Is(err, ErrData) {
				t.Fatalf("error %v is not ErrData", err)
			}
			return
		}
		for _, c := range ds.Train {
			if k, ok := c.Classes["modality"]; !ok || k < 0 || k >= len(tk.Attributes[0].Classes) {
				t.Fatalf("case %s: classes %v", c.ID, c.Classes)
			}
		}
	})
}

// TestClassFolderInputs: a folder laid out as a test split of class folders gives its
// cases to predict, as does one class folder alone.
func TestClassFolderInputs(t *testing.T) {
	tk, err := Parse([]byte(testFoldersTask))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	touch(t, root, "test/ct/a.png", "test/MR/b.png", "test/MR/c.png")
	cs, bad, err := tk.Inputs([]string{filepath.Join(root, "test")})
	if err != nil || len(bad) > 0 || ids(cs) != "a b c" {
		t.Errorf("the test folder: %s %v %v", ids(cs), bad, err)
	}
	cs, bad, err = tk.Inputs([]string{filepath.Join(root, "test", "MR")})
	if err != nil || len(bad) > 0 || ids(cs) != "b c" {
		t.Errorf("a class folder: %s %v %v", ids(cs), bad, err)
	}
}
