package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The memory a planned training step may use is a fraction of what the machine has
// available, within bounds.
const (
	// budgetFraction of the available memory goes to one training step; the rest is
	// left to the loader's cache (cacheBudget), inference, the host and other lanes.
	budgetFraction = 0.4
	// minBudget and maxBudget bound the step budget: below 256 MiB no useful U-Net fits;
	// above 8 GiB a CPU step (batch and patch grow with the budget) takes too long to pay.
	minBudget = 256 << 20
	maxBudget = 8 << 30
	// fallbackBudget is used when neither /proc/meminfo nor a cgroup limit can be read.
	fallbackBudget = 4 << 30
)

// hostBudget is the step budget on this machine (see stepBudget).
func hostBudget() int64 { return stepBudget("/") }

// stepBudget is budgetFraction of the memory available under the file-system root root
// (the real one is "/"), clamped to [minBudget, maxBudget]; fallbackBudget when nothing
// can be read.
func stepBudget(root string) int64 {
	avail, ok := available(root)
	if !ok {
		return fallbackBudget
	}
	return min(max(int64(budgetFraction*float64(avail)), minBudget), maxBudget)
}

// available is the memory this process may still use: the smaller of MemAvailable in
// /proc/meminfo and the room left under each cgroup memory limit on the path of its
// cgroup (v2 memory.max − memory.current, v1 memory.limit_in_bytes − usage_in_bytes), from
// its own cgroup up to the hierarchy's root.
func available(root string) (int64, bool) {
	var best int64 = -1
	take := func(v int64) {
		if v >= 0 && (best < 0 || v < best) {
			best = v
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "proc", "meminfo")); err == nil {
		if v, ok := memAvailable(string(b)); ok {
			take(v)
		}
	}
	cg, _ := os.ReadFile(filepath.Join(root, "proc", "self", "cgroup"))
	v2, v1 := cgroupPaths(string(cg))
	base := filepath.Join(root, "sys", "fs", "cgroup")
	for _, d := range ancestors(base, v2) {
		if lim, ok := readInt(filepath.Join(d, "memory.max")); ok {
			use, _ := readInt(filepath.Join(d, "memory.current"))
			take(max(lim-use, 0))
		}
	}
	for _, d := range ancestors(filepath.Join(base, "memory"), v1) {
		if lim, ok := readInt(filepath.Join(d, "memory.limit_in_bytes")); ok {
			use, _ := readInt(filepath.Join(d, "memory.usage_in_bytes"))
			take(max(lim-use, 0))
		}
	}
	return best, best >= 0
}

// memAvailable reads MemAvailable (kB) from /proc/meminfo's text, in bytes.
func memAvailable(text string) (int64, bool) {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemAvailable:" {
			v, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || v < 0 || v > 1<<53 {
				return 0, false
			}
			if len(f) == 3 && f[2] == "kB" {
				v *= 1024
			}
			return v, true
		}
	}
	return 0, false
}

// cgroupPaths reads the process's cgroup v2 path ("0::/p") and v1 memory controller path
// ("N:memory:/p" or a list with memory) from /proc/self/cgroup's text; "" when absent.
func cgroupPaths(text string) (v2, v1 string) {
	for line := range strings.SplitSeq(text, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
		}
		for c := range strings.SplitSeq(parts[1], ",") {
			if c == "memory" {
				v1 = parts[2]
			}
		}
	}
	return v2, v1
}

// ancestors lists base/p and its parents up to base itself; only base when p is empty.
func ancestors(base, p string) []string {
	out := []string{}
	p = filepath.Clean("/" + p) // no climbing above base
	for {
		out = append(out, filepath.Join(base, p))
		if p == "/" {
			return out
		}
		p = filepath.Dir(p)
	}
}

// readInt reads a file holding one integer; "max" (no limit) and unreadable files are
// not a value.
func readInt(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil && v >= 0
}
