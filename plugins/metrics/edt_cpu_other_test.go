//go:build !unix

package metrics

import "time"

// benchCPU is unavailable off unix; benchmarks then report 0 CPU time.
func benchCPU() time.Duration { return 0 }
