package main

import (
	"context"
	"math/rand/v2"
	"testing"

	"amid/plugins/internal/device/devicetest"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
)

// TestDevice trains each network lane for a few steps on the test's Vulkan device
// (lavapipe in CI): points (the focal loss as a host objective between two device
// programs), centernet boxes (a side input, the box loss on the host) and the 3D box
// segmentation; each checkpoint then predicts there and on the CPU, and the annotations
// agree within compute.Table (points and boxes within 0.01 pixel and 1e-4 of score, 3D
// boxes equal).
func TestDevice(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec *taskspec.Spec
		cfg  string
		gen  func(testing.TB, string, string, *rand.Rand) protocol.Case
	}{
		{"points", pointSpec(), pointsConfig(4, 2, 2), tileCase},
		{"centernet", boxSpec(), boxesConfig(2, 2, 2), panCase},
		{"box3d_seg", box3DSpec(), seg3DConfig(2, 2, 2), volCase},
	} {
		t.Run(tc.name, func(t *testing.T) {
			devicetest.Use(t, "")
			cases := gen(t, 3, 10, tc.gen)
			tk := task(t, tc.spec)
			res, err := det{}.Train(context.Background(), &protocol.TrainRequest{Task: tk, Config: []byte(tc.cfg), Train: cases, WorkDir: t.TempDir(), Seed: 5}, nop)
			if err != nil {
				t.Fatal(err)
			}
			devicetest.Vulkan(t, "training", res.Compute)
			t.Log(devicetest.CrossDevice(t, det{}, tk, res.Checkpoint, cases))
		})
	}
}
