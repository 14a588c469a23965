package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"amid/host/synth"
	"amid/plugins/metrics"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// The enhancement task: denoising real MR slices. The targets are axial slices of ch2
// (Colin27), the average of 27 T1 scans of one subject, whose averaging left a twenty-
// seventh of one scan's noise variance; the inputs are the same slices with the noise of
// one scan put back as a scanner makes it: Rician, the magnitude of the image plus complex
// Gaussian noise, |A + σ(n₁ + i·n₂)|. ch2 is chosen over the cache's other MR because its
// noise level can be grounded in the scan itself (the number of scans averaged is known),
// it is human at 1 mm, and its 181 × 217 slices suit the plugin's 2D lanes; INIA19 is a
// macaque template of many animals and the ITK scan is 2 × 2 × 3 mm.
//
// σ is grounded in ch2's white matter, since its background is zeroed (41.6 % of its
// voxels are exactly 0 and none lies between 1 and 6, so the Rayleigh background of a
// magnitude image cannot be measured there): where a voxel's 7 × 7 × 7 neighbourhood is all
// white matter, the differences of neighbouring voxels hold twice the residual noise
// variance of the average. On ch2 that residual is 0.93 grey levels (0.88 once the 8-bit
// rounding's variance 1/12 is taken out) in white matter of mean 112.2, so one scan's σ is
// √27 · 0.88 ≈ 4.6 grey levels: 4.1 % of white matter, an SNR of 24. (With 3³, 5³ and 9³
// neighbourhoods the residual is 1.65, 0.96 and 0.84: partial volume at white matter's
// edge inflates the smaller ones, and by 7³ it has faded.) That lies between BrainWeb's 3 %
// and 5 % noise levels, defined the same way (the σ of the Gaussian noise as a share of
// white matter's signal for T1; BrainWeb FAQ, https://brainweb.bic.mni.mcgill.ca/faq.html;
// Kwan, Evans and Pike, IEEE TMI 18(11), 1999), the simulator built on this very subject
// (Collins et al., IEEE TMI 17(3), 1998). The estimate is low if registering the 27 scans
// smoothed their noise and high if white matter's texture adds to it; the test asks it to
// stay within BrainWeb's middle levels, 3–7 %.
const (
	denoiseID    = "mr-rician-denoise"
	denoiseTitle = "human T1 MR at 1 mm (ch2), axial slices with a single scan's Rician noise: denoising"
	// averagedScans is how many scans ch2 averages (Holmes et al., J Comput Assist
	// Tomogr 22(2), 1998).
	averagedScans = 27
	// wmLo and wmHi bound ch2's white matter: its histogram's brightest mode lies at grey
	// levels 108–116, between the grey–white valley near 96 and the fall at 120–124.
	wmLo, wmHi = 95, 130
	// wmMargin: the voxels measured lie this far inside white matter, their (2·wmMargin+1)³
	// neighbourhood all in the band (3: the 7³ neighbourhood above).
	wmMargin = 3
	// uint8Rounding is the variance the 8-bit rounding of ch2 adds: a uniform error on
	// [−½, ½].
	uint8Rounding = 1.0 / 12
	// headShare: a slice of which less than a tenth is head (non-zero) is mostly air,
	// which teaches little and would score mostly background; ch2's head then spans
	// slices 0–167 of 181.
	headShare = 0.1
	// sliceStep keeps every second axial slice of each block: 57 training and 30
	// test slices from ch2's 168, and neighbours 2 mm apart rather than 1 mm.
	sliceStep = 2
	// pngScale is the 16-bit PNGs' unit: a hundredth of a ch2 grey level, so a noisy
	// value (at most 254 plus a few σ, under 300) fits uint16 with room, and rounding
	// (σ 0.003 grey levels) is nothing beside the noise.
	pngScale = 100
	// noiseSeed seeds the noise, an arbitrary fixed number (nothing was tuned on it);
	// each slice draws from its own stream (the seed and the slice number), so a slice's
	// noise does not hang on which others are written.
	noiseSeed = 20240527
)

