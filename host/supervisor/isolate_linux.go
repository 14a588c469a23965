package supervisor

import "syscall"

// setDeathSignal makes the kernel kill the plugin when the host dies, even by SIGKILL.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
