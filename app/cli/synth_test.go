package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/host/grade"
)

func TestSynthCommand(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	// 5 cases: ceil(0.2·5) = 1 test case, 4 training cases.
	code := Main([]string{"synth", "--task", "ldct-iqa", "--out", out, "--cases", "5", "--seed", "2"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "ldct-iqa: 4 train and 1 test cases") {
		t.Errorf("output %q", stdout.String())
	}
	for _, f := range []string{"public/train_labels.csv", "public/sample_submission.csv", "public/description.md", "private/test_labels.csv"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	// The answers and the sample submission fit together: the grader accepts the sample.
	stdout.Reset()
	sub := t.TempDir()
	b, err := os.ReadFile(filepath.Join(out, "public", "sample_submission.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, grade.SubmissionCSV), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := Main([]string{"grade", "--task", "ldct-iqa", "--submission", sub, "--answers", filepath.Join(out, "private")}, &stdout, &stderr); code != 0 {
		t.Errorf("grading the sample submission: exit %d: %s %s", code, stdout.String(), stderr.String())
	}

	// A second run into the same folder refuses to mix datasets.
	if code := Main([]string{"synth", "--task", "ldct-iqa", "--out", out}, &stdout, &stderr); code != 1 {
		t.Errorf("second run: exit %d", code)
	}
	for _, args := range [][]string{
		{"synth", "--out", t.TempDir()},
		{"synth", "--task", "ravir", "--out", t.TempDir()},
		{"synth", "--task", "ldct-iqa", "--out", t.TempDir(), "--cases", "1"},
	} {
		stderr.Reset()
		if code := Main(args, &stdout, &stderr); code != 1 || !strings.HasPrefix(stderr.String(), "amid: ") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr.String())
		}
	}
}

func TestSynthList(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"synth", "--list"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != len(grade.ChallengeIDs) {
		t.Fatalf("%d lines, want %d: %s", len(lines), len(grade.ChallengeIDs), stdout.String())
	}
	for i, id := range grade.ChallengeIDs {
		if f := strings.Fields(lines[i]); len(f) < 2 || f[0] != id {
			t.Errorf("line %d %q, want %s and its title", i, lines[i], id)
		}
	}
}
