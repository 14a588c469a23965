package lanejob

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
)

// Program is the amid program that runs a lane-fold (`amid lane exec SPEC`) for the
// process and Slurm executors: the amid beside this program (bin/amid beside
// bin/amid-desktop, as make build and make package lay them out), which is this program
// itself when it is amid, else amid on the PATH. The desktop program has no `lane exec`
// command of its own, so it never runs itself.
func Program() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		exe = ""
	}
	return programBeside(exe)
}

// programBeside is Program for the program at exe ("" when unknown).
func programBeside(exe string) (string, error) {
	if exe != "" {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		next := filepath.Join(filepath.Dir(exe), "amid")
		if fi, err := os.Stat(next); err == nil && fi.Mode().IsRegular() {
			return next, nil
		}
	}
	if p, err := exec.LookPath("amid"); err == nil {
		return filepath.Abs(p)
	}
	return "", errors.New("no AMID program to run the lane-folds: put amid next to this program or on the PATH")
}
