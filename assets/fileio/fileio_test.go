package fileio

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// A write that fails half way leaves the old file as it was and nothing else.
func TestWriteWithFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	if err := Write(p, []byte("old")); err != nil {
		t.Fatal(err)
	}
	broken := errors.New("disk full")
	err := WriteWith(p, func(w io.Writer) error {
		if _, err := io.WriteString(w, strings.Repeat("new", 200000)); err != nil {
			return err
		}
		return broken
	})
	if !errors.Is(err, broken) || !strings.Contains(err.Error(), "state.json") {
		t.Fatalf("err %v, want the writer's error naming the file", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("target holds %.20q…, want the old content", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("folder holds %d entries, want only state.json", len(entries))
	}
}

func TestSHA256(t *testing.T) {
	p := filepath.Join(t.TempDir(), "abc")
	if err := Write(p, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	// sha256("abc") from FIPS 180-2, appendix B.1.
	const want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if got, err := SHA256(p); err != nil || got != want {
		t.Errorf("SHA256 = %s, %v; want %s", got, err, want)
	}
	if sum, n, err := SHA256FS(os.DirFS(filepath.Dir(p)), "abc"); err != nil || sum != want || n != 3 {
		t.Errorf("SHA256FS = %s, %d, %v; want %s, 3", sum, n, err, want)
	}
	if _, err := SHA256(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("SHA256 of a missing file: %v", err)
	}
}

// TestWithin: a path inside its folder, or the folder itself, is within; one that leaves it
// by "..", another folder, and the empty path are not; a name that merely starts with ".."
// is.
func TestWithin(t *testing.T) {
	for _, c := range []struct {
		dir, path string
		want      bool
	}{
		{"/w", "/w/a", true},
		{"/w", "/w/a/b", true},
		{"/w", "/w", true},
		{"/w", "/x/a", false},
		{"/w", "/w/../x", false},
		{"/w", "/w/..a", true},
		{"/w", "", false},
	} {
		if got := Within(c.dir, c.path); got != c.want {
			t.Errorf("Within(%q, %q) = %v, want %v", c.dir, c.path, got, c.want)
		}
	}
}
