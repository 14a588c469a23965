package cli

import (
	"context"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"amid/host/bench"
	"amid/host/task"
	"amid/plugins/taskspec"
)

// TestPlainTaskOfEveryKind runs `amid run` on a plain task.yaml of every kind, as a user
// writes one for their own data (no challenge; labels in AMID's annotation JSON, images or
// a score CSV; the metric a user names; a submission that names no format), with the
// built-in plugins dropped into the user's plugin folder and trusted as a user trusts
// them, and checks that each run ends in a package that `amid verify` accepts, with one
// prediction a test case in the kind's submission format. Before the annotation format,
// the detection and classification runs failed at the submission ("unknown image format
// (extension ".json")").
func TestPlainTaskOfEveryKind(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a task of every kind")
	}
	if raceEnabled {
		// The race detector slows training tenfold and finds nothing here that host/run's
		// tests under -race do not: make e2e runs this test without it.
		t.Skip("runs without -race: make e2e")
	}
	home, plugins := t.TempDir(), t.TempDir()
	t.Setenv("AMID_HOME", home)
	t.Setenv("AMID_PLUGIN_DIR", plugins)
	for _, p := range []string{"segmentation", "detection", "classification", "iqa", "enhancement"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(plugins, "amid-plugin-"+p), "./plugins/"+p)
		cmd.Dir = filepath.Join("..", "..")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build plugin %s: %v\n%s", p, err, b)
		}
		if _, e, code := run(t, "plugins", "trust", p); code != 0 {
			t.Fatalf("plugins trust %s: %s", p, e)
		}
	}
	for _, kind := range bench.PlainKinds() {
		t.Run(kind, func(t *testing.T) {
			// 8 cases (6 train, 2 test after the generators' 80/20 split), the fewest
			// that give two folds of several cases; 25 s, enough for a round of each lane
			// on two cores: the contract is checked here, not the quality.
			path, err := bench.Plain(context.Background(), kind, t.TempDir(), 8, 1)
			if err != nil {
				t.Fatal(err)
			}
			tk, err := task.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "run")
			o, e, code := run(t, "run", path, "--out", out, "--budget", "25s", "--folds", "2", "--seed", "1")
			if code != 0 {
				t.Fatalf("amid run: exit %d\n%s\n%s", code, o, e)
			}
			t.Logf("amid run:\n%s%s", o, e)
			if _, e, code := run(t, "verify", filepath.Join(out, "package")); code != 0 {
				t.Fatalf("amid verify: exit %d: %s", code, e)
			}
			ds, err := tk.Resolve(filepath.Dir(path))
			if err != nil {
				t.Fatal(err)
			}
			sub := filepath.Join(out, "submission")
			f, err := os.Open(filepath.Join(sub, "submission.csv"))
			if err != nil {
				t.Fatal(err)
			}
			rows, err := csv.NewReader(f).ReadAll()
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(ds.Test)+1 || strings.Join(rows[0], ",") != strings.Join(tk.Submission.Columns, ",") {
				t.Fatalf("submission.csv %v, want the header %v and %d cases", rows, tk.Submission.Columns, len(ds.Test))
			}
			for _, r := range rows[1:] {
				if tk.Submission.FileColumn == "" {
					continue
				}
				file := filepath.Join(sub, r[1])
				if filepath.Ext(file) != ".json" {
					if _, err := os.Stat(file); err != nil {
						t.Error(err)
					}
					continue
				}
				// The annotation JSON reads back as AMID's annotation of this task.
				if _, err := taskspec.ReadAnnotation(file, tk.Spec()); err != nil {
					t.Errorf("case %s: %v", r[0], err)
				}
			}
		})
	}
}
