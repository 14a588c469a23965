package main

import (
	"encoding/json"
	"testing"

	"amid/plugins/internal/forest"
	"amid/plugins/internal/imagefeat"
	"amid/plugins/internal/imageplugin/imageplugintest"
	"amid/plugins/taskspec"
)

// FuzzParseConfig: parseConfig never panics, and a configuration it accepts survives a
// round trip through JSON unchanged (what a checkpoint records is what prediction reads).
func FuzzParseConfig(f *testing.F) { imageplugintest.FuzzConfig(f, seeds, parseConfig) }

var seeds = []string{
	`{"lane":"cnn","grid":[1,32,32],"widths":[8,16],"batch":8,"steps":3,"loss":{"mse":1,"rank":1,"temperature":0.1},"folds":3,"snap":"off"}`,
	`{"lane":"cnn","grid":[8,16,16],"widths":[4],"batch":2,"steps":3,"intensity":"zscore","rot90":true}`,
	`{"lane":"cnn","grid":[1,32,32],"widths":[8],"batch":1,"steps":3,"loss":{"corr":1}}`,
	`{"lane":"cnn","loss":{"mse":-1}}`,
	`{"lane":"forest"}`,
	`{"lane":"forest","trees":8,"max_depth":4,"min_leaf":2,"bins":4,"seed":3,"snap":"on"}`,
	`{"lane":"forest","grid":[1,32,32]}`,
	`{"lane":"cnn","grid":[1,32,32],"widths":[8],"batch":2,"steps":3,"trees":4}`,
}

// FuzzForestCheckpoint: a forest checkpoint's training record and extra bytes, however
// corrupt, give a model or an error, never a panic; a model they give predicts a finite
// score inside its classes' means from any features.
func FuzzForestCheckpoint(f *testing.F) {
	// A valid pair: two classes on imagefeat's features, one tree of one leaf.
	x := make([]float32, 2*imagefeat.Count)
	for i := range x {
		x[i] = float32(i % 7)
	}
	b, err := forest.NewBinner(x, imagefeat.Count)
	if err != nil {
		f.Fatal(err)
	}
	fo := &forest.Forest{Classes: 2, Binner: b}
	codes := make([]uint8, len(x))
	b.Bin(x, codes)
	if err := fo.Grow(codes, []uint8{0, 1}, forest.Config{MaxDepth: 2, MinLeaf: 1, Seed: 1}, 0); err != nil {
		f.Fatal(err)
	}
	extra, err := fo.MarshalBinary()
	if err != nil {
		f.Fatal(err)
	}
	valid := saved{Config: config{Lane: laneForest}, Dims: 2, Range: taskspec.ScoreRange{Min: 0, Max: 4, Step: 0.2},
		Forest: &scoreBins{Edges: []float64{1}, Means: []float64{0.5, 2}}, Features: imagefeat.Names()}
	if _, err := newForestModel(&valid, extra); err != nil {
		f.Fatalf("the valid seed is refused: %v", err)
	}
	rec, err := json.Marshal(valid)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rec, extra)
	f.Add(rec, extra[:len(extra)/2])
	f.Add([]byte(`{"forest":{"edges":[],"means":[1]}}`), extra)
	f.Fuzz(func(t *testing.T, rec, extra []byte) {
		var s saved
		if json.Unmarshal(rec, &s) != nil {
			return
		}
		m, err := newForestModel(&s, extra)
		if err != nil {
			return
		}
		feats := make([]float32, imagefeat.Count)
		for i := range feats {
			feats[i] = float32(i) - 3
		}
		v := m.predict(feats)
		lo, hi := m.bins.Means[0], m.bins.Means[len(m.bins.Means)-1]
		if !(v >= lo && v <= hi) {
			t.Fatalf("prediction %v outside the classes' means [%v, %v]", v, lo, hi)
		}
	})
}
