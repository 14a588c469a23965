//go:build !unix

package plugintest

// cpuTime is not measured on this system.
func cpuTime() float64 { return 0 }
