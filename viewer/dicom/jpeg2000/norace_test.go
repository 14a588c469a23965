//go:build !race

package jpeg2000

// raceEnabled: the race detector slows decoding about tenfold, so the longest loops
// of tests run fewer rounds under it.
const raceEnabled = false
