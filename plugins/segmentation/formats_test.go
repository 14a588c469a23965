package main

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"amid/plugins/engine"
	"amid/plugins/engine/data"
	"amid/plugins/engine/infer"
	"amid/plugins/protocol"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// TestLanesAndFormats trains a few steps of the 3d_fullres lane on anisotropic NIfTI
// volumes resampled to a target spacing, and of the 2d lane on 8-bit PNG images, and
// checks that each prediction comes back on the input's grid in the input's format.
func TestLanesAndFormats(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(9, 9))
	// A 24×24×6 volume at 1×1×2 mm with a bright box; the label map marks the box.
	write := func(name string, dt volume.DType, dims [4]int, sp [3]float64, val func(x, y, z int, in bool) float64) string {
		v, err := volume.New(dt, dims)
		if err != nil {
			t.Fatal(err)
		}
		v.Spacing = sp
		for z := range dims[2] {
			for y := range dims[1] {
				for x := range dims[0] {
					in := x >= 6 && x < 16 && y >= 8 && y < 18 && z >= 1 && z < dims[2]-1
					v.SetIndex(v.Index(x, y, z, 0), val(x, y, z, in))
				}
			}
		}
		p := filepath.Join(dir, name)
		if err := imageio.Write(p, v); err != nil {
			t.Fatal(err)
		}
		return p
	}
	img := func(_, _, _ int, in bool) float64 {
		if in {
			return 100 + 10*r.NormFloat64()
		}
		return 50 + 10*r.NormFloat64()
	}
	lab := func(_, _, _ int, in bool) float64 {
		if in {
			return 2 // the task's label value; class 1 of the network
		}
		return 0
	}
	dims3, sp3 := [4]int{24, 24, 6, 1}, [3]float64{1, 1, 2}
	dims2, sp2 := [4]int{24, 24, 1, 1}, [3]float64{1, 1, 1}
	for _, tc := range []struct {
		name, ext string
		dt        volume.DType
		dims      [4]int
		sp        [3]float64
		cfg       string
	}{
		// Target spacing 2×2×2 mm (D, H, W): the volume is trained and predicted at 12×12×6.
		{"3d", ".nii.gz", volume.Int16, dims3, sp3, `{"lane":"3d_fullres","patch":[4,8,8],"batch":2,"widths":[4,8],"spacing":[2,2,2],"modality":"mr","labels":[0,2],"steps":3,"steps_per_epoch":2,"mirror":true}`},
		{"2d", ".png", volume.Uint8, dims2, sp2, `{"lane":"2d","patch":[1,16,16],"batch":2,"widths":[4,8],"modality":"rgb","labels":[0,2],"steps":3}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := protocol.Case{ID: "c" + tc.name, Images: []string{write(tc.name+"img"+tc.ext, tc.dt, tc.dims, tc.sp, img)}, Label: write(tc.name+"lab"+tc.ext, volume.Uint8, tc.dims, tc.sp, lab)}
			res, err := seg{}.Train(context.Background(), &protocol.TrainRequest{Config: []byte(tc.cfg), Train: []protocol.Case{c}, Validation: []protocol.Case{c}, WorkDir: t.TempDir(), Seed: 2},
				func(*protocol.Progress) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			if d, ok := res.Validation["dice"]; !ok || d < 0 || d > 1 {
				t.Errorf("validation %v", res.Validation)
			}
			out := t.TempDir()
			pr, err := seg{}.Predict(context.Background(), &protocol.PredictRequest{Checkpoint: res.Checkpoint, Cases: []protocol.Case{c}, OutputDir: out})
			if err != nil {
				t.Fatal(err)
			}
			want := filepath.Join(out, c.ID+tc.ext)
			if f := pr.Predictions[0].Files[0]; f != want {
				t.Fatalf("prediction file %s, want %s", f, want)
			}
			got, err := imageio.Read(want)
			if err != nil {
				t.Fatal(err)
			}
			if got.Dims != tc.dims || got.Spacing != tc.sp {
				t.Errorf("prediction grid %v %v, want %v %v", got.Dims, got.Spacing, tc.dims, tc.sp)
			}
			for i := range got.NumVoxels() {
				if v := got.AtIndex(i); v != 0 && v != 2 {
					t.Fatalf("prediction value %v, want 0 or 2", v)
				}
			}
			// A second prediction writes the same bytes (the host's verify step compares
			// them), and the network of batch 1 gives the same scores as the batched one.
			again := t.TempDir()
			if _, err := (seg{}).Predict(context.Background(), &protocol.PredictRequest{Checkpoint: res.Checkpoint, Cases: []protocol.Case{c}, OutputDir: again}); err != nil {
				t.Fatal(err)
			}
			a, errA := os.ReadFile(want)
			b, errB := os.ReadFile(filepath.Join(again, c.ID+tc.ext))
			if errA != nil || errB != nil || !bytes.Equal(a, b) {
				t.Errorf("two predictions differ (%v, %v)", errA, errB)
			}
			batched, err := load(engine.NewCPU(0), res.Checkpoint, nil)
			if err != nil {
				t.Fatal(err)
			}
			if n := inferBatch(engine.NewCPU(0), 2); batched.Batch != n {
				t.Errorf("inference batch %d, want %d (workers, at most the training batch 2)", batched.Batch, n)
			}
			single, err := loadBatch(engine.NewCPU(0), res.Checkpoint, nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			v, err := data.ReadChannels(c.Images)
			if err != nil {
				t.Fatal(err)
			}
			_, pb, err := infer.Segment(v, batched.Model)
			if err != nil {
				t.Fatal(err)
			}
			_, p1, err := infer.Segment(v, single.Model)
			if err != nil {
				t.Fatal(err)
			}
			for i := range p1 {
				// Float rounding of probabilities in [0, 1] (TestWindowBatchUNet: below 1e-6).
				if math.Abs(float64(pb[i]-p1[i])) > 1e-5 {
					t.Fatalf("score %d: %v with batch %d, %v with batch 1", i, pb[i], batched.Batch, p1[i])
				}
			}
		})
	}
}

// TestChannelFiles stacks two single-channel files of a case as channels, trains two
// steps on them, and refuses a channel file on another grid.
func TestChannelFiles(t *testing.T) {
	cases := discCases(t, 2, 8)
	two := cases[0]
	two.Images = []string{cases[0].Images[0], cases[1].Images[0]}
	v, err := data.ReadChannels(two.Images)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := imageio.Read(cases[0].Images[0])
	b, _ := imageio.Read(cases[1].Images[0])
	if v.Dims != [4]int{side, side, 1, 2} || v.AtIndex(10) != a.AtIndex(5) || v.AtIndex(11) != b.AtIndex(5) {
		t.Fatalf("stacked %v: voxel 5 = %v, %v; want %v, %v", v.Dims, v.AtIndex(10), v.AtIndex(11), a.AtIndex(5), b.AtIndex(5))
	}
	res, err := seg{}.Train(context.Background(), &protocol.TrainRequest{Config: tiny(2, 2, 1), Train: []protocol.Case{two}, WorkDir: t.TempDir(), Seed: 1},
		func(*protocol.Progress) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (seg{}).Predict(context.Background(), &protocol.PredictRequest{Checkpoint: res.Checkpoint, Cases: []protocol.Case{two}, OutputDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	// One channel only: the network wants two.
	if _, err := (seg{}).Predict(context.Background(), &protocol.PredictRequest{Checkpoint: res.Checkpoint, Cases: cases[:1], OutputDir: t.TempDir()}); err == nil {
		t.Error("a one-channel case was predicted with a two-channel network")
	}
	small, err := volume.New(volume.Float32, [4]int{8, 8, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "small.nii.gz")
	if err := imageio.Write(p, small); err != nil {
		t.Fatal(err)
	}
	if _, err := data.ReadChannels([]string{cases[0].Images[0], p}); !errors.Is(err, volume.ErrGeometry) {
		t.Errorf("channel files on two grids: %v, want ErrGeometry", err)
	}
}
