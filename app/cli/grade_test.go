package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGradeCommand(t *testing.T) {
	ans, sub := t.TempDir(), t.TempDir()
	var a strings.Builder
	a.WriteString("image_id,quality_score\n")
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&a, "img%d,%d\n", i, i%5)
	}
	for dir, name := range map[string]string{ans: "test_labels.csv", sub: "submission.csv"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(a.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	code := Main([]string{"grade", "--task", "ldct-iqa", "--submission", sub, "--answers", ans, "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var r map[string]any
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	for _, k := range []string{"valid", "errors", "primary", "metrics", "mean_position", "percentile", "medal"} {
		if _, ok := r[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, out.String())
		}
	}
	// A submission missing a test ID: exit status 2, the problem printed.
	body := strings.Replace(a.String(), "img3,3\n", "", 1)
	if err := os.WriteFile(filepath.Join(sub, "submission.csv"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	code = Main([]string{"grade", "--task", "ldct-iqa", "--submission", sub, "--answers", ans}, &out, &errb)
	if code != 2 || !strings.Contains(out.String(), "lacks 1 test IDs: img3") {
		t.Errorf("exit %d, output %q", code, out.String())
	}
	// An unknown challenge is an error (exit 1).
	if code := Main([]string{"grade", "--task", "ravir", "--submission", sub, "--answers", ans}, &out, &errb); code != 1 {
		t.Errorf("unknown task: exit %d", code)
	}
}
