package engine

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"amid/assets/ci"
	"amid/plugins/compute"
)

// refGemm is C = alpha·op(A)·op(B) + beta·C in float64.
func refGemm(tA, tB bool, m, n, k int, alpha float64, a []float32, lda int, b []float32, ldb int,
	beta float64, c []float32, ldc int) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				av := a[i*lda+p]
				if tA {
					av = a[p*lda+i]
				}
				bv := b[p*ldb+j]
				if tB {
					bv = b[j*ldb+p]
				}
				s += float64(av) * float64(bv)
			}
			out[i*n+j] = alpha*s + beta*float64(c[i*ldc+j])
		}
	}
	return out
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

func TestSgemm(t *testing.T) {
	t.Run("default", func(t *testing.T) { testSgemm(t, NewCPU(2)) })
	t.Run("portable", func(t *testing.T) { testSgemm(t, NewPortableCPU(2)) })
}

func testSgemm(t *testing.T, be *CPU) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ m, n, k int }{{1, 1, 1}, {7, 5, 3}, {33, 65, 17}, {64, 300, 129}} {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				// Leading dimensions larger than the rows, as when a GEMM reads part of a buffer.
				lda, ldb, ldc := tc.k+3, tc.n+2, tc.n+1
				if tA {
					lda = tc.m + 3
				}
				if tB {
					ldb = tc.k + 2
				}
				a := randSlice(r, (max(tc.m, tc.k))*lda)
				b := randSlice(r, (max(tc.n, tc.k))*ldb)
				c := randSlice(r, tc.m*ldc)
				want := refGemm(tA, tB, tc.m, tc.n, tc.k, 0.5, a, lda, b, ldb, 0.25, c, ldc)
				be.Sgemm(tA, tB, tc.m, tc.n, tc.k, 0.5, a, lda, b, ldb, 0.25, c, ldc)
				for i := range tc.m {
					for j := range tc.n {
						// float32 products summed over k terms of unit variance: relative error
						// about k·2^-24 of sqrt(k); 1e-4·sqrt(k) leaves a wide margin.
						tol := 1e-4 * math.Sqrt(float64(tc.k))
						if d := math.Abs(float64(c[i*ldc+j]) - want[i*tc.n+j]); d > tol {
							t.Fatalf("%v tA=%v tB=%v: C[%d,%d]=%g, want %g", tc, tA, tB, i, j, c[i*ldc+j], want[i*tc.n+j])
						}
					}
				}
			}
		}
	}
}

func TestParallelCoversRangeOnce(t *testing.T) {
	be := NewCPU(3)
	for _, n := range []int{1, 2, 3, 10, 1001} {
		hits := make([]int32, n)
		be.Parallel(n, func(part, lo, hi int) {
			for i := lo; i < hi; i++ {
				hits[i]++
			}
		})
		for i, h := range hits {
			if h != 1 {
				t.Fatalf("n=%d: index %d visited %d times", n, i, h)
			}
		}
	}
}

func TestCoreFix(t *testing.T) {
	avx512 := cpuFlags{avx512: true, avx2: true}
	avx2 := cpuFlags{avx2: true}
	for _, tc := range []struct {
		cur   string
		f     cpuFlags
		want  string
		isFix bool
	}{
		{"Prescott", avx512, "SkylakeX", true}, // the misdetection seen on the reference Xeon
		{"Haswell", avx512, "SkylakeX", true},
		{"SkylakeX", avx512, "", false},
		{"Cooperlake", avx512, "", false},
		{"Zen", avx2, "", false}, // this machine's AMD EPYC, detected correctly
		{"Prescott", avx2, "Haswell", true},
		{"SkylakeX", avx2, "Haswell", true}, // forced to a core the CPU lacks
		{"Prescott", cpuFlags{}, "", false}, // an SSE-only CPU: leave OpenBLAS alone
	} {
		got, fix := coreFix(tc.cur, tc.f)
		if got != tc.want || fix != tc.isFix {
			t.Errorf("coreFix(%q, %+v) = %q, %v; want %q, %v", tc.cur, tc.f, got, fix, tc.want, tc.isFix)
		}
	}
}

