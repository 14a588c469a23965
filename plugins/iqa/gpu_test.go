package main

import (
	"context"
	"strings"
	"testing"

	"amid/plugins/internal/device/devicetest"
	"amid/plugins/protocol"
)

// TestDevice trains two folds on the test's Vulkan device (lavapipe in CI) with
// validation, and predicts with the checkpoint there and on the CPU: the scores agree
// within compute.Table (1e-4 of the score range).
func TestDevice(t *testing.T) {
	devicetest.Use(t, "")
	cases := sliceCases(t, 5, 4)
	res, err := iqa{}.Train(context.Background(), &protocol.TrainRequest{Task: task(t), Config: tiny(4, 2, 2, `,"folds":2`), Train: cases[:4], Validation: cases[4:], WorkDir: t.TempDir(), Seed: 5},
		func(*protocol.Progress) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	devicetest.Vulkan(t, "training", res.Compute)
	t.Log(devicetest.CrossDevice(t, iqa{}, task(t), res.Checkpoint, cases))
}

// TestDeviceLost loses the device at its twelfth submission, in the second fold (the
// first fold's build, upload, 4 steps, epoch checkpoint, download and held-out
// predictions take the first ten or so): the lane goes on on the CPU from its newest
// checkpoint and ends with both folds trained.
func TestDeviceLost(t *testing.T) {
	devicetest.Use(t, "lost-after=12")
	var msgs []string
	res, err := iqa{}.Train(context.Background(), &protocol.TrainRequest{Task: task(t), Config: tiny(4, 2, 1, `,"folds":2`), Train: sliceCases(t, 4, 6), WorkDir: t.TempDir(), Seed: 5},
		func(p *protocol.Progress) error {
			if p.Message != "" {
				msgs = append(msgs, p.Message)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if all := strings.Join(msgs, "\n"); !strings.Contains(all, "was lost while training") || !strings.Contains(all, "goes on on the CPU from checkpoint") {
		t.Errorf("messages %q", msgs)
	}
	if res.Steps != 8 || res.Compute.Device != "cpu" {
		t.Errorf("ended at step %d computed with %v, want both folds' 8 steps on the CPU", res.Steps, res.Compute)
	}
}
