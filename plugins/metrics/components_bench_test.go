package metrics

import (
	"testing"

	"amid/assets/measure"
)

func BenchmarkLabel256(b *testing.B) {
	const n = 256
	m := benchPattern(n)
	var out []int32
	b.SetBytes(n * n * n)
	b.ResetTimer()
	c0 := measure.CPU()
	for i := 0; i < b.N; i++ {
		c, err := NewComponents(m, [3]int{n, n, n}, Conn26)
		if err != nil {
			b.Fatal(err)
		}
		out = c.Label(out)
	}
	b.ReportMetric(float64(measure.CPU()-c0)/float64(b.N)/1e9, "cpu-s/op")
}