// enhancementTask is the denoising task on ch2.
var enhancementTask = family{
	ID:    denoiseID,
	Title: denoiseTitle,
	Kind:  taskspec.Enhancement,
	Also:  []string{"ssim"},
	Labels: "the targets are axial slices of ch2 (Colin27, the average of 27 T1 scans of one subject); " +
		"the inputs are the same slices with Rician noise of one scan's σ (√27 times the average's residual noise in white matter, about 4.6 grey levels, 4.1 % of white matter), drawn with a fixed seed",
	write: func(ctx context.Context, realdata, dir string) ([]shortcut, error) {
		return writeDenoise(ctx, realdata, dir, denoisers)
	},
}

func init() { families = append(families, enhancementTask) }

// denoiseCase is one axial slice: the noisy input and the clean target, in the PNGs' units
// (rounded as the files hold them).
type denoiseCase struct {
	ID           string
	Z            int
	Noisy, Clean metrics.Image
}

// denoiseData is the task's cases and the figures behind its noise.
type denoiseData struct {
	Train, Test []denoiseCase
	// Sigma is one scan's noise σ and WM the white matter's mean, in ch2 grey levels;
	// Residual is the average's residual σ they come from.
	Sigma, WM, Residual float64
}

// writeDenoise writes the task into dir and scores the denoisers ds on its test cases.
func writeDenoise(ctx context.Context, realdata, dir string, ds []denoiser) ([]shortcut, error) {
	d, err := makeDenoise(realdata)
	if err != nil {
		return nil, err
	}
	if err := d.write(dir); err != nil {
		return nil, err
	}
	return d.shortcuts(ctx, dir, ds)
}

// makeDenoise reads ch2 from the real-image cache and makes the cases.
func makeDenoise(realdata string) (*denoiseData, error) {
	v, err := imageio.Read(filepath.Join(realdata, ch2Image))
	if err != nil {
		return nil, fmt.Errorf("reading ch2: %w", err)
	}
	if v.Dims[3] != 1 || v.Dims[2] < nSlabs*sliceStep {
		return nil, fmt.Errorf("%s is %v; want one channel and at least %d slices", ch2Image, v.Dims, nSlabs*sliceStep)
	}
	sigma, wm, residual, err := singleScanSigma(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ch2Image, err)
	}
	z0, z1, err := headExtent(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ch2Image, err)
	}
	train, test := denoiseSplit(z0, z1)
	d := &denoiseData{Sigma: sigma, WM: wm, Residual: residual}
	mk := func(z int) denoiseCase {
		clean := axial(v, z)
		rng := rand.New(rand.NewPCG(noiseSeed, uint64(z)))
		noisy := metrics.Image{W: clean.W, H: clean.H, Pix: rician(clean.Pix, sigma, rng)}
		return denoiseCase{ID: fmt.Sprintf("z%03d", z), Z: z, Noisy: toPNG(noisy), Clean: toPNG(clean)}
	}
	for _, z := range train {
		d.Train = append(d.Train, mk(z))
	}
	for _, z := range test {
		d.Test = append(d.Test, mk(z))
	}
	return d, nil
}

// singleScanSigma estimates the noise σ of one of the scans ch2 averages, in its grey
// levels: where a voxel's 3 × 3 × 3 neighbourhood lies in the white-matter band, the
// squared differences to its neighbours along x, y and z hold twice the average's noise
// variance; less the 8-bit rounding's variance, times the number of scans averaged. It
// also returns the white matter's mean and the average's residual σ.
func singleScanSigma(v *volume.Volume) (sigma, wm, residual float64, err error) {
	X, Y, Z := v.Dims[0], v.Dims[1], v.Dims[2]
	in := make([]bool, v.Len())
	for i := range in {
		a := v.AtIndex(i)
		in[i] = a >= wmLo && a <= wmHi
	}
	// Erode the band by one voxel along each axis in turn: a voxel stays when its 3 × 3 × 3
	// neighbourhood is all in the band.
	strides, sizes := [3]int{1, X, X * Y}, [3]int{X, Y, Z}
	for range wmMargin {
		for a, stride := range strides {
			size := sizes[a]
			out := make([]bool, len(in))
			for i := range in {
				c := i / stride % size
				out[i] = in[i] && c > 0 && c < size-1 && in[i-stride] && in[i+stride]
			}
			in = out
		}
	}
	var d2, sum float64
	n := 0
	for i, ok := range in {
		if !ok {
			continue
		}
		c := v.AtIndex(i)
		for _, s := range strides {
			d := c - v.AtIndex(i+s)
			d2 += d * d
		}
		sum += c
		n++
	}
	if n == 0 {
		return 0, 0, 0, fmt.Errorf("no white matter: no voxel's neighbourhood lies within grey levels %d–%d", wmLo, wmHi)
	}
	raw := d2 / float64(3*n) / 2
	if raw <= uint8Rounding {
		return 0, 0, 0, fmt.Errorf("white matter's noise variance %.3g is no more than the 8-bit rounding's", raw)
	}
	residual = math.Sqrt(raw - uint8Rounding)
	return math.Sqrt(averagedScans) * residual, sum / float64(n), residual, nil
}

