package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"amid/plugins/protocol"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// TestBadInput trains the tiny 2D configuration on generated discs with one case broken
// in a way real data is: each must give an error that names the file, or the documented
// handling.
func TestBadInput(t *testing.T) {
	task := protocol.Task{Kind: "segmentation", Dims: 2}
	train := func(t *testing.T, cases []protocol.Case, cfg []byte) error {
		_, err := seg{}.Train(context.Background(), &protocol.TrainRequest{
			Task: task, Config: cfg, Train: cases, WorkDir: t.TempDir(), Seed: 1,
		}, func(*protocol.Progress) error { return nil })
		return err
	}
	// edit rewrites the image file p after f changed its values.
	edit := func(t *testing.T, p string, f func(v *volume.Volume)) {
		v, err := imageio.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		f(v)
		if err := imageio.Write(p, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		corrupt func(t *testing.T, c *protocol.Case)
		want    []string // in the error; none: training succeeds
	}{
		{"NaN voxel", func(t *testing.T, c *protocol.Case) {
			edit(t, c.Images[0], func(v *volume.Volume) { v.Data.([]float32)[5] = float32(math.NaN()) })
		}, []string{"case001_0000.nii.gz"}},
		{"Inf voxel", func(t *testing.T, c *protocol.Case) {
			edit(t, c.Images[0], func(v *volume.Volume) { v.Data.([]float32)[5] = float32(math.Inf(1)) })
		}, []string{"case001_0000.nii.gz"}},
		{"label outside the task's set", func(t *testing.T, c *protocol.Case) {
			edit(t, c.Label, func(v *volume.Volume) { v.Data.([]uint8)[7] = 7 })
		}, []string{"case001.nii.gz", "label value 7"}},
		{"label grid differs from the image's", func(t *testing.T, c *protocol.Case) {
			lab, _ := volume.New(volume.Uint8, [4]int{side - 1, side, 1, 1})
			if err := imageio.Write(c.Label, lab); err != nil {
				t.Fatal(err)
			}
		}, []string{"case001"}},
		{"missing label file", func(t *testing.T, c *protocol.Case) {
			c.Label = filepath.Join(filepath.Dir(c.Label), "gone.nii.gz")
		}, []string{"gone.nii.gz"}},
		// An empty label map is sampled like any other, never forced onto foreground.
		{"empty label map", func(t *testing.T, c *protocol.Case) {
			edit(t, c.Label, func(v *volume.Volume) { clear(v.Data.([]uint8)) })
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cases := discCases(t, 3, 5)
			tc.corrupt(t, &cases[1])
			want := tc.want
			err := train(t, cases, tiny(4, 2, 2))
			if len(want) == 0 {
				if err != nil {
					t.Fatalf("want training to go on, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; want one naming %v", want)
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			t.Log(err)
		})
	}
}

// TestOddGeometry: a volume of one slice in a 3D lane and an extremely anisotropic
// dataset are handled, not refused.
func TestOddGeometry(t *testing.T) {
	// One slice, a 3D patch of 4 slices: the sampler pads across the missing slices.
	cases := discCases(t, 3, 6)
	cfg := fmt.Appendf(nil, `{"lane":"3d_fullres","patch":[4,%d,%d],"batch":2,"widths":[8,16],"kernels":[[1,3,3],[1,3,3]],"pools":[[1,2,2]],"modality":"mr","labels":[0,1],`+
		`"steps":3,"steps_per_epoch":3,"report_every":1,"learning_rate":0.01}`, side, side)
	res, err := seg{}.Train(context.Background(), &protocol.TrainRequest{
		Task: protocol.Task{Kind: "segmentation", Dims: 3}, Config: cfg, Train: cases, WorkDir: t.TempDir(), Seed: 1,
	}, func(*protocol.Progress) error { return nil })
	if err != nil {
		t.Fatalf("3D lane on one-slice volumes: %v", err)
	}
	out := t.TempDir()
	pr, err := seg{}.Predict(context.Background(), &protocol.PredictRequest{Task: protocol.Task{Kind: "segmentation", Dims: 3},
		Checkpoint: res.Checkpoint, Cases: cases[:1], OutputDir: out})
	if err != nil {
		t.Fatalf("predicting a one-slice volume: %v", err)
	}
	got, err := imageio.Read(pr.Predictions[0].Files[0])
	if err != nil {
		t.Fatal(err)
	}
	if got.Dims != [4]int{side, side, 1, 1} {
		t.Errorf("prediction grid %v, want the image's %v", got.Dims, [4]int{side, side, 1, 1})
	}

	// 0.5×0.5×50 mm: 100× anisotropy. The plan must not pool or convolve across the thick
	// axis at full resolution (nnU-Net's rule), and must still offer a lane.
	fp := []byte(`{"modality":"CT","channels":1,"classes":2,"cases":[` +
		`{"dims":[12,256,256],"spacing":[50,0.5,0.5]},{"dims":[10,240,256],"spacing":[50,0.5,0.5]},{"dims":[11,256,250],"spacing":[50,0.5,0.5]}]}`)
	pl, err := seg{}.Plan(context.Background(), &protocol.PlanRequest{Fingerprint: fp, Task: protocol.Task{Kind: "segmentation", Dims: 3}})
	if err != nil {
		t.Fatalf("plan at 100× anisotropy: %v", err)
	}
	if len(pl.Candidates) == 0 {
		t.Fatal("no lane planned at 100× anisotropy")
	}
	for _, c := range pl.Candidates {
		cfg, err := parseConfig(c.Config)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Kernels) > 0 && cfg.Kernels[0][0] != 1 {
			t.Errorf("%s: first-stage kernel %v convolves across 50 mm slices", c.Name, cfg.Kernels[0])
		}
		if len(cfg.Pools) > 0 && cfg.Pools[0][0] != 1 {
			t.Errorf("%s: first pooling %v halves the thick axis", c.Name, cfg.Pools[0])
		}
		t.Logf("%s: patch %v, kernels %v, pools %v", c.Name, cfg.Patch, cfg.Kernels, cfg.Pools)
	}
}
