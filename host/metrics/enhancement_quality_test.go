package metrics_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"amid/host/metrics"
	"amid/plugins/enhancement/quality"
)

// TestEnhancementQualityMatchesGrader checks the enhancement plugin's own LNCC, SSIM and
// PSNR (plugins may not import host/) against the grader's on 8-bit-valued image pairs of
// several sizes, on float pairs, and on flat and identical images.
func TestEnhancementQualityMatchesGrader(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 14))
	type pair struct {
		name string
		a, b []float64
		w, h int
	}
	var pairs []pair
	for _, sz := range [][2]int{{7, 7}, {11, 11}, {23, 17}, {64, 40}, {3, 50}} {
		w, h := sz[0], sz[1]
		a, b := make([]float64, w*h), make([]float64, w*h)
		f, g := make([]float64, w*h), make([]float64, w*h)
		for i := range a {
			// A ramp with speckle-like noise against the clean ramp, rounded like 8-bit PNGs.
			clean := 40 + 150*float64(i%w)/float64(w)
			a[i] = math.Round(min(255, clean*(0.5+r.Float64())))
			b[i] = math.Round(clean)
			f[i], g[i] = r.NormFloat64(), r.NormFloat64()+0.5*f[i]
		}
		pairs = append(pairs, pair{"8-bit", a, b, w, h}, pair{"float", f, g, w, h})
	}
	flat := make([]float64, 12*12)
	for i := range flat {
		flat[i] = 7
	}
	pairs = append(pairs, pair{"flat", flat, flat, 12, 12}, pair{"identical", pairs[4].a, pairs[4].a, 23, 17})
	for _, p := range pairs {
		ma, mb := metrics.Image{W: p.w, H: p.h, Pix: p.a}, metrics.Image{W: p.w, H: p.h, Pix: p.b}
		qa, qb := quality.Image{W: p.w, H: p.h, Pix: p.a}, quality.Image{W: p.w, H: p.h, Pix: p.b}
		rng := metrics.DataRange(ma, mb)
		if got := quality.DataRange(qa, qb); got != rng {
			t.Errorf("%s %d×%d: data range %v, grader %v", p.name, p.w, p.h, got, rng)
		}
		// 1e-9: both sum the same float64 values, in different orders (running sums in
		// the grader's port, summed-area tables here).
		same := func(what string, got, want float64, gerr, werr error) {
			t.Helper()
			if (gerr == nil) != (werr == nil) {
				t.Errorf("%s %s %d×%d: error %v, grader %v", p.name, what, p.w, p.h, gerr, werr)
				return
			}
			if werr == nil && !(got == want || math.Abs(got-want) <= 1e-9*max(1, math.Abs(want))) {
				t.Errorf("%s %s %d×%d: %v, grader %v", p.name, what, p.w, p.h, got, want)
			}
		}
		g, gerr := quality.LNCC(qa, qb)
		w, werr := metrics.LNCC(ma, mb)
		same("LNCC", g, w, gerr, werr)
		g, gerr = quality.SSIM(qa, qb, rng)
		w, werr = metrics.SSIM(ma, mb, rng)
		same("SSIM", g, w, gerr, werr)
		g, gerr = quality.PSNR(qa, qb, rng)
		w, werr = metrics.PSNR(ma, mb, rng)
		same("PSNR", g, w, gerr, werr)
	}
}
