package metrics

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// surfaceDirectedFull is the direct statement of surfaceDirected: the full-grid squared
// distance transform to the feature surfels (EDTSquaredToFeatures), read at every query
// surfel and sorted by (distance, area).
func surfaceDirectedFull(feature, query []uint8, m [3]int, spacing [3]float64, area *[256]float64) []surfacePair {
	border := make([]uint8, len(feature))
	have := false
	for i, c := range feature {
		if surfel(c) {
			border[i] = 1
			have = true
		}
	}
	d2 := EDTSquaredToFeatures(border, m, spacing, nil)
	var ps []surfacePair
	for i, c := range query {
		if surfel(c) {
			d := math.Inf(1)
			if have {
				d = math.Sqrt(d2[i])
			}
			ps = append(ps, surfacePair{d, area[c]})
		}
	}
	slices.SortFunc(ps, func(x, y surfacePair) int {
		if c := cmp.Compare(x.d, y.d); c != 0 {
			return c
		}
		return cmp.Compare(x.a, y.a)
	})
	return ps
}

// TestSurfaceDirectedMatchesFullEDT checks the per-plane transform (integer Z pass, Y
// envelopes on the query rows, outward X scans with the envelope as fallback) against
// the full-grid transform on shapes that exercise each branch: overlapping noise (short
// scans), a far-away small blob (scans long enough to fall back to the envelope) and an
// empty feature surface.
func TestSurfaceDirectedMatchesFullEDT(t *testing.T) {
	const n = 40
	dims := [3]int{n, n - 3, n - 7}
	rng := rand.New(rand.NewPCG(11, 12))
	noise := func(p float64) []uint8 {
		m := make([]uint8, dims[0]*dims[1]*dims[2])
		for i := range m {
			if rng.Float64() < p {
				m[i] = 1
			}
		}
		return m
	}
	box := func(lo, hi [3]int) []uint8 {
		m := make([]uint8, dims[0]*dims[1]*dims[2])
		for z := lo[2]; z < hi[2]; z++ {
			for y := lo[1]; y < hi[1]; y++ {
				for x := lo[0]; x < hi[0]; x++ {
					m[(z*dims[1]+y)*dims[0]+x] = 1
				}
			}
		}
		return m
	}
	cases := []struct {
		name    string
		gt, prd []uint8
	}{
		{"noise", noise(0.3), noise(0.3)},
		{"far blob", box([3]int{2, 2, 2}, [3]int{38, 30, 30}), box([3]int{36, 33, 30}, [3]int{38, 35, 32})},
		{"empty prediction", box([3]int{5, 5, 5}, [3]int{20, 20, 20}), make([]uint8, dims[0]*dims[1]*dims[2])},
	}
	sp := [3]float64{0.7, 0.9, 1.6}
	area := surfaceAreaTable([3]float64{sp[2], sp[1], sp[0]})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lo, hi, ok := surfaceBBox(c.gt, c.prd, dims)
			if !ok {
				t.Fatal("empty case")
			}
			m := [3]int{hi[0] - lo[0] + 2, hi[1] - lo[1] + 2, hi[2] - lo[2] + 2}
			cg := surfaceCodes(c.gt, dims, lo, hi, nil)
			cp := surfaceCodes(c.prd, dims, lo, hi, nil)
			dz := make([]int32, len(cg))
			for _, dir := range [][2][]uint8{{cp, cg}, {cg, cp}} {
				got := surfaceDirected(dir[0], dir[1], m, sp, &area, dz)
				want := surfaceDirectedFull(dir[0], dir[1], m, sp, &area)
				if len(got) != len(want) {
					t.Fatalf("%d surfels, want %d", len(got), len(want))
				}
				for i := range got {
					g, w := got[i], want[i]
					// Both are minima of the same float sums; they may differ only where
					// the envelope's rounded breakpoints pick a parabola an ulp off.
					if g.a != w.a || math.Abs(g.d-w.d) > 1e-12*math.Max(1, w.d) && !(math.IsInf(g.d, 1) && math.IsInf(w.d, 1)) {
						t.Fatalf("surfel %d: (%v, %v), full transform (%v, %v)", i, g.d, g.a, w.d, w.a)
					}
				}
			}
		})
	}
}
