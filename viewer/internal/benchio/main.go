// Command benchio times AMID's image loading for .ci/bench-io.sh, which runs it side by side
// with the same loads in nibabel and pydicom (.ci/bench_io.py).
//
//	benchio gen DIR          write the generated 256³ int16 and float32 .nii.gz files
//	benchio load N PATH      load PATH N times; print one JSON line: median and min
//	                         milliseconds, the median CPU milliseconds (all threads),
//	                         decoded bytes, and the process's peak resident memory above
//	                         its baseline (from /proc/self/status)
package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"amid/assets/measure"
	"amid/viewer/imageio"
	"amid/viewer/nifti"
	"amid/viewer/volume"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "benchio:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	switch {
	case len(args) == 2 && args[0] == "gen":
		return gen(args[1])
	case len(args) == 3 && args[0] == "load":
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return err
		}
		return load(n, args[2])
	}
	return fmt.Errorf("usage: benchio gen DIR | benchio load N PATH")
}

// gen writes 256³ volumes shaped like a head MR: a smooth ellipsoid of tissue with noise
// (pure noise would not compress like real images do).
func gen(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, t := range []volume.DType{volume.Int16, volume.Float32} {
		v, err := volume.New(t, [4]int{256, 256, 256, 1})
		if err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(1, 2))
		i := 0
		for z := 0; z < 256; z++ {
			for y := 0; y < 256; y++ {
				for x := 0; x < 256; x++ {
					dx, dy, dz := float64(x-128)/100, float64(y-128)/115, float64(z-128)/95
					val := 0.0
					if r := dx*dx + dy*dy + dz*dz; r < 1 {
						val = 600 + 300*r + 20*rng.NormFloat64()
					}
					v.SetIndex(i, val)
					i++
				}
			}
		}
		if err := nifti.Write(filepath.Join(dir, "gen256_"+t.String()+".nii.gz"), v); err != nil {
			return err
		}
	}
	return nil
}

func load(n int, path string) error {
	debug.SetGCPercent(50)
	base := measure.RSSMiB()
	var times, cpus []float64
	var decoded int64
	for i := 0; i < n; i++ {
		t0, c0 := time.Now(), measure.CPU()
		v, err := imageio.Read(path)
		if err != nil {
			return err
		}
		times = append(times, float64(time.Since(t0).Microseconds())/1000)
		cpus = append(cpus, float64(measure.CPU()-c0)/float64(time.Millisecond))
		decoded = int64(v.Len() * v.DType().Size())
		runtime.KeepAlive(v)
		if i == 0 {
			// Peak memory is measured on the first load, before garbage of later loads.
			peak := measure.PeakMiB()
			defer func() { fmt.Printf(`,"peak_mb":%.1f}`+"\n", peak-base) }()
		}
		v = nil
		runtime.GC()
	}
	slices.Sort(times)
	slices.Sort(cpus)
	b, _ := json.Marshal(map[string]any{"tool": "amid", "path": path, "median_ms": times[len(times)/2], "min_ms": times[0],
		"cpu_ms": cpus[len(cpus)/2], "threads": runtime.GOMAXPROCS(0), "decoded_mb": float64(decoded) / (1 << 20)})
	fmt.Print(strings.TrimSuffix(string(b), "}"))
	return nil
}
