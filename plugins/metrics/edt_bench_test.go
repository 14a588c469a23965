package metrics

import (
	"testing"

	"amid/assets/measure"
)

// Benchmark shapes, built with the integer formulas of testdata/bench_volumetric.py,
// which times scipy/skimage on the same arrays.

func benchEllipsoid(n int, c, r [3]int) []uint8 {
	m := make([]uint8, n*n*n)
	rx, ry, rz := r[0], r[1], r[2]
	lim := sq(rx * ry * rz)
	for z := 0; z < n; z++ {
		for y := 0; y < n; y++ {
			for x := 0; x < n; x++ {
				if sq(ry*rz*(x-c[0]))+sq(rx*rz*(y-c[1]))+sq(rx*ry*(z-c[2])) <= lim {
					m[(z*n+y)*n+x] = 1
				}
			}
		}
	}
	return m
}

// benchPattern is a mask with many components of varied shape.
func benchPattern(n int) []uint8 {
	m := make([]uint8, n*n*n)
	for z := 0; z < n; z++ {
		for y := 0; y < n; y++ {
			for x := 0; x < n; x++ {
				if (x*x+3*y*y+5*z*z+x*y)%11 < 4 {
					m[(z*n+y)*n+x] = 1
				}
			}
		}
	}
	return m
}

// benchTubes is a vessel-like tree of tubes in an n³ grid, shifted by off voxels.
func benchTubes(n, off int) []uint8 {
	m := make([]uint8, n*n*n)
	h := n / 2
	for z := 0; z < n; z++ {
		for y := 0; y < n; y++ {
			for x := 0; x < n; x++ {
				in := sq(y-h-off)+sq(z-h) <= 16 && x >= 8 && x < n-8 ||
					sq(x-h/2)+sq(z-h) <= 9 && y >= 8 && y < n-8 ||
					sq(x-h-h/2+off)+sq(z-h) <= 9 && y >= 16 && y < n-16 ||
					sq(x-h)+sq(y-h/2) <= 4 && z >= 8 && z < n-8
				if in {
					m[(z*n+y)*n+x] = 1
				}
			}
		}
	}
	return m
}

func BenchmarkEDT256(b *testing.B) {
	const n = 256
	m := benchEllipsoid(n, [3]int{128, 128, 128}, [3]int{100, 90, 80})
	sp := [3]float64{0.8, 0.8, 1.5}
	out := make([]float64, n*n*n)
	b.SetBytes(n * n * n)
	b.ResetTimer()
	c0 := measure.CPU()
	for i := 0; i < b.N; i++ {
		out = EDT(m, [3]int{n, n, n}, sp, out)
	}
	b.ReportMetric(float64(measure.CPU()-c0)/float64(b.N)/1e9, "cpu-s/op")
}
