package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunBadInput checks that the loop's commands answer bad input with one line naming
// what is wrong, and a non-zero exit, before any plugin starts.
func TestRunBadInput(t *testing.T) {
	t.Setenv("AMID_HOME", t.TempDir())
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("id: x\nkind: counting\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", filepath.Join(dir, "missing.yaml"), "--out", filepath.Join(dir, "r1")}, "missing.yaml"},
		{[]string{"run", bad, "--out", filepath.Join(dir, "r2")}, "kind"},
		{[]string{"run", bad, "--out", filepath.Join(dir, "r3"), "--planner", "oracle"}, "--planner"},
		{[]string{"run", bad, "--out", filepath.Join(dir, "r5"), "--final", "best"}, `final model "best" is not fold-ensemble or all-data`},
		{[]string{"run", filepath.Join(dir, "empty"), "--out", filepath.Join(dir, "r4")}, "matches none"},
		{[]string{"resume", filepath.Join(dir, "nowhere")}, "nowhere"},
		{[]string{"resume", filepath.Join(dir, "nowhere"), "--planner", "oracle"}, "oracle"},
		{[]string{"report", filepath.Join(dir, "nowhere")}, "nowhere"},
		{[]string{"demo", filepath.Join(dir, "d"), "--cases", "1"}, "at least 2"},
		{[]string{"bench", "--tasks", "no-such-challenge", "--out", filepath.Join(dir, "b")}, "no-such-challenge"},
		{[]string{"predict", filepath.Join(dir, "empty"), bad}, "--out DIR is needed"},
		{[]string{"predict", filepath.Join(dir, "empty"), "--out", filepath.Join(dir, "p1"), "--study", "1.2.3"}, "need a PACS: --pacs URL or $AMID_PACS_URL"},
		{[]string{"predict", filepath.Join(dir, "empty"), "--out", filepath.Join(dir, "p2")}, "nothing to predict"},
		{[]string{"predict", filepath.Join(dir, "empty"), bad, "--out", filepath.Join(dir, "p3")}, "fails its check, so nothing was predicted"},
		{[]string{"predict", bad, bad, "--out", filepath.Join(dir, "p4")}, "neither a package folder nor a readable zip"},
		{[]string{"predict", filepath.Join(dir, "empty"), bad, "--out", dir}, "holds files already"},
	} {
		out, errOut, code := run(t, c.args...)
		msg := out + errOut
		if code == 0 || !strings.Contains(msg, c.want) {
			t.Errorf("%v: exit %d, output %q; want a failure naming %q", c.args, code, msg, c.want)
		}
	}
}
