package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amid/assets/ci"
	"amid/host/catalog"
	"amid/host/grade"
	"amid/host/run"
	"amid/host/store"
)

// plugins builds every built-in plugin (with cgo, as make does) into a temporary folder
// and returns a run environment that trusts them.
func plugins(t *testing.T) (run.Env, func()) {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{"segmentation", "detection", "classification", "iqa", "enhancement"} {
		src := filepath.Join("..", "..", "plugins", p)
		if _, err := os.Stat(filepath.Join(src, "main.go")); err != nil {
			t.Fatalf("plugin %s: %v", p, err)
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "amid-plugin-"+p), ".")
		cmd.Dir = src
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build plugin %s: %v\n%s", p, err, b)
		}
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "amid.db"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := &catalog.Catalog{Builtin: dir, Store: st}
	es, err := c.Scan()
	if err != nil {
		t.Fatal(err)
	}
	for i := range es {
		if err := c.Trust(&es[i]); err != nil {
			t.Fatal(err)
		}
	}
	return run.Env{Catalog: c}, func() { st.Close() }
}

// TestEveryChallenge runs all 20 ReX-MLE challenges end to end on tiny generated data with
// a small budget: task definition, generated data, profile, plan, train, submission; the
// challenge's own grader must accept every submission. Scores are logged, not asserted:
// seconds of training on tiny data say nothing of quality, but the contracts must hold.
func TestEveryChallenge(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 20 challenges")
	}
	// The race detector slows the host's graders and profiler several times over and
	// finds nothing here that host/run's own tests under -race do not.
	ci.NotUnderRace(t, "e2e")
	env, done := plugins(t)
	defer done()
	ids := grade.ChallengeIDs
	if s := os.Getenv("AMID_BENCH_TASKS"); s != "" {
		ids = strings.Split(s, ",")
	}
	out := t.TempDir()
	var log bytes.Buffer
	rows, err := Run(context.Background(), Options{Tasks: ids, Budget: 10 * time.Second, Out: out, Folds: 2, Seed: 1, Cases: 6, Parallel: 2}, env, func(r Row) {
		t.Logf("%s: valid %v, %s %.4f in %v %s", r.ID, r.Valid, r.Metric, r.Score, r.Took.Round(time.Second), r.Error)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(ids) {
		t.Fatalf("%d rows for %d challenges", len(rows), len(ids))
	}
	for _, r := range rows {
		if !r.Valid || r.Error != "" {
			t.Errorf("%s: the submission is not valid: %s", r.ID, r.Error)
		}
	}
	if err := Table(&log, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "NOT comparable") {
		t.Error("the table does not say that generated scores are not comparable")
	}
	fmt.Fprintln(os.Stderr, log.String())
}
