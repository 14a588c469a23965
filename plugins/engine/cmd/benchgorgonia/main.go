//go:build linux

// Command benchgorgonia times one training step of the reference 2D U-Net in the engine
// and in gorgonia (v0.9.18, the library the product brief first named), side by side in
// one run, each in its own process so that peak memory belongs to one library. It lives in
// its own module so that gorgonia stays out of AMID's go.mod:
//
//	cd plugins/engine/cmd/benchgorgonia && go run . [-steps 3] [-batch 8] [-size 128]
//	go run . -impl gorgonia -cpuprofile FILE    (one library, with a CPU profile)
//
// The network is the reference 2D U-Net of cmd/benchengine (internal/refnets: batch 8 of
// 1×128², widths 32/64/128/256, two 3×3 convolutions with normalisation and LeakyReLU
// 0.01 per level, 2×2 max-pooling down) with two substitutions on both sides, because
// gorgonia has neither instance norm nor transposed convolution: batch norm in place of
// instance norm, and nearest-neighbour upsampling by 2 followed by a 3×3 convolution in
// place of the transposed convolution. The head is a 1×1 convolution to 2 classes, the loss softmax
// cross-entropy, the update Adam. Both sides multiply matrices with the same OpenBLAS
// (gorgonia's Sgemm is routed to the engine's cblas_sgemm), single-threaded.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"time"

	"amid/assets/measure"
	"amid/plugins/engine"
	"amid/plugins/engine/internal/refnets"
)

// model is the benchmarked network's size.
type model struct {
	Batch, Size, Classes int
	Widths               []int
}

// stepper is one library's network, ready to train.
type stepper interface {
	// step takes one training step and returns its loss.
	step() (float64, error)
	params() int
}

// result is what one measuring process prints as its last line.
type result struct {
	Impl      string  `json:"impl"`
	StepMS    float64 `json:"step_ms"`
	CPUMS     float64 `json:"cpu_ms"`
	PeakMiB   float64 `json:"peak_mib"`
	AllocMiB  float64 `json:"alloc_mib_per_step"`
	Params    int     `json:"params"`
	FirstLoss float64 `json:"first_loss"`
	LastLoss  float64 `json:"last_loss"`
}

func main() {
	if err := engine.EnsureCoreType(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ref, _ := refnets.Find("2d")
	impl := flag.String("impl", "", "measure one library in this process (engine or gorgonia)")
	steps := flag.Int("steps", 3, "timed steps after one warm-up step (the median is reported)")
	batch := flag.Int("batch", ref.Batch, "samples per batch")
	size := flag.Int("size", ref.Patch[2], "image side in pixels (a multiple of 8)")
	profile := flag.String("cpuprofile", "", "with -impl: write a CPU profile of the timed steps to this file")
	flag.Parse()
	m := model{Batch: *batch, Size: *size, Classes: ref.Classes, Widths: ref.Widths}
	var err error
	if *impl != "" {
		err = measureImpl(*impl, m, *steps, *profile)
	} else {
		err = compare(m, *steps)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchgorgonia:", err)
		os.Exit(1)
	}
}

// batchData is the benchmark's batch: the image (N×1×S×S) and each pixel's class, the
// same for both libraries.
func batchData(m model) ([]float32, []int32) {
	r := rand.New(rand.NewPCG(2, 2))
	x := make([]float32, m.Batch*m.Size*m.Size)
	lab := make([]int32, len(x))
	for i := range x {
		x[i] = float32(r.NormFloat64())
		lab[i] = int32(r.IntN(m.Classes))
	}
	return x, lab
}

func measureImpl(impl string, m model, steps int, profile string) error {
	var (
		s   stepper
		err error
	)
	switch impl {
	case "engine":
		s, err = newEngine(m)
	case "gorgonia":
		s, err = newGorgonia(m)
	default:
		err = fmt.Errorf("no library %q", impl)
	}
	if err != nil {
		return err
	}
	res := result{Impl: impl, Params: s.params()}
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var times, cpus []float64
	var ms runtime.MemStats
	var alloc uint64
	for i := range steps + 1 {
		runtime.ReadMemStats(&ms)
		a, t, c := ms.TotalAlloc, time.Now(), measure.CPU().Seconds()
		loss, err := s.step()
		if err != nil {
			return err
		}
		if i == 0 {
			res.FirstLoss = loss
			continue
		}
		times = append(times, time.Since(t).Seconds())
		cpus = append(cpus, measure.CPU().Seconds()-c)
		runtime.ReadMemStats(&ms)
		alloc += ms.TotalAlloc - a
		res.LastLoss = loss
	}
	res.StepMS, res.CPUMS = 1000*measure.Median(times), 1000*measure.Median(cpus)
	res.AllocMiB = float64(alloc) / float64(steps) / (1 << 20)
	res.PeakMiB = measure.PeakMiB()
	return json.NewEncoder(os.Stdout).Encode(res)
}

func compare(m model, steps int) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("2D U-Net, batch %d of 1×%d², widths %v, batch norm, upsampling + 3×3 convolution up, %d timed steps\n",
		m.Batch, m.Size, m.Widths, steps)
	fmt.Printf("%-9s %9s %9s %9s %10s %14s %9s  %s\n", "library", "step ms", "CPU ms", "samples/s", "peak MiB", "alloc MiB/step", "params", "loss first → last")
	var rs []result
	for _, impl := range []string{"engine", "gorgonia"} {
		cmd := exec.Command(exe, "-impl", impl, "-steps", strconv.Itoa(steps), "-batch", strconv.Itoa(m.Batch), "-size", strconv.Itoa(m.Size))
		r, err := run(cmd)
		if err != nil {
			return err
		}
		fmt.Printf("%-9s %9.0f %9.0f %9.2f %10.0f %14.1f %9d  %.4f → %.4f\n", r.Impl, r.StepMS, r.CPUMS,
			float64(m.Batch)/(r.StepMS/1000), r.PeakMiB, r.AllocMiB, r.Params, r.FirstLoss, r.LastLoss)
		rs = append(rs, r)
	}
	e, g := rs[0], rs[1]
	if e.Params != g.Params {
		return fmt.Errorf("the networks differ: %d parameters in the engine, %d in gorgonia", e.Params, g.Params)
	}
	fmt.Printf("engine vs gorgonia: %.1f× the speed (%.1f× by CPU time), %.2f× the peak memory\n",
		g.StepMS/e.StepMS, g.CPUMS/e.CPUMS, e.PeakMiB/g.PeakMiB)
	return nil
}

// run starts a measuring process and returns its result.
func run(cmd *exec.Cmd) (result, error) {
	var r result
	return r, refnets.RunJSON(cmd, &r)
}
