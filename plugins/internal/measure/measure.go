// Package measure is what the engine's and the plugins' benchmarks measure with: the
// process's CPU time and memory, the median of repeated timings, and the result a
// measuring child process prints (each library or model measured in its own process, so
// that its peak memory is its own).
package measure

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
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

// Child runs a measuring process (its standard error goes to this one's) and decodes the
// JSON on the last non-empty line it prints into v.
func Child(cmd *exec.Cmd, v any) error {
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
	}
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if s := bytes.TrimSpace(sc.Bytes()); len(s) > 0 {
			last = append(last[:0], s...)
		}
	}
	if err := json.Unmarshal(last, v); err != nil {
		return fmt.Errorf("%s printed %q: %w", cmd.Args[0], last, err)
	}
	return nil
}
