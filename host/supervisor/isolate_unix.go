//go:build unix

package supervisor

import (
	"os/exec"
	"syscall"
)

// isolate puts the plugin in its own process group, so that the host can kill everything
// the plugin started and a terminal's Ctrl-C reaches only the host, which then stops its
// plugins in order.
func isolate(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setDeathSignal(cmd.SysProcAttr)
}

// killGroup kills the plugin's process group (the plugin and anything it started).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.Process.Pid > 0 {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
