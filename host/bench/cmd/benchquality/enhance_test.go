package main

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"amid/assets/ci"
	"amid/assets/realdata"
	"amid/host/task"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// The Rician noise has the moments of its model: for a constant image A with noise σ,
// the mean of M² is A² + 2σ² (E[(A + σn₁)² + (σn₂)²]), and for A = 0 the mean of M is
// Rayleigh's σ·√(π/2). Each is asked within 5 standard errors of its sample mean, from the
// model's own variance: Var M² = 4A²σ² + 4σ⁴, and Rayleigh's Var M = (2 − π/2)σ².
func TestRicianNoiseModel(t *testing.T) {
	const n, sigma, tol = 200000, 5.0, 5.0
	rng := rand.New(rand.NewPCG(1, 2))
	for _, a := range []float64{0, sigma, 20 * sigma} {
		clean := make([]float64, n)
		for i := range clean {
			clean[i] = a
		}
		m := rician(clean, sigma, rng)
		var m1, m2 float64
		for _, v := range m {
			if v < 0 || math.IsNaN(v) {
				t.Fatalf("A = %g: a magnitude of %g", a, v)
			}
			m1 += v
			m2 += v * v
		}
		m1 /= n
		m2 /= n
		want2 := a*a + 2*sigma*sigma
		se2 := math.Sqrt(4*a*a*sigma*sigma+4*math.Pow(sigma, 4)) / math.Sqrt(n)
		if math.Abs(m2-want2) > tol*se2 {
			t.Errorf("A = %g: mean M² %.2f, want %.2f ± %.2f", a, m2, want2, tol*se2)
		}
		if a == 0 {
			want1 := sigma * math.Sqrt(math.Pi/2)
			se1 := sigma * math.Sqrt(2-math.Pi/2) / math.Sqrt(n)
			if math.Abs(m1-want1) > tol*se1 {
				t.Errorf("A = 0: mean M %.4f, want Rayleigh's %.4f ± %.4f", m1, want1, tol*se1)
			}
		}
	}
}

// The task written from ch2 reads back as an enhancement task with 16-bit inputs and
// targets of one size, 40–60 training and 20–30 test slices that do not overlap, its noise
// within BrainWeb's 3–7 % of white matter, and the Gaussian shortcut above the noisy
// input.
func TestDenoiseTaskFromRealData(t *testing.T) {
	realdata.Path(t, ch2Image)
	ci.NotUnderRace(t, "floats-alt") // TestParallel runs its worker pool under -race
	root, err := realdata.Dir()
	if err != nil {
		t.Fatal(err)
	}
	d, err := makeDenoise(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("σ %.3f grey levels (residual %.3f × √%d), white matter %.2f: %.2f %%", d.Sigma, d.Residual, averagedScans, d.WM, 100*d.Sigma/d.WM)
	if share := d.Sigma / d.WM; share < 0.03 || share > 0.07 {
		t.Errorf("σ is %.1f %% of white matter; want BrainWeb's middle levels, 3–7 %%", 100*share)
	}
	if len(d.Train) < 40 || len(d.Train) > 60 || len(d.Test) < 20 || len(d.Test) > 30 {
		t.Errorf("%d training and %d test slices; want 40–60 and 20–30", len(d.Train), len(d.Test))
	}
	train := map[int]bool{}
	for _, c := range d.Train {
		train[c.Z] = true
	}
	for _, c := range d.Test {
		if train[c.Z] {
			t.Errorf("slice %d both trains and tests", c.Z)
		}
	}
	dir := t.TempDir()
	if err := d.write(dir); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(filepath.Join(dir, "task.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if s := tk.Spec(); s.Kind != "enhancement" || s.Metric != "psnr" {
		t.Errorf("the task reads back as kind %q, metric %q", s.Kind, s.Metric)
	}
	for _, f := range []struct {
		c          denoiseCase
		in, target string
	}{{d.Train[0], "train/low_quality", "train/high_quality"}, {d.Test[0], "test/low_quality", "answers"}} {
		c := f.c
		in, err := imageio.Read(filepath.Join(dir, f.in, c.ID+".png"))
		if err != nil {
			t.Fatal(err)
		}
		out, err := imageio.Read(filepath.Join(dir, f.target, c.ID+".png"))
		if err != nil {
			t.Fatal(err)
		}
		if in.Dims != out.Dims || in.Dims != [4]int{181, 217, 1, 1} || in.DType() != volume.Uint16 || out.DType() != volume.Uint16 {
			t.Errorf("case %s: input %v %v, target %v %v; want 181 × 217 16-bit both", c.ID, in.Dims, in.DType(), out.Dims, out.DType())
		}
		for i := range in.Len() {
			if in.AtIndex(i) != c.Noisy.Pix[i] || out.AtIndex(i) != c.Clean.Pix[i] {
				t.Fatalf("case %s: pixel %d reads back as %g and %g, written %g and %g", c.ID, i, in.AtIndex(i), out.AtIndex(i), c.Noisy.Pix[i], c.Clean.Pix[i])
			}
		}
	}
	var ds []denoiser
	for _, dn := range denoisers {
		if dn.Name == "identity" || dn.Name == "gaussian" {
			ds = append(ds, dn)
		}
	}
	sc, err := d.shortcuts(context.Background(), dir, ds)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sc {
		t.Logf("%-10s %.3f  %s", s.Name, s.Score, s.About)
	}
	if len(sc) != 3 || sc[0].Name != "identity" || sc[1].Name != "gaussian" || sc[2].Name != "best" {
		t.Fatalf("shortcuts %v", sc)
	}
	if sc[0].Score >= sc[1].Score {
		t.Errorf("the noisy input scores PSNR %.2f, the Gaussian %.2f; want the Gaussian above", sc[0].Score, sc[1].Score)
	}
}

// TestParallel runs parallel's worker pool, under -race in make test's race pass (the
// tests of the tasks that use it run without -race): every index once, and none when there
// is nothing to do.
func TestParallel(t *testing.T) {
	for _, n := range []int{0, 1, 7, 100} {
		counts := make([]int, n)
		parallel(n, func(i int) { counts[i]++ })
		for i, c := range counts {
			if c != 1 {
				t.Errorf("n=%d: f(%d) ran %d times", n, i, c)
			}
		}
	}
}
