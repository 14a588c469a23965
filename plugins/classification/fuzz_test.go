package main

import (
	"math/rand/v2"
	"testing"

	"amid/plugins/internal/forest"
	"amid/plugins/internal/imagefeat"
	"amid/plugins/internal/imageplugin/imageplugintest"
)

// FuzzParseConfig: parseConfig never panics, and a configuration it accepts survives a
// round trip through JSON unchanged (what a checkpoint records is what prediction reads).
func FuzzParseConfig(f *testing.F) { imageplugintest.FuzzConfig(f, seeds, parseConfig) }

var seeds = []string{
	`{"lane":"prior"}`,
	`{"lane":"forest"}`,
	`{"lane":"forest","trees":3,"seed":7}`,
	`{"lane":"cnn","grid":[16,16,16],"widths":[4,8],"batch":2,"steps":3,"heads":"attributes","roi":[[0,1],[0.2,0.8],[0,0.5]]}`,
	`{"lane":"cnn","grid":[1,32,32],"widths":[4],"batch":2,"steps":3,"class_weights":"none","flip":[false,true,true],"jitter":true}`,
	`{"lane":"cnn","grid":[0,16,16],"widths":[],"batch":0,"steps":3}`,
}

// FuzzForestCheckpoint: decoding a forest checkpoint's extra bytes never panics, whatever
// the bytes and the length the record gives them, and what it accepts predicts.
func FuzzForestCheckpoint(f *testing.F) {
	valid := smallForest(f)
	f.Add(valid, len(valid))
	f.Add(valid[:len(valid)/2], len(valid))
	f.Add(valid, len(valid)-4)
	f.Add([]byte("AMIDRF1\n\xff\xff\xff\xff"), 12)
	f.Fuzz(func(t *testing.T, extra []byte, n int) {
		rec := saved{Files: 1, Forests: []forestRef{{Attr: "modality", Bytes: n}}, Freqs: map[string][]float64{"modality": {0.5, 0.5}},
			Units: []unit{{Name: "modality", Attrs: []string{"modality"}}}}
		fs, err := decodeForests(extra, rec)
		if err != nil {
			return
		}
		x := make([]float32, imagefeat.Count)
		codes := make([]uint8, len(x))
		for _, fr := range fs {
			fr.Binner.Bin(x, codes)
			fr.Predict(codes, make([]float32, fr.Classes))
		}
	})
}

// smallForest is the encoding of a forest of 2 classes and 3 trees on imagefeat's
// features of 20 random rows.
func smallForest(t testing.TB) []byte {
	r := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, 20*imagefeat.Count)
	y := make([]uint8, 20)
	for i := range x {
		x[i] = r.Float32()
	}
	for i := range y {
		y[i] = uint8(i % 2)
	}
	b, err := forest.NewBinner(x, imagefeat.Count)
	if err != nil {
		t.Fatal(err)
	}
	codes := make([]uint8, len(x))
	b.Bin(x, codes)
	fr := &forest.Forest{Classes: 2, Binner: b}
	for k := range 3 {
		if err := fr.Grow(codes, y, forest.Config{MaxDepth: 4, MinLeaf: 1, Seed: 1}, k); err != nil {
			t.Fatal(err)
		}
	}
	enc, err := fr.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return enc
}
