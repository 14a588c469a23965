package main

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"
)

// slabOf is a case of 8 × 8 × 10 voxels of 1 mm whose slices start at z0 mm, every voxel
// of class: its positions (three planes, mm) and labels.
func slabOf(z0 float64, class int32) ([3][]float32, []int32) {
	var pos [3][]float32
	var lab []int32
	for z := range 10 {
		for y := range 8 {
			for x := range 8 {
				pos[0] = append(pos[0], float32(x))
				pos[1] = append(pos[1], float32(y))
				pos[2] = append(pos[2], float32(z0+float64(z)))
				lab = append(lab, class)
			}
		}
	}
	return pos, lab
}

// TestAtlasPrior: three slabs of one class each along z (0–10 mm class 1, 14–24 mm class
// 2, 28–38 mm class 1). The prior of every case follows the slab a point lies in, and
// between two slabs the nearer one; the prior that leaves out the first slab's group
// takes, at that slab's top, the class of the slab 5 mm away (2), and, where no slab lies
// within the smoothing's reach (3 σ of 2 mm cells), the classes' overall frequencies.
func TestAtlasPrior(t *testing.T) {
	a := newAtlasCounts(3, 3)
	for i, s := range []struct {
		z0    float64
		class int32
	}{{0, 1}, {14, 2}, {28, 1}} {
		pos, lab := slabOf(s.z0, s.class)
		a.add(i, pos, lab)
	}
	all, without, err := a.build()
	if err != nil {
		t.Fatal(err)
	}
	if len(without) != 3 || all.Step != atlasStep {
		t.Fatalf("%d atlases that leave out a group, cell %v mm; want 3 and %v", len(without), all.Step, atlasStep)
	}
	at := func(at *atlas, z float64) []float32 {
		p := make([]float32, 3)
		at.sample([3]float64{4, 4, z}, p)
		var s float32
		for _, v := range p {
			s += v
		}
		if math.Abs(float64(s)-1) > 1e-4 {
			t.Errorf("the prior at z = %v mm sums to %v", z, s)
		}
		return p
	}
	for _, c := range []struct {
		name  string
		at    *atlas
		z     float64
		class int
	}{
		{"in the first slab", all, 5, 1},
		{"in the second slab", all, 19, 2},
		{"nearer the first slab", all, 10.5, 1},
		{"nearer the second slab", all, 13, 2},
		{"at the first slab's top, left out", without[0], 9, 2},
		{"in the second slab, left out", without[1], 19, 1},
	} {
		p := at(c.at, c.z)
		best := 0
		for k := range p {
			if p[k] > p[best] {
				best = k
			}
		}
		if best != c.class {
			t.Errorf("%s (z = %v mm): prior %v, want class %d first", c.name, c.z, p, c.class)
		}
	}
	if p := at(all, 5); p[1] < 0.8 {
		t.Errorf("inside the first slab the prior of its class is %.3f, want at least 0.8", p[1])
	}
	// Without the first slab, class 1 (the third slab) and class 2 (the second) have as
	// many voxels; its bottom is 14 mm from the nearest other slab.
	if p := at(without[0], 0); math.Abs(float64(p[1])-0.5) > 1e-6 || math.Abs(float64(p[2])-0.5) > 1e-6 {
		t.Errorf("out of every slab's reach the prior is %v, want the overall frequencies [0 0.5 0.5]", p)
	}
}

// twoSlabs is the atlas of two slabs, of classes 0 and 1, 20 mm apart, and its encoding.
func twoSlabs(tb testing.TB) (*atlas, []byte) {
	tb.Helper()
	a := newAtlasCounts(2, 2)
	for i, z := range []float64{0, 20} {
		pos, lab := slabOf(z, int32(i))
		a.add(i, pos, lab)
	}
	all, _, err := a.build()
	if err != nil {
		tb.Fatal(err)
	}
	b, err := all.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	return all, b
}

// TestAtlasEncoding: an atlas decodes to what was encoded, and damaged bytes are an
// error. (The checkpoint's extra bytes that carry it after the forest are read back by
// TestForestResume, whose two training cases give the forest a prior.)
func TestAtlasEncoding(t *testing.T) {
	all, b := twoSlabs(t)
	var back atlas
	if err := back.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if back.Origin != all.Origin || back.Step != all.Step || back.Dims != all.Dims || back.K != all.K || !slices.Equal(back.Prob, all.Prob) {
		t.Errorf("decoded %+v, encoded %+v", back, all)
	}
	for _, bad := range [][]byte{nil, b[:len(b)-1], append(bytes.Clone(b), 0), []byte(atlasMagic)} {
		if err := back.UnmarshalBinary(bad); !errors.Is(err, errAtlas) {
			t.Errorf("%d bytes: error %v, want errAtlas", len(bad), err)
		}
	}
}

// FuzzForestExtra: no bytes make the decoder of a forest checkpoint's extra bytes panic.
func FuzzForestExtra(f *testing.F) {
	_, b := twoSlabs(f)
	f.Add(b)
	f.Add(append([]byte(forestAtlasMagic), 1, 0, 0, 0, 0, 0, 0, 0, 'x'))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _ = decodeForest(data)
		var at atlas
		_ = at.UnmarshalBinary(data)
	})
}
