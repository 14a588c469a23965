package metrics

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// ErrShape is returned when two images that must share a shape do not.
var ErrShape = errors.New("image shapes differ")

// Image is a 2D single-channel image, row-major: Pix[y*W+x].
type Image struct {
	W, H int
	Pix  []float64
}

func imageCheck(a, b Image, win int) error {
	if a.W != b.W || a.H != b.H || len(a.Pix) != a.W*a.H || len(b.Pix) != b.W*b.H {
		return fmt.Errorf("%w: %d×%d vs %d×%d", ErrShape, a.W, a.H, b.W, b.H)
	}
	if a.W < win || a.H < win {
		return fmt.Errorf("%w: %d×%d is smaller than the %d×%d window", ErrShape, a.W, a.H, win, win)
	}
	return nil
}

// imageReflect101 maps i into [0, n) reflecting about the edge pixels without repeating
// them (OpenCV BORDER_REFLECT_101, scipy mode 'mirror'): … c b | a b c … .
func imageReflect101(i, n int) int {
	if n == 1 {
		return 0
	}
	p := 2*n - 2
	i %= p
	if i < 0 {
		i += p
	}
	if i >= n {
		i = p - i
	}
	return i
}

// imageReflect maps i into [0, n) reflecting about the edge with the edge pixel repeated
// (scipy mode 'reflect', numpy 'symmetric'): … b a | a b … .
func imageReflect(i, n int) int {
	p := 2 * n
	i %= p
	if i < 0 {
		i += p
	}
	if i >= n {
		i = p - 1 - i
	}
	return i
}

// imageBoxMeans returns, for each input plane, its mean over a win×win window centred on
// every pixel, with the border handled by edge(i, n). Separable running sums in float64.
// Planes are filtered in parallel.
func imageBoxMeans(w, h, win int, edge func(i, n int) int, planes ...[]float64) [][]float64 {
	out := make([][]float64, len(planes))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for k, p := range planes {
		wg.Add(1)
		sem <- struct{}{}
		go func(k int, p []float64) {
			defer wg.Done()
			out[k] = imageBox(w, h, win, edge, p)
			<-sem
		}(k, p)
	}
	wg.Wait()
	return out
}

func imageBox(w, h, win int, edge func(i, n int) int, p []float64) []float64 {
	r := win / 2
	inv := 1 / float64(win)
	tmp := make([]float64, w*h)
	row := make([]float64, w+2*r)
	for y := 0; y < h; y++ {
		src := p[y*w : (y+1)*w]
		for i := range row {
			row[i] = src[edge(i-r, w)]
		}
		s := 0.0
		for i := 0; i < win; i++ {
			s += row[i]
		}
		dst := tmp[y*w : (y+1)*w]
		dst[0] = s * inv
		for x := 1; x < w; x++ {
			s += row[x+win-1] - row[x-1]
			dst[x] = s * inv
		}
	}
	out := make([]float64, w*h)
	sums := make([]float64, w)
	for dy := -r; dy <= r; dy++ {
		src := tmp[edge(dy, h)*w:]
		for x := 0; x < w; x++ {
			sums[x] += src[x]
		}
	}
	for y := 0; y < h; y++ {
		dst := out[y*w : (y+1)*w]
		for x := 0; x < w; x++ {
			dst[x] = sums[x] * inv
		}
		if y+1 < h {
			add := tmp[edge(y+1+r, h)*w:]
			sub := tmp[edge(y-r, h)*w:]
			for x := 0; x < w; x++ {
				sums[x] += add[x] - sub[x]
			}
		}
	}
	return out
}

// LNCC is the locally normalised cross-correlation of the ReX USenhance grader (rexmle.md
// §6.14): each image min–max normalised to [0, 1] (denominator max − min + 1e-8), local
// means, variances and covariance over an 11×11 box window (cv2.filter2D, border
// BORDER_REFLECT_101), then the mean of σ₁₂/√(σ₁²σ₂²) over the pixels where both σ² > 1e-10.
// With no such pixel it is 1 when the normalised images are numpy-allclose, else 0.
//
// The grader works in float32 (OpenCV); this works in float64, so it is what the grader
// computes up to float32 rounding (differences of order 1e-6).
func LNCC(pred, gt Image) (float64, error) {
	const win = 11
	if err := imageCheck(pred, gt, 1); err != nil {
		return math.NaN(), err
	}
	a, b := imageMinMax01(pred.Pix), imageMinMax01(gt.Pix)
	n := len(a)
	aa, bb, ab := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range a {
		aa[i], bb[i], ab[i] = a[i]*a[i], b[i]*b[i], a[i]*b[i]
	}
	m := imageBoxMeans(pred.W, pred.H, win, imageReflect101, a, b, aa, bb, ab)
	sum, cnt := 0.0, 0
	for i := 0; i < n; i++ {
		mu1, mu2 := m[0][i], m[1][i]
		s1 := m[2][i] - mu1*mu1
		s2 := m[3][i] - mu2*mu2
		if s1 > 1e-10 && s2 > 1e-10 {
			sum += (m[4][i] - mu1*mu2) / math.Sqrt(s1*s2)
			cnt++
		}
	}
	if cnt == 0 {
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-8+1e-5*math.Abs(b[i]) {
				return 0, nil
			}
		}
		return 1, nil
	}
	return sum / float64(cnt), nil
}

func imageMinMax01(p []float64) []float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range p {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	d := hi - lo + 1e-8
	out := make([]float64, len(p))
	for i, v := range p {
		out[i] = (v - lo) / d
	}
	return out
}

