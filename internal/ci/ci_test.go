package ci

import (
	"testing"
)

func TestOn(t *testing.T) {
	for _, tc := range []struct {
		val  string
		want bool
	}{
		{"", false}, {"0", false}, {"false", false}, {"FALSE", false}, {" false ", false},
		{"true", true}, {"1", true}, {"True", true}, {"woodpecker", true}, // Woodpecker sets CI to its own name
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
