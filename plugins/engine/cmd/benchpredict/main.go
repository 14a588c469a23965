// Command benchpredict predicts whole volumes with sliding windows in the engine and in
// PyTorch side by side: a generated CT of 512×512×300 voxels (7 classes) and MR of
// 256×256×176 (4 classes), the reference 3D U-Net (refnets "3d": 16–128 filters, 64³
// patch) with the same random weights on both sides, the same windows (overlap 0.5,
// Gaussian weights σ = 1/8 of the patch, optionally the 8 flips of the three axes). The
// engine runs the segmentation plugin's code path (infer.Classes over a NetWindow's
// Stream, then the label volume); PyTorch runs nnU-Net's predict_sliding_window_return_logits
// loop (testdata/torch_predict.py). Each prediction runs in its own process, so that its
// peak resident memory (VmHWM) is its own; the label maps of the two are compared voxel by
// voxel.
//
//	go run ./plugins/engine/cmd/benchpredict [-scale 1] [-flips 1|8] [-cases ct,mr] [-torch /usr/bin/python3]
//
// -scale shrinks every axis of both volumes (0.5: an eighth of the voxels; make
// bench-predict's SCALE, 0.85 by default); -sums float32 gives PyTorch float32 sums in
// place of nnU-Net's half precision; -batch sets the engine's patches per call; -net none
// replaces the network by a cheap function of the input to measure the windows' memory
// and time alone (the engine only). The figures and what they mean are in
// plugins/engine/infer/README.md.
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"amid/assets/measure"
	"amid/plugins/engine"
	"amid/plugins/engine/data"
	"amid/plugins/engine/infer"
	"amid/plugins/engine/internal/refnets"
	"amid/viewer/volume"
)

// kind is one generated case: its full size, classes, voxel spacing and normalisation.
type kind struct {
	Name     string
	Dims     [3]int // X, Y, Z
	Classes  int
	Spacing  [3]float64
	Modality data.Modality
}

var kinds = []kind{
	{Name: "ct", Dims: [3]int{512, 512, 300}, Classes: 7, Spacing: [3]float64{0.8, 0.8, 1.5}, Modality: data.CT},
	{Name: "mr", Dims: [3]int{256, 256, 176}, Classes: 4, Spacing: [3]float64{1, 1, 1}, Modality: data.MR},
}

// ctStats are the CT normalisation's statistics (a soft-tissue window).
var ctStats = data.CTStats{Lo: -160, Hi: 240, Mean: 40, Std: 70}

// result is what one measuring process prints as its last line.
type result struct {
	Impl    string  `json:"impl"`
	Seconds float64 `json:"seconds"`
	CPU     float64 `json:"cpu_seconds"`
	PeakMiB float64 `json:"peak_mib"`
	BaseMiB float64 `json:"base_mib"`
	Backend string  `json:"backend"`
}

// spec is what both measuring processes are told about a case (torch_predict.py reads it).
type spec struct {
	Model  refnets.Model `json:"model"`
	Dims   [3]int        `json:"dims"`
	Steps  [3][]int      `json:"steps"`
	Mirror bool          `json:"mirror"`
	Sums   string        `json:"sums"`
	Case   string        `json:"case"`
	Net    string        `json:"net"`
	Batch  int           `json:"batch,omitempty"` // the engine's patches per call; 0: the plugin's
}