// DataRange is max(a ∪ b) − min(a ∪ b), the data_range the USenhance grader passes to SSIM
// and PSNR.
func DataRange(a, b Image) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range [][]float64{a.Pix, b.Pix} {
		for _, v := range p {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	return hi - lo
}

// SSIM is skimage.metrics.structural_similarity with its defaults for a 2D grayscale image:
// 7×7 uniform window (scipy uniform_filter, mode 'reflect'), K1 = 0.01, K2 = 0.03, sample
// covariance (factor 49/48), and the mean of the SSIM map without its 3-pixel border.
// dataRange is passed as the grader passes it. Images smaller than 7×7 are an error, as in
// skimage. It computes in float64 (skimage computes float32 input in float32).
func SSIM(a, b Image, dataRange float64) (float64, error) {
	const win = 7
	if err := imageCheck(a, b, win); err != nil {
		return math.NaN(), err
	}
	n := len(a.Pix)
	aa, bb, ab := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range a.Pix {
		x, y := a.Pix[i], b.Pix[i]
		aa[i], bb[i], ab[i] = x*x, y*y, x*y
	}
	m := imageBoxMeans(a.W, a.H, win, imageReflect, a.Pix, b.Pix, aa, bb, ab)
	const np = win * win
	covNorm := float64(np) / float64(np-1)
	c1 := (0.01 * dataRange) * (0.01 * dataRange)
	c2 := (0.03 * dataRange) * (0.03 * dataRange)
	const pad = (win - 1) / 2
	sum := 0.0
	for y := pad; y < a.H-pad; y++ {
		for x := pad; x < a.W-pad; x++ {
			i := y*a.W + x
			ux, uy := m[0][i], m[1][i]
			vx := covNorm * (m[2][i] - ux*ux)
			vy := covNorm * (m[3][i] - uy*uy)
			vxy := covNorm * (m[4][i] - ux*uy)
			a1, a2 := 2*ux*uy+c1, 2*vxy+c2
			b1, b2 := ux*ux+uy*uy+c1, vx+vy+c2
			sum += (a1 * a2) / (b1 * b2)
		}
	}
	return sum / float64((a.W-2*pad)*(a.H-2*pad)), nil
}

// PSNR is the USenhance grader's PSNR: +Inf when the images are identical, otherwise
// skimage's peak_signal_noise_ratio 10·log10(dataRange² / MSE).
func PSNR(pred, gt Image, dataRange float64) (float64, error) {
	if err := imageCheck(pred, gt, 1); err != nil {
		return math.NaN(), err
	}
	se := 0.0
	for i := range pred.Pix {
		d := gt.Pix[i] - pred.Pix[i]
		se += d * d
	}
	if se == 0 {
		return math.Inf(1), nil
	}
	mse := se / float64(len(pred.Pix))
	return 10 * math.Log10(dataRange*dataRange/mse), nil
}

// GrayPIL converts interleaved 8-bit pixels with c channels to PIL's mode "L" as
// Image.convert('L') does: RGB and RGBA by the fixed-point ITU-R 601-2 luma
// (R·19595 + G·38470 + B·7471 + 0x8000) >> 16 (alpha ignored), LA by its L channel, and
// one channel unchanged.
func GrayPIL(pix []uint8, w, h, c int) (Image, error) {
	if c < 1 || c > 4 || len(pix) != w*h*c {
		return Image{}, fmt.Errorf("%w: %d bytes for %d×%d×%d", ErrShape, len(pix), w, h, c)
	}
	out := Image{W: w, H: h, Pix: make([]float64, w*h)}
	for i := range out.Pix {
		px := pix[i*c:]
		if c >= 3 {
			out.Pix[i] = float64((uint32(px[0])*19595 + uint32(px[1])*38470 + uint32(px[2])*7471 + 0x8000) >> 16)
		} else {
			out.Pix[i] = float64(px[0])
		}
	}
	return out, nil
}

// ResizeLinear resizes im to w×h as cv2.resize with INTER_LINEAR does: pixel-centre
// aligned source coordinates (x+0.5)·scale − 0.5, clamped at the borders.
func ResizeLinear(im Image, w, h int) Image {
	out := Image{W: w, H: h, Pix: make([]float64, w*h)}
	if w <= 0 || h <= 0 || im.W <= 0 || im.H <= 0 {
		return out
	}
	coords := func(dst, src int) ([]int, []float64) {
		scale := float64(src) / float64(dst)
		idx, frac := make([]int, dst), make([]float64, dst)
		for d := 0; d < dst; d++ {
			f := (float64(d)+0.5)*scale - 0.5
			s := int(math.Floor(f))
			f -= float64(s)
			if s < 0 {
				s, f = 0, 0
			}
			if s >= src-1 {
				s, f = src-1, 0
			}
			idx[d], frac[d] = s, f
		}
		return idx, frac
	}
	xi, xf := coords(w, im.W)
	yi, yf := coords(h, im.H)
	for y := 0; y < h; y++ {
		y0 := yi[y]
		y1 := min(y0+1, im.H-1)
		for x := 0; x < w; x++ {
			x0 := xi[x]
			x1 := min(x0+1, im.W-1)
			top := im.Pix[y0*im.W+x0]*(1-xf[x]) + im.Pix[y0*im.W+x1]*xf[x]
			bot := im.Pix[y1*im.W+x0]*(1-xf[x]) + im.Pix[y1*im.W+x1]*xf[x]
			out.Pix[y*w+x] = top*(1-yf[y]) + bot*yf[y]
		}
	}
	return out
}
