package main

import (
	"context"
	"strings"
	"testing"

	"amid/plugins/internal/device/devicetest"
	"amid/plugins/protocol"
)

// TestDevice trains the residual U-Net on the test's Vulkan device (lavapipe in CI) for a
// few steps with validation, and restores images with it there and on the CPU, with
// sliding windows (on the device, the windows' sums stay there) and on whole images:
// the images agree within compute.Table (1e-3 of the value range).
func TestDevice(t *testing.T) {
	devicetest.Use(t, "")
	cases := usCases(t, 4, 3)
	for _, inference := range []string{"windows", "whole"} {
		t.Run(inference, func(t *testing.T) {
			cfg := tiny(4, 2, 2)
			if inference == "whole" {
				cfg = []byte(strings.Replace(string(cfg), `"lane":"base"`, `"lane":"base","inference":"whole"`, 1))
			}
			res, err := enh{}.Train(context.Background(), &protocol.TrainRequest{Task: task(), Config: cfg, Train: cases[:3], Validation: cases[3:], WorkDir: t.TempDir(), Seed: 5}, noProgress)
			if err != nil {
				t.Fatal(err)
			}
			devicetest.Vulkan(t, "training", res.Compute)
			t.Log(devicetest.CrossDevice(t, enh{}, task(), res.Checkpoint, cases))
		})
	}
}
