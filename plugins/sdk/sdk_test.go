package sdk

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
)

func TestWriteFileAndResult(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ck.json")
	sum, err := WriteFile(p, []byte("abc"))
	if err != nil {
		t.Fatal(err)
	}
	// sha256("abc") from FIPS 180-2, appendix B.1.
	const want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if sum != want {
		t.Errorf("WriteFile sum = %s, want %s", sum, want)
	}
	r, err := Result(p, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.SHA256 != want || r.Steps != 7 || r.Checkpoint != p {
		t.Errorf("Result = %+v", r)
	}
	if err := r.Validate(); err != nil {
		t.Error(err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(p), ".ck.json.*"))
	if len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	if _, err := Result(filepath.Join(t.TempDir(), "missing"), 1, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Error("Result of a missing file succeeded")
	}
}
