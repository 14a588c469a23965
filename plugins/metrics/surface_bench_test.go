package metrics

import (
	"testing"

	"amid/assets/measure"
)

// BenchmarkHD95SurfaceDice256 is PANTHER's per-case work: DeepMind surface distances of two
// ellipsoids in 256³, then HD95, surface Dice at 5 mm and MASD.
func BenchmarkHD95SurfaceDice256(b *testing.B) {
	const n = 256
	gt := benchEllipsoid(n, [3]int{128, 128, 128}, [3]int{90, 80, 70})
	pred := benchEllipsoid(n, [3]int{132, 126, 130}, [3]int{85, 84, 66})
	sp := [3]float64{0.8, 0.8, 1.5}
	b.SetBytes(2 * n * n * n)
	b.ResetTimer()
	c0 := measure.CPU()
	for i := 0; i < b.N; i++ {
		sd, err := DeepMindSurfaceDistances(gt, pred, [3]int{n, n, n}, sp)
		if err != nil {
			b.Fatal(err)
		}
		_ = sd.RobustHausdorff(95)
		_ = sd.SurfaceDice(5)
		_ = sd.MASD()
	}
	b.ReportMetric(float64(measure.CPU()-c0)/float64(b.N)/1e9, "cpu-s/op")
}
