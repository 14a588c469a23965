//go:build !cgo || purego

package engine

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// HaveOpenBLAS says whether SGEMM runs in OpenBLAS (true) or in pure Go.
const HaveOpenBLAS = false

var impl gonum.Implementation

func sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int,
	b []float32, ldb int, beta float32, c []float32, ldc int) {
	ta, tb := blas.NoTrans, blas.NoTrans
	if transA {
		ta = blas.Trans
	}
	if transB {
		tb = blas.Trans
	}
	impl.Sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// CoreName is the CPU core type OpenBLAS chose; empty without OpenBLAS.
func CoreName() string { return "" }

// SetBLASThreads does nothing without OpenBLAS: the pure-Go SGEMM uses GOMAXPROCS.
func SetBLASThreads(int) {}

// BLASThreads is 0 without OpenBLAS.
func BLASThreads() int { return 0 }

func gemmName() string { return "pure Go (gonum)" }
