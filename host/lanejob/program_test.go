package lanejob

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeProgram writes an executable shell script at path that records its arguments in
// args.txt in its working folder.
func writeProgram(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho \"$@\" > args.txt.tmp && mv args.txt.tmp args.txt\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// The desktop program (bin/amid-desktop) has no `lane exec`: the lane-folds run the amid
// beside it, found through a symlink to the desktop program too, and never the desktop
// program itself.
func TestProgramBesideDesktop(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no amid on the PATH
	bin := filepath.Join(t.TempDir(), "bin")
	desktop := filepath.Join(bin, "amid-desktop")
	writeProgram(t, desktop)
	if p, err := programBeside(desktop); err == nil {
		t.Fatalf("with no amid beside the desktop program or on the PATH, Program = %s, want an error", p)
	} else if !strings.Contains(err.Error(), "put amid next to this program or on the PATH") {
		t.Errorf("error %q does not say how to fix it", err)
	}
	amid := filepath.Join(bin, "amid")
	writeProgram(t, amid)
	if p, err := programBeside(desktop); err != nil || p != amid {
		t.Errorf("Program beside %s = %q, %v; want %s", desktop, p, err, amid)
	}
	link := filepath.Join(t.TempDir(), "amid-desktop")
	if err := os.Symlink(desktop, link); err != nil {
		t.Fatal(err)
	}
	if p, err := programBeside(link); err != nil || p != amid {
		t.Errorf("Program beside the symlink %s = %q, %v; want %s", link, p, err, amid)
	}
}

// A Process launcher with no Command (what the desktop's "process" executor builds) runs
// `amid lane exec SPEC` with the amid it finds, here the one on the PATH, since nothing
// named amid lies beside the test binary.
func TestProcessDefaultCommandRunsAmid(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(exe), "amid")); err == nil {
		t.Fatalf("an amid lies beside the test binary %s; the test needs the PATH's", exe)
	}
	path := t.TempDir()
	writeProgram(t, filepath.Join(path, "amid"))
	t.Setenv("PATH", path+string(os.PathListSeparator)+"/usr/bin:/bin") // sh and mv
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.json")
	p := &Process{}
	if _, err := p.Submit(context.Background(), &Job{Dir: dir, Spec: spec}); err != nil {
		t.Fatal(err)
	}
	want := "lane exec " + spec
	deadline := time.Now().Add(30 * time.Second) // a shell script's start, with room for a loaded machine
	for {
		b, err := os.ReadFile(filepath.Join(dir, "args.txt"))
		if err == nil {
			if got := strings.TrimSpace(string(b)); got != want {
				t.Fatalf("the process ran amid with %q, want %q", got, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("amid was not run within 30 s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
