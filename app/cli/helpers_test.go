package cli

import (
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"amid/assets/ci"
	"amid/assets/realdata"
	"amid/host/task"
)

// endToEnd skips a test that trains (why says what it does) under -short and under
// -race (make e2e runs it without), and without the real-image cache that holds src (in
// CI, it fails).
func endToEnd(t *testing.T, why, src string) {
	t.Helper()
	if testing.Short() {
		t.Skip(why)
	}
	ci.NotUnderRace(t, "e2e")
	realdata.Path(t, src)
}

// installPlugin gives the test a new AMID home and plugin folder, builds the plugin
// ./plugins/<name> into the folder and trusts it.
func installPlugin(t *testing.T, name string) {
	t.Helper()
	home, plugins := t.TempDir(), t.TempDir()
	t.Setenv("AMID_HOME", home)
	t.Setenv("AMID_PLUGIN_DIR", plugins)
	cmd := exec.Command("go", "build", "-o", filepath.Join(plugins, "amid-plugin-"+name), "./plugins/"+name)
	cmd.Dir = filepath.Join("..", "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build plugin: %v\n%s", err, b)
	}
	if _, e, code := run(t, "plugins", "trust", name); code != 0 {
		t.Fatalf("plugins trust: %s", e)
	}
}

// amidFunc runs amid on its arguments: run (Main in this process, with the test's data
// folder) or ownHome's (a process of its own).
type amidFunc func(t *testing.T, args ...string) (stdout, stderr string, code int)

// ownHome gives the parallel subtest t a data folder of its own in which the plugins
// named are trusted (from the plugin folder its test installed them in), and returns what
// runs amid there as a process of its own: runs in one data folder take turns at its
// store's lock. The data folder is the second result.
func ownHome(t *testing.T, plugins ...string) (amidFunc, string) {
	t.Helper()
	home := t.TempDir()
	run := func(t *testing.T, args ...string) (string, string, int) { return runChild(t, home, args...) }
	for _, p := range plugins {
		if _, e, code := run(t, "plugins", "trust", p); code != 0 {
			t.Fatalf("plugins trust %s: %s", p, e)
		}
	}
	return run, home
}

// loadTask reads the task file at path.
func loadTask(t *testing.T, path string) *task.Task {
	t.Helper()
	tk, err := task.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// takeTask reads the hand-written task file at path and removes it, for `amid task
// init` to guess it again.
func takeTask(t *testing.T, path string) *task.Task {
	t.Helper()
	tk := loadTask(t, path)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	return tk
}

// sameData reports whether the guessed task g reads its data as the hand-written one
// does: the kind, dimension, train and test image patterns, and label file and format.
func sameData(g, hand *task.Task) bool {
	hl, gl := hand.Data.Train.Label, g.Data.Train.Label
	return g.Kind == hand.Kind && g.Dims == hand.Dims && slices.Equal(g.Data.Train.Images, hand.Data.Train.Images) && slices.Equal(g.Data.Test.Images, hand.Data.Test.Images) &&
		gl.Path == hl.Path && gl.Format == hl.Format
}

// runToPackage runs `amid run` on the task at path for 10 s on 2 folds and checks its
// log and that `amid verify` accepts its package; it returns the run's folder. 10 s: the
// degenerate classification and detection datasets end in a package on 6 s (README's
// table); the contract is checked here, not the quality.
func runToPackage(t *testing.T, run amidFunc, path string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run")
	o, e, code := run(t, "run", path, "--out", out, "--budget", "10s", "--folds", "2", "--seed", "1")
	if code != 0 {
		t.Fatalf("amid run: exit %d\n%s\n%s", code, o, e)
	}
	saneLog(t, o+e)
	if _, e, code := run(t, "verify", filepath.Join(out, "package")); code != 0 {
		t.Fatalf("amid verify: exit %d: %s", code, e)
	}
	return out
}

// readCSV reads the rows of the CSV file at path.
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// refusedAtPrepare runs `amid run` on the spoiled dataset in dir and checks that it
// stops at prepare with one line that holds want.
func refusedAtPrepare(t *testing.T, run amidFunc, dir, want string) {
	t.Helper()
	_, e, code := run(t, "run", filepath.Join(dir, "task.yaml"), "--out", filepath.Join(t.TempDir(), "run"), "--budget", "10s", "--seed", "1")
	lines := strings.Split(strings.TrimSpace(e), "\n")
	if last := lines[len(lines)-1]; code == 0 || !strings.HasPrefix(last, "amid: prepare: ") || !strings.Contains(last, want) {
		t.Errorf("bad input: exit %d, last line %q; want one line at prepare with %q", code, last, want)
	}
}