// headExtent is the axial slices [z0, z1) of v from the first to the last whose share of
// non-zero pixels reaches headShare.
func headExtent(v *volume.Volume) (z0, z1 int, err error) {
	X, Y, Z := v.Dims[0], v.Dims[1], v.Dims[2]
	z0, z1 = -1, -1
	for z := range Z {
		n := 0
		for i := range X * Y {
			if v.AtIndex(i+X*Y*z) != 0 {
				n++
			}
		}
		if float64(n) >= headShare*float64(X*Y) {
			if z0 < 0 {
				z0 = z
			}
			z1 = z + 1
		}
	}
	if z0 < 0 || z1-z0 < nSlabs*sliceStep {
		return 0, 0, fmt.Errorf("the head spans %d axial slices; want at least %d", max(z1-z0, 0), nSlabs*sliceStep)
	}
	return z0, z1, nil
}

// denoiseSplit cuts the slices [z0, z1) into nine blocks, blocks 1, 4 and 7 testing (the
// segmentation tasks' split), and keeps every sliceStep-th slice of each block from its
// first.
func denoiseSplit(z0, z1 int) (train, test []int) {
	n := z1 - z0
	for k := range nSlabs {
		for z := z0 + k*n/nSlabs; z < z0+(k+1)*n/nSlabs; z += sliceStep {
			if testSlabs[k] {
				test = append(test, z)
			} else {
				train = append(train, z)
			}
		}
	}
	return train, test
}

// axial is slice z of v, x along the image's rows.
func axial(v *volume.Volume, z int) metrics.Image {
	X, Y := v.Dims[0], v.Dims[1]
	im := metrics.Image{W: X, H: Y, Pix: make([]float64, X*Y)}
	for i := range im.Pix {
		im.Pix[i] = v.AtIndex(i + X*Y*z)
	}
	return im
}

// rician is clean with Rician noise of σ sigma: each value A becomes |A + σ(n₁ + i·n₂)|,
// n₁ and n₂ standard normal, the magnitude of a complex image with Gaussian noise in both
// channels.
func rician(clean []float64, sigma float64, rng *rand.Rand) []float64 {
	out := make([]float64, len(clean))
	for i, a := range clean {
		out[i] = math.Hypot(a+sigma*rng.NormFloat64(), sigma*rng.NormFloat64())
	}
	return out
}

// toPNG is im in grey levels as its 16-bit PNG holds it: times pngScale, rounded and
// clipped to uint16.
func toPNG(im metrics.Image) metrics.Image {
	out := metrics.Image{W: im.W, H: im.H, Pix: make([]float64, len(im.Pix))}
	for i, p := range im.Pix {
		out.Pix[i] = quantise(p * pngScale)
	}
	return out
}

// quantise is p rounded and clipped to uint16, as a 16-bit PNG holds it.
func quantise(p float64) float64 {
	if math.IsNaN(p) {
		return 0
	}
	return math.Max(0, math.Min(math.MaxUint16, math.Round(p)))
}

