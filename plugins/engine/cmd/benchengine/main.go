// Command benchengine times one training step of the reference 2D and 3D U-Nets in the
// engine and in PyTorch side by side: samples/s, their ratio, GFLOP/s against the
// measured SGEMM peak, and peak memory. Each measurement runs in its own process so that
// peak memory belongs to one model.
//
//	go run ./plugins/engine/cmd/benchengine [-steps 3] [-torch /usr/bin/python3]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"time"

	"amid/assets/measure"
	"amid/plugins/engine"
	"amid/plugins/engine/internal/refnets"
)

// result is what one measuring process prints as its last line.
type result struct {
	Impl     string  `json:"impl"`
	Model    string  `json:"model"`
	StepMS   float64 `json:"step_ms"`
	CPUMS    float64 `json:"cpu_ms"`
	PeakMiB  float64 `json:"peak_mib"`
	BaseMiB  float64 `json:"base_mib"`
	Samples  float64 `json:"samples_per_s"`
	Backend  string  `json:"backend,omitempty"`
	GFlops   float64 `json:"gflop,omitempty"`
	PeakGEMM float64 `json:"sgemm_gflops,omitempty"`
}

func main() {
	if err := engine.EnsureCoreType(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	one := flag.String("model", "", "measure one model in this process (2d or 3d)")
	steps := flag.Int("steps", 3, "timed steps (the median is reported)")
	threads := flag.Int("threads", 2, "PyTorch threads and OpenBLAS threads of the SGEMM peak")
	workers := flag.Int("workers", 0, "engine loop workers (0: GOMAXPROCS)")
	python := flag.String("torch", "/usr/bin/python3", "Python with PyTorch; empty to skip")
	layers := flag.Bool("layers", false, "with -model: also print the engine's time per layer (to stderr)")
	flag.Parse()
	if *one != "" {
		if err := measureModel(*one, *steps, *threads, *workers, *layers); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := compare(*steps, *threads, *workers, *python); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func find(name string) (refnets.Model, error) {
	if m, ok := refnets.Find(name); ok {
		return m, nil
	}
	return refnets.Model{}, fmt.Errorf("benchengine: no model %q", name)
}

// sgemmPeak measures SGEMM of 2048² matrices on the given number of OpenBLAS threads.
func sgemmPeak(threads int) float64 {
	be := engine.NewCPU(0)
	engine.SetBLASThreads(threads)
	defer engine.SetBLASThreads(1)
	const n = 2048
	r := rand.New(rand.NewPCG(1, 1))
	a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	best := 0.0
	for range 3 {
		t := time.Now()
		be.Sgemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n)
		best = max(best, 2*n*n*n/time.Since(t).Seconds()/1e9)
	}
	return best
}

func measureModel(name string, steps, threads, workers int, layers bool) error {
	m, err := find(name)
	if err != nil {
		return err
	}
	peak := sgemmPeak(threads)
	base := measure.RSSMiB()
	be := engine.NewCPU(workers)
	u, err := engine.BuildUNet(be, m.Config(), m.Batch, m.Patch, 1)
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(2, 2))
	for i := range u.Input.Data {
		u.Input.Data[i] = float32(r.NormFloat64())
	}
	lab := make([]int32, m.Batch*u.Input.Shape.Spatial())
	for i := range lab {
		lab[i] = int32(r.IntN(m.Classes))
	}
	if err := u.Loss.SetLabels(lab); err != nil {
		return err
	}
	opt := engine.NewAdamW(be, u.Params(), 1e-3, 1e-2)
	debug.SetGCPercent(-1) // a step allocates nothing; keep the collector out of the timings
	var times, cpus []float64
	for i := range steps + 1 {
		t, c := time.Now(), measure.CPU().Seconds()
		u.Forward()
		u.Backward()
		engine.ClipGradNorm(u.Params(), 12)
		opt.Step()
		if i > 0 {
			times = append(times, time.Since(t).Seconds())
			cpus = append(cpus, measure.CPU().Seconds()-c)
		}
	}
	if layers {
		u.Profile(true)
		for range steps {
			u.Forward()
			u.Backward()
		}
		printLayers(u.Profiled(), steps)
		u.Profile(false)
	}
	runtime.KeepAlive(u)
	med := measure.Median(times)
	return json.NewEncoder(os.Stdout).Encode(result{Impl: "engine", Model: name, StepMS: 1000 * med,
		CPUMS:   1000 * measure.Median(cpus),
		PeakMiB: measure.PeakMiB(), BaseMiB: base, Samples: float64(m.Batch) / med, Backend: be.Name(),
		GFlops: u.Flops() / 1e9, PeakGEMM: peak})
}

// printLayers writes the layers' mean forward and backward milliseconds per step to
// stderr, the slowest first, with their share of the whole.
func printLayers(prof []engine.LayerTime, steps int) {
	var total time.Duration
	for _, p := range prof {
		total += p.Forward + p.Backward
	}
	sort.SliceStable(prof, func(i, j int) bool {
		return prof[i].Forward+prof[i].Backward > prof[j].Forward+prof[j].Backward
	})
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(steps) }
	fmt.Fprintf(os.Stderr, "%9s %9s %6s  %s\n", "fwd ms", "bwd ms", "share", "layer")
	for _, p := range prof {
		if t := p.Forward + p.Backward; t > 0 {
			fmt.Fprintf(os.Stderr, "%9.1f %9.1f %5.1f%%  %s\n", ms(p.Forward), ms(p.Backward), 100*float64(t)/float64(total), p.Layer)
		}
	}
	fmt.Fprintf(os.Stderr, "%9s %9.1f ms per step (forward + backward, without the optimizer)\n", "total", ms(total))
}

