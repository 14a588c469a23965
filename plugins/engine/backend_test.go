package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"

	"amid/internal/ci"
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
	be := NewCPU(2)
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

// TestEnsureCoreTypeRestarts starts this test binary with OpenBLAS forced to the weakest
// core and checks that EnsureCoreType restarts it with the CPU's best core.
func TestEnsureCoreTypeRestarts(t *testing.T) {
	if os.Getenv("AMID_ENGINE_HELPER") == "coretype" {
		if err := EnsureCoreType(); err != nil {
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
	cmd.Env = append(os.Environ(), "AMID_ENGINE_HELPER=coretype", "OPENBLAS_CORETYPE=Prescott")
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