// writePNG16 writes im (values in uint16's range) as a 16-bit grey PNG.
func writePNG16(path string, im metrics.Image) error {
	v, err := volume.New(volume.Uint16, [4]int{im.W, im.H, 1, 1})
	if err != nil {
		return err
	}
	for i, p := range im.Pix {
		v.SetIndex(i, p)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return imageio.Write(path, v)
}

// write writes the task folder dir: task.yaml, train/low_quality and train/high_quality,
// test/low_quality, and the test targets as answers/{id}.png.
func (d *denoiseData) write(dir string) error {
	if err := freshTask(dir); err != nil {
		return err
	}
	for _, c := range d.Train {
		if err := writePNG16(filepath.Join(dir, "train", "low_quality", c.ID+".png"), c.Noisy); err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
		if err := writePNG16(filepath.Join(dir, "train", "high_quality", c.ID+".png"), c.Clean); err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
	}
	for _, c := range d.Test {
		if err := writePNG16(filepath.Join(dir, "test", "low_quality", c.ID+".png"), c.Noisy); err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
		if err := writePNG16(filepath.Join(dir, "answers", c.ID+".png"), c.Clean); err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
	}
	yaml := fmt.Sprintf(`# make bench-quality: ch2 (Colin27) axial slices, every %d of each of %d blocks (1, 4, 7 test), with
# Rician noise of σ %.2f grey levels (%.1f %% of white matter %.1f; the average's residual %.3f × √%d),
# as 16-bit PNGs of %d units a grey level.
id: %s
title: %q
kind: enhancement
dims: 2
modality: MR
channels: [t1]
data:
  train:
    images: ["train/low_quality/{id}.png"]
    label: {format: image, path: "train/high_quality/{id}.png"}
  test:
    images: ["test/low_quality/{id}.png"]
metric: {name: psnr}
submission:
  id_column: case_id
  columns: [case_id, prediction]
  file_column: prediction
  path: "predictions/{id}.png"
`, sliceStep, nSlabs, d.Sigma, 100*d.Sigma/d.WM, d.WM, d.Residual, averagedScans, pngScale, denoiseID, denoiseTitle)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "task.yaml"), []byte(yaml), 0o644)
}

// filter is a denoiser with its parameters chosen.
type filter func(metrics.Image) metrics.Image

// denoiser is a classic denoiser: tune chooses its parameters on the training pairs, given
// the noise σ (in the PNGs' units) measured on them, and says what it chose.
type denoiser struct {
	Name string
	tune func(ctx context.Context, train []denoiseCase, sigma float64) (filter, string, error)
}

// gaussSigmas are the Gaussian widths tried, in pixels (mm): from nearly none to 2 mm, past
// which a 1 mm scan's cortex blurs away; the chosen ones lie inside.
var gaussSigmas = []float64{0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.4, 1.6, 1.8, 2.0}

// nlmKs are the non-local means filtering strengths tried, h = k·σ: Buades et al.'s
// patch-distance weights with 2σ² taken off, for which Buades, Coll and Morel (IPOL 2011)
// give h = 0.4σ with 3 × 3 patches; up from there to 3σ, as ch2's training pairs prefer
// a stronger one.
var nlmKs = []float64{0.4, 0.6, 0.8, 1.0, 1.3, 1.7, 2.2, 3.0}

// Non-local means' windows: 3 × 3 patches in an 11 × 11 search window, the 2D counterpart
// of the 3 × 3 × 3 patches and 11 × 11 × 11 search of the optimised non-local means for MR
// (Coupé et al., IEEE TMI 27(4), 2008).
const nlmPatch, nlmSearch = 1, 5

// nlmTuneEvery: non-local means is tuned on every third training pair, its costliest step.
const nlmTuneEvery = 3

