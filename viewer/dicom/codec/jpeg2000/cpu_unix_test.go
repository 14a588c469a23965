//go:build unix

package jpeg2000

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) this process has used, so that benchmarks can
// report it next to wall time on a machine shared with other work.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