// TestSetenvTooLate records why EnsureCoreType re-executes: OpenBLAS has read
// OPENBLAS_CORETYPE before any Go code runs.
func TestSetenvTooLate(t *testing.T) {
	if !HaveOpenBLAS {
		ci.Missing(t, "built without OpenBLAS (Debian: libopenblas-dev, and cgo)")
	}
	before := CoreName()
	t.Setenv("OPENBLAS_CORETYPE", "Prescott")
	if after := CoreName(); after != before {
		t.Fatalf("core changed from %q to %q after Setenv", before, after)
	}
}

// fakeCore is EnsureCoreType's decision on a CPU with flags f whose OpenBLAS "detected"
// core detected, under settings set, with a restart that records its environment instead
// of executing.
func fakeCore(detected string, f cpuFlags, set compute.Settings) (restarted []string, err error) {
	err = coreCheck{core: detected, cpu: f, set: set, restart: func(_ string, _, e []string) error { restarted = e; return nil }}.ensure()
	return restarted, err
}

// TestEnsureCoreTypeHonoursExplicit: a core type the user set is kept, even when OpenBLAS
// could run a stronger one, and one the CPU cannot run is refused in a sentence.
func TestEnsureCoreTypeHonoursExplicit(t *testing.T) {
	t.Parallel()
	avx512 := cpuFlags{avx512: true, avx2: true, avx: true}
	avx2 := cpuFlags{avx2: true, avx: true}
	for _, tc := range []struct {
		forced   string
		detected string // what OpenBLAS reports for the forced name
		f        cpuFlags
		wantErr  string
	}{
		{"Haswell", "Haswell", avx512, ""},
		{"Sandybridge", "Sandybridge", avx2, ""},
		{"Prescott", "Prescott", avx512, ""}, // a user may choose the slow kernels
		{"SkylakeX", "SkylakeX", avx2, "OPENBLAS_CORETYPE=SkylakeX needs AVX-512, which this CPU lacks"},
		{"Haswell", "Haswell", cpuFlags{avx: true}, "OPENBLAS_CORETYPE=Haswell needs AVX2 and FMA, which this CPU lacks"},
	} {
		env, err := fakeCore(tc.detected, tc.f, compute.Settings{CoreType: tc.forced})
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s on %+v: %v", tc.forced, tc.f, err)
		case tc.wantErr != "" && (!errors.Is(err, ErrCoreType) || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s on %+v: error %v, want ErrCoreType saying %q", tc.forced, tc.f, err, tc.wantErr)
		}
		if env != nil {
			t.Errorf("%s on %+v: restarted with %v; an explicit core type must be kept", tc.forced, tc.f, env)
		}
	}
	// After a restart, OpenBLAS must report the core it was given.
	if _, err := fakeCore("Prescott", avx512, compute.Settings{CoreType: "SkylakeX", Restarted: true}); !errors.Is(err, ErrCoreType) {
		t.Errorf("restarted with SkylakeX, OpenBLAS on Prescott: %v, want ErrCoreType", err)
	}
}

