//go:build !unix

package measure

import "time"

// CPU is not measured on this system.
func CPU() time.Duration { return 0 }
