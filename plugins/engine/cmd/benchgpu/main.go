// Command benchgpu times training steps of the engine's reference U-Nets
// (internal/refnets) on the CPU engine and on every Vulkan device found, side by side in
// one run: samples/s, the device's float32 peak (measured, as Vulkan reports no clock),
// the share of it the whole step and the convolutions alone reach (from the step's
// timestamps), the device memory the network holds, and, with -torch, PyTorch with CUDA
// on the same U-Net where the machine has it.
//
// A device that is a CPU (Mesa's lavapipe) gets a smoke test: the same networks shrunk
// (refnets.Model.Smoke), and the CPU engine on those too, so that the ratio compares like
// with like.
//
// With -train N it instead trains the 2D reference U-Net for N steps on every GPU (a short
// training run: random images whose label is "above 0.3", AdamW, clipping, poly decay),
// printing the loss as it falls and the samples/s.
//
//	go run ./plugins/engine/cmd/benchgpu [-steps 3] [-smoke] [-torch /usr/bin/python3] [-train N]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"amid/plugins/engine"
	"amid/plugins/engine/internal/refnets"
	"amid/plugins/engine/vk"
)

// row is one measurement.
type row struct {
	impl    string
	stepMS  float64
	samples float64
	gflop   float64 // per step
	peak    float64 // GFLOP/s, 0 when unknown
	convGF  float64 // GFLOP/s inside the convolutions
	memMiB  float64
	note    string
}

