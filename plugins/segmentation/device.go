package main

import (
	"fmt"
)

// shrink re-plans a lane that did not fit its device's memory (package device calls it
// once): half the batch, or with a batch of one the patch halved along its longest axis
// that stays a multiple of the pooling (the network keeps its stages).
func shrink(c config) (config, string, bool) {
	if c.Batch > 1 {
		n := c.Batch / 2
		what := fmt.Sprintf("batch %d → %d", c.Batch, n)
		c.Batch = n
		return c, what, true
	}
	d := [3]int{1, 1, 1}
	for _, p := range c.Pools {
		for a := range 3 {
			d[a] *= p[a]
		}
	}
	if len(c.Pools) == 0 { // the engine's default: 2 on every axis longer than one voxel
		for a := range 3 {
			if c.Patch[a] > 1 {
				d[a] = 1 << (len(c.Widths) - 1)
			}
		}
	}
	axis := -1
	for a := range 3 {
		if h := c.Patch[a] / 2; c.Patch[a]%2 == 0 && h >= d[a] && h%d[a] == 0 && (axis < 0 || c.Patch[a] > c.Patch[axis]) {
			axis = a
		}
	}
	if axis < 0 {
		return c, "", false
	}
	old := c.Patch
	c.Patch[axis] /= 2
	return c, fmt.Sprintf("patch %v → %v", old, c.Patch), true
}
