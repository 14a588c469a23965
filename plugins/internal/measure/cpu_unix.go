//go:build unix

package measure

import (
	"syscall"
	"time"
)

// CPUSeconds is the CPU time this process has used, all threads, in seconds.
func CPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