func main() {
	if err := engine.EnsureCoreType(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	steps := flag.Int("steps", 3, "timed steps")
	smoke := flag.Bool("smoke", false, "shrunk networks on every device (automatic when every device is a CPU)")
	python := flag.String("torch", "", "Python with PyTorch to time its CUDA step too (empty: skip)")
	train := flag.Int("train", 0, "train the 2D reference U-Net this many steps on each device instead")
	flag.Parse()
	var err error
	if *train > 0 {
		err = trainRun(*train, *smoke)
	} else {
		err = run(*steps, *smoke, *python)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(steps int, smoke bool, python string) error {
	devs, err := engine.VulkanDevices()
	if err != nil {
		fmt.Printf("no Vulkan (%v): the CPU engine alone\n", err)
	}
	var usable []vk.Info
	allCPU := true
	for _, d := range devs {
		if e := d.Usable(); e != nil {
			fmt.Printf("device %d %s: %v\n", d.Index, d.Name, e)
			continue
		}
		usable = append(usable, d)
		allCPU = allCPU && d.Type == vk.CPU
	}
	if len(usable) > 0 && allCPU && !smoke {
		fmt.Println("every Vulkan device is a CPU (lavapipe): a smoke test on shrunk networks")
		smoke = true
	}
	peaks := map[int]float64{}
	for _, d := range usable {
		v, err := engine.NewVulkan(d.Index, 0)
		if err != nil {
			return err
		}
		p, err := v.MeasurePeak()
		v.Close()
		if err != nil {
			return fmt.Errorf("device %d: measuring the peak: %w", d.Index, err)
		}
		peaks[d.Index] = p
		fmt.Printf("device %d: %s; measured float32 peak %.0f GFLOP/s\n", d.Index, d, p)
	}
	fmt.Printf("\n%-9s %-44s %9s %9s %8s %8s %10s %10s  %s\n", "net", "impl", "step ms", "samples/s", "GFLOP/s", "of peak", "conv GF/s", "device MiB", "notes")
	for _, m := range refnets.Models {
		if smoke {
			m = m.Smoke()
		}
		cpu, err := measure(engine.NewCPU(0), m, steps)
		if err != nil {
			return err
		}
		cpu.impl = "cpu: " + engine.NewCPU(0).Name()
		printRow(m, cpu)
		for _, d := range usable {
			v, err := engine.NewVulkan(d.Index, 0)
			if err != nil {
				return err
			}
			r, err := measure(v, m, steps)
			v.Close()
			if err != nil {
				r = row{note: err.Error()}
			}
			r.impl = fmt.Sprintf("vulkan %d: %s", d.Index, d.Name)
			r.peak = peaks[d.Index]
			printRow(m, r)
			if r.stepMS > 0 {
				fmt.Printf("%-9s vulkan %d vs cpu engine: %.2f× the samples/s\n", m.Name, d.Index, r.samples/cpu.samples)
			}
		}
		if python != "" && !smoke {
			t, err := torchCUDA(python, m, steps)
			if err != nil {
				fmt.Printf("%-9s %-44s %s\n", m.Name, "pytorch cuda", err)
				continue
			}
			t.gflop = cpu.gflop
			printRow(m, t)
		}
	}
	return nil
}

func printRow(m refnets.Model, r row) {
	share, conv := "", ""
	if r.peak > 0 && r.stepMS > 0 {
		share = fmt.Sprintf("%7.1f%%", 100*r.gflop/(r.stepMS/1000)/r.peak)
	}
	if r.convGF > 0 {
		conv = fmt.Sprintf("%.0f", r.convGF)
		if r.peak > 0 {
			conv += fmt.Sprintf(" (%.0f%%)", 100*r.convGF/r.peak)
		}
	}
	gf := 0.0
	if r.stepMS > 0 {
		gf = r.gflop / (r.stepMS / 1000)
	}
	fmt.Printf("%-9s %-44s %9.1f %9.2f %8.1f %8s %10s %10.0f  %s\n", m.Name, trim(r.impl, 44), r.stepMS, r.samples, gf, share, conv, r.memMiB, r.note)
}

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// measure times steps training steps (after one to warm up) of m on be, two in flight on
// a device, and reads the convolutions' time from the last step's timestamps.
func measure(be engine.Backend, m refnets.Model, steps int) (row, error) {
	u, err := engine.BuildUNet(be, m.Config(), m.Batch, m.Patch, 1)
	if err != nil {
		return row{}, err
	}
	defer u.Free()
	r := rand.New(rand.NewPCG(2, 2))
	for i := range u.Input.Data {
		u.Input.Data[i] = float32(r.NormFloat64())
	}
	lab := make([]int32, m.Batch*u.Input.Shape.Spatial())
	for i := range lab {
		lab[i] = int32(r.IntN(m.Classes))
	}
	if err := u.SetLabels(lab); err != nil {
		return row{}, err
	}
	tr, err := engine.NewTrainer(u.Net, engine.NewAdamW(be, u.Params(), 1e-3, 1e-2), engine.TrainOptions{Clip: 12, Profile: true})
	if err != nil {
		return row{}, err
	}
	defer tr.Close()
	if _, err := tr.Step(1e-3); err != nil {
		return row{}, err
	}
	t := time.Now()
	for range steps {
		if err := tr.Submit(1e-3); err != nil {
			return row{}, err
		}
		for tr.Pending() > 1 {
			if _, err := tr.Wait(); err != nil {
				return row{}, err
			}
		}
	}
	for tr.Pending() > 0 {
		if _, err := tr.Wait(); err != nil {
			return row{}, err
		}
	}
	sec := time.Since(t).Seconds() / float64(steps)
	res := row{stepMS: 1000 * sec, samples: float64(m.Batch) / sec, gflop: u.Flops() / 1e9, memMiB: float64(u.DeviceBytes()) / (1 << 20)}
	prof, err := tr.Profile()
	if err != nil {
		return res, err
	}
	var conv time.Duration
	for _, p := range prof {
		if strings.HasPrefix(p.Layer, "conv") {
			conv += p.Forward + p.Backward
		}
	}
	if conv > 0 {
		res.convGF = u.Flops() / conv.Seconds() / 1e9
		slow := append([]engine.LayerTime(nil), prof...)
		sort.Slice(slow, func(i, j int) bool { return slow[i].Forward+slow[i].Backward > slow[j].Forward+slow[j].Backward })
		res.note = fmt.Sprintf("slowest: %s %.1f ms", slow[0].Layer, float64((slow[0].Forward+slow[0].Backward).Microseconds())/1000)
	}
	runtime.KeepAlive(u)
	return res, nil
}

// torchCUDA times PyTorch's step of m on CUDA with testdata/torch_bench.py.
func torchCUDA(python string, m refnets.Model, steps int) (row, error) {
	spec, _ := json.Marshal(m)
	var t struct {
		StepMS  float64 `json:"step_ms"`
		Samples float64 `json:"samples_per_s"`
		Backend string  `json:"backend"`
	}
	cmd := exec.Command(python, refnets.TorchScript(), "--spec", string(spec), "--steps", strconv.Itoa(steps), "--device", "cuda")
	if err := refnets.RunJSON(cmd, &t); err != nil {
		return row{}, fmt.Errorf("no PyTorch with CUDA here (%w)", err)
	}
	return row{impl: "pytorch " + t.Backend, stepMS: t.StepMS, samples: t.Samples, note: "PyTorch with CUDA"}, nil
}

// trainRun trains the 2D reference U-Net for steps steps on every usable device (shrunk on
// a CPU device) and fails when the loss does not fall.
func trainRun(steps int, smoke bool) error {
	devs, err := engine.VulkanDevices()
	if err != nil {
		return err
	}
	m, _ := refnets.Find("2d")
	ran := 0
	for _, d := range devs {
		if d.Usable() != nil {
			continue
		}
		mm := m
		if smoke || d.Type == vk.CPU {
			mm = m.Smoke()
		}
		v, err := engine.NewVulkan(d.Index, 0)
		if err != nil {
			return err
		}
		err = trainOn(v, mm, steps)
		v.Close()
		if err != nil {
			return fmt.Errorf("device %d (%s): %w", d.Index, d.Name, err)
		}
		ran++
	}
	if ran == 0 {
		return fmt.Errorf("benchgpu: no usable Vulkan device: %w", engine.ErrNoDevice)
	}
	return nil
}

func trainOn(v *engine.Vulkan, m refnets.Model, steps int) error {
	fmt.Printf("training %s (batch %d of %v, widths %v) on %s for %d steps\n", m.Name, m.Batch, m.Patch, m.Widths, v.Name(), steps)
	u, err := engine.BuildUNet(v, m.Config(), m.Batch, m.Patch, 1)
	if err != nil {
		return err
	}
	defer u.Free()
	tr, err := engine.NewTrainer(u.Net, engine.NewAdamW(v, u.Params(), 1e-2, 1e-4), engine.TrainOptions{Clip: 12})
	if err != nil {
		return err
	}
	defer tr.Close()
	r := rand.New(rand.NewPCG(3, 3))
	lab := make([]int32, len(u.Input.Data))
	var first, sum float64
	n, every := 0, max(steps/10, 1)
	t := time.Now()
	for s := range steps {
		for i := range u.Input.Data {
			u.Input.Data[i] = float32(r.NormFloat64())
			lab[i] = 0
			if u.Input.Data[i] > 0.3 {
				lab[i] = 1
			}
		}
		if err := u.SetLabels(lab); err != nil {
			return err
		}
		if err := tr.Submit(engine.PolyLR(1e-2, s, steps, 0.9)); err != nil {
			return err
		}
		for tr.Pending() > 1 || (s == steps-1 && tr.Pending() > 0) {
			res, err := tr.Wait()
			if err != nil {
				return err
			}
			if n == 0 {
				first = res.Loss
			}
			sum += res.Loss
			if n++; n%every == 0 {
				fmt.Printf("  step %4d  loss %.4f (mean of the last %d)  %.1f samples/s\n", n, sum/float64(every), every,
					float64(n*m.Batch)/time.Since(t).Seconds())
				sum = 0
			}
		}
	}
	if err := tr.ToHost(); err != nil {
		return err
	}
	last := u.Value()
	fmt.Printf("  loss %.4f → %.4f in %.1f s\n", first, last, time.Since(t).Seconds())
	if !(last < first) {
		return fmt.Errorf("the loss did not fall: %.4f → %.4f", first, last)
	}
	return nil
}
