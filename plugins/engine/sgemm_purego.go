//go:build !cgo || purego

package engine

// HaveOpenBLAS says whether SGEMM runs in OpenBLAS (true) or in pure Go.
const HaveOpenBLAS = false

// sgemm is the pure-Go SGEMM.
func sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int,
	b []float32, ldb int, beta float32, c []float32, ldc int) {
	goSgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// CoreName is the CPU core type OpenBLAS chose; empty without OpenBLAS.
func CoreName() string { return "" }

func blasName() string { return portableBLAS }

// SetBLASThreads does nothing without OpenBLAS.
func SetBLASThreads(int) {}

// BLASThreads is 0 without OpenBLAS.
func BLASThreads() int { return 0 }

func gemmName() string { return "pure Go (blocked, gonum vector kernels)" }
