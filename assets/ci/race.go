//go:build race

package ci

// Race: this binary runs under the race detector.
const Race = true
