package plugintest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Main is a plugin package's TestMain: it builds the plugin amid-plugin-<name> from the
// package in the current folder into a temporary folder, sets *binary to its path, runs
// m's tests and exits with their status, removing the folder. A failed build exits with
// status 1.
func Main(m *testing.M, name string, binary *string) {
	MainWith(m, func(dir string) (err error) {
		*binary, err = BuildPlugin(".", name, dir)
		return err
	})
}

// MainWith is a TestMain for tests that need binaries built first: build writes them into
// a temporary folder, then m's tests run and the process exits with their status, removing
// the folder. A failed build exits with status 1.
func MainWith(m *testing.M, build func(dir string) error) {
	dir, err := os.MkdirTemp("", "amid-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Build compiles the Go main package in folder src (a module of its own or a package of
// the current module) into dir as amid-plugin-NAME and returns the binary's path. It is
// meant for TestMain-style setup; it calls t.Fatal when the build fails.
func Build(t testing.TB, src, name, dir string) string {
	t.Helper()
	out, err := BuildPlugin(src, name, dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// BuildPlugin is Build without a testing.TB, for TestMain. The build runs offline from the
// module cache (GOFLAGS=-mod=mod, GOPROXY=off) so tests need no network. It builds as
// make amid does (CGO_ENABLED=0, no other flag), so that the packages compiled for one
// share Go's build cache with the other: with -trimpath and -ldflags=-s -w, as it had been,
// every package of a plugin compiled once more in make test (40 s of a cold build of the
// segmentation plugin on the 2-core development machine, where the flags make amid uses
// added 13 s).
func BuildPlugin(src, name, dir string) (string, error) { return buildPlugin(src, name, dir, false) }

// BuildPluginVulkan is BuildPlugin with cgo, which the Vulkan backend needs, for tests of
// a plugin process on a Vulkan device; the pure-Go SGEMM (tag purego) keeps OpenBLAS out,
// as in the bundle of .ci/gpu-check.sh.
func BuildPluginVulkan(src, name, dir string) (string, error) {
	return buildPlugin(src, name, dir, true)
}

func buildPlugin(src, name, dir string, cgo bool) (string, error) {
	out, err := filepath.Abs(filepath.Join(dir, "amid-plugin-"+name))
	if err != nil {
		return "", err
	}
	args := []string{"build", "-o", out}
	env := append(os.Environ(), "GOFLAGS=-mod=mod -modcacherw", "GOPROXY=off", "CGO_ENABLED=0")
	if cgo {
		args = append(args, "-tags", "purego")
		env[len(env)-1] = "CGO_ENABLED=1"
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = src
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{src: src, err: err, out: string(b)}
	}
	return out, nil
}

type buildError struct {
	src string
	err error
	out string
}

func (e *buildError) Error() string {
	return "build plugin in " + e.src + ": " + e.err.Error() + "\n" + e.out
}
func (e *buildError) Unwrap() error { return e.err }
