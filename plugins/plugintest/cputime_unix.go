//go:build unix

package plugintest

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used, all threads, in seconds.
func cpuTime() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
