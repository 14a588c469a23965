//go:build !unix

package widget

import "time"

// cpuTime is not measured on this system; the benchmarks then report 0 CPU time.
func cpuTime() time.Duration { return 0 }