// denoisers are the shortcuts: the noisy input itself, and classic denoisers each tuned on
// the training pairs, from the simplest to the strongest.
var denoisers = []denoiser{
	{"identity", func(context.Context, []denoiseCase, float64) (filter, string, error) {
		return func(im metrics.Image) metrics.Image { return im }, "the noisy input itself", nil
	}},
	{"gaussian", func(ctx context.Context, train []denoiseCase, _ float64) (filter, string, error) {
		s, err := bestParam(ctx, train, gaussSigmas, func(im metrics.Image, s float64) metrics.Image { return gaussian(im, s) })
		return func(im metrics.Image) metrics.Image { return gaussian(im, s) },
			fmt.Sprintf("Gaussian smoothing, σ %.1f px chosen on the training pairs (of %.1f–%.1f)", s, gaussSigmas[0], gaussSigmas[len(gaussSigmas)-1]), err
	}},
	{"median3", func(context.Context, []denoiseCase, float64) (filter, string, error) {
		return median3, "the 3 × 3 median", nil
	}},
	{"rician-gauss", func(ctx context.Context, train []denoiseCase, sigma float64) (filter, string, error) {
		f := func(im metrics.Image, s float64) metrics.Image { return ricianGauss(im, s, sigma) }
		s, err := bestParam(ctx, train, gaussSigmas, f)
		return func(im metrics.Image) metrics.Image { return f(im, s) },
			fmt.Sprintf("Rician-corrected Gaussian: √max(G∗x² − 2σ², 0) (Nowak 1999: the square's bias 2σ² taken off), σ %.1f px chosen on the training pairs, noise σ %.2f grey levels from their background", s, sigma/pngScale), err
	}},
	{"rician-nlm", func(ctx context.Context, train []denoiseCase, sigma float64) (filter, string, error) {
		var sub []denoiseCase
		for i := 0; i < len(train); i += nlmTuneEvery {
			sub = append(sub, train[i])
		}
		k, err := bestNLM(ctx, sub, sigma)
		return func(im metrics.Image) metrics.Image { return nlmRician(im, sigma, []float64{k * sigma})[0] },
			fmt.Sprintf("unbiased non-local means (Manjón et al. 2008: NLM of x², less 2σ², square root), 3 × 3 patches, 11 × 11 search, h %.2gσ chosen on every third training pair (of %.2g–%.2gσ), noise σ %.2f grey levels from their background", k, nlmKs[0], nlmKs[len(nlmKs)-1], sigma/pngScale), err
	}},
}

// backgroundSigma is the noise σ of the training pairs' inputs where their target is 0:
// pure noise there, Rayleigh, whose second moment is 2σ².
func backgroundSigma(train []denoiseCase) (float64, error) {
	var sq float64
	n := 0
	for _, c := range train {
		for i, t := range c.Clean.Pix {
			if t == 0 {
				sq += c.Noisy.Pix[i] * c.Noisy.Pix[i]
				n++
			}
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("no background: no training target has a zero pixel")
	}
	return math.Sqrt(sq / float64(n) / 2), nil
}

// shortcuts scores the denoisers ds on the test cases: each tuned on the training pairs,
// its predictions written under dir/shortcuts/<name> and scored with the task's metric
// (scoreShortcut), its SSIM on the test cases in its About; the best of them last.
func (d *denoiseData) shortcuts(ctx context.Context, dir string, ds []denoiser) ([]shortcut, error) {
	sigma, err := backgroundSigma(d.Train)
	if err != nil {
		return nil, err
	}
	ssim, err := metrics.ImageMetric("ssim")
	if err != nil {
		return nil, err
	}
	answers := map[string]string{}
	for _, c := range d.Test {
		answers[c.ID] = filepath.Join(dir, "answers", c.ID+".png")
	}
	var out []shortcut
	for _, dn := range ds {
		f, about, err := dn.tune(ctx, d.Train, sigma)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dn.Name, err)
		}
		preds := map[string]string{}
		ss := make([]float64, len(d.Test))
		errs := make([]error, len(d.Test))
		parallel(len(d.Test), func(i int) {
			c := d.Test[i]
			p := quantised(f(c.Noisy))
			path := filepath.Join(dir, "shortcuts", dn.Name, c.ID+".png")
			if errs[i] = writePNG16(path, p); errs[i] == nil {
				ss[i], errs[i] = ssim(p, c.Clean)
			}
		})
		for i, c := range d.Test {
			if errs[i] != nil {
				return nil, fmt.Errorf("%s: case %s: %w", dn.Name, c.ID, errs[i])
			}
			preds[c.ID] = filepath.Join(dir, "shortcuts", dn.Name, c.ID+".png")
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sc, err := scoreShortcut(ctx, filepath.Join(dir, "task.yaml"), preds, answers)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dn.Name, err)
		}
		if dn.Name == "identity" {
			about += fmt.Sprintf(" (Rician noise of σ %.2f grey levels, %.1f %% of white matter %.1f)", d.Sigma, 100*d.Sigma/d.WM, d.WM)
		}
		out = append(out, shortcut{Name: dn.Name, Score: sc.Value, About: fmt.Sprintf("%s; SSIM %.4f", about, meanOf(ss))})
	}
	return best(out), nil
}

