package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"amid/plugins/plugintest"
	"amid/plugins/protocol"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// slabCases writes n 24×24×8 volumes (1 mm) of noise with a bright disc in every slice,
// labelled 1 in slices 0–3 and 2 in slices 4–7: the same look, told apart only by where
// the slice lies.
func slabCases(t *testing.T, n int, seed uint64) []protocol.Case {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(seed, 5))
	var out []protocol.Case
	for i := range n {
		img, _ := volume.New(volume.Float32, [4]int{24, 24, 8, 1})
		lab, _ := volume.New(volume.Uint8, [4]int{24, 24, 8, 1})
		px, lx := img.Data.([]float32), lab.Data.([]uint8)
		for z := range 8 {
			cx, cy, rad := 7+10*r.Float64(), 7+10*r.Float64(), 3+2*r.Float64()
			for y := range 24 {
				for x := range 24 {
					j := (z*24+y)*24 + x
					px[j] = float32(r.NormFloat64())
					if math.Hypot(float64(x)-cx, float64(y)-cy) <= rad {
						px[j] += 4
						lx[j] = uint8(1 + z/4)
					}
				}
			}
		}
		id := fmt.Sprintf("slab%02d", i)
		c := protocol.Case{ID: id, Images: []string{filepath.Join(dir, id+"_0000.nii.gz")}, Label: filepath.Join(dir, id+".nii.gz")}
		if err := imageio.Write(c.Images[0], img); err != nil {
			t.Fatal(err)
		}
		if err := imageio.Write(c.Label, lab); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// TestCoords trains a 2D lane with and without position as input on slabCases through the
// built plugin: without it the two classes look alike in a slice, with it (coordinate
// channels) the network tells them apart, and its predictions carry both classes on the
// input's grid.
func TestCoords(t *testing.T) {
	p := plugintest.Start(t, binary)
	cases := slabCases(t, 5, 3)
	dice := func(coords bool) (float64, string) {
		cfg := fmt.Sprintf(`{"lane":"2d","patch":[1,24,24],"batch":4,"widths":[8,16,32],"modality":"mr","labels":[0,1,2],`+
			`"steps":120,"steps_per_epoch":120,"report_every":40,"learning_rate":0.01,"coords":%v}`, coords)
		res, err := p.Train(context.Background(), &protocol.TrainRequest{
			Task: protocol.Task{Kind: "segmentation", Dims: 3}, Config: []byte(cfg), Train: cases[:4], Validation: cases[4:], WorkDir: t.TempDir(), Seed: 2,
		}, func(*protocol.Progress) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		pr, err := p.Predict(context.Background(), &protocol.PredictRequest{Checkpoint: res.Checkpoint, Cases: cases[4:], OutputDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		got, err := imageio.Read(pr.Predictions[0].Files[0])
		if err != nil {
			t.Fatal(err)
		}
		if got.Dims != [4]int{24, 24, 8, 1} {
			t.Errorf("prediction dims %v", got.Dims)
		}
		return res.Validation["dice"], fmt.Sprint(res.Validation)
	}
	without, w1 := dice(false)
	with, w2 := dice(true)
	t.Logf("validation without position %s, with %s", w1, w2)
	// Without position a slice's disc is class 1 or 2 by chance: the mean of the two
	// classes' Dice stays near 0.5; with it both are found (about 0.9 here).
	if !(with >= 0.75) || !(with > without+0.15) {
		t.Errorf("validation Dice with position %.3f, without %.3f: want ≥ 0.75 and 0.15 more", with, without)
	}
}
