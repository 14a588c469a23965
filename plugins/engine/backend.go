package engine

import (
	"runtime"
	"sync"

	"amid/plugins/compute"
)

// Backend runs the engine's matrix products and parallel elementwise loops. Layers reach
// the hardware only through it.
type Backend interface {
	// Name says which implementation runs, e.g. "openblas Haswell, 2 threads".
	Name() string
	// Sgemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices, op(X) being X
	// or its transpose; op(A) is m×k, op(B) is k×n, C is m×n.
	Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int,
		b []float32, ldb int, beta float32, c []float32, ldc int)
	// Parallel calls fn over [0,n) split into contiguous ranges that depend only on n and
	// the backend's worker count, so reductions per range are deterministic; part numbers
	// the ranges from 0 (below Workers), so fn may use scratch memory per part. It returns
	// when every range is done. It is not reentrant: fn must not call Parallel.
	Parallel(n int, fn func(part, lo, hi int))
	// Workers is the number of ranges Parallel uses at most.
	Workers() int
	// Identity is what the backend computes with: equal identities give bit-identical
	// results (see amid/plugins/compute).
	Identity() compute.Identity
}

// CPU is the CPU backend: SGEMM from OpenBLAS (or pure Go without cgo) and a fixed pool of
// goroutines. Layers run the samples of a batch on different workers, each SGEMM on one
// thread: on few cores this beats threaded SGEMMs, whose idle threads spin while Go code
// runs between them.
type CPU struct {
	pool     *pool
	portable bool // SGEMM in pure Go whatever the build
}

// NewCPU returns a CPU backend with the given number of loop workers (0: GOMAXPROCS).
func NewCPU(workers int) *CPU {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	SetBLASThreads(1)
	return &CPU{pool: newPool(workers)}
}

// NewPortableCPU returns a CPU backend whose SGEMM is the pure-Go one even in a build with
// OpenBLAS. It is several times slower, but its results are the same bits on every x86-64
// CPU with AVX and FMA, whatever kernels OpenBLAS would pick: goldens made by training use
// it. The exception to "every CPU" is Go's math.Exp, which the losses call: it takes an
// FMA path where the CPU has AVX and FMA (math/exp_amd64.go) and a plain one elsewhere, so
// on an x86-64 CPU without them a loss may differ in its last bit. Every CPU the tests
// support (AVX2 or AVX-512) has both.
func NewPortableCPU(workers int) *CPU {
	c := NewCPU(workers)
	c.portable = true
	return c
}

// portableBLAS is the BLAS name of the pure-Go SGEMM in an identity.
const portableBLAS = "pure Go"

// Identity is what this backend computes with: the engine version, the CPU, the SGEMM
// library and kernels, and the worker count, which fixes the order of partial sums.
func (c *CPU) Identity() compute.Identity {
	if c.portable {
		return compute.Identity{Engine: Version, Device: "cpu", BLAS: portableBLAS, Workers: c.pool.n}
	}
	return CPUIdentity(c.pool.n)
}

// CPUIdentity is the identity of a CPU backend with the given number of workers in this
// process (a plugin's Describe reports it before it builds a backend).
func CPUIdentity(workers int) compute.Identity {
	return compute.Identity{Engine: Version, Device: "cpu", BLAS: blasName(), Core: CoreName(), Workers: workers}
}

// Name implements Backend.
func (c *CPU) Name() string {
	if c.portable {
		return "pure Go (portable)"
	}
	return gemmName()
}

// Workers implements Backend.
func (c *CPU) Workers() int { return c.pool.n }

// Parallel implements Backend.
func (c *CPU) Parallel(n int, fn func(part, lo, hi int)) { c.pool.run(n, fn) }

// Sgemm implements Backend.
func (c *CPU) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int,
	b []float32, ldb int, beta float32, cm []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	checkGemm(transA, transB, m, n, k, a, lda, b, ldb, cm, ldc)
	if c.portable {
		goSgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, cm, ldc)
		return
	}
	sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, cm, ldc)
}

// checkGemm panics when the slices are too short for the shapes: a programmer mistake
// that would otherwise let C code read or write past a Go slice.
func checkGemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int,
	c []float32, ldc int) {
	ra, ca := m, k
	if transA {
		ra, ca = k, m
	}
	rb, cb := k, n
	if transB {
		rb, cb = n, k
	}
	if lda < max(ca, 1) || ldb < max(cb, 1) || ldc < max(n, 1) {
		panic("engine: sgemm leading dimension too small")
	}
	if (ra > 0 && len(a) < (ra-1)*lda+ca) || (rb > 0 && len(b) < (rb-1)*ldb+cb) ||
		len(c) < (m-1)*ldc+n {
		panic("engine: sgemm slice too short")
	}
}

// pool is a fixed set of goroutines that run ranges of a loop. Sending a task allocates
// nothing, so a training step stays allocation-free.
type pool struct {
	n    int
	mu   sync.Mutex
	wg   sync.WaitGroup
	work chan task
}

type task struct {
	fn           func(part, lo, hi int)
	part, lo, hi int
}

func newPool(n int) *pool {
	p := &pool{n: n, work: make(chan task, n)}
	for i := 1; i < n; i++ {
		go func() {
			for t := range p.work {
				t.fn(t.part, t.lo, t.hi)
				p.wg.Done()
			}
		}()
	}
	return p
}

func (p *pool) run(n int, fn func(part, lo, hi int)) {
	if n <= 0 {
		return
	}
	parts := min(p.n, n)
	if parts == 1 {
		fn(0, 0, n)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wg.Add(parts - 1)
	for i := 1; i < parts; i++ {
		p.work <- task{fn, i, i * n / parts, (i + 1) * n / parts}
	}
	fn(0, 0, n/parts)
	p.wg.Wait()
}
