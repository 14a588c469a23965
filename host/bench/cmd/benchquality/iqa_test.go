package main

import (
	"context"
	"encoding/csv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"amid/assets/ci"
	"amid/assets/realdata"
	"amid/host/task"
	"amid/plugins/metrics"
)

// disc is an n × n image holding v inside the disc of radius r about the centre, 0 outside.
func disc(n int, r, v float64) []float64 {
	img := make([]float64, n*n)
	c := float64(n-1) / 2
	for y := range n {
		for x := range n {
			if math.Hypot(float64(x)-c, float64(y)-c) <= r {
				img[y*n+x] = v
			}
		}
	}
	return img
}

// inside calls f with each pixel of an n × n image within radius r of the centre.
func inside(n int, r float64, f func(i int)) {
	c := float64(n-1) / 2
	for y := range n {
		for x := range n {
			if math.Hypot(float64(x)-c, float64(y)-c) <= r {
				f(y*n + x)
			}
		}
	}
}

// A uniform disc's projection, reconstructed without noise by every kernel, gives back its
// value: within 1 % on average over the disc's inner part (radius up to 0.75 of the
// disc's, away from the edge every kernel blurs), and within 3 % at every pixel there (the
// discrete projector's sampling ripple: 1.6 % at worst, with Ram-Lak); outside the disc,
// beyond its edge's blur, under 3 % of it.
func TestFBPReturnsDiscValue(t *testing.T) {
	const n, r = 64, 24.0
	mu := ctMuWater * 1.0 // water in pixels of 1 mm
	g := newCTGeometry(n, 180)
	sino := g.project(disc(n, r, mu))
	// The central ray crosses the disc's diameter: its line integral is 2r μ.
	if got, want := sino[0][g.bins/2], 2*r*mu; math.Abs(got-want) > 0.02*want {
		t.Errorf("the central ray's line integral is %.4f, want 2rμ = %.4f", got, want)
	}
	for _, k := range reconKernels {
		img := g.fbp(sino, k)
		sum, cnt, worst := 0.0, 0, 0.0
		inside(n, 0.75*r, func(i int) {
			sum += img[i]
			cnt++
			worst = max(worst, math.Abs(img[i]-mu)/mu)
		})
		mean := sum / float64(cnt)
		t.Logf("%s: the disc's mean %+.3f %% off μ, its worst pixel %.2f %%", k.Name, 100*(mean-mu)/mu, 100*worst)
		if math.Abs(mean-mu) > 0.01*mu {
			t.Errorf("%s: the disc's mean is %.5f, want μ = %.5f within 1 %%", k.Name, mean, mu)
		}
		if worst > 0.03 {
			t.Errorf("%s: a pixel of the disc is %.1f %% off μ, want within 3 %%", k.Name, 100*worst)
		}
		// Outside the disc (beyond its edge's blur), nothing.
		c := float64(n-1) / 2
		for y := range n {
			for x := range n {
				if d := math.Hypot(float64(x)-c, float64(y)-c); d > r+4 && d < float64(n)/2-1 && math.Abs(img[y*n+x]) > 0.03*mu {
					t.Fatalf("%s: pixel (%d, %d) outside the disc holds %.5f, over 3 %% of μ", k.Name, x, y, img[y*n+x])
				}
			}
		}
	}
}

// The noise of a reconstruction grows as the dose falls, as 1/√dose (Poisson counts: the
// variance of −ln(N/I0) is 1/N): at a quarter and a sixteenth of the dose the noise σ in a
// water disc is 2 and 4 times the full dose's, within 15 %. A smoother kernel lowers it.
func TestNoiseGrowsAsDoseFalls(t *testing.T) {
	const n, r, i0 = 64, 28.0, 1e5
	mu := ctMuWater * 1.0
	g := newCTGeometry(n, 180)
	sino := g.project(disc(n, r, mu))
	rng := rand.New(rand.NewPCG(1, 2))
	sigma := func(dose float64, k reconKernel) float64 {
		ref := g.fbp(sino, k)
		ss, cnt := 0.0, 0
		for range 4 { // four noise draws, for a steady estimate
			img := g.fbp(addPoissonNoise(sino, dose*i0, rng), k)
			inside(n, 0.8*r, func(i int) {
				ss += (img[i] - ref[i]) * (img[i] - ref[i])
				cnt++
			})
		}
		return math.Sqrt(ss / float64(cnt))
	}
	full := sigma(1, reconKernels[0])
	for _, dose := range []float64{0.25, 0.0625} {
		got, want := sigma(dose, reconKernels[0])/full, 1/math.Sqrt(dose)
		t.Logf("dose %g: σ %.2f × the full dose's (1/√dose %.2f)", dose, got, want)
		if math.Abs(got-want) > 0.15*want {
			t.Errorf("dose %g: σ is %.2f × the full dose's, want 1/√dose = %.2f within 15 %%", dose, got, want)
		}
	}
	if hann := sigma(1, reconKernels[len(reconKernels)-1]); hann >= full {
		t.Errorf("the Hann kernel's σ %.3g is not under Ram-Lak's %.3g", hann, full)
	}
}