// quantised is im as a 16-bit PNG holds it.
func quantised(im metrics.Image) metrics.Image {
	out := metrics.Image{W: im.W, H: im.H, Pix: make([]float64, len(im.Pix))}
	for i, p := range im.Pix {
		out.Pix[i] = quantise(p)
	}
	return out
}

// meanOf is the mean of v.
func meanOf(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// parallel runs f(0) … f(n−1) on as many goroutines as Go may run at once.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// meanPSNR is the task metric's mean over the pairs of the predictions preds[i] of pairs[i].
func meanPSNR(pairs []denoiseCase, preds []metrics.Image) (float64, error) {
	psnr, err := metrics.ImageMetric("psnr")
	if err != nil {
		return 0, err
	}
	s := 0.0
	for i, c := range pairs {
		v, err := psnr(quantised(preds[i]), c.Clean)
		if err != nil {
			return 0, err
		}
		s += v
	}
	return s / float64(len(pairs)), nil
}

// bestParam is the parameter among ps with which f scores the best mean PSNR on the pairs.
func bestParam(ctx context.Context, pairs []denoiseCase, ps []float64, f func(metrics.Image, float64) metrics.Image) (float64, error) {
	best, bestScore := ps[0], math.Inf(-1)
	for _, p := range ps {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		preds := make([]metrics.Image, len(pairs))
		parallel(len(pairs), func(i int) { preds[i] = f(pairs[i].Noisy, p) })
		s, err := meanPSNR(pairs, preds)
		if err != nil {
			return 0, err
		}
		if s > bestScore {
			best, bestScore = p, s
		}
	}
	return best, nil
}

// bestNLM is the strength k among nlmKs with which unbiased non-local means (h = kσ)
// scores the best mean PSNR on the pairs; every strength is run in one pass, since they
// share the patch distances.
func bestNLM(ctx context.Context, pairs []denoiseCase, sigma float64) (float64, error) {
	hs := make([]float64, len(nlmKs))
	for i, k := range nlmKs {
		hs[i] = k * sigma
	}
	preds := make([][]metrics.Image, len(pairs))
	parallel(len(pairs), func(i int) {
		if ctx.Err() == nil {
			preds[i] = nlmRician(pairs[i].Noisy, sigma, hs)
		}
	})
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	best, bestScore := nlmKs[0], math.Inf(-1)
	for j, k := range nlmKs {
		ps := make([]metrics.Image, len(pairs))
		for i := range pairs {
			ps[i] = preds[i][j]
		}
		s, err := meanPSNR(pairs, ps)
		if err != nil {
			return 0, err
		}
		if s > bestScore {
			best, bestScore = k, s
		}
	}
	return best, nil
}

// mirror maps i into [0, n), mirroring about the edges with the edge pixel repeated.
func mirror(i, n int) int {
	for i < 0 || i >= n {
		if i < 0 {
			i = -1 - i
		}
		if i >= n {
			i = 2*n - 1 - i
		}
	}
	return i
}

// separable filters im with the 1D kernel k (odd length, centred) along x, then y, its
// borders mirrored.
func separable(im metrics.Image, k []float64) metrics.Image {
	r := len(k) / 2
	W, H := im.W, im.H
	tmp := make([]float64, len(im.Pix))
	for y := range H {
		row := im.Pix[y*W : (y+1)*W]
		for x := range W {
			s := 0.0
			for j, w := range k {
				s += w * row[mirror(x+j-r, W)]
			}
			tmp[y*W+x] = s
		}
	}
	out := metrics.Image{W: W, H: H, Pix: make([]float64, len(im.Pix))}
	for y := range H {
		for x := range W {
			s := 0.0
			for j, w := range k {
				s += w * tmp[mirror(y+j-r, H)*W+x]
			}
			out.Pix[y*W+x] = s
		}
	}
	return out
}

// gaussian smooths im with a Gaussian of σ s pixels, truncated at 3σ.
func gaussian(im metrics.Image, s float64) metrics.Image {
	return separable(im, synth.GaussianKernel(s))
}

// median3 is the 3 × 3 median of im, its borders mirrored.
func median3(im metrics.Image) metrics.Image {
	W, H := im.W, im.H
	out := metrics.Image{W: W, H: H, Pix: make([]float64, len(im.Pix))}
	var w [9]float64
	for y := range H {
		for x := range W {
			n := 0
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					w[n] = im.Pix[mirror(y+dy, H)*W+mirror(x+dx, W)]
					n++
				}
			}
			slices.Sort(w[:])
			out.Pix[y*W+x] = w[4]
		}
	}
	return out
}

