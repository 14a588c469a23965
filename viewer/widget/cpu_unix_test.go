//go:build unix

package widget

import (
	"syscall"
	"time"
)

// cpuTime is the user plus system CPU time this process has used; benchmarks report it
// per operation because wall time on a shared machine varies with the load.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
