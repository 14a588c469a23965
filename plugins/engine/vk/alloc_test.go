package vk

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The free list of a block stays sorted and coalesced whatever the order of takes and
// gives, and a block whose ranges all came back is one free range again.
func TestBlockFreeList(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	b := &block{size: 1 << 20, free: []span{{0, 1 << 20}}}
	type got struct{ off, size int64 }
	var live []got
	for range 2000 {
		if len(live) > 0 && r.IntN(2) == 0 {
			i := r.IntN(len(live))
			b.give(live[i].off, live[i].size)
			live = slices.Delete(live, i, i+1)
		} else {
			size := int64(256 * (1 + r.IntN(64)))
			if off, ok := b.take(size); ok {
				for _, l := range live {
					if off < l.off+l.size && l.off < off+size {
						t.Fatalf("range %d+%d overlaps %d+%d", off, size, l.off, l.size)
					}
				}
				live = append(live, got{off, size})
			}
		}
		for i := 1; i < len(b.free); i++ {
			if p, q := b.free[i-1], b.free[i]; p.off+p.size >= q.off {
				t.Fatalf("free list not sorted and coalesced: %v", b.free)
			}
		}
	}
	for _, l := range live {
		b.give(l.off, l.size)
	}
	if len(b.free) != 1 || b.free[0] != (span{0, 1 << 20}) {
		t.Fatalf("after giving everything back: %v", b.free)
	}
}
