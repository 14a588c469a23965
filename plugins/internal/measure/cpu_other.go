//go:build !unix

package measure

// CPUSeconds is not measured on this system.
func CPUSeconds() float64 { return 0 }