// run starts a measuring process and returns its result.
func run(cmd *exec.Cmd) (result, error) {
	var r result
	if err := refnets.RunJSON(cmd, &r); err != nil {
		return result{}, fmt.Errorf("benchengine: %w", err)
	}
	return r, nil
}

func compare(steps, threads, workers int, python string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	script := ""
	if python != "" {
		script = refnets.TorchScript()
	}
	fmt.Printf("%-4s %-7s %9s %9s %9s %8s %8s %10s  %s\n", "net", "impl", "step ms", "CPU ms", "samples/s", "GFLOP/s", "of peak", "peak MiB", "notes")
	for _, m := range refnets.Models {
		e, err := run(exec.Command(exe, "-model", m.Name, "-steps", strconv.Itoa(steps),
			"-threads", strconv.Itoa(threads), "-workers", strconv.Itoa(workers)))
		if err != nil {
			return err
		}
		gf := e.GFlops / (e.StepMS / 1000)
		fmt.Printf("%-4s %-7s %9.0f %9.0f %9.2f %8.0f %7.0f%% %10.0f  %s; SGEMM 2048² peak %.0f GFLOP/s; %.1f GFLOP per step\n",
			m.Name, "engine", e.StepMS, e.CPUMS, e.Samples, gf, 100*gf/e.PeakGEMM, e.PeakMiB, e.Backend, e.PeakGEMM, e.GFlops)
		if script == "" {
			continue
		}
		spec, _ := json.Marshal(m)
		t, err := run(exec.Command(python, script, "--spec", string(spec), "--steps", strconv.Itoa(steps),
			"--threads", strconv.Itoa(threads)))
		if err != nil {
			return err
		}
		tg := e.GFlops / (t.StepMS / 1000)
		fmt.Printf("%-4s %-7s %9.0f %9.0f %9.2f %8.0f %7.0f%% %10.0f  %s; RSS after import %.0f MiB\n",
			m.Name, "pytorch", t.StepMS, t.CPUMS, t.Samples, tg, 100*tg/e.PeakGEMM, t.PeakMiB, t.Backend, t.BaseMiB)
		fmt.Printf("%-4s engine vs pytorch: %.2f× the speed (%.2f× by CPU time), %.2f× the peak memory\n",
			m.Name, t.StepMS/e.StepMS, t.CPUMS/e.CPUMS, e.PeakMiB/t.PeakMiB)
	}
	return nil
}
