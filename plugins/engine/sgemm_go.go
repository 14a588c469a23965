package engine

import (
	"gonum.org/v1/gonum/blas/gonum"
)

// impl provides gonum's vectorised Saxpy and Sdot kernels; they allocate nothing.
var impl gonum.Implementation

// Block sizes of the pure-Go SGEMM: a 128×512 panel of B (256 KiB) stays in L2 while every
// row of A passes over it.
const (
	kBlock = 128
	nBlock = 512
)

// goSgemm is a serial, cache-blocked SGEMM on gonum's vector kernels. It runs on the calling
// goroutine and allocates nothing: the engine parallelises across samples, not inside one
// product (gonum's own Sgemm starts goroutines and allocates on every call). gonum's
// float32 kernels are SSE assembly with no dispatch on CPU features, so goSgemm sums in the
// same order, to the same bits, on every x86-64 CPU: it is the SGEMM of [NewPortableCPU].
func goSgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int,
	b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		switch beta {
		case 0:
			clear(row)
		case 1:
		default:
			for j := range row {
				row[j] *= beta
			}
		}
	}
	if k == 0 || alpha == 0 {
		return
	}
	aAt := func(i, p int) float32 {
		if transA {
			return a[p*lda+i]
		}
		return a[i*lda+p]
	}
	if transB {
		// C(i,j) += α·Σ_p A(i,p)·B(j,p): rows of B are contiguous along p.
		for i := range m {
			row := c[i*ldc : i*ldc+n]
			for j := range row {
				if !transA {
					row[j] += alpha * impl.Sdot(k, a[i*lda:], 1, b[j*ldb:], 1)
					continue
				}
				var s float32
				for p := range k {
					s += a[p*lda+i] * b[j*ldb+p]
				}
				row[j] += alpha * s
			}
		}
		return
	}
	for j0 := 0; j0 < n; j0 += nBlock {
		j1 := min(n, j0+nBlock)
		for p0 := 0; p0 < k; p0 += kBlock {
			p1 := min(k, p0+kBlock)
			for i := range m {
				row := c[i*ldc+j0 : i*ldc+j1]
				for p := p0; p < p1; p++ {
					if v := alpha * aAt(i, p); v != 0 {
						impl.Saxpy(j1-j0, v, b[p*ldb+j0:p*ldb+j1], 1, row, 1)
					}
				}
			}
		}
	}
}
