//go:build !unix

package jpeg2000

import "time"

// cpuTime is not measured on this platform.
func cpuTime() time.Duration { return 0 }
