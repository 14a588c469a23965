package metrics

import (
	"testing"

	"amid/assets/measure"
)

func BenchmarkCLDice128(b *testing.B) {
	const n = 128
	gt, pred := benchTubes(n, 0), benchTubes(n, 1)
	b.SetBytes(2 * n * n * n)
	b.ResetTimer()
	c0 := measure.CPU()
	for i := 0; i < b.N; i++ {
		if _, err := ClDice(pred, gt, [3]int{n, n, n}, SkeletonZYX); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(measure.CPU()-c0)/float64(b.N)/1e9, "cpu-s/op")
}
