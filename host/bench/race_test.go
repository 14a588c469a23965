//go:build race

package bench

// raceEnabled: this test binary runs under the race detector.
const raceEnabled = true
