// Package refnets holds the engine's reference U-Nets, the networks its benchmarks time
// (cmd/benchengine against PyTorch on the CPU, cmd/benchgpu on every Vulkan device,
// cmd/benchpredict's whole-volume prediction against PyTorch's).
package refnets

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"amid/plugins/engine"
)

// Model is one reference network; the PyTorch script (testdata/torch_bench.py) builds the
// same from these fields.
type Model struct {
	Name    string   `json:"name"`
	Batch   int      `json:"batch"`
	Patch   [3]int   `json:"patch"`
	Widths  []int    `json:"widths"`
	Kernels [][3]int `json:"kernels"`
	Pools   [][3]int `json:"pools"`
	MaxPool bool     `json:"maxpool"`
	Classes int      `json:"classes"`
}

// Models: 2D, batch 8 of 1×128², 4 levels of 32–256 filters; 3D, batch 2 of 1×64³, 16–128.
var Models = []Model{
	{Name: "2d", Batch: 8, Patch: [3]int{1, 128, 128}, Widths: []int{32, 64, 128, 256},
		Kernels: [][3]int{{1, 3, 3}, {1, 3, 3}, {1, 3, 3}, {1, 3, 3}},
		Pools:   [][3]int{{1, 2, 2}, {1, 2, 2}, {1, 2, 2}}, MaxPool: true, Classes: 2},
	{Name: "3d", Batch: 2, Patch: [3]int{64, 64, 64}, Widths: []int{16, 32, 64, 128},
		Kernels: [][3]int{{3, 3, 3}, {3, 3, 3}, {3, 3, 3}, {3, 3, 3}},
		Pools:   [][3]int{{2, 2, 2}, {2, 2, 2}, {2, 2, 2}}, MaxPool: true, Classes: 2},
}

// Find returns the model named name.
func Find(name string) (Model, bool) {
	for _, m := range Models {
		if m.Name == name {
			return m, true
		}
	}
	return Model{}, false
}

// Config is the model's U-Net: two convolutions per level with instance norm and
// LeakyReLU 0.01, one input channel.
func (m Model) Config() engine.UNetConfig {
	return engine.UNetConfig{In: 1, Classes: m.Classes, Widths: m.Widths, Kernels: m.Kernels, Pools: m.Pools,
		Convs: 2, MaxPool: m.MaxPool, Norm: engine.Instance, Slope: 0.01}
}

// Smoke is the model shrunk for a smoke test on a device that is a CPU (lavapipe): the same
// levels and layers, batch 1, an eighth of the filters (at least 4) and a patch of 32² or
// 16³.
func (m Model) Smoke() Model {
	s := m
	s.Name = m.Name + " smoke"
	s.Batch = 1
	s.Widths = make([]int, len(m.Widths))
	for i, w := range m.Widths {
		s.Widths[i] = max(4, w/8)
	}
	if m.Patch[0] == 1 {
		s.Patch = [3]int{1, 32, 32}
	} else {
		s.Patch = [3]int{16, 16, 16}
	}
	return s
}

// TorchScript is the path of testdata/torch_bench.py, PyTorch's side of the benchmarks:
// AMID_TORCH_BENCH when set (a bundle that carries the script), else [Script]'s.
func TorchScript() string {
	if s := os.Getenv("AMID_TORCH_BENCH"); s != "" {
		return s
	}
	return Script("torch_bench.py")
}

// Script is the path of the engine's testdata file name: beside this source file, else
// relative to the repository's root.
func Script(name string) string {
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "testdata", name)
	if _, err := os.Stat(script); err != nil {
		script = filepath.Join("plugins", "engine", "testdata", name)
	}
	return script
}

// RunJSON runs cmd (its standard error passed through) and decodes the JSON of the last
// non-empty line it prints into v.
func RunJSON(cmd *exec.Cmd, v any) error {
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
	}
	var last string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" {
			last = s
		}
	}
	if err := json.Unmarshal([]byte(last), v); err != nil {
		return fmt.Errorf("%s printed %q: %w", cmd.Args[0], last, err)
	}
	return nil
}
