package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"amid/plugins/compute"
	"amid/plugins/engine"
	"amid/plugins/segmentation/plan"
)

// calibration is what Plan measured on this machine: the rate, in floating-point
// operations a second, at which the engine trains a reference 2D and 3D U-Net, with the
// compute identity it measured under. The host keeps it (protocol.PlanRequest.Calibration)
// so that later runs on the same machine and identity skip the measurement.
type calibration struct {
	Compute compute.Identity   `json:"compute"`
	Rate    map[string]float64 `json:"flops_per_second"` // "2d", "3d"
	// Overhead is the time of a step besides its convolutions (loading the batch, the
	// loss, the optimizer), in seconds, measured with the rate.
	Overhead map[string]float64 `json:"overhead_seconds"`
}

// The reference U-Nets the rate is measured on: nnU-Net's topology at a quarter of its
// widths, sized so that a step takes a fraction of a second on a 2-core CPU, and
// calibrateSteps timed steps after one warm-up.
var calibrationNets = map[string]struct {
	patch [3]int
	batch int
	cfg   engine.UNetConfig
}{
	"2d": {[3]int{1, 96, 96}, 4, engine.UNetConfig{In: 1, Classes: 4, Widths: []int{8, 16, 32, 64}, Convs: 2, Norm: engine.Instance, Slope: 0.01, DeepSupervision: true,
		Kernels: [][3]int{{1, 3, 3}, {1, 3, 3}, {1, 3, 3}, {1, 3, 3}}, Pools: [][3]int{{1, 2, 2}, {1, 2, 2}, {1, 2, 2}}}},
	"3d": {[3]int{16, 48, 48}, 2, engine.UNetConfig{In: 1, Classes: 4, Widths: []int{8, 16, 32, 64}, Convs: 2, Norm: engine.Instance, Slope: 0.01, DeepSupervision: true,
		Kernels: [][3]int{{3, 3, 3}, {3, 3, 3}, {3, 3, 3}, {3, 3, 3}}, Pools: [][3]int{{2, 2, 2}, {2, 2, 2}, {1, 2, 2}}}},
}

const calibrateSteps = 3

// calibrateTime bounds the measurement: the host waits 30 s for Plan (its supervisor's
// call deadline), which also opens the device and plans the lanes. Each reference net has
// its share; a step past it ends the timing of a size (after at least one timed step),
// and a device too slow to time the larger size in what is left (lavapipe, a CPU behind
// Vulkan, takes seconds a step) is rated on the smaller alone, its overhead taken as
// zero (lavapipe: about 14 s on 2 cores, at 0.4 GFLOP/s). The CPU measures both sizes
// well within it (1.6 s on 2 cores, at 25 GFLOP/s).
const calibrateTime = 16 * time.Second

// calibrate returns the calibration of the request's bytes when it was measured under be's
// compute identity (the device the lanes are planned for), else measures it there (a few
// seconds) and says so.
func calibrate(prev []byte, be engine.Backend) (calibration, bool, error) {
	id := be.Identity()
	var c calibration
	if len(prev) > 0 && json.Unmarshal(prev, &c) == nil && c.Compute == id && c.Rate["2d"] > 0 && c.Rate["3d"] > 0 {
		return c, false, nil
	}
	c = calibration{Compute: id, Rate: map[string]float64{}, Overhead: map[string]float64{}}
	share := calibrateTime / time.Duration(len(calibrationNets))
	for name, ref := range calibrationNets {
		// Two sizes of the same net: the step time's slope over the operations is the
		// rate, its intercept the per-step overhead.
		end := time.Now().Add(share)
		small := ref.patch
		small[1], small[2] = small[1]/2, small[2]/2
		t1, err := timeSteps(be, ref.cfg, ref.batch, small, end)
		if err != nil {
			return c, false, err
		}
		f1, f2 := plan.Flops(ref.cfg, ref.batch, small), plan.Flops(ref.cfg, ref.batch, ref.patch)
		if warmAndOne := 2 * t1 * f2 / f1; warmAndOne > time.Until(end).Seconds() {
			c.Rate[name], c.Overhead[name] = f1/t1, 0
			continue
		}
		t2, err := timeSteps(be, ref.cfg, ref.batch, ref.patch, end)
		if err != nil {
			return c, false, err
		}
		rate := (f2 - f1) / max(t2-t1, 1e-6)
		if t2 <= t1 {
			rate = f2 / t2
		}
		c.Rate[name] = rate
		c.Overhead[name] = max(t2-f2/rate, 0)
	}
	return c, true, nil
}

// timeSteps is the median time of calibrateSteps training steps of cfg on n random
// patches on be, after a warm-up step, each as a lane trains it (an engine.Trainer's step);
// of fewer (at least one) when a step ends after end.
func timeSteps(be engine.Backend, cfg engine.UNetConfig, n int, patch [3]int, end time.Time) (float64, error) {
	u, err := engine.BuildUNet(be, cfg, n, patch, 1)
	if err != nil {
		return 0, fmt.Errorf("calibration: %w", err)
	}
	defer u.Free()
	opt := engine.NewAdamW(be, u.Params(), defaultLR, defaultDecay)
	tr, err := engine.NewTrainer(u.Net, opt, engine.TrainOptions{Clip: clipNorm})
	if err != nil {
		return 0, fmt.Errorf("calibration: %w", err)
	}
	defer tr.Close()
	r := rand.New(rand.NewPCG(1, 2))
	lab := make([]int32, n*patch[0]*patch[1]*patch[2])
	var times []float64
	for i := range calibrateSteps + 1 {
		for j := range u.Input.Data {
			u.Input.Data[j] = float32(r.NormFloat64())
		}
		for j := range lab {
			lab[j] = int32(r.IntN(cfg.Classes))
		}
		began := time.Now()
		if err := u.SetLabels(lab); err != nil {
			return 0, fmt.Errorf("calibration: %w", err)
		}
		if _, err := tr.Step(defaultLR); err != nil {
			return 0, fmt.Errorf("calibration: %w", err)
		}
		if i > 0 {
			times = append(times, time.Since(began).Seconds())
		}
		if i > 0 && time.Now().After(end) {
			break
		}
	}
	for i := 1; i < len(times); i++ { // median of a few: insertion sort
		for j := i; j > 0 && times[j] < times[j-1]; j-- {
			times[j], times[j-1] = times[j-1], times[j]
		}
	}
	return times[len(times)/2], nil
}

// stepSeconds is the engine's cost model under c: a U-Net's operations over the rate of its
// kind (2D or 3D patches), and the per-step overhead.
func (c calibration) stepSeconds(cfg engine.UNetConfig, n int, patch [3]int) float64 {
	kind := "3d"
	if patch[0] == 1 {
		kind = "2d"
	}
	return plan.Flops(cfg, n, patch)/c.Rate[kind] + c.Overhead[kind]
}
