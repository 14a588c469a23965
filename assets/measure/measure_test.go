package measure

import (
	"os"
	"runtime"
	"testing"
)

func TestMedian(t *testing.T) {
	if m := Median([]float64{5, 1, 3}); m != 3 {
		t.Errorf("median of 5, 1, 3 is %v, want 3", m)
	}
	if m := Median([]float64{4, 1, 3, 2}); m != 3 {
		t.Errorf("median of 4, 1, 3, 2 is %v, want 3 (the upper one)", m)
	}
}

// The process has used some CPU and holds some memory, where the system tells.
func TestSelf(t *testing.T) {
	s := make([]byte, 8<<20)
	for i := range s {
		s[i] = byte(i)
	}
	runtime.KeepAlive(s)
	if runtime.GOOS != "linux" {
		t.Skip("no /proc")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc/self/status")
	}
	if c := CPU(); !(c > 0) {
		t.Errorf("CPU time %v", c)
	}
	// (The kernel updates the peak lazily: it may read a little below the current size.)
	if p, r := PeakMiB(), RSSMiB(); !(p >= 8) || !(r >= 8) {
		t.Errorf("peak %v MiB, now %v MiB; want at least the 8 MiB written", p, r)
	}
}
