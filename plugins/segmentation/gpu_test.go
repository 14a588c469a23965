package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/plugins/compute"
	"amid/plugins/compute/predictions"
	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/internal/device"
	"amid/plugins/internal/device/devicetest"
	"amid/plugins/plugintest"
	"amid/plugins/protocol"
	"amid/plugins/segmentation/plan"
	"amid/plugins/taskspec"
)

// The segmentation plugin on a Vulkan device: Mesa's lavapipe in CI, tiny networks
// (package devicetest).

// messages trains req in this process and returns the result and the progress messages.
func messages(t *testing.T, req *protocol.TrainRequest) (*protocol.TrainResult, []string, error) {
	t.Helper()
	var msgs []string
	var prev int64
	res, err := seg{}.Train(context.Background(), req, func(p *protocol.Progress) error {
		if err := p.Validate(prev); err != nil { // as the host checks them
			return err
		}
		prev = p.Step
		if p.Message != "" {
			msgs = append(msgs, p.Message)
		}
		return nil
	})
	return res, msgs, err
}

// TestDeviceCrossDevice trains the tiny 2D U-Net on the Vulkan device through the plugin's
// process, twice (the same seed gives the same checkpoint, byte for byte), predicts with it
// there and, in a second process set to the CPU, on the CPU: the label maps agree within
// compute.Table (the one tolerance table), and each response names its device.
func TestDeviceCrossDevice(t *testing.T) {
	setting := devicetest.Setting(t)
	cases := discCases(t, 4, 11)
	start := func(dev string) protocol.Plugin {
		t.Setenv(compute.EnvDevice, dev)
		return plugintest.Start(t, binaryVulkan)
	}
	gpu := start(setting)
	d, err := gpu.Describe(context.Background(), &protocol.DescribeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d.Compute.Device, "vulkan ") || len(d.Hardware) < 2 {
		t.Fatalf("described with %s=%s: compute %v, hardware %q", compute.EnvDevice, setting, d.Compute, d.Hardware)
	}
	var sums []string
	var res *protocol.TrainResult
	for range 2 {
		req := &protocol.TrainRequest{Task: protocol.Task{Kind: "segmentation", Dims: 2}, Config: tiny(20, 10, 10), Train: cases[:3], WorkDir: t.TempDir(), Seed: 7}
		if res, err = gpu.Train(context.Background(), req, func(*protocol.Progress) error { return nil }); err != nil {
			t.Fatal(err)
		}
		sums = append(sums, res.SHA256)
	}
	if res.Compute != d.Compute {
		t.Errorf("trained with %v, described %v", res.Compute, d.Compute)
	}
	if sums[0] != sums[1] {
		t.Errorf("the same seed on the same device gave checkpoints %s and %s", sums[0], sums[1])
	}
	predict := func(p protocol.Plugin) (*protocol.PredictResponse, string) {
		out := t.TempDir()
		pr, err := p.Predict(context.Background(), &protocol.PredictRequest{Checkpoint: res.Checkpoint, Cases: cases, OutputDir: out})
		if err != nil {
			t.Fatal(err)
		}
		return pr, out
	}
	prGPU, outGPU := predict(gpu)
	prCPU, outCPU := predict(start("cpu"))
	if prGPU.Compute != d.Compute || prCPU.Compute.Device != "cpu" {
		t.Errorf("predicted with %v and %v", prGPU.Compute, prCPU.Compute)
	}
	a := compute.NewAgreement(compute.Table)
	for _, c := range cases {
		f := c.ID + ".nii.gz"
		if err := predictions.Compare(a, &taskspec.Spec{Kind: taskspec.Segmentation}, f, filepath.Join(outGPU, f), filepath.Join(outCPU, f)); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("trained on %s; predicted there and on the CPU: %s", d.Compute.Device, a.Summary())
	if !a.OK() {
		t.Errorf("the CPU's predictions of a checkpoint trained on %s: %v", d.Compute.Device, a.Problems)
	}
}

// trainingUsed is the device-local memory (buffers, not blocks) training the tiny
// configuration at batch n takes on the test's device, sized without it.
func trainingUsed(t *testing.T, n int) int64 {
	t.Helper()
	info, err := engine.ChooseDevice(devicetest.Setting(t))
	if err != nil {
		t.Fatal(err)
	}
	var c config
	if err := json.Unmarshal(tiny(1, 1, 1), &c); err != nil {
		t.Fatal(err)
	}
	v := engine.NewSizer(*info)
	u, err := engine.BuildUNet(v, c.net(1), n, c.Patch, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.NewTrainer(u.Net, engine.NewAdamW(v, u.Params(), 1e-3, 0), engine.TrainOptions{Clip: clipNorm}); err != nil {
		t.Fatal(err)
	}
	_, used := v.Device().Allocated()
	return used
}

// TestDeviceOutOfMemory caps the device's memory (AMID_VK_FAULT): between what batch 2
// and batch 4 need, the lane is re-planned to batch 2 once, says so, and trains on the
// device; below what batch 2 needs it fails with one sentence naming the device.
func TestDeviceOutOfMemory(t *testing.T) {
	used2, used4 := trainingUsed(t, 2), trainingUsed(t, 4)
	cases := discCases(t, 2, 3)
	req := func() *protocol.TrainRequest {
		return &protocol.TrainRequest{Task: protocol.Task{Kind: "segmentation", Dims: 2}, Config: tiny(2, 2, 1), Train: cases, WorkDir: t.TempDir(), Seed: 1}
	}
	devicetest.Use(t, fmt.Sprintf("mem-cap=%d", (used2+used4)/2))
	res, msgs, err := messages(t, req())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(msgs, "\n"), "re-planned smaller (batch 4 → 2)") || !strings.HasPrefix(res.Compute.Device, "vulkan") {
		t.Errorf("messages %q, computed with %v", msgs, res.Compute)
	}
	man, err := ckpt.ReadManifest(res.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	var s saved
	if err := json.Unmarshal(man.Train, &s); err != nil || s.Config.Batch != 2 {
		t.Errorf("the checkpoint records batch %d (%v), want the re-planned 2", s.Config.Batch, err)
	}

	devicetest.Use(t, fmt.Sprintf("mem-cap=%d", used2-1))
	_, _, err = messages(t, req())
	if err == nil {
		t.Fatal("a lane that fits no plan trained")
	}
	t.Log(err)
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "even re-planned smaller (batch 4 → 2)") || !strings.Contains(msg, "vulkan:") {
		t.Errorf("the failure is not one sentence naming the device and the re-plan: %q", msg)
	}
}

// TestDeviceLost loses the device at its seventh submission (AMID_VK_FAULT): the build,
// the trainer's upload, steps 1 and 2, the epoch checkpoint's download, step 3, step 4.
// The lane says so and goes on on the CPU from the step-2 checkpoint to its last step,
// its progress never going back.
func TestDeviceLost(t *testing.T) {
	devicetest.Use(t, "lost-after=7")
	cases := discCases(t, 2, 4)
	res, msgs, err := messages(t, &protocol.TrainRequest{Task: protocol.Task{Kind: "segmentation", Dims: 2}, Config: tiny(6, 2, 1), Train: cases, WorkDir: t.TempDir(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(msgs, "\n")
	t.Log(all)
	if !strings.Contains(all, "was lost while training") || !strings.Contains(all, "goes on on the CPU from checkpoint "+filepath.Join(filepath.Dir(res.Checkpoint), "epoch-0001.ckpt")) {
		t.Errorf("messages %q", msgs)
	}
	if res.Steps != 6 || res.Compute.Device != "cpu" {
		t.Errorf("ended at step %d computed with %v, want step 6 on the CPU", res.Steps, res.Compute)
	}
}

// TestNoLoader starts the plugin with a Vulkan loader that does not exist and the setting
// "vulkan": it describes the CPU, trains there and says why in its progress.
func TestNoLoader(t *testing.T) {
	t.Setenv(compute.EnvDevice, "vulkan")
	t.Setenv(compute.EnvVulkanLoader, filepath.Join(t.TempDir(), "libvulkan.so.1"))
	p := plugintest.Start(t, binaryVulkan)
	d, err := p.Describe(context.Background(), &protocol.DescribeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Compute.Device != "cpu" {
		t.Errorf("without a loader it describes %v", d.Compute)
	}
	var msgs []string
	res, err := p.Train(context.Background(), &protocol.TrainRequest{Task: protocol.Task{Kind: "segmentation", Dims: 2}, Config: tiny(2, 2, 1),
		Train: discCases(t, 2, 5), WorkDir: t.TempDir(), Seed: 1}, func(pr *protocol.Progress) error {
		if pr.Message != "" {
			msgs = append(msgs, pr.Message)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Compute.Device != "cpu" || len(msgs) != 1 || !strings.Contains(msgs[0], "no Vulkan loader") || !strings.Contains(msgs[0], "the CPU computes") {
		t.Errorf("computed with %v, messages %q", res.Compute, msgs)
	}
	if _, err := os.Stat(res.Checkpoint); err != nil {
		t.Error(err)
	}
}

// TestDevicePlan plans the CT-like fingerprint for the test's Vulkan device as if it had
// 256 MiB (an injected cap) and as it is (lavapipe: 2 GiB): every lane names the device
// and reports the engine's count of training it there (engine.TrainingBytes), within
// device.BudgetFraction of the memory; the smaller device gets smaller lanes.
func TestDevicePlan(t *testing.T) {
	fp, err := os.ReadFile(filepath.Join("plan", "testdata", "ct_like.json"))
	if err != nil {
		t.Fatal(err)
	}
	planFor := func(faults string) map[string]protocol.Candidate {
		devicetest.Use(t, faults)
		info, err := engine.ChooseDevice(devicetest.Setting(t))
		if err != nil {
			t.Fatal(err)
		}
		r, err := seg{}.Plan(context.Background(), &protocol.PlanRequest{Fingerprint: fp, Task: protocol.Task{Kind: "segmentation", Dims: 3}})
		if err != nil {
			t.Fatal(err)
		}
		budget := device.Budget(*info)
		out := map[string]protocol.Candidate{}
		for _, c := range r.Candidates {
			cfg, err := parseConfig(c.Config)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %s", faults, c.Rationale)
			if c.Name == plan.LaneForest {
				// The forest computes on the CPU whatever the device.
				if c.Device != "cpu" || c.MemoryBytes <= 0 {
					t.Errorf("%s lane forest planned for %q, %d bytes; want the CPU", faults, c.Device, c.MemoryBytes)
				}
				continue
			}
			if !strings.HasPrefix(c.Device, "vulkan:") || c.MemoryBytes <= 0 || c.MemoryBytes > budget {
				t.Errorf("%s lane %s planned for %q, %d bytes; the budget is %d", faults, c.Name, c.Device, c.MemoryBytes, budget)
			}
			if n := trainingBytes(*info, cfg.net(1), cfg.Batch, cfg.Patch); n != c.MemoryBytes {
				t.Errorf("%s lane %s reports %d bytes, the engine counts %d", faults, c.Name, c.MemoryBytes, n)
			}
			out[c.Name] = c
		}
		return out
	}
	small, large := planFor(fmt.Sprintf("mem-cap=%d", 256<<20)), planFor("")
	for name, c := range small {
		if c.MemoryBytes >= large[name].MemoryBytes {
			t.Errorf("lane %s: %d bytes planned with 256 MiB, %d with 2 GiB", name, c.MemoryBytes, large[name].MemoryBytes)
		}
	}
}
