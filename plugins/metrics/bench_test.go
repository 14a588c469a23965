package metrics

import (
	"math/rand/v2"
	"testing"

	"amid/assets/measure"
)

// benchLoop runs f b.N times and reports CPU milliseconds per operation (benchCPU: the
// machine is shared, and testdata/bench_2d.py reports Python's CPU time the same way).
func benchLoop(b *testing.B, f func()) {
	b.ResetTimer()
	c0 := measure.CPU()
	for i := 0; i < b.N; i++ {
		f()
	}
	b.ReportMetric(float64(measure.CPU()-c0)/1e6/float64(b.N), "cpu-ms/op")
}

// benchCells draws about n elliptic cells on a w×h instance map (deterministic).
func benchCells(w, h, n int, seed uint64) []int32 {
	rng := rand.New(rand.NewPCG(seed, 7))
	d := make([]int32, w*h)
	for k := 1; k <= n; k++ {
		cx, cy := rng.IntN(w), rng.IntN(h)
		rx, ry := 6+rng.IntN(12), 6+rng.IntN(12)
		for y := max(0, cy-ry); y < min(h, cy+ry+1); y++ {
			for x := max(0, cx-rx); x < min(w, cx+rx+1); x++ {
				dx, dy := float64(x-cx)/float64(rx), float64(y-cy)/float64(ry)
				if dx*dx+dy*dy <= 1 {
					d[y*w+x] = int32(k)
				}
			}
		}
	}
	return d
}

// BenchmarkCellSegF1 is the NeurIPS-CellSeg per-image evaluation at the five thresholds on
// a 2048×2048 image with 2,000 cells and a prediction shifted by 2 pixels.
func BenchmarkCellSegF1(b *testing.B) {
	const w, h = 2048, 2048
	gt := benchCells(w, h, 2000, 1)
	pred := make([]int32, w*h)
	for y := 0; y < h; y++ {
		for x := 2; x < w; x++ {
			pred[y*w+x] = gt[y*w+x-2]
		}
	}
	benchLoop(b, func() {
		if _, err := CellSegF1(gt, pred, w, h, CellSegThresholds); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkCOCOEvaluate is pycocotools-style bbox evaluation of 1,000 detections against
// 1,000 GT boxes on 10 images and 4 categories.
func BenchmarkCOCOEvaluate(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	var gts []COCOGT
	var dts []COCODet
	for i := 0; i < 1000; i++ {
		img, cat := int64(i%10), int64(1+i%4)
		x, y := rng.Float64()*2000, rng.Float64()*1000
		w, h := 20+rng.Float64()*150, 20+rng.Float64()*150
		gts = append(gts, COCOGT{ID: int64(i + 1), ImageID: img, CategoryID: cat, Box: COCOBox{x, y, w, h}, Area: w * h})
		dts = append(dts, COCODet{ImageID: img, CategoryID: cat, Box: COCOBox{x + rng.NormFloat64()*5, y + rng.NormFloat64()*5, w, h}, Score: rng.Float64()})
	}
	imgs := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	cats := []int64{1, 2, 3, 4}
	benchLoop(b, func() { COCOEvaluate(gts, dts, imgs, cats) })
}

func benchImages(n int) (Image, Image) {
	rng := rand.New(rand.NewPCG(5, 6))
	a := Image{W: n, H: n, Pix: make([]float64, n*n)}
	c := Image{W: n, H: n, Pix: make([]float64, n*n)}
	for i := range a.Pix {
		a.Pix[i] = float64((i/n+i%n)%256) + float64(rng.IntN(20))
		c.Pix[i] = a.Pix[i] + float64(rng.IntN(30))
	}
	return a, c
}

// BenchmarkLNCC is the USenhance LNCC on a 1024×1024 pair.
func BenchmarkLNCC(b *testing.B) {
	a, c := benchImages(1024)
	benchLoop(b, func() {
		if _, err := LNCC(a, c); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkSSIM is skimage-default SSIM on a 1024×1024 pair.
func BenchmarkSSIM(b *testing.B) {
	a, c := benchImages(1024)
	dr := DataRange(a, c)
	benchLoop(b, func() {
		if _, err := SSIM(a, c, dr); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkLinearSumAssignment solves a dense random 500×500 problem.
func BenchmarkLinearSumAssignment(b *testing.B) {
	const n = 500
	rng := rand.New(rand.NewPCG(8, 9))
	cost := make([]float64, n*n)
	for i := range cost {
		cost[i] = rng.Float64()
	}
	benchLoop(b, func() {
		if _, _, err := LinearSumAssignment(cost, n, n); err != nil {
			b.Fatal(err)
		}
	})
}
