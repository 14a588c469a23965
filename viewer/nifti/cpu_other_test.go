//go:build !unix

package nifti

import "time"

// cpuTime is not measured on this system; the benchmarks then report 0 CPU time.
func cpuTime() time.Duration { return 0 }
