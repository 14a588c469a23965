package main

import (
	"context"
	"testing"

	"amid/plugins/internal/device/devicetest"
	"amid/plugins/protocol"
)

// TestDevice trains the cnn lane on the test's Vulkan device (lavapipe in CI) for a few
// steps with validation, and predicts with the checkpoint there and on the CPU: the
// classes agree (compute.Table: categorical outputs equal).
func TestDevice(t *testing.T) {
	devicetest.Use(t, "")
	cases := volumeCases(t, 4, 4)
	cfg := []byte(`{"lane":"cnn","grid":[8,8,8],"widths":[2,4],"batch":2,"steps":4,"steps_per_epoch":2,"report_every":2}`)
	res, err := cls{}.Train(context.Background(), &protocol.TrainRequest{Task: task(t), Config: cfg, Train: cases[:3], Validation: cases[3:], WorkDir: t.TempDir(), Seed: 5},
		func(*protocol.Progress) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	devicetest.Vulkan(t, "training", res.Compute)
	t.Log(devicetest.CrossDevice(t, cls{}, task(t), res.Checkpoint, cases))
}
