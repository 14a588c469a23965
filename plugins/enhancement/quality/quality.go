// Package quality computes the image-quality figures the USenhance challenge ranks by
// (rexmle.md §6.14), so that the enhancement plugin can report them on its validation
// cases: LNCC (11×11 box window), SSIM (skimage's defaults) and PSNR, all with the
// grader's conventions. Window sums come from summed-area tables in float64.
package quality

import (
	"errors"
	"fmt"
	"math"
)

// ErrShape reports two images of different sizes, or an image too small for a window.
var ErrShape = errors.New("quality: image sizes do not fit")

// Image is a 2D single-channel image, row-major: Pix[y·W + x].
type Image struct {
	W, H int
	Pix  []float64
}

func check(a, b Image, win int) error {
	if a.W != b.W || a.H != b.H || a.W < 1 || a.H < 1 || len(a.Pix) != a.W*a.H || len(b.Pix) != b.W*b.H {
		return fmt.Errorf("%w: %d×%d and %d×%d", ErrShape, a.W, a.H, b.W, b.H)
	}
	if a.W < win || a.H < win {
		return fmt.Errorf("%w: %d×%d is smaller than the %d×%d window", ErrShape, a.W, a.H, win, win)
	}
	return nil
}

// reflect101 maps i into [0, n) reflecting about the edge pixels without repeating them
// (OpenCV's BORDER_REFLECT_101, cv2.filter2D's default): … c b | a b c … .
func reflect101(i, n int) int {
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

// moments is a summed-area table of x, y, x², y² and x·y over an image of W×H padded by
// pad on every side (pixels outside mapped by edge): entry (r, c) sums rows < r and
// columns < c of the padded image.
type moments struct {
	w, pad int
	s      [][5]float64
}

func newMoments(x, y []float64, W, H, pad int, edge func(i, n int) int) moments {
	pw, ph := W+2*pad, H+2*pad
	m := moments{w: pw + 1, pad: pad, s: make([][5]float64, (pw+1)*(ph+1))}
	for r := range ph {
		sr := edge(r-pad, H)
		var row [5]float64
		for c := range pw {
			i := sr*W + edge(c-pad, W)
			a, b := x[i], y[i]
			row[0], row[1], row[2], row[3], row[4] = row[0]+a, row[1]+b, row[2]+a*a, row[3]+b*b, row[4]+a*b
			up, cur := m.s[r*m.w+c+1], &m.s[(r+1)*m.w+c+1]
			for q := range 5 {
				cur[q] = up[q] + row[q]
			}
		}
	}
	return m
}

// window returns the five sums over the k×k window whose top-left pixel is (x0, y0) in
// image coordinates (negative inside the padding).
func (m moments) window(x0, y0, k int) [5]float64 {
	r0, c0 := y0+m.pad, x0+m.pad
	a, b := m.s[r0*m.w+c0], m.s[r0*m.w+c0+k]
	c, d := m.s[(r0+k)*m.w+c0], m.s[(r0+k)*m.w+c0+k]
	var out [5]float64
	for q := range 5 {
		out[q] = d[q] - b[q] - c[q] + a[q]
	}
	return out
}

// minMax returns lo and d = max − min + 1e-8, the USenhance grader's normalisation
// (v − lo)/d.
func minMax(p []float64) (lo, d float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range p {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi - lo + 1e-8
}

// LNCC is the grader's locally normalised cross-correlation: each image min–max
// normalised to [0, 1] (denominator max − min + 1e-8), local variances and covariance
// over an 11×11 box window (border reflected without repeating the edge, as
// cv2.filter2D), then the mean of σ₁₂/√(σ₁²σ₂²) over the pixels where both σ² exceed
// 1e-10. With no such pixel it is 1 when the normalised images agree within numpy's
// allclose tolerances, else 0.
func LNCC(pred, ref Image) (float64, error) {
	const win, r = 11, 5
	if err := check(pred, ref, 1); err != nil {
		return math.NaN(), err
	}
	la, da := minMax(pred.Pix)
	lb, db := minMax(ref.Pix)
	a, b := make([]float64, len(pred.Pix)), make([]float64, len(ref.Pix))
	for i := range a {
		a[i], b[i] = (pred.Pix[i]-la)/da, (ref.Pix[i]-lb)/db
	}
	m := newMoments(a, b, pred.W, pred.H, r, reflect101)
	const n = win * win
	var sum float64
	var cnt int
	for y := range pred.H {
		for x := range pred.W {
			s := m.window(x-r, y-r, win)
			mu1, mu2 := s[0]/n, s[1]/n
			v1, v2 := s[2]/n-mu1*mu1, s[3]/n-mu2*mu2
			if v1 > 1e-10 && v2 > 1e-10 {
				sum += (s[4]/n - mu1*mu2) / math.Sqrt(v1*v2)
				cnt++
			}
		}
	}
	if cnt > 0 {
		return sum / float64(cnt), nil
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-8+1e-5*math.Abs(b[i]) {
			return 0, nil
		}
	}
	return 1, nil
}

// DataRange is max − min over both images, the data range the grader gives SSIM and PSNR.
func DataRange(a, b Image) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range [][]float64{a.Pix, b.Pix} {
		for _, v := range p {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	return hi - lo
}

// SSIM is skimage.metrics.structural_similarity with its defaults for a grayscale image:
// a 7×7 box window, K1 = 0.01, K2 = 0.03, sample covariances (factor 49/48) and the mean
// of the SSIM map without its 3-pixel border, that is over the windows wholly inside the
// image. Images smaller than 7×7 are an error, as in skimage. Two images of one and the
// same constant value (data range 0, where skimage divides 0 by 0) score 1.
func SSIM(a, b Image, dataRange float64) (float64, error) {
	const win = 7
	if err := check(a, b, win); err != nil {
		return math.NaN(), err
	}
	if dataRange == 0 && DataRange(a, b) == 0 {
		return 1, nil
	}
	const n = win * win
	cn := float64(n) / float64(n-1)
	c1, c2 := (0.01*dataRange)*(0.01*dataRange), (0.03*dataRange)*(0.03*dataRange)
	m := newMoments(a.Pix, b.Pix, a.W, a.H, 0, reflect101)
	var sum float64
	for y := 0; y+win <= a.H; y++ {
		for x := 0; x+win <= a.W; x++ {
			s := m.window(x, y, win)
			ux, uy := s[0]/n, s[1]/n
			vx, vy := cn*(s[2]/n-ux*ux), cn*(s[3]/n-uy*uy)
			vxy := cn * (s[4]/n - ux*uy)
			sum += (2*ux*uy + c1) * (2*vxy + c2) / ((ux*ux + uy*uy + c1) * (vx + vy + c2))
		}
	}
	return sum / float64((a.W-win+1)*(a.H-win+1)), nil
}

// PSNR is the grader's PSNR: +Inf for identical images, else 10·log10(dataRange²/MSE).
func PSNR(pred, ref Image, dataRange float64) (float64, error) {
	if err := check(pred, ref, 1); err != nil {
		return math.NaN(), err
	}
	var se float64
	for i, v := range pred.Pix {
		d := ref.Pix[i] - v
		se += d * d
	}
	if se == 0 {
		return math.Inf(1), nil
	}
	return 10 * math.Log10(dataRange*dataRange/(se/float64(len(pred.Pix)))), nil
}
