package main

import (
	"math"
	"testing"

	"amid/plugins/taskspec"
)

// TestConfidence: a box at 0.5 is no idea (0), none at all is sure (1), boxes at 0.99 and
// 0.01 are as sure as one minus the binary entropy of 0.01, 0.0808 bits, gives (0.9192);
// points count as boxes do; a 3-D box has none.
func TestConfidence(t *testing.T) {
	h := -(0.01*math.Log2(0.01) + 0.99*math.Log2(0.99))
	for _, c := range []struct {
		a    taskspec.Annotation
		want float64
	}{
		{taskspec.Annotation{Boxes: []taskspec.Box{{Score: 0.5}}}, 0},
		{taskspec.Annotation{}, 1},
		{taskspec.Annotation{Boxes: []taskspec.Box{{Score: 0.99}, {Score: 0.01}}}, 1 - h},
		{taskspec.Annotation{Points: []taskspec.Point{{Score: 0.99}, {Score: 1}}}, 1 - h/2},
	} {
		got := confidence(&c.a)
		if got == nil || math.Abs(*got-c.want) > 1e-12 {
			t.Errorf("%+v: confidence %v, want %v", c.a, got, c.want)
		}
	}
	if got := confidence(&taskspec.Annotation{Box3D: &taskspec.Box3D{}}); got != nil {
		t.Errorf("a 3-D box: confidence %v, want none", *got)
	}
}
