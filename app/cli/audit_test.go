package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAuditVerifyReadsEveryForm(t *testing.T) {
	p := newTestPackage(t)
	want := "audit log intact: 5 entries, last hash " + p.lastHash + "\n"
	for _, path := range []string{p.db, p.pkg, filepath.Join(p.pkg, "audit.jsonl")} {
		out, errOut, code := run(t, "audit", "verify", path)
		if code != 0 || out != want {
			t.Errorf("%s: exit %d, %q%s, want %q", path, code, out, errOut, want)
		}
	}
	out, _, code := run(t, "audit", "show", p.pkg)
	if code != 0 {
		t.Fatalf("show: exit %d", code)
	}
	for _, s := range []string{"SEQ", "task.loaded", "plugin:segmentation", "lane.trained", "review.decision", "export", p.lastHash[:12], want} {
		if !strings.Contains(out, s) {
			t.Errorf("show lacks %q:\n%s", s, out)
		}
	}
}

func TestAuditVerifyNamesTheFirstBadEntry(t *testing.T) {
	p := newTestPackage(t)
	b, err := os.ReadFile(filepath.Join(p.pkg, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	orig := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for _, c := range []struct {
		name   string
		tamper func([]string) []string
		want   string
	}{
		{"changed", func(l []string) []string { l[1] = strings.Replace(l[1], `"role":"host"`, `"role":"user"`, 1); return l }, "entry seq 2 (line 2) was changed"},
		{"removed", func(l []string) []string { return append(l[:2:2], l[3:]...) }, "entry seq 4 (line 3) comes where entry seq 3 should be"},
		{"reordered", func(l []string) []string { l[3], l[4] = l[4], l[3]; return l }, "entry seq 5 (line 4) comes where entry seq 4 should be"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			lines := c.tamper(append([]string(nil), orig...))
			os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
			for _, sub := range []string{"verify", "show"} {
				_, errOut, code := run(t, "audit", sub, path)
				if code == 0 || !strings.HasPrefix(errOut, "amid: "+path+": ") || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
					t.Errorf("%s: exit %d, stderr %q, want one line with %q", sub, code, errOut, c.want)
				}
			}
		})
	}
	_, errOut, code := run(t, "audit", "verify", p.dir)
	if code == 0 || !strings.Contains(errOut, "holds no audit.jsonl") {
		t.Errorf("a folder without a log: exit %d, %q", code, errOut)
	}
}
