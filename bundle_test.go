package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fyneMakefile is the part of the Makefile the fyne CLI (v1.7.4, fyne package -os linux)
// writes into the bundle that matters here: its install target puts the desktop program
// in $(PREFIX)/bin. .ci/package-plugins.sh appends AMID's own targets to it.
const fyneMakefile = `PREFIX ?= /usr/local
Exec := "amid-desktop"

install:
	install -Dm00755 usr/local/bin/$(Exec) $(DESTDIR)$(PREFIX)/bin/$(Exec)
uninstall:
	-rm $(DESTDIR)$(PREFIX)/bin/$(Exec)
user-install:
	install -Dm00755 usr/local/bin/$(Exec) $(DESTDIR)$(HOME)/.local/bin/$(Exec)
user-uninstall:
	-rm $(DESTDIR)$(HOME)/.local/bin/$(Exec)
`

// The desktop bundle as make package lays it out: the built amid-desktop in a fyne-shaped
// tarball, to which .ci/package-plugins.sh (the script make package runs) adds the built
// amid and the plugins. Unpacked, and again installed with the bundle's Makefile, the real
// amid-desktop program resolves the program its process and Slurm executors run (what
// -lane-program prints is what lanejob.Program returns in the desktop process) to the amid
// beside it, with no amid on the PATH, and that program is the headless amid: it has the
// lane exec command the desktop program lacks.
func TestBundleLaneProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds amid-desktop and amid")
	}
	for _, tool := range []string{"go", "tar", "xz", "make", "install"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the bundle test needs %s: %v", tool, err)
		}
	}
	tmp := t.TempDir()
	stage := filepath.Join(tmp, "stage", "amid-desktop")
	desktop := filepath.Join(stage, "usr", "local", "bin", "amid-desktop")
	amid := filepath.Join(tmp, "amid")
	plugins := filepath.Join(tmp, "plugins")
	build := func(out, pkg string) {
		t.Helper()
		cmd := exec.Command("go", "build", "-o", out, pkg)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	build(desktop, ".")
	build(amid, "./app/cmd/amid")
	// package-plugins.sh copies whatever plugin files it finds; their contents do not
	// matter to the lane program's resolution.
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plugins, "amid-plugin-segmentation"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stage, "Makefile"), []byte(fyneMakefile), 0o644); err != nil {
		t.Fatal(err)
	}
	tarball := filepath.Join(tmp, "AMID.tar.xz")
	// xz's fastest preset for the test's tarballs: the bundle's layout is what is checked,
	// and at make package's default preset (-6) compressing the two programs twice took 55
	// of the test's 76 s on the 2-core development machine (22 s with -0).
	run := func(dir string, env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		if env == nil {
			cmd.Env = append(os.Environ(), "XZ_OPT=-0")
		}
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
		}
		return strings.TrimSpace(string(b))
	}
	run(filepath.Join(tmp, "stage"), nil, "tar", "-cJf", tarball, "amid-desktop")
	run(".", nil, ".ci/package-plugins.sh", tarball, plugins, amid, "segmentation")

	unpacked := filepath.Join(tmp, "unpacked")
	if err := os.MkdirAll(unpacked, 0o755); err != nil {
		t.Fatal(err)
	}
	run(unpacked, nil, "tar", "-xJf", tarball)
	root := filepath.Join(unpacked, "amid-desktop")
	installed := filepath.Join(tmp, "installed")
	run(root, nil, "make", "install", "DESTDIR="+installed, "PREFIX=/usr/local")

	// No amid on the PATH: only the tools the programs' start needs.
	noAmid := []string{"PATH=" + t.TempDir(), "HOME=" + t.TempDir()}
	for _, bin := range []string{filepath.Join(root, "usr", "local", "bin"), filepath.Join(installed, "usr", "local", "bin")} {
		got := run(tmp, noAmid, filepath.Join(bin, "amid-desktop"), "-lane-program")
		if want := filepath.Join(bin, "amid"); got != want {
			t.Errorf("%s -lane-program = %q, want the amid beside it, %s", filepath.Join(bin, "amid-desktop"), got, want)
			continue
		}
		// The printed program runs lane exec: with a missing spec it says so (amid's
		// lane command), where amid-desktop would print its usage and exit 2.
		cmd := exec.Command(got, "lane", "exec", filepath.Join(tmp, "no-spec.json"))
		cmd.Env = noAmid
		b, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(b), "lane spec") {
			t.Errorf("%s lane exec on a missing spec: %v, %q; want amid's one-line refusal of the spec (exit 1)", got, err, b)
		}
		if _, err := os.Stat(filepath.Join(bin, "plugins", "amid-plugin-segmentation")); err != nil {
			t.Errorf("the bundle's built-in plugin folder: %v", err)
		}
	}
}
