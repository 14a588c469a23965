package jpeg2000

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"amid/assets/measure"
	"amid/assets/realdata"
)

// benchCT is a real 512×512 16-bit CT slice (octave-dicom's ankle) compressed losslessly
// by gdcmconv --j2k, as a PACS would store it: the DICOM file and its codestream.
func benchCT(b *testing.B) (dcm string, cs []byte) {
	b.Helper()
	dcm = filepath.Join(b.TempDir(), "ankle-j2k.dcm")
	run(b, "gdcmconv", "--j2k", realdata.Path(b, realdata.Octave+"/dicom-0.5.1/imdata/CT-MONO2-16-ankle.dcm"), dcm)
	return dcm, dicomFrames(b, dcm)[0]
}

// BenchmarkDecodeCT decodes benchCT with this package, then times GDCM (python3-gdcm,
// decoding in its own process, timed around the decode only) and OpenJPEG
// (opj_decompress decoding 20 copies in one process, so that its start-up is shared) on
// the same data, and reports all three side by side: CPU time per slice (the machine may
// be shared, so wall time is unreliable), this package's wall time with all CPUs, and
// the ratios to GDCM.
//
//	go test -run '^$' -bench DecodeCT -benchtime 20x ./viewer/dicom/codec/jpeg2000/
func BenchmarkDecodeCT(b *testing.B) {
	dcm, cs := benchCT(b)
	b.SetBytes(512 * 512 * 2)
	b.ReportAllocs()
	c0, w0 := measure.CPU(), time.Now()
	for b.Loop() {
		if _, err := Decode(cs); err != nil {
			b.Fatal(err)
		}
	}
	cpu := float64(measure.CPU()-c0) / 1e6 / float64(b.N)
	wall := float64(time.Since(w0)) / 1e6 / float64(b.N)
	b.StopTimer()

	// One CPU: the decode without its parallelism.
	procs := runtime.GOMAXPROCS(1)
	const n1 = 10
	c1 := measure.CPU()
	for range n1 {
		if _, err := Decode(cs); err != nil {
			b.Fatal(err)
		}
	}
	cpu1 := float64(measure.CPU()-c1) / 1e6 / n1
	runtime.GOMAXPROCS(procs)

	var g struct{ CPUMs, WallMs float64 }
	out, err := exec.Command(needTool(b, "/usr/bin/python3"), "testdata/gdcm_bench.py", dcm, "20").Output()
	if err != nil {
		b.Fatalf("gdcm_bench.py: %v", err)
	}
	var gj map[string]float64
	if err := json.Unmarshal(out, &gj); err != nil {
		b.Fatal(err)
	}
	g.CPUMs, g.WallMs = gj["cpu_ms"], gj["wall_ms"]

	opjCPU := opjTime(b, cs, 20)

	b.ReportMetric(cpu, "cpu-ms/op")
	b.ReportMetric(wall, "wall-ms/op")
	b.ReportMetric(cpu1, "1cpu-ms/op")
	b.ReportMetric(g.CPUMs, "gdcm-cpu-ms/op")
	b.ReportMetric(opjCPU, "opj-cpu-ms/op")
	b.ReportMetric(cpu1/g.CPUMs, "1cpu/gdcm")
	b.ReportMetric(wall/g.WallMs, "wall/gdcm")
	b.Logf("512×512 16-bit lossless CT, %d-byte codestream, GOMAXPROCS %d: this package %.1f ms CPU (%.1f ms on one CPU), %.1f ms wall; "+
		"GDCM %.1f ms CPU, %.1f ms wall; OpenJPEG %.1f ms CPU; one-CPU time / GDCM's CPU time %.2f, wall / GDCM's wall %.2f",
		len(cs), procs, cpu, cpu1, wall, g.CPUMs, g.WallMs, opjCPU, cpu1/g.CPUMs, wall/g.WallMs)
}

// opjTime is opj_decompress's CPU time per decode of cs, from n copies decoded in one
// process (its start-up and the PGX writing included).
func opjTime(b *testing.B, cs []byte, n int) float64 {
	b.Helper()
	dir := b.TempDir()
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.j2k", i)), cs, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cmd := exec.Command(needTool(b, "opj_decompress"), "-quiet", "-ImgDir", dir, "-OutFor", "PGX")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("opj_decompress: %v\n%s", err, out)
	}
	st := cmd.ProcessState
	return float64(st.UserTime()+st.SystemTime()) / 1e6 / float64(n)
}

// BenchmarkDecode decodes benchCT's codestream alone, for profiling.
func BenchmarkDecode(b *testing.B) {
	_, cs := benchCT(b)
	b.SetBytes(512 * 512 * 2)
	b.ReportAllocs()
	c0 := measure.CPU()
	for b.Loop() {
		if _, err := Decode(cs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(measure.CPU()-c0)/1e6/float64(b.N), "cpu-ms/op")
}
