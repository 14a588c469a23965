package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"amid/host/config"
)

// TestUseModelBadInput: Predict on the Use model screen says, in one sentence, what is
// missing (a package, images, a results folder, a PACS for PACS studies) and predicts
// nothing; a package that is not one is refused with the reason, and no results folder is
// made.
func TestUseModelBadInput(t *testing.T) {
	t.Setenv(config.EnvPACSURL, "")
	a, q := newApp(t)
	a.tabs.SelectIndex(tabUse)
	u := a.use
	dir := t.TempDir()
	image := filepath.Join(dir, "patient1.nii.gz")
	if err := os.WriteFile(image, []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	for _, c := range []struct {
		setup func()
		want  string
	}{
		{func() {}, "Choose a model package."},
		{func() { u.addPackage(filepath.Join(dir, "no-package")) }, "Add the images to predict, or PACS studies."},
		{func() { u.addInput(image) }, "Give the folder the results go to."},
		{func() { u.out.SetText(out); u.studies.SetText("1.2.3") }, "PACS studies need a PACS: set its address in Settings."},
	} {
		c.setup()
		test.Tap(u.button)
		if u.status.Text != c.want {
			t.Errorf("status %q, want %q", u.status.Text, c.want)
		}
	}
	u.studies.SetText("")
	test.Tap(u.button)
	q.wait(t, "the refusal", func() bool { return strings.HasPrefix(u.status.Text, "Predict failed: ") })
	t.Logf("status: %s", u.status.Text)
	if !strings.Contains(u.status.Text, "no-package") || strings.Contains(u.status.Text, "\n") || u.button.Disabled() {
		t.Errorf("status %q: want one sentence naming the package, and Predict enabled again", u.status.Text)
	}
	if len(u.cases) != 0 {
		t.Errorf("%d cases listed after a refusal", len(u.cases))
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused package made the results folder: %v", err)
	}
}
