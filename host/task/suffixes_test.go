package task

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A folder that mixes image formats, as NeurIPS-CellSeg's does, resolves with suffixes:
// every case is found once, its first image is the file that exists, and the label
// pattern (one format) still applies.
func TestResolveSuffixes(t *testing.T) {
	const def = `
id: mixed
kind: segmentation
dims: 2
instances: true
data:
  train:
    images: ["train/images/{id}.png"]
    suffixes: [".bmp", ".tif", ".tiff"]
    label: {path: "train/labels/{id}_label.tiff"}
  test:
    images: ["test/images/{id}.png"]
    suffixes: [".bmp", ".tif", ".tiff"]
metric: {name: f1_0.5}
submission:
  columns: [image_id, predicted_mask_path]
  id_column: image_id
  file_column: predicted_mask_path
  path: "predictions/{id}_label.tiff"
`
	tk, err := Parse([]byte(def))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	files := []string{
		"train/images/cell_00001.bmp", "train/labels/cell_00001_label.tiff",
		"train/images/cell_00002.png", "train/labels/cell_00002_label.tiff",
		"train/images/cell_00003.tiff", "train/labels/cell_00003_label.tiff",
		"train/images/cell_00004.tif", "train/labels/cell_00004_label.tiff",
		// a second file of the same case: the pattern's own ending wins
		"train/images/cell_00004.png",
		"test/images/cell_00005.bmp",
		"test/images/cell_00006.tif",
	}
	for _, f := range files {
		p := filepath.Join(root, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := tk.Resolve(root)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"cell_00001": "cell_00001.bmp", "cell_00002": "cell_00002.png",
		"cell_00003": "cell_00003.tiff", "cell_00004": "cell_00004.png",
	}
	if len(d.Train) != len(want) {
		t.Fatalf("%d train cases, want %d: %+v", len(d.Train), len(want), d.Train)
	}
	for _, c := range d.Train {
		if filepath.Base(c.Images[0]) != want[c.ID] {
			t.Errorf("case %s: image %s, want %s", c.ID, c.Images[0], want[c.ID])
		}
		if filepath.Base(c.Label) != c.ID+"_label.tiff" {
			t.Errorf("case %s: label %s", c.ID, c.Label)
		}
	}
	if len(d.Test) != 2 || d.Test[0].ID != "cell_00005" || d.Test[1].ID != "cell_00006" {
		t.Errorf("test cases %+v", d.Test)
	}

	// Without the suffixes only the .png files are cases.
	tk.Data.Train.Suffixes = nil
	if d, err = tk.Resolve(root); err != nil || len(d.Train) != 2 {
		t.Errorf("without suffixes: %v, %+v", err, d)
	}
}

func TestSuffixesInvalid(t *testing.T) {
	base := `
id: x
kind: segmentation
dims: 2
labels: [{value: 0, name: background}, {value: 1, name: fg}]
data:
  train:
    images: [IMAGE]
    suffixes: [SUFFIX]
    label: {path: "l/{id}.png"}
  test:
    images: ["t/{id}.png"]
metric: {name: dice}
submission: {columns: [id, p], id_column: id, file_column: p, path: "p/{id}.png"}
`
	for _, c := range []struct{ image, suffix, field string }{
		{`"i/{id}.png"`, `"bmp"`, "data.train.suffixes[0]"},
		{`"i/{id}.png"`, `".b/mp"`, "data.train.suffixes[0]"},
		{`"i/{id}.png"`, `".*"`, "data.train.suffixes[0]"},
		{`"i/x.{id}"`, `".bmp"`, "data.train.suffixes"},
	} {
		def := strings.NewReplacer("IMAGE", c.image, "SUFFIX", c.suffix).Replace(base)
		_, err := Parse([]byte(def))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("image %s suffix %s: %v, want an error naming %s", c.image, c.suffix, err, c.field)
		}
	}
}
