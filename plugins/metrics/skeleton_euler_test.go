package metrics

import (
	"math/rand/v2"
	"testing"
)

// TestSkeletonEulerTable checks the table-driven Euler test against the octant-by-octant
// sum of Lee94's Table 2 on random neighbourhoods and on every neighbourhood that differs
// from the empty or the full one in a single voxel.
func TestSkeletonEulerTable(t *testing.T) {
	ref := func(nbh uint32) bool {
		e := 0
		for o := range skeletonOctants {
			e += skeletonOctantDelta(&skeletonOctants[o], nbh)
		}
		return e == 0
	}
	rng := rand.New(rand.NewPCG(21, 22))
	var cases []uint32
	for b := 0; b < 27; b++ {
		cases = append(cases, 1<<b, (1<<27-1)&^(1<<b))
	}
	for i := 0; i < 200000; i++ {
		cases = append(cases, rng.Uint32()&(1<<27-1))
	}
	flips := 0
	for _, nbh := range cases {
		nbh |= 1 << 13 // the centre is foreground when the test is made
		want := ref(nbh)
		if got := skeletonEulerInvariant(nbh); got != want {
			t.Fatalf("neighbourhood %#x: invariant %v, octant sum says %v", nbh, got, want)
		}
		if want {
			flips++
		}
	}
	if flips == 0 || flips == len(cases) {
		t.Fatalf("every case gave the same answer (%d of %d invariant): the check is vacuous", flips, len(cases))
	}
}
