package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"amid/plugins/engine/vk/vktest"
	"amid/plugins/plugintest"
	"amid/plugins/protocol"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// binary is the plugin built once for the tests that start it; binaryVulkan the same
// with cgo, which the Vulkan backend needs.
var binary, binaryVulkan string

func TestMain(m *testing.M) {
	vktest.Pin() // lavapipe's vector width, before any Vulkan instance exists
	plugintest.MainWith(m, func(dir string) (err error) {
		if binary, err = plugintest.BuildPlugin(".", "segmentation", dir); err != nil {
			return err
		}
		binaryVulkan, err = plugintest.BuildPluginVulkan(".", "segmentation-vulkan", dir)
		return err
	})
}

// side is the edge of the generated images.
const side = 32

// discCase writes a side×side NIfTI image of Gaussian noise (σ 1) with a disc of radius
// 5–8 whose voxels are 2.5 brighter, and its label map (1 inside the disc), in dir.
func discCase(t testing.TB, dir, id string, r *rand.Rand) protocol.Case {
	t.Helper()
	img, err := volume.New(volume.Float32, [4]int{side, side, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	lab, err := volume.New(volume.Uint8, [4]int{side, side, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	rad := 5 + 3*r.Float64()
	cx, cy := 9+14*r.Float64(), 9+14*r.Float64()
	px, lx := img.Data.([]float32), lab.Data.([]uint8)
	for y := range side {
		for x := range side {
			i := y*side + x
			px[i] = float32(10 + r.NormFloat64())
			if math.Hypot(float64(x)-cx, float64(y)-cy) <= rad {
				px[i] += 2.5
				lx[i] = 1
			}
		}
	}
	c := protocol.Case{ID: id, Images: []string{filepath.Join(dir, id+"_0000.nii.gz")}, Label: filepath.Join(dir, id+".nii.gz")}
	if err := imageio.Write(c.Images[0], img); err != nil {
		t.Fatal(err)
	}
	if err := imageio.Write(c.Label, lab); err != nil {
		t.Fatal(err)
	}
	return c
}

func discCases(t testing.TB, n int, seed uint64) []protocol.Case {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(seed, 7))
	var cs []protocol.Case
	for i := range n {
		cs = append(cs, discCase(t, dir, fmt.Sprintf("case%03d", i), r))
	}
	return cs
}

// fingerprint is the plan fingerprint of n generated cases.
func fingerprint(n int) []byte {
	s := `{"modality":"MR","channels":1,"classes":2,"cases":[`
	for i := range n {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf(`{"dims":[1,%d,%d],"spacing":[1,1,1]}`, side, side)
	}
	return []byte(s + "]}")
}

// tiny is a small 2D configuration: a 3-stage U-Net of widths 8–32 on whole images.
func tiny(steps, epoch, report int) []byte {
	return fmt.Appendf(nil, `{"lane":"2d","patch":[1,%d,%d],"batch":4,"widths":[8,16,32],"modality":"mr","labels":[0,1],`+
		`"steps":%d,"steps_per_epoch":%d,"report_every":%d,"learning_rate":0.01}`, side, side, steps, epoch, report)
}

func TestConformance(t *testing.T) {
	plugintest.Run(t, binary, &plugintest.Options{
		Task:         &protocol.Task{Kind: "segmentation", Dims: 2, Metric: "dice"},
		Fingerprint:  fingerprint(3),
		Cases:        discCases(t, 3, 1),
		TrainConfig:  tiny(6, 3, 2),
		CancelConfig: tiny(100000, 2, 1),
		RoundsConfig: tiny(6, 3, 1), // every step reported, a checkpoint at step 3 of 6
	})
}

// TestLearns trains the tiny U-Net for 100 steps on 8 generated disc images and scores
// a held-out one.
func TestLearns(t *testing.T) {
	p := plugintest.Start(t, binary)
	cases := discCases(t, 9, 2)
	var last *protocol.Progress
	res, err := p.Train(context.Background(), &protocol.TrainRequest{
		LaneID: "learn", Task: protocol.Task{Kind: "segmentation", Dims: 2}, Config: tiny(100, 50, 10),
		Train: cases[:8], Validation: cases[8:], WorkDir: t.TempDir(), Seed: 3,
	}, func(pr *protocol.Progress) error { last = pr; return nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("last progress: step %d epoch %d loss %v, %.0f samples/s; validation %v", last.Step, last.Epoch, last.Losses, last.SamplesPerSecond, res.Validation)
	// 0.8: the task's bar for a bright disc on noise after about 100 steps.
	if d := res.Validation["dice"]; !(d >= 0.8) {
		t.Errorf("held-out Dice %v, want ≥ 0.8", d)
	}
}
