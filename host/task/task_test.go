package task

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/assets/realdata"
)

const valid = `id: demo
kind: segmentation
dims: 3
labels: [{value: 0, name: background}, {value: 1, name: lesion}]
data:
  train:
    images: ["train/{id}_ct.nii.gz"]
    label: {path: "train/{id}_seg.nii.gz"}
  test:
    images: ["test/{id}_ct.nii.gz"]
  patient: "^(p[0-9]+)_"
metric: {name: dice}
submission:
  columns: [case_id, predicted_mask_path]
  id_column: case_id
  file_column: predicted_mask_path
  path: "predictions/{id}.nii.gz"
budget: 90s
`

func TestParseValid(t *testing.T) {
	tk, err := Parse([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Metric.Direction != "max" || tk.Submission.CSV != "submission.csv" || tk.Data.Train.Label.Format != LabelImage {
		t.Errorf("defaults not filled: %+v", tk)
	}
	if s := tk.Spec(); s.Output != ".nii.gz" || len(s.Labels) != 2 {
		t.Errorf("spec %+v", s)
	}
	if int64(tk.Budget) != 90e9 { // 90 s in nanoseconds
		t.Errorf("budget %v", tk.Budget)
	}
}

// TestInvalidNamesTheField checks that each broken rule is reported with its field.
func TestInvalidNamesTheField(t *testing.T) {
	cases := []struct{ from, to, field string }{
		{"kind: segmentation", "kind: segmentatoin", "kind"},
		{"dims: 3", "dims: 4", "dims"},
		{`"train/{id}_ct.nii.gz"]`, `"train/ct.nii.gz"]`, "data.train.images[0]"},
		{`"test/{id}_ct.nii.gz"`, `"../test/{id}_ct.nii.gz"`, "data.test.images[0]"},
		{`path: "train/{id}_seg.nii.gz"`, `path: "train/{id}_seg.nii.gz", format: png`, "data.train.label.format"},
		{`patient: "^(p[0-9]+)_"`, `patient: "^p[0-9]+_"`, "data.patient"},
		{"metric: {name: dice}", "metric: {name: dice, direction: up}", "metric.direction"},
		{"id_column: case_id", "id_column: id", "submission.id_column"},
		{"budget: 90s", "budget: soon", "budget"},
		{"dims: 3", "dims: 3\nkinds: x", "kinds"},
		{`path: "train/{id}_seg.nii.gz"`, `path: "train/{id}_seg.nii.gz", names: {GTV: lesion}`, "data.train.label.names"},
		{`path: "train/{id}_seg.nii.gz"`, `path: "train/{id}_seg.dcm", format: dicom, names: {GTV: tumour}`, "data.train.label.names"},
		{"{value: 1, name: lesion}", "{value: 1, name: lesion, code: {scheme: SCT}}", "code needs both"},
	}
	for _, c := range cases {
		src := strings.Replace(valid, c.from, c.to, 1)
		_, err := Parse([]byte(src))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s → %s: error %v does not name %s", c.from, c.to, err, c.field)
		}
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(p, []byte("id: [unclosed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("error %v does not name the file", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.yaml")
	_ = os.WriteFile(empty, nil, 0o644)
	if _, err := Load(empty); err == nil {
		t.Error("an empty task file was accepted")
	}
}

func touch(t *testing.T, root string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(root, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestResolve(t *testing.T) {
	tk, _ := Parse([]byte(valid))
	root := t.TempDir()
	touch(t, root, "train/p1_a_ct.nii.gz", "train/p1_a_seg.nii.gz", "train/p1_b_ct.nii.gz", "train/p1_b_seg.nii.gz",
		"train/p2_a_ct.nii.gz", "train/p2_a_seg.nii.gz", "test/p3_a_ct.nii.gz", "train/.hidden_ct.nii.gz")
	d, err := tk.Resolve(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Train) != 3 || len(d.Test) != 1 || d.Train[0].Patient != "p1" || d.Train[2].Patient != "p2" {
		t.Errorf("resolved %+v", d)
	}
	// A missing label names the case and the file.
	if err := os.Remove(filepath.Join(root, "train/p1_b_seg.nii.gz")); err != nil {
		t.Fatal(err)
	}
	_, err = tk.Resolve(root)
	if err == nil || !errors.Is(err, ErrData) || !strings.Contains(err.Error(), "p1_b") || !strings.Contains(err.Error(), "p1_b_seg.nii.gz") {
		t.Errorf("missing label: %v", err)
	}
	if _, err := tk.Resolve(filepath.Join(root, "nowhere")); err == nil {
		t.Error("a missing data folder was accepted")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(valid))
	f.Add([]byte("id: x\nkind: iqa\ndims: 2\nscore: {min: 0, max: 4}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tk, err := Parse(b)
		if err == nil && tk.Validate() != nil {
			t.Error("a parsed task fails validation")
		}
	})
}

func TestDetect(t *testing.T) {
	other := strings.Replace(valid, "id: demo", "id: other", 1)
	other = strings.Replace(other, "_seg.nii.gz", "_mask.nii.gz", 1)
	cands := map[string][]byte{"demo": []byte(valid), "other": []byte(other)}
	root := t.TempDir()
	touch(t, root, "train/p1_a_ct.nii.gz", "train/p1_a_seg.nii.gz", "test/p2_a_ct.nii.gz")
	id, tk, err := Detect(root, cands)
	if err != nil || id != "demo" || tk.ID != "demo" {
		t.Fatalf("detect: %s %v", id, err)
	}
	// Both match once every label is there twice: ambiguous.
	touch(t, root, "train/p1_a_mask.nii.gz")
	if _, _, err := Detect(root, cands); !errors.Is(err, ErrAmbiguous) {
		t.Errorf("two matching tasks: %v", err)
	}
	// The sample submission's header decides.
	touch(t, root, "sample_submission.csv")
	if err := os.WriteFile(filepath.Join(root, "sample_submission.csv"), []byte("image_id,x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Detect(root, cands); err == nil {
		t.Error("a folder whose sample submission fits no task was matched")
	}
}

// TestDICOMTask: a dicom label with a name mapping and label codes parses, and a pattern
// that ends in {id} finds case folders (DICOM series) as well as files.
func TestDICOMTask(t *testing.T) {
	y := strings.NewReplacer(
		"{value: 1, name: lesion}", `{value: 1, name: lesion, code: {scheme: SCT, value: "52988006", meaning: Lesion}}`,
		`"train/{id}_ct.nii.gz"]`, `"train/images/{id}"]`,
		`path: "train/{id}_seg.nii.gz"`, `path: "train/labels/{id}.dcm", format: dicom, names: {"GTV-1": lesion}`,
	).Replace(valid)
	tk, err := Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Labels[1].Code.Value != "52988006" || tk.Data.Train.Label.Names["GTV-1"] != "lesion" {
		t.Errorf("labels %+v, names %v", tk.Labels, tk.Data.Train.Label.Names)
	}
	root := t.TempDir()
	for _, p := range []string{"train/labels/p1_a.dcm", "train/labels/p2_b.dcm", "test/p3_ct.nii.gz"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A case folder is read as DICOM (its series chosen): pydicom's 5-slice CT.
	for _, id := range []string{"p1_a", "p2_b"} {
		copyTree(t, realdata.Path(t, realdata.Pydicom+"/dicomdirtests/98892001/CT5N"), filepath.Join(root, "train/images", id))
	}
	d, err := tk.Resolve(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Train) != 2 || d.Train[0].ID != "p1_a" || d.Train[0].Images[0] != filepath.Join(root, "train/images/p1_a") || d.Train[1].Label != filepath.Join(root, "train/labels/p2_b.dcm") {
		t.Errorf("train cases %+v", d.Train)
	}
}
