package plugintest

import (
	"encoding/json"
	"os"
	"runtime/debug"
	"testing"
	"time"

	"amid/assets/measure"
)

// BenchSpecEnv names the environment variable through which `make bench-plugins-models`
// asks a plugin's BenchmarkTrainStep for the description of its model (a file path).
const BenchSpecEnv = "AMID_BENCH_SPEC"

// ModelSpec is the part of a BenchTrainStep spec every U-Net shares: the fields
// .ci/bench_plugins_models.py reads to rebuild the network in PyTorch. A plugin embeds it
// in its own spec beside the fields of its model (a loss, a head).
type ModelSpec struct {
	Plugin  string   `json:"plugin"`
	Model   string   `json:"model"` // the builder's name in the script
	Lane    string   `json:"lane"`
	Batch   int      `json:"batch"`
	Patch   [3]int   `json:"patch"` // D, H, W
	In      int      `json:"in"`
	Out     int      `json:"out"`
	Widths  []int    `json:"widths"`
	Kernels [][3]int `json:"kernels"`
	Pools   [][3]int `json:"pools"`
	MaxPool bool     `json:"maxpool"`
	Norm    string   `json:"norm"`
	Slope   float64  `json:"slope"`
	LR      float64  `json:"lr"`
	Decay   float64  `json:"weight_decay"`
	Clip    float64  `json:"clip"`
}

// Planar sets the kernels and pools of a 2D network of len(Widths) stages to the
// engine's defaults for a 2D patch: 1×3×3 kernels, 1×2×2 down-sampling between stages.
func (s *ModelSpec) Planar() {
	s.Kernels, s.Pools = nil, nil
	for st := range s.Widths {
		s.Kernels = append(s.Kernels, [3]int{1, 3, 3})
		if st > 0 {
			s.Pools = append(s.Pools, [3]int{1, 2, 2})
		}
	}
}

// BenchTrainStep is the body of a plugin's BenchmarkTrainStep, the row the plugin adds to
// `make bench-plugins-models`: it writes spec (the JSON description of the model that
// .ci/bench_plugins_models.py rebuilds in PyTorch; it must have a "model" field naming
// the builder there) to the file BenchSpecEnv names, runs step once to warm up, then
// b.N times with the garbage collector off, and reports the median step's wall time
// ("step-ms"), CPU time of the whole process ("cpu-ms") and batch/step ("samples/s").
// step is one training step: forward, backward, gradient clipping, optimizer.
func BenchTrainStep(b *testing.B, batch int, spec any, step func()) {
	b.Helper()
	if p := os.Getenv(BenchSpecEnv); p != "" {
		js, err := json.Marshal(spec)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, js, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	step()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	walls, cpus := make([]float64, 0, b.N), make([]float64, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t, c := time.Now(), measure.CPU().Seconds()
		step()
		walls = append(walls, time.Since(t).Seconds())
		cpus = append(cpus, measure.CPU().Seconds()-c)
	}
	b.StopTimer()
	w := measure.Median(walls)
	b.ReportMetric(1000*w, "step-ms")
	b.ReportMetric(1000*measure.Median(cpus), "cpu-ms")
	b.ReportMetric(float64(batch)/w, "samples/s")
}
