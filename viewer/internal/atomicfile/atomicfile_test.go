package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.bin")
	if err := Write(p, []byte("ab"), []byte("cd")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "abcd" {
		t.Fatalf("%q %v", b, err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, want 0644", st.Mode().Perm())
	}
	// A failed write leaves no temporary file behind.
	if err := Write(filepath.Join(dir, "missing", "x"), []byte("x")); err == nil {
		t.Fatal("write into a missing folder succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("folder holds %d entries, want only a.bin", len(entries))
	}
}
