// Package ci is the project's one test of "am I running in continuous integration", and
// what a test does about something it needs and cannot find.
//
// CI machines set the environment variable CI (most CI services set it to true, some to
// their own name); the project's CI entry, .ci/run, exports CI=true itself before `make
// test`, so that running it by hand behaves as CI does. On reports whether it is set to
// anything but "", "0" or "false". In CI a test never skips because a tool, a device, a
// library or the real-image cache is missing: `make test` installs and fetches them, so
// their absence is a failure of the build machine that must be seen. Outside CI such a
// test skips, saying what is missing and how to get it. Tests call Missing (or On) for
// this instead of reading CI themselves; TestOnlyReader holds the module to that.
package ci

import (
	"os"
	"strings"
	"testing"
)

// Env is the environment variable that marks a CI run.
const Env = "CI"

// On reports whether this process runs in CI: $CI is set to anything but "", "0" or
// "false" (in any case).
func On() bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(Env))) {
	case "", "0", "false":
		return false
	}
	return true
}

// Missing stops tb because something it needs is missing: it fails the test in CI (On)
// and skips it elsewhere, with why as the message (say what is missing and how to get it).
func Missing(tb testing.TB, why string) {
	tb.Helper()
	if On() {
		tb.Fatalf("%s (in CI a test never skips for this: $%s is set)", why, Env)
		return
	}
	tb.Skip(why)
}

// NotUnderRace skips tb under the race detector, naming the make target that runs it
// without (e2e or floats-alt). It is for tests that train a model or decode at length:
// -race slows them several times over and they check what a result is, not concurrency,
// which the rest of the race pass covers. Each such test runs once in `make test`.
func NotUnderRace(tb testing.TB, target string) {
	tb.Helper()
	if Race {
		tb.Skip("runs without -race: make " + target)
	}
}
