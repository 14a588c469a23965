// Package measure is what the benchmarks of every layer measure with: the process's CPU
// time and memory, and the median of repeated timings. Benchmarks report CPU time beside
// wall time because wall time on a shared machine varies with the load.
package measure

import (
	"os"
	"slices"
	"strconv"
	"strings"
)

// Median is the median of s (the upper one of an even count); it sorts s.
func Median(s []float64) float64 {
	slices.Sort(s)
	return s[len(s)/2]
}

// PeakMiB is this process's peak resident memory in MiB (VmHWM; 0 where there is no
// /proc).
func PeakMiB() float64 { return status("VmHWM:") }

// RSSMiB is this process's resident memory now in MiB (VmRSS; 0 where there is no /proc).
func RSSMiB() float64 { return status("VmRSS:") }

// status reads a memory line of /proc/self/status in MiB.
func status(key string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
