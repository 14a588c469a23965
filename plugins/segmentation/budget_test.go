package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree writes files (path relative to root → content) under a new root.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, s := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// meminfo is /proc/meminfo's layout with MemAvailable of kB kibibytes.
func meminfo(kB string) string {
	return "MemTotal:       24683620 kB\nMemFree:        21885480 kB\nMemAvailable:   " + kB + " kB\nBuffers: 1 kB\n"
}

// TestStepBudget reads the available memory from /proc/meminfo and the cgroup limits
// under a fake root, each layout as Linux writes it, and takes budgetFraction of the
// smallest, clamped.
func TestStepBudget(t *testing.T) {
	const gib = int64(1) << 30
	for _, tc := range []struct {
		name  string
		files map[string]string
		avail int64 // want from available; -1: none
	}{
		{"meminfo only", map[string]string{"proc/meminfo": meminfo("10485760")}, 10 * gib},
		{"cgroup v2 limit below meminfo", map[string]string{
			"proc/meminfo":                      meminfo("10485760"),
			"proc/self/cgroup":                  "0::/job/step\n",
			"sys/fs/cgroup/job/step/memory.max": "max\n",
			"sys/fs/cgroup/job/memory.max":      "3221225472\n", // 3 GiB on the parent
			"sys/fs/cgroup/job/memory.current":  "1073741824\n", // 1 GiB used
		}, 2 * gib},
		{"cgroup v1 limit", map[string]string{
			"proc/meminfo":     meminfo("10485760"),
			"proc/self/cgroup": "9:name=systemd:/\n4:memory:/process_api/abc\n0::/\n",
			"sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes": "6442450944\n", // 6 GiB
			"sys/fs/cgroup/memory/process_api/abc/memory.usage_in_bytes": "2147483648\n", // 2 GiB
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                 "9223372036854771712\n",
		}, 4 * gib},
		{"cgroup over its limit", map[string]string{
			"proc/self/cgroup":             "0::/\n",
			"sys/fs/cgroup/memory.max":     "1000\n",
			"sys/fs/cgroup/memory.current": "2000\n",
		}, 0},
		{"nothing readable", map[string]string{"proc/meminfo": "garbage\n"}, -1},
	} {
		root := writeTree(t, tc.files)
		got, ok := available(root)
		if (tc.avail < 0) == ok || (ok && got != tc.avail) {
			t.Errorf("%s: available %d, %v; want %d", tc.name, got, ok, tc.avail)
		}
		want := int64(fallbackBudget)
		if tc.avail >= 0 {
			want = min(max(int64(budgetFraction*float64(tc.avail)), minBudget), maxBudget)
		}
		if b := stepBudget(root); b != want {
			t.Errorf("%s: step budget %d, want %d", tc.name, b, want)
		}
	}
	// The clamps: 0.4 × 100 GiB is above maxBudget, 0.4 × 100 MiB below minBudget.
	if b := stepBudget(writeTree(t, map[string]string{"proc/meminfo": meminfo("104857600")})); b != maxBudget {
		t.Errorf("100 GiB available: budget %d, want the cap %d", b, int64(maxBudget))
	}
	if b := stepBudget(writeTree(t, map[string]string{"proc/meminfo": meminfo("102400")})); b != minBudget {
		t.Errorf("100 MiB available: budget %d, want the floor %d", b, int64(minBudget))
	}
	// This machine: whatever it has, the budget lies within the bounds.
	if b := hostBudget(); b < minBudget || b > maxBudget {
		t.Errorf("this machine's budget %d is outside [%d, %d]", b, int64(minBudget), int64(maxBudget))
	}
}

// FuzzMeminfo: no text makes the /proc parsers panic; a value read is non-negative.
func FuzzMeminfo(f *testing.F) {
	f.Add(meminfo("23889016"), "4:memory:/a\n0::/b\n")
	f.Add("MemAvailable: -5 kB", "0::relative")
	f.Fuzz(func(t *testing.T, mem, cg string) {
		if v, ok := memAvailable(mem); ok && v < 0 {
			t.Fatalf("MemAvailable %d", v)
		}
		v2, v1 := cgroupPaths(cg)
		for _, p := range []string{v2, v1} {
			for _, d := range ancestors("/base", p) {
				if !strings.HasPrefix(d, "/base") {
					t.Fatalf("path %q climbs out of the cgroup root: %s", p, d)
				}
			}
		}
	})
}
