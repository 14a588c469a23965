package main

import (
	"fmt"
	"math"
	"runtime"

	"amid/plugins/engine"
	"amid/plugins/engine/vk"
	"amid/plugins/internal/device"
	"amid/plugins/segmentation/plan"
)

var halveBatch = device.HalveBatch(func(c *config) *int { return &c.Batch })

// shrink re-plans a lane that did not fit its device's memory (package device calls it
// once): half the batch, or with a batch of one the patch halved along its longest axis
// that stays a multiple of the pooling (the network keeps its stages).
func shrink(c config) (config, string, bool) {
	if smaller, what, ok := halveBatch(c); ok {
		return smaller, what, true
	}
	d := [3]int{1, 1, 1}
	for _, p := range c.Pools {
		for a := range 3 {
			d[a] *= p[a]
		}
	}
	if len(c.Pools) == 0 { // the engine's default: 2 on every axis longer than one voxel
		for a := range 3 {
			if c.Patch[a] > 1 {
				d[a] = 1 << (len(c.Widths) - 1)
			}
		}
	}
	axis := -1
	for a := range 3 {
		if h := c.Patch[a] / 2; c.Patch[a]%2 == 0 && h >= d[a] && h%d[a] == 0 && (axis < 0 || c.Patch[a] > c.Patch[axis]) {
			axis = a
		}
	}
	if axis < 0 {
		return c, "", false
	}
	old := c.Patch
	c.Patch[axis] /= 2
	return c, fmt.Sprintf("patch %v → %v", old, c.Patch), true
}

// planBudget is the memory budget a lane is planned to on the device the setting chooses
// (package device): the device's share (device.Budget), each estimate the engine's count
// of training the network there (engine.TrainingBytes, nnU-Net's deep supervision
// included), or on the CPU the step budget of the host's memory. It returns the device
// planned for, nil for the CPU.
func planBudget() (plan.Budget, *vk.Info) {
	info := device.Planned()
	if info == nil {
		return plan.Budget{Bytes: hostBudget()}, nil
	}
	dev, bytes := *info, device.Budget(*info)
	return plan.Budget{Bytes: bytes, Estimate: func(cfg engine.UNetConfig, n int, patch [3]int) int64 {
		cfg.DeepSupervision = true // as fromPlan trains
		// A device holds at least what the host's estimate counts (1.3–1.4 times as much
		// for the lanes of TestDevicePlan): over the budget, that estimate already says no,
		// without sizing the network (the plan shrinks patches through many such).
		if e := plan.Estimate(cfg, n, patch); e > bytes {
			return e
		}
		return trainingBytes(dev, cfg, n, patch)
	}}, info
}

// trainingBytes is the device memory of training cfg on n patches on the device, the
// largest number when it cannot be built there (a buffer beyond the device's binding
// range).
func trainingBytes(info vk.Info, cfg engine.UNetConfig, n int, patch [3]int) int64 {
	b, err := engine.TrainingBytes(info, engine.TrainOptions{Clip: clipNorm}, func(be engine.Backend) (*engine.Net, engine.Optimizer, error) {
		u, err := engine.BuildUNet(be, cfg, n, patch, 1)
		if err != nil {
			return nil, nil, err
		}
		return u.Net, engine.NewAdamW(be, u.Params(), defaultLR, defaultDecay), nil
	})
	if err != nil {
		return math.MaxInt64
	}
	return b
}

// plannedBytes is the memory training c takes where it was planned: on the device, the
// engine's count; on the CPU, the plan's estimate of the host's memory.
func plannedBytes(info *vk.Info, c config, channels int) int64 {
	if info == nil {
		return plan.Estimate(c.net(channels), c.Batch, c.Patch)
	}
	return trainingBytes(*info, c.net(channels), c.Batch, c.Patch)
}

// calibrationBackend is where Plan measures the engine's rate: the device the lanes are
// planned for (info; nil for the CPU). A device that fails to open measures the CPU, and
// the plugin's log says so.
func calibrationBackend(info *vk.Info) engine.Backend {
	if info == nil {
		return engine.NewCPU(runtime.GOMAXPROCS(0))
	}
	return device.Open(0, device.ToLog)
}
