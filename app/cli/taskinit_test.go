package cli

import (
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		im.Pix[i] = uint8(4 * i)
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
