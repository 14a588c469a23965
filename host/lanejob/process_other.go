//go:build !unix

package lanejob

import (
	"os"
	"os/exec"
)

func detach(*exec.Cmd) {}

func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}

func terminate(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	return p.Kill()
}

func killed(*os.ProcessState) bool { return false }
