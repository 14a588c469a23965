package ui

import (
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"amid/host/task"
)

// writeClassFolder writes an 8 × 8 grey PNG at p (the guess reads only its shape).
func writeClassFolder(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	im := image.NewGray(image.Rect(0, 0, 8, 8))
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, im); err != nil {
		t.Fatal(err)
	}
}

// TestNewTaskGuess taps Guess from folder on the New task screen: a folder without a
// test split says so and leaves no task; with one, the task text shows the guessed task,
// the form takes its kind and data folder, and an edited text is what a run would take.
func TestNewTaskGuess(t *testing.T) {
	a, q := newApp(t)
	s := a.newTask
	dir := t.TempDir()
	for _, p := range []string{"train/CT/a.png", "train/CT/b.png", "train/MR/c.png", "train/MR/d.png"} {
		writeClassFolder(t, filepath.Join(dir, filepath.FromSlash(p)))
	}
	s.source.SetText(dir)
	test.Tap(s.guessB)
	q.wait(t, "the guess", func() bool { return !s.guessB.Disabled() && !strings.HasPrefix(s.found.Text, "Looking at") })
	if s.det != nil || s.text.Visible() || !strings.Contains(s.found.Text, "no test split beside train/") || !strings.Contains(s.found.Text, "--test") {
		t.Errorf("without a test split: task %v, text shown %v, found %q", s.det != nil, s.text.Visible(), s.found.Text)
	}
	writeClassFolder(t, filepath.Join(dir, "test", "e.png"))
	test.Tap(s.guessB)
	q.wait(t, "the guess", func() bool { return s.det != nil })
	if !s.text.Visible() || !strings.Contains(s.text.Text, "train/{class}/{id}.png") || !strings.Contains(s.text.Text, "kind: classification") {
		t.Errorf("task text (shown %v):\n%s", s.text.Visible(), s.text.Text)
	}
	if s.kind.Selected != "classification" || s.data.Text != dir {
		t.Errorf("kind %q data %q, want classification and the folder", s.kind.Selected, s.data.Text)
	}
	for _, want := range []string{"Guessed image folders, one a class, in train/", "the classes CT, MR", "4 training and 1 test cases"} {
		if !strings.Contains(s.found.Text, want) {
			t.Errorf("found %q does not say %q", s.found.Text, want)
		}
	}
	if _, err := task.Parse([]byte(s.text.Text)); err != nil {
		t.Errorf("the task text does not parse: %v", err)
	}
	// An edited text that no longer parses is refused when the run starts, in a line.
	s.text.SetText(strings.Replace(s.text.Text, "kind: classification", "kind: painting", 1))
	s.startRun()
	if !strings.HasPrefix(s.status.Text, "The task text: ") || !strings.Contains(s.status.Text, "painting") {
		t.Errorf("status %q, want the edited text refused", s.status.Text)
	}
}