func main() {
	if err := engine.EnsureCoreType(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	child := flag.String("spec", "", "measure the engine on one case in this process (JSON spec; with -in, -weights, -out)")
	in := flag.String("in", "", "with -spec: the case's image, raw int16")
	weights := flag.String("weights", "", "with -spec: the network's weights, raw float32")
	out := flag.String("out", "", "with -spec: where to write the classes, uint8")
	scale := flag.Float64("scale", 1, "scale of every axis of the volumes")
	flips := flag.Int("flips", 1, "passes per window: 1 (no mirroring) or 8 (all flips of the three axes)")
	only := flag.String("cases", "ct,mr", "cases to run, comma-separated (ct, mr)")
	python := flag.String("torch", "/usr/bin/python3", "Python with PyTorch; empty to skip")
	sums := flag.String("sums", "half", "PyTorch's sums: half (nnU-Net's) or float32")
	net := flag.String("net", "unet", "unet; unet-training: the same built for training (every activation kept, the plugin's way before engine.ForInference); or none: a cheap function of the input (engine only, for the windows' memory)")
	threads := flag.Int("threads", 2, "PyTorch threads")
	workers := flag.Int("workers", 0, "engine workers (0: GOMAXPROCS)")
	batch := flag.Int("batch", 0, "the engine's patches per call (0: the segmentation plugin's, one per worker)")
	dir := flag.String("dir", "", "folder for the generated volumes (a temporary one when empty)")
	flag.Parse()
	var err error
	if *child != "" {
		err = measureEngine(*child, *in, *weights, *out, *workers)
	} else {
		err = compare(options{scale: *scale, flips: *flips, cases: *only, python: *python, sums: *sums,
			net: *net, threads: *threads, workers: *workers, batch: *batch, dir: *dir})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchpredict:", err)
		os.Exit(1)
	}
}

// model is the reference 3D U-Net with k classes.
func model(k int) refnets.Model {
	m, _ := refnets.Find("3d")
	m.Classes = k
	return m
}

// windowOptions are the windows of s: the network's patch (X, Y, Z), overlap 0.5, and
// s.Batch patches per call, or the segmentation plugin's inferBatch on the CPU (one patch
// per worker, at most the training batch).
func windowOptions(s spec, workers int) infer.Options {
	p := s.Model.Patch // D, H, W
	b := s.Batch
	if b <= 0 {
		b = max(1, min(workers, s.Model.Batch))
	}
	return infer.Options{Patch: [3]int{p[2], p[1], p[0]}, Channels: 1, Classes: s.Model.Classes,
		Overlap: 0.5, Mirror: s.Mirror, Batch: b}
}

// measureEngine predicts one case as the segmentation plugin does and prints a result.
func measureEngine(specJSON, in, weights, out string, workers int) error {
	var s spec
	if err := json.Unmarshal([]byte(specJSON), &s); err != nil {
		return err
	}
	k, err := findKind(s.Case)
	if err != nil {
		return err
	}
	be := engine.NewCPU(workers)
	opt := windowOptions(s, be.Workers())
	m := infer.Model{Options: opt, Norm: data.Norm{Modality: k.Modality, CT: ctStats}, Mapping: seq(s.Model.Classes)}
	backend := fmt.Sprintf("%s, batch %d", be.Name(), opt.Batch)
	if s.Net == "none" {
		m.Predict = cheap(opt)
		backend = "no network (a cheap function of the input)"
	} else {
		opts := []engine.Option{engine.ForInference}
		if s.Net == "unet-training" {
			opts = nil // every activation and gradient allocated, as before ForInference
			backend += ", built for training"
		}
		u, err := engine.BuildUNet(be, s.Model.Config(), opt.Batch, s.Model.Patch, 1, opts...)
		if err != nil {
			return err
		}
		if err := readParams(weights, u.Params()); err != nil {
			return err
		}
		u.SetTraining(false)
		nw, err := infer.NewNetWindow(u.Net, u.Input, u.Loss, opt)
		if err != nil {
			return err
		}
		defer nw.Close()
		m.Stream = nw.Stream
	}
	runtime.GC()
	base := measure.RSSMiB()
	img, err := readImage(in, s.Dims, k.Spacing)
	if err != nil {
		return err
	}
	t, c := time.Now(), measure.CPU().Seconds()
	cls, _, err := infer.Classes(img, m, true)
	if err != nil {
		return err
	}
	lab, err := infer.ToVolume(img, cls, m.Mapping)
	if err != nil {
		return err
	}
	secs, cpu := time.Since(t).Seconds(), measure.CPU().Seconds()-c
	if err := os.WriteFile(out, lab.Data.([]uint8), 0o644); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(result{Impl: "engine", Seconds: secs, CPU: cpu,
		PeakMiB: measure.PeakMiB(), BaseMiB: base, Backend: backend})
}

// cheap is a predictor in place of a network: per class a softmax-like function of the
// input, so that the windows cost little besides their own work.
func cheap(opt infer.Options) infer.Predict {
	K, PN := opt.Classes, opt.Patch[0]*opt.Patch[1]*opt.Patch[2]
	return func(in, out []float32) {
		for j := range len(in) / PN {
			x, o := in[j*PN:(j+1)*PN], out[j*K*PN:(j+1)*K*PN]
			for k := range K {
				for i, v := range x {
					o[k*PN+i] = 1 / (1 + (v-float32(k)+1)*(v-float32(k)+1))
				}
			}
		}
	}
}

func findKind(name string) (kind, error) {
	for _, k := range kinds {
		if k.Name == name {
			return k, nil
		}
	}
	return kind{}, fmt.Errorf("no case %q (ct, mr)", name)
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// readImage reads a raw int16 volume of dims as a reader of a CT or MR file returns it.
func readImage(path string, dims [3]int, spacing [3]float64) (*volume.Volume, error) {
	v, err := volume.New(volume.Int16, [4]int{dims[0], dims[1], dims[2], 1})
	if err != nil {
		return nil, err
	}
	v.Spacing = spacing
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d := v.Data.([]int16)
	for off := 0; off < len(d); off += 1 << 20 { // in pieces: binary.Read buffers what it reads
		if err := binary.Read(f, binary.LittleEndian, d[off:min(off+1<<20, len(d))]); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return v, nil
}

// writeParams writes the parameters' values, raw little-endian float32 in the engine's
// order (torch_unet.UNet.ordered reads them in the same order).
func writeParams(path string, ps []*engine.Param) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if err := binary.Write(f, binary.LittleEndian, p.Data); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// readParams reads what writeParams wrote into ps.
func readParams(path string, ps []*engine.Param) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range ps {
		if err := binary.Read(f, binary.LittleEndian, p.Data); err != nil {
			return fmt.Errorf("%s: %s: %w", path, p.Name, err)
		}
	}
	if n, _ := f.Read(make([]byte, 1)); n != 0 {
		return fmt.Errorf("%s: more values than the network's parameters", path)
	}
	return nil
}

// options are the comparison's flags.
type options struct {
	scale               float64
	flips, threads      int
	workers, batch      int
	cases, python, sums string
	net, dir            string
}

// compare generates each case, runs both sides on it and prints the table.
func compare(o options) error {
	if o.flips != 1 && o.flips != 8 {
		return fmt.Errorf("-flips %d: 1 or 8", o.flips)
	}
	if !(o.scale > 0 && o.scale <= 1) {
		return fmt.Errorf("-scale %v: in (0, 1]", o.scale)
	}
	if o.net != "unet" && o.net != "unet-training" && o.net != "none" {
		return fmt.Errorf("-net %q: unet, unet-training or none", o.net)
	}
	if o.net == "none" {
		o.python = ""
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	dir := o.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "benchpredict"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	torch := ""
	if o.python != "" {
		torch = refnets.Script("torch_predict.py")
	}
	workers := o.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	fmt.Printf("%s, %d logical CPUs; %s; %d flips per window; scale %g\n", cpuName(), runtime.NumCPU(), time.Now().Format("2006-01-02"), o.flips, o.scale)
	fmt.Printf("%-3s %-13s %2s %8s %-8s %9s %9s %9s %9s  %s\n", "", "dims", "K", "windows", "impl", "seconds", "CPU s", "peak MiB", "base MiB", "notes")
	for _, name := range strings.Split(o.cases, ",") {
		k, err := findKind(strings.TrimSpace(name))
		if err != nil {
			return err
		}
		if err := runCase(k, o, exe, torch, dir, workers); err != nil {
			return err
		}
	}
	fmt.Println("network: refnets 3d (16-32-64-128 filters, 64³ patch, instance norm), random weights (seed 1), the same on both sides;")
	fmt.Println("windows: overlap 0.5, Gaussian σ = patch/8; engine: infer.Classes (float64 sums of a band of planes), PyTorch: nnU-Net's loop")
	fmt.Println("seconds and CPU s: the prediction alone (input read); peak MiB: the process's VmHWM; base MiB: its RSS before reading the input")
	return nil
}

// runCase generates k at o.scale, writes its files into dir and runs both sides.
func runCase(k kind, o options, exe, torch, dir string, workers int) error {
	var dims [3]int
	m := model(k.Classes)
	for a := range 3 {
		dims[a] = max(m.Patch[2-a], int(math.Round(float64(k.Dims[a])*o.scale)))
	}
	s := spec{Model: m, Dims: dims, Mirror: o.flips == 8, Sums: o.sums, Case: k.Name, Net: o.net, Batch: o.batch}
	opt := windowOptions(s, workers)
	windows := 1
	for a := range 3 {
		s.Steps[a] = infer.Steps(dims[a], opt.Patch[a], opt.Overlap)
		windows *= len(s.Steps[a])
	}
	raw, norm := filepath.Join(dir, k.Name+".i16"), filepath.Join(dir, k.Name+".f32")
	weights := filepath.Join(dir, k.Name+".weights")
	if err := generate(k, dims, raw, norm, torch != ""); err != nil {
		return err
	}
	u, err := engine.BuildUNet(engine.NewCPU(1), m.Config(), 1, m.Patch, 1)
	if err != nil {
		return err
	}
	if err := writeParams(weights, u.Params()); err != nil {
		return err
	}
	debug.FreeOSMemory() // the generated volumes' buffers, while the measuring processes run
	specJSON, _ := json.Marshal(s)
	size := fmt.Sprintf("%d×%d×%d", dims[0], dims[1], dims[2])
	row := func(r result) {
		fmt.Printf("%-3s %-13s %2d %8d %-8s %9.1f %9.1f %9.0f %9.0f  %s\n", k.Name, size, k.Classes, windows, r.Impl, r.Seconds, r.CPU, r.PeakMiB, r.BaseMiB, r.Backend)
	}
	ours := filepath.Join(dir, k.Name+".engine.u8")
	var e result
	if err := refnets.RunJSON(exec.Command(exe, "-spec", string(specJSON), "-in", raw, "-weights", weights, "-out", ours,
		"-workers", strconv.Itoa(o.workers)), &e); err != nil {
		return err
	}
	row(e)
	if torch == "" {
		return nil
	}
	theirs := filepath.Join(dir, k.Name+".torch.u8")
	var t result
	if err := refnets.RunJSON(exec.Command(o.python, torch, "--spec", string(specJSON), "--weights", weights, "--input", norm,
		"--output", theirs, "--threads", strconv.Itoa(o.threads)), &t); err != nil {
		return err
	}
	row(t)
	same, n, err := agreement(ours, theirs)
	if err != nil {
		return err
	}
	fmt.Printf("%-3s engine / PyTorch: %.2f× the time (%.2f× the CPU time), %.2f× the peak memory; labels equal on %.4f %% of the voxels (%d differ)\n",
		k.Name, e.Seconds/t.Seconds, e.CPU/t.CPU, e.PeakMiB/t.PeakMiB, 100*float64(same)/float64(n), n-same)
	return nil
}

// agreement counts the voxels where two uint8 label files agree.
func agreement(a, b string) (same, n int, err error) {
	x, err := os.ReadFile(a)
	if err != nil {
		return 0, 0, err
	}
	y, err := os.ReadFile(b)
	if err != nil {
		return 0, 0, err
	}
	if len(x) != len(y) {
		return 0, 0, fmt.Errorf("%d labels against %d", len(x), len(y))
	}
	for i := range x {
		if x[i] == y[i] {
			same++
		}
	}
	return same, len(x), nil
}

// generate writes a phantom of kind k at dims as raw int16 to raw and, when norm is
// wanted, normalised as the engine's network sees it (raw float32) to norm.
func generate(k kind, dims [3]int, raw, norm string, wantNorm bool) error {
	v, err := volume.New(volume.Int16, [4]int{dims[0], dims[1], dims[2], 1})
	if err != nil {
		return err
	}
	v.Spacing = k.Spacing
	vox := v.Data.([]int16)
	X, Y, Z := dims[0], dims[1], dims[2]
	for z := range Z {
		w := (float64(z) + 0.5) / float64(Z)
		for y := range Y {
			b := (float64(y)+0.5)/float64(Y)*2 - 1
			for x := range X {
				a := (float64(x)+0.5)/float64(X)*2 - 1
				i := (z*Y+y)*X + x
				var val float64
				if k.Modality == data.CT {
					val = ctValue(a, b, w)
				} else {
					val = mrValue(a, b, w)
				}
				if val != 0 && val != -1000 {
					val += float64(int(hash(uint32(i))%41) - 20)
				}
				vox[i] = int16(val)
			}
		}
	}
	if err := writeRaw(raw, vox); err != nil {
		return err
	}
	if !wantNorm {
		return nil
	}
	planes, err := data.Norm{Modality: k.Modality, CT: ctStats}.Apply(v)
	if err != nil {
		return err
	}
	return writeRaw(norm, planes)
}

// ctValue is a body section in HU at (a, b) in [-1, 1]² of slice height w in [0, 1]: air,
// fat, soft tissue, lungs, spine, liver, kidneys.
func ctValue(a, b, w float64) float64 {
	in := func(ca, cb, ra, rb float64) bool { return sq((a-ca)/ra)+sq((b-cb)/rb) < 1 }
	switch {
	case !in(0, 0, 0.85, 0.65):
		return -1000
	case !in(0, 0, 0.78, 0.58):
		return -100
	case in(0, 0.42, 0.08, 0.08):
		return 700
	case w < 0.55 && (in(-0.35, -0.05, 0.25, 0.35) || in(0.35, -0.05, 0.25, 0.35)):
		return -850
	case w > 0.45 && w < 0.8 && in(-0.3, 0.05, 0.35, 0.3):
		return 60
	case w > 0.6 && w < 0.85 && (in(-0.35, 0.3, 0.1, 0.1) || in(0.35, 0.3, 0.1, 0.1)):
		return 150
	}
	return 40
}

// mrValue is a head in a T1 MR: background 0, skin, grey and white matter, ventricles.
func mrValue(a, b, w float64) float64 {
	r := math.Sqrt(sq(a/0.8) + sq(b/0.9) + sq((w-0.5)/0.45))
	switch {
	case r >= 1:
		return 0
	case r > 0.9:
		return 400
	case r > 0.75:
		return 600
	case sq(a/0.15)+sq(b/0.3)+sq((w-0.5)/0.2) < 1:
		return 200
	}
	return 800
}

func sq(x float64) float64 { return x * x }

// hash is a 32-bit integer hash (lowbias32), the generated images' noise.
func hash(x uint32) uint32 {
	x ^= x >> 16
	x *= 0x7feb352d
	x ^= x >> 15
	x *= 0x846ca68b
	x ^= x >> 16
	return x
}

// writeRaw writes s raw little-endian.
func writeRaw[T int16 | float32](path string, s []T) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := binary.Write(f, binary.LittleEndian, s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cpuName is the first "model name" of /proc/cpuinfo.
func cpuName() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil && !errors.Is(err, io.EOF) {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(b), "\n") {
		if name, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
		}
	}
	return runtime.GOARCH
}
