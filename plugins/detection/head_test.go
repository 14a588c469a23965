package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBoxLossGradient compares boxLoss's gradient with central differences in float64 on
// a 6×5 plane with two objects and attributes of 3 and 2 classes (h 1e-3; L1 has kinks
// only where a value equals its target, which random values avoid; tolerance 1e-3
// relative, far above float32 rounding).
func TestBoxLossGradient(t *testing.T) {
	const w, h = 6, 5
	S := w * h
	groups := []int{3, 2}
	C := chAttrs + 5
	r := rand.New(rand.NewPCG(3, 9))
	tg := &target{heat: make([]float32, S)}
	for _, cell := range []int{7, 22} {
		render(tg.heat, w, h, cell%w, cell/w, 1, 1.5)
		tg.objs = append(tg.objs, object{cell: cell, off: [2]float32{0.3, 0.6}, size: [2]float32{-0.2, 0.4}, attrs: []int{r.IntN(3), r.IntN(2)}})
		tg.nbr = append(tg.nbr, neighbours(cell, w, h))
	}
	x := make([]float32, C*S)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	dx := make([]float32, C*S)
	boxLoss(x, dx, tg, S, groups)
	for i := range x {
		up, down := slices.Clone(x), slices.Clone(x)
		up[i] += 1e-3
		down[i] -= 1e-3
		num := (boxLoss(up, make([]float32, C*S), tg, S, groups) - boxLoss(down, make([]float32, C*S), tg, S, groups)) / float64(up[i]-down[i])
		if d := math.Abs(num - float64(dx[i])); d > 1e-3*max(1, math.Abs(num)) {
			t.Errorf("channel %d pixel %d: analytic %.6g, numeric %.6g", i/S, i%S, dx[i], num)
		}
	}
}