// TestEnsureCoreTypeCorrects: with nothing set, a misdetected core restarts the process
// with the CPU's best core, and a correct detection does not.
func TestEnsureCoreTypeCorrects(t *testing.T) {
	t.Parallel()
	env, err := fakeCore("Prescott", cpuFlags{avx512: true, avx2: true, avx: true}, compute.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(env, compute.EnvCoreType+"=SkylakeX") || !slices.Contains(env, compute.EnvRestarted+"=1") {
		t.Fatalf("restart environment %v; want %s=SkylakeX and the restart guard", env, compute.EnvCoreType)
	}
	if env, err = fakeCore("Zen", cpuFlags{avx2: true, avx: true}, compute.Settings{}); err != nil || env != nil {
		t.Fatalf("correct detection: err %v, restart %v; want neither", err, env)
	}
}

// TestEnsureCoreTypePrefers: the core a package was made with is taken when this CPU can
// run it, and ignored when it cannot; an explicit choice still wins.
func TestEnsureCoreTypePrefers(t *testing.T) {
	t.Parallel()
	avx512 := cpuFlags{avx512: true, avx2: true, avx: true}
	haswell := compute.Settings{PreferCore: "Haswell"}
	if env, err := fakeCore("SkylakeX", avx512, haswell); err != nil || !slices.Contains(env, compute.EnvCoreType+"=Haswell") {
		t.Fatalf("prefer Haswell on AVX-512: err %v, restart %v", err, env)
	}
	if env, err := fakeCore("Haswell", avx512, haswell); err != nil || env != nil {
		t.Fatalf("already Haswell: err %v, restart %v", err, env)
	}
	if env, err := fakeCore("Haswell", cpuFlags{avx2: true, avx: true}, compute.Settings{PreferCore: "SkylakeX"}); err != nil || env != nil {
		t.Fatalf("SkylakeX preferred on an AVX2 CPU: err %v, restart %v; want the detected core kept", err, env)
	}
	if env, err := fakeCore("Sandybridge", avx512, compute.Settings{PreferCore: "SkylakeX", CoreType: "Sandybridge"}); err != nil || env != nil {
		t.Fatalf("explicit Sandybridge with a preference: err %v, restart %v", err, env)
	}
}

// TestEnsureCoreTypeRestarts starts this test binary with nothing set and OpenBLAS's
// detection faked as the weakest core (the misdetection seen on an AVX-512 Xeon), and
// checks that the real restart gives OpenBLAS the CPU's best core.
func TestEnsureCoreTypeRestarts(t *testing.T) {
	if os.Getenv("AMID_ENGINE_HELPER") == "coretype" {
		c := coreCheck{core: CoreName(), cpu: hostFlags(), set: compute.ReadSettings(), restart: execSelf}
		if !c.set.Restarted {
			c.core = "Prescott"
		}
		if err := c.ensure(); err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		fmt.Printf("CORE=%s\n", CoreName())
		os.Exit(0)
	}
	if !HaveOpenBLAS {
		ci.Missing(t, "built without OpenBLAS (Debian: libopenblas-dev, and cgo)")
	}
	want, _ := bestCore(hostFlags())
	if want == "" {
		t.Skip("CPU without AVX2: no core type to force")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestEnsureCoreTypeRestarts$")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, compute.EnvCoreType+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "AMID_ENGINE_HELPER=coretype")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "CORE="+want+"\n") {
		t.Fatalf("helper output %q, want CORE=%s", out, want)
	}
}

// BenchmarkSgemm reports GFLOP/s of square SGEMMs for both thread counts.
func BenchmarkSgemm(b *testing.B) {
	be := NewCPU(0)
	for _, n := range []int{512, 2048} {
		for _, th := range []int{1, 2} {
			b.Run(fmt.Sprintf("n=%d/threads=%d", n, th), func(b *testing.B) {
				SetBLASThreads(th)
				r := rand.New(rand.NewPCG(1, 2))
				x, y, z := randSlice(r, n*n), randSlice(r, n*n), make([]float32, n*n)
				b.ResetTimer()
				for range b.N {
					be.Sgemm(false, false, n, n, n, 1, x, n, y, n, 0, z, n)
				}
				b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
	SetBLASThreads(2)
}

// TestIdentity: the identity names the kernels that run; the portable backend's names none,
// since its sums do not depend on the CPU.
func TestIdentity(t *testing.T) {
	id := NewCPU(3).Identity()
	if id.Engine != Version || id.Device != "cpu" || id.Workers != 3 {
		t.Errorf("identity %+v", id)
	}
	if HaveOpenBLAS && (id.Core != CoreName() || !strings.HasPrefix(id.BLAS, "openblas 0.")) {
		t.Errorf("identity %+v; want OpenBLAS with core %q", id, CoreName())
	}
	if p := NewPortableCPU(3).Identity(); p.BLAS != "pure Go" || p.Core != "" || p.Workers != 3 {
		t.Errorf("portable identity %+v", p)
	}
}
