package metrics

import (
	"math"
	"testing"
)

func TestEDTGolden(t *testing.T) {
	g := loadVolGolden(t)
	for _, c := range g.Binary {
		w, ok := c.Want["edt_gt"].(map[string]any)
		if !ok {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			gt := binarise(paintVol(c.Dims, c.GT))
			d := EDT(gt, c.Dims, c.Spacing, nil)
			edtCheck(t, d, w)
		})
	}
}

func edtCheck(t *testing.T, d []float64, w map[string]any) {
	t.Helper()
	sum, mx := 0.0, 0.0
	for _, v := range d {
		sum += v
		mx = math.Max(mx, v)
	}
	check(t, w, "max", mx)
	// the reference sums with numpy's pairwise sum; a sequential sum of ~10⁶ terms agrees
	// to ~1e-12 relative
	check(t, w, "sum", sum)
	idx := w["idx"].([]any)
	val := w["val"].([]any)
	for k := range idx {
		i := int(idx[k].(float64))
		if want := val[k].(float64); d[i] != want {
			t.Errorf("distance at %d = %.17g, scipy %.17g", i, d[i], want)
		}
	}
}

func TestEDTBrute(t *testing.T) {
	dims := [3]int{7, 5, 4}
	sp := [3]float64{0.7, 1.3, 2.1}
	m := make([]uint8, 7*5*4)
	for i := range m {
		m[i] = 1
	}
	zeros := [][3]int{{0, 0, 0}, {6, 4, 3}, {3, 2, 1}}
	for _, z := range zeros {
		m[(z[2]*5+z[1])*7+z[0]] = 0
	}
	d := EDT(m, dims, sp, nil)
	for i := range m {
		x, y, z := i%7, i/7%5, i/35
		best := math.Inf(1)
		for _, q := range zeros {
			a, b, c := float64(x-q[0])*sp[0], float64(y-q[1])*sp[1], float64(z-q[2])*sp[2]
			best = math.Min(best, math.Sqrt(c*c+b*b+a*a))
		}
		if !closeTo(d[i], best) {
			t.Fatalf("voxel %d: %v, brute force %v", i, d[i], best)
		}
	}
	// no background: every distance is +Inf
	for i := range m {
		m[i] = 1
	}
	for _, v := range EDT(m, dims, sp, nil) {
		if !math.IsInf(v, 1) {
			t.Fatal("no background gave a finite distance")
		}
	}
}