// softSSIM over every pixel is metrics.SSIM of the clipped images with the window's width
// as data range.
func TestSoftSSIMIsMetricsSSIM(t *testing.T) {
	const n = 40
	rng := rand.New(rand.NewPCG(3, 4))
	a, b := make([]float64, n*n), make([]float64, n*n)
	mask := make([]bool, n*n)
	clip := func(v float64) float64 { return min(max(v, iqaWindowLo), iqaWindowHi) }
	ma, mb := metrics.Image{W: n, H: n}, metrics.Image{W: n, H: n}
	for i := range a {
		a[i] = 40 + 150*math.Sin(float64(i%n)/5) + 30*rng.NormFloat64()
		b[i] = a[i] + 20*rng.NormFloat64()
		mask[i] = true
		ma.Pix, mb.Pix = append(ma.Pix, clip(a[i])), append(mb.Pix, clip(b[i]))
	}
	got, err := softSSIM(a, b, n, mask)
	if err != nil {
		t.Fatal(err)
	}
	want, err := metrics.SSIM(ma, mb, iqaWindowHi-iqaWindowLo)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("softSSIM %.12f, metrics.SSIM %.12f", got, want)
	}
}

// The isotonic fit is decreasing and passes through data that already decrease.
func TestIsotonicDecreasing(t *testing.T) {
	f := isotonicDecreasing([]float64{1, 2, 3, 4}, []float64{4, 3, 3.5, 1})
	for _, c := range []struct{ x, want float64 }{{0, 4}, {1, 4}, {2.5, 3.25}, {4, 1}, {9, 1}} {
		if got := f(c.x); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("f(%g) = %g, want %g", c.x, got, c.want)
		}
	}
}

// The task written from the real scan (a reduced design: one slice a block, three versions
// each, 120 angles) reads back; no slice lies on both sides of the split, and the test
// slices are those of blocks 1, 4 and 7; the scores lie in 0–4; on a real slice the score
// falls as the dose falls; and the shortcuts are scored, the mean's undefined.
func TestDoseTaskFromRealScan(t *testing.T) {
	rd := filepath.Dir(realdata.Path(t, cranium))
	ci.NotUnderRace(t, "floats-alt")
	dir := t.TempDir()
	d := doseDesign{PerBlock: 1, Variants: 3, Angles: 120, Seed: 1}
	sc, err := writeDoseIQA(context.Background(), rd, dir, d)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(filepath.Join(dir, "task.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := tk.Resolve(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Train) != 6*d.Variants || len(ds.Test) != 3*d.Variants {
		t.Errorf("%d training and %d test cases, want %d and %d", len(ds.Train), len(ds.Test), 6*d.Variants, 3*d.Variants)
	}
	rows := readCSV(t, filepath.Join(dir, "shortcuts", "design.csv"))
	side := map[string]string{}
	for _, r := range rows[1:] {
		id, split, z, block := r[0], r[1], r[2], r[3]
		if s, ok := side[z]; ok && s != split {
			t.Errorf("slice %s lies in both train and test", z)
		}
		side[z] = split
		b, _ := strconv.Atoi(block)
		if (split == "test") != testSlabs[b] {
			t.Errorf("case %s of block %d is on the %s side", id, b, split)
		}
		if s, err := strconv.ParseFloat(r[6], 64); err != nil || s < 0 || s > iqaScoreMax {
			t.Errorf("case %s: score %q outside 0–%g", id, r[6], iqaScoreMax)
		}
	}
	if answers := readCSV(t, filepath.Join(dir, "answers", "train_labels.csv")); len(answers)-1 != len(ds.Test) {
		t.Errorf("the answers hold %d rows for %d test cases", len(answers)-1, len(ds.Test))
	}
	if len(sc) != 5 || sc[0].Name != "mean" || sc[0].Score != 0 || sc[4].Name != "best" {
		t.Errorf("shortcuts %+v: want mean (undefined: 0), three others and best", sc)
	}
	// One real slice, the middle block's, at falling doses with one kernel each.
	sl, _, err := craniumSlices(rd, d)
	if err != nil {
		t.Fatal(err)
	}
	s := sl[4]
	g := newCTGeometry(s.n, d.Angles)
	sino := g.project(s.mu)
	ref := s.toHU(g.fbp(sino, reconKernels[0]))
	soft := make([]bool, len(ref))
	for i, v := range ref {
		soft[i] = v >= iqaWindowLo && v <= iqaWindowHi
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, k := range []reconKernel{reconKernels[0], reconKernels[3]} {
		last := math.Inf(1)
		for _, dose := range []float64{1, 0.3, 0.1, ctMinDose} {
			ssim, err := softSSIM(s.toHU(g.fbp(addPoissonNoise(sino, dose*ctFullDoseI0, rng), k)), ref, s.n, soft)
			if err != nil {
				t.Fatal(err)
			}
			if ssim >= last {
				t.Errorf("%s: the SSIM at dose %g, %.4f, is not under the higher dose's %.4f", k.Name, dose, ssim, last)
			}
			last = ssim
		}
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
