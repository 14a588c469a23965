package run

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSameFiles: files of the same bytes are the same; files of one size but other bytes,
// of other sizes, a folder or none are not.
func TestSameFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, c, d := write("a", "abc"), write("b", "abc"), write("c", "abd"), write("d", "abcd")
	for _, tc := range []struct {
		name  string
		paths []string
		want  bool
	}{
		{"same bytes", []string{a, b}, true},
		{"one file", []string{a}, true},
		{"same size, other bytes", []string{a, b, c}, false},
		{"other size", []string{a, d}, false},
		{"a folder", []string{a, dir}, false},
		{"a missing file", []string{a, filepath.Join(dir, "none")}, false},
		{"none", nil, false},
	} {
		if got := sameFiles(tc.paths); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