// ricianGauss is the Rician-corrected Gaussian: a magnitude M with noise σ has
// E[M²] = A² + 2σ², so √max(G∗M² − 2σ², 0) estimates A with the bias of the magnitude's
// noise floor taken out (Nowak, IEEE TIP 8(10), 1999, filters the square so).
func ricianGauss(im metrics.Image, s, sigma float64) metrics.Image {
	sq := metrics.Image{W: im.W, H: im.H, Pix: make([]float64, len(im.Pix))}
	for i, p := range im.Pix {
		sq.Pix[i] = p * p
	}
	g := gaussian(sq, s)
	for i, p := range g.Pix {
		g.Pix[i] = math.Sqrt(max(p-2*sigma*sigma, 0))
	}
	return g
}

// nlmRician is unbiased non-local means (Manjón et al. 2008) with each filtering strength
// of hs: the weighted mean of the squares M² of the pixels in a (2·nlmSearch+1)² window,
// weighted by exp(−max(d² − 2σ², 0)/h²), d² the mean squared difference of their
// (2·nlmPatch+1)² patches, less 2σ² and square-rooted.
func nlmRician(im metrics.Image, sigma float64, hs []float64) []metrics.Image {
	W, H := im.W, im.H
	n := len(im.Pix)
	num, den := make([][]float64, len(hs)), make([][]float64, len(hs))
	for j := range hs {
		num[j], den[j] = make([]float64, n), make([]float64, n)
	}
	box := make([]float64, 2*nlmPatch+1)
	for i := range box {
		box[i] = 1 / float64(len(box))
	}
	d := metrics.Image{W: W, H: H, Pix: make([]float64, n)}
	inv := make([]float64, len(hs))
	for j, h := range hs {
		inv[j] = 1 / (h * h)
	}
	twoS2 := 2 * sigma * sigma
	q := make([]int, n)
	for dy := -nlmSearch; dy <= nlmSearch; dy++ {
		for dx := -nlmSearch; dx <= nlmSearch; dx++ {
			for y := range H {
				for x := range W {
					i := y*W + x
					q[i] = mirror(y+dy, H)*W + mirror(x+dx, W)
					e := im.Pix[i] - im.Pix[q[i]]
					d.Pix[i] = e * e
				}
			}
			dist := separable(d, box)
			for i, dd := range dist.Pix {
				dd = max(dd-twoS2, 0)
				v := im.Pix[q[i]]
				v *= v
				for j := range hs {
					w := 1.0
					if dd > 0 {
						w = math.Exp(-dd * inv[j])
					}
					num[j][i] += w * v
					den[j][i] += w
				}
			}
		}
	}
	out := make([]metrics.Image, len(hs))
	for j := range hs {
		out[j] = metrics.Image{W: W, H: H, Pix: make([]float64, n)}
		for i := range n {
			out[j].Pix[i] = math.Sqrt(max(num[j][i]/den[j][i]-twoS2, 0))
		}
	}
	return out
}
