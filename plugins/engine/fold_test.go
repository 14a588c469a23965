package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestFoldedMatchesColumns compares the folded convolution (depth, or rows in 2D) with the column path on
// the same weights and data: outputs, input gradients (written and accumulated: x feeds two
// convolutions) and weight gradients, with whole and one-row tiles, batches below and above
// the worker count.
func TestFoldedMatchesColumns(t *testing.T) {
	cases := []struct {
		in          Shape
		cout, cout2 int
		k, p        [3]int
	}{
		{Shape{2, 3, 6, 5, 7}, 4, 2, [3]int{3, 3, 3}, [3]int{1, 1, 1}},
		{Shape{3, 2, 7, 4, 5}, 3, 5, [3]int{5, 3, 1}, [3]int{2, 1, 0}},
		{Shape{2, 4, 5, 6, 4}, 2, 3, [3]int{3, 1, 3}, [3]int{0, 0, 1}},
		{Shape{1, 16, 8, 8, 8}, 16, 8, [3]int{3, 3, 3}, [3]int{1, 1, 1}},
		// 2D: the rows of one plane fold like planes.
		{Shape{2, 3, 1, 7, 6}, 4, 2, [3]int{1, 3, 3}, [3]int{0, 1, 1}},
		{Shape{3, 2, 1, 6, 5}, 3, 4, [3]int{1, 5, 3}, [3]int{0, 1, 0}},
	}
	for _, tc := range cases {
		for _, budget := range []int{colBudget, 1} {
			t.Run(fmt.Sprintf("%v k%v p%v budget %d", tc.in, tc.k, tc.p, budget), func(t *testing.T) {
				t.Parallel()
				run := func(fold bool) [][]float32 {
					b := NewBuilder(NewCPU(2), 7, withTiling(tiling{colBudget: budget, columns: !fold}))
					x := b.tensor(tc.in, true)
					y1 := b.Conv(x, tc.cout, tc.k, [3]int{1, 1, 1}, tc.p, true)
					y2 := b.Conv(x, tc.cout2, tc.k, [3]int{1, 1, 1}, tc.p, false)
					n, err := b.Build()
					if err != nil {
						t.Fatal(err)
					}
					if got := n.layers[0].(*conv).fold != nil; got != fold {
						t.Fatalf("folded path used: %v, want %v", got, fold)
					}
					r := rand.New(rand.NewPCG(1, 2))
					for _, s := range [][]float32{x.Data, y1.Grad, y2.Grad} {
						for i := range s {
							s[i] = float32(r.NormFloat64())
						}
					}
					// Twice: a second pass must overwrite, not add to, the first.
					for range 2 {
						n.Forward()
						n.Backward()
					}
					w1, w2 := n.params[0], n.params[2]
					return [][]float32{y1.Data, y2.Data, x.Grad, w1.Grad, w2.Grad, n.params[1].Grad}
				}
				want, got := run(false), run(true)
				for i, name := range []string{"output 1", "output 2", "input gradient", "weight gradient 1", "weight gradient 2", "bias gradient"} {
					if d := maxRelDiff(got[i], want[i]); d > 1e-5 {
						t.Errorf("%s: folded differs from columns by %.2g (relative to the largest value)", name, d)
					}
				}
			})
		}
	}
}

// maxRelDiff is max |a−b| over max |b|.
func maxRelDiff(a, b []float32) float64 {
	var d, m float64
	for i := range b {
		d = max(d, math.Abs(float64(a[i]-b[i])))
		m = max(m, math.Abs(float64(b[i])))
	}
	return d / max(m, 1e-30)
}
