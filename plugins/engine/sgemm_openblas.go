//go:build cgo && !purego

package engine

/*
#cgo CFLAGS: -I/usr/include/x86_64-linux-gnu/openblas-pthread
#cgo LDFLAGS: -lopenblas
#include <cblas.h>
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"
)

// HaveOpenBLAS says whether SGEMM runs in OpenBLAS (true) or in pure Go.
const HaveOpenBLAS = true

func sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int,
	b []float32, ldb int, beta float32, c []float32, ldc int) {
	ta, tb := uint32(C.CblasNoTrans), uint32(C.CblasNoTrans)
	if transA {
		ta = C.CblasTrans
	}
	if transB {
		tb = C.CblasTrans
	}
	C.cblas_sgemm(C.CblasRowMajor, ta, tb, C.blasint(m), C.blasint(n), C.blasint(k),
		C.float(alpha), (*C.float)(unsafe.Pointer(&a[0])), C.blasint(lda),
		(*C.float)(unsafe.Pointer(&b[0])), C.blasint(ldb), C.float(beta),
		(*C.float)(unsafe.Pointer(&c[0])), C.blasint(ldc))
}

// CoreName is the CPU core type OpenBLAS chose for its kernels, e.g. "Haswell".
func CoreName() string { return C.GoString(C.openblas_get_corename()) }

// SetBLASThreads sets how many threads OpenBLAS uses for one SGEMM.
func SetBLASThreads(n int) { C.openblas_set_num_threads(C.int(n)) }

// BLASThreads is the number of threads OpenBLAS uses for one SGEMM.
func BLASThreads() int { return int(C.openblas_get_num_threads()) }

// blasName is the library and its version, e.g. "openblas 0.3.21", from
// openblas_get_config ("OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64").
func blasName() string {
	f := strings.Fields(C.GoString(C.openblas_get_config()))
	if len(f) < 2 {
		return "openblas"
	}
	return "openblas " + f[1]
}

func gemmName() string {
	return fmt.Sprintf("openblas %s, %d threads", CoreName(), BLASThreads())
}
