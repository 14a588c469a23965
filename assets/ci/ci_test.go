package ci

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestOn(t *testing.T) {
	for _, tc := range []struct {
		val  string
		want bool
	}{
		{"", false}, {"0", false}, {"false", false}, {"FALSE", false}, {" false ", false},
		{"true", true}, {"1", true}, {"True", true}, {"yes", true},
		{"woodpecker", true}, // Woodpecker sets CI to its own name
	} {
		t.Setenv(Env, tc.val)
		if got := On(); got != tc.want {
			t.Errorf("CI=%q: On() = %v, want %v", tc.val, got, tc.want)
		}
	}
}

// recorder is a testing.TB that records how a test ended instead of ending it.
type recorder struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = true
	r.msg = format
}
func (r *recorder) Skip(args ...any) { r.skipped = true }

func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		ci                 string
		wantFail, wantSkip bool
	}{{"true", true, false}, {"", false, true}} {
		t.Setenv(Env, tc.ci)
		r := &recorder{TB: t}
		Missing(r, "protoc is not installed")
		if r.failed != tc.wantFail || r.skipped != tc.wantSkip {
			t.Errorf("CI=%q: failed %v, skipped %v; want %v, %v", tc.ci, r.failed, r.skipped, tc.wantFail, tc.wantSkip)
		}
	}
}

// TestOnlyReader: no Go file of the module but this package's reads $CI itself, so that
// every test agrees on what CI is (On). Before, the Vulkan and shader tests wanted exactly
// "true" and the DICOM ones any non-empty value, so CI=1 skipped a missing Vulkan device.
func TestOnlyReader(t *testing.T) {
	root, err := filepath.Abs("../..") // assets/ci is two levels below the module root
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module root: %v", err)
	}
	reads := regexp.MustCompile(`(Getenv|LookupEnv)\("` + Env + `"\)`)
	self, _ := filepath.Abs(".")
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "node_modules" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || filepath.Dir(path) == self {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if loc := reads.FindIndex(b); loc != nil {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s reads $%s itself (%s): call ci.On or ci.Missing", rel, Env, b[loc[0]:loc[1]])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
