//go:build race

package main

// raceEnabled: the race detector slows training about tenfold; the long learning tests
// are skipped under it (they check quality, not concurrency).
const raceEnabled = true
