package cli

import (
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"amid/assets/realdata"
	"amid/host/task"
)

// TestTaskInit runs `amid task init` on a folder of image folders, one a class: it writes
// a task that reads back, and prints what it guessed; a folder without a test split is
// refused with exit 2 and the sentence that says so, and no file.
func TestTaskInit(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"train/CT/a.png", "train/CT/b.png", "train/MR/c.png", "train/MR/d.png"} {
		writeGrey(t, filepath.Join(dir, filepath.FromSlash(p)))
	}
	_, e, code := run(t, "task", "init", dir)
	if code != 2 || !strings.Contains(e, "no test split beside train/") || !strings.Contains(e, "--test") || strings.Count(strings.TrimSpace(e), "\n") != 0 {
		t.Errorf("without a test split: exit %d, stderr %q; want 2 and one line naming --test", code, e)
	}
	if _, err := os.Stat(filepath.Join(dir, "task.yaml")); err == nil {
		t.Error("a task file was written for an ambiguous folder")
	}
	writeGrey(t, filepath.Join(dir, "test", "e.png"))
	o, e, code := run(t, "task", "init", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	for _, want := range []string{"image folders, one a class, in train/", "the classes CT, MR, the folders' names", "test images in test/", "2D", "4 training and 1 test cases"} {
		if !strings.Contains(o, want) {
			t.Errorf("output does not say %q:\n%s", want, o)
		}
	}
	tk, err := task.Load(filepath.Join(dir, "task.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Resolve(dir); err != nil || tk.Kind != "classification" || tk.Data.Train.Images[0] != "train/{class}/{id}.png" {
		t.Errorf("task %s %v: %v", tk.Kind, tk.Data.Train.Images, err)
	}
	if _, e, code := run(t, "task", "init", dir); code == 0 || !strings.Contains(e, "exists") {
		t.Errorf("a second init: exit %d, %q; want a refusal to replace the file", code, e)
	}
	if _, e, code := run(t, "task", "init", dir, "--force", "--kind", "segmentation"); code != 1 || !strings.Contains(e, "no layout AMID reads found for segmentation") {
		t.Errorf("--kind segmentation: exit %d, %q", code, e)
	}
}

// writeGrey writes an 8 × 8 grey PNG: any size serves, the guess reads only its shape.
func writeGrey(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	im := image.NewGray(image.Rect(0, 0, 8, 8))
	for i := range im.Pix {
		im.Pix[i] = uint8(4 * i) // 64 pixels over 0–252
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, im); err != nil {
		t.Fatal(err)
	}
}

// TestClassLayoutsTaskInit runs `amid task init` on the real-image dataset of each class
// layout of TestClassLayouts (issue 31: slices of CT, MR and ultrasound scans from the
// real-image cache), with the hand-written task.yaml taken away: the guess has the kind,
// dimension, image patterns, label file, format and columns of the task the layout test
// runs, and the same classes without regard to case (for the class indices, as many; the
// indices ask for --kind classification, since they could be a score). The image-folder
// layout's guessed task then runs to a package that `amid verify` accepts, with its class
// table.
func TestClassLayoutsTaskInit(t *testing.T) {
	endToEnd(t, "trains a classification", cranium)
	guessed := map[string]string{}
	root := t.TempDir() // the folders outlive their subtests: one runs below
	for i, l := range classLayouts() {
		t.Run(l.name, func(t *testing.T) {
			dir := filepath.Join(root, strconv.Itoa(i))
			path := writeLayout(t, l, dir)
			hand := takeTask(t, path)
			args := []string{"task", "init", dir, "--id", "modality"}
			_, e, code := run(t, args...)
			if l.name == "class indices" {
				if code != 2 || !strings.Contains(e, "class indices or a score?") {
					t.Errorf("class indices without --kind: exit %d, %q; want 2 and the question", code, e)
				}
				_, e, code = run(t, append(args, "--kind", "classification")...)
			}
			if code != 0 {
				t.Fatalf("amid task init: exit %d: %s", code, e)
			}
			g := loadTask(t, path)
			hl, gl := hand.Data.Train.Label, g.Data.Train.Label
			if !sameData(g, hand) || gl.IDColumn != hl.IDColumn || !slices.Equal(gl.Columns, hl.Columns) {
				t.Errorf("guessed %s %dD %v %v label %+v; the layout's task is %s %dD %v %v label %+v", g.Kind, g.Dims, g.Data.Train.Images, g.Data.Test.Images, gl,
					hand.Kind, hand.Dims, hand.Data.Train.Images, hand.Data.Test.Images, hl)
			}
			// Each attribute by the column (or folder) that fills it.
			byColumn := func(tk *task.Task) map[string][]string {
				out := map[string][]string{}
				cols := tk.ValueColumns()
				for _, a := range tk.Attributes {
					key := cols[a.Name]
					cs := make([]string, len(a.Classes))
					for i, c := range a.Classes {
						cs[i] = strings.ToLower(c)
					}
					slices.Sort(cs)
					if l.name == "class indices" {
						cs = []string{strconv.Itoa(len(cs))}
					}
					out[key] = cs
				}
				return out
			}
			if h, gg := byColumn(hand), byColumn(g); fmt.Sprint(h) != fmt.Sprint(gg) {
				t.Errorf("classes by column: guessed %v, the layout's %v", gg, h)
			}
			guessed[l.name] = dir
		})
	}
	dir, ok := guessed["image folders"]
	if !ok {
		t.Fatal("the image-folder layout was not guessed")
	}
	installPlugin(t, "classification")
	path := filepath.Join(dir, "task.yaml")
	tk := loadTask(t, path)
	out := runToPackage(t, run, path)
	checkClassTable(t, tk, filepath.Join(out, "submission", "submission.csv"))
}

// TestBoxLayoutsTaskInit runs `amid task init` on the real-image datasets of
// TestBoxLayouts (T1 MR slices with a box for each half of ITK's brain mask), with the
// hand-written task.yaml taken away and, for YOLO, the class list shipped beside the
// labels as YOLO datasets do (classes.txt, in the label files' order: right, left). The
// guess has the layout test's kind, patterns, label file and format, and names each
// YOLO class id and VOC object name as that task does, without regard to case.
func TestBoxLayoutsTaskInit(t *testing.T) {
	realdata.Path(t, t1) // skips without the cache, or fails in CI
	for _, l := range boxLayouts() {
		t.Run(l.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeBoxLayout(t, l, dir)
			hand := takeTask(t, path)
			if l.format == task.LabelYOLO {
				writeLines(t, filepath.Join(dir, l.folder, "classes.txt"), hand.Data.Train.Label.Classes...)
			}
			o, e, code := run(t, "task", "init", dir)
			if code != 0 {
				t.Fatalf("amid task init: exit %d: %s", code, e)
			}
			t.Logf("amid task init:\n%s", o)
			g := loadTask(t, path)
			hl, gl := hand.Data.Train.Label, g.Data.Train.Label
			if !sameData(g, hand) || g.Submission.Format != hand.Submission.Format {
				t.Errorf("guessed %s %dD %v %v label %s (%s) submission %s; the layout's task is %s %dD %v %v label %s (%s) submission %s",
					g.Kind, g.Dims, g.Data.Train.Images, g.Data.Test.Images, gl.Path, gl.Format, g.Submission.Format,
					hand.Kind, hand.Dims, hand.Data.Train.Images, hand.Data.Test.Images, hl.Path, hl.Format, hand.Submission.Format)
			}
			// What each YOLO class id, or each class, names.
			names := func(tk *task.Task) string {
				a, idx, err := tk.BoxAttribute()
				if err != nil {
					t.Fatal(err)
				}
				var s []string
				for _, k := range idx {
					s = append(s, strings.ToLower(a.Classes[k]))
				}
				if tk.Data.Train.Label.Format == task.LabelVOC {
					slices.Sort(s)
				}
				return strings.Join(s, ",")
			}
			if h, gg := names(hand), names(g); h != gg {
				t.Errorf("classes %s, the layout's %s", gg, h)
			}
		})
	}
}
