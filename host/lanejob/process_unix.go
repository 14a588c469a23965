//go:build unix

package lanejob

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// detach puts cmd in a process group of its own: it outlives a host killed outright, and
// a terminal's Ctrl-C reaches only the host.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// terminate asks process pid to stop (SIGTERM); one already gone is no error.
func terminate(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// killed reports whether the process died of a signal.
func killed(ps *os.ProcessState) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}
