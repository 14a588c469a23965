//go:build unix && !linux

package supervisor

import "syscall"

// setDeathSignal has no equivalent here; the host's Close and go-plugin's managed-client
// cleanup stop plugins when the host exits normally.
func setDeathSignal(*syscall.SysProcAttr) {}
