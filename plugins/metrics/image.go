package metrics

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
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

// imageColumns visits rows [y0, y1) of the window sums of a, b, a², b² and ab over a
// win×win window (border by edge). For each row y it calls visit with the five column
// sums over rows y−r … y+r (r = win/2): cs[r+x][k] for column x, the r entries either
// side holding the columns edge maps to (and one spare zero entry after them), so that
// visit forms each window sum as a running sum along the row in the same pass as its
// per-pixel formula. Moving down a row adds the entering row and subtracts the leaving
// one; nothing full-size is allocated.
//
// Each input value v enters as (v − lo)/d with the lo and d of its image (min–max
// normalisation; lo 0 and d 1 read the images as they are). Normalised rows are kept in a
// ring of win rows, so every value is divided once.
func imageColumns(a, b []float64, na, nb [2]float64, w, h, win int, edge func(i, n int) int, y0, y1 int, visit func(y int, cs [][5]float64)) {
	r := win / 2
	norm := na != [2]float64{0, 1} || nb != [2]float64{0, 1}
	cs := make([][5]float64, w+2*r+1) // one spare entry for the last running step
	ra := make([][]float64, win)
	rb := make([][]float64, win)
	load := func(slot, sy int) {
		srcA, srcB := a[sy*w:(sy+1)*w], b[sy*w:(sy+1)*w]
		if !norm {
			ra[slot], rb[slot] = srcA, srcB
			return
		}
		if ra[slot] == nil {
			ra[slot], rb[slot] = make([]float64, w), make([]float64, w)
		}
		da, db := ra[slot], rb[slot]
		for i := range da {
			da[i] = (srcA[i] - na[0]) / na[1]
			db[i] = (srcB[i] - nb[0]) / nb[1]
		}
	}
	cc := cs[r : r+w]
	for i := 0; i < win; i++ {
		load(i, edge(y0-r+i, h))
		xa, xb := ra[i][:len(cc)], rb[i][:len(cc)]
		for x := range cc {
			u, v := xa[x], xb[x]
			e := &cc[x]
			e[0] += u
			e[1] += v
			e[2] += u * u
			e[3] += v * v
			e[4] += u * v
		}
	}
	start := 0 // ring slot of the top row of the window
	for y := y0; y < y1; y++ {
		for i := 0; i < r; i++ {
			cs[i] = cs[r+edge(i-r, w)]
			cs[r+w+i] = cs[r+edge(w+i, w)]
		}
		visit(y, cs)
		if y+1 >= y1 {
			break
		}
		sy := edge(y+1+r, h)
		oa, ob := ra[start][:len(cc)], rb[start][:len(cc)]
		if norm {
			// The leaving row's slot takes the entering row, value by value.
			srcA, srcB := a[sy*w:(sy+1)*w], b[sy*w:(sy+1)*w]
			srcA, srcB = srcA[:len(cc)], srcB[:len(cc)]
			for x := range cc {
				uo, vo := oa[x], ob[x]
				u, v := (srcA[x]-na[0])/na[1], (srcB[x]-nb[0])/nb[1]
				oa[x], ob[x] = u, v
				e := &cc[x]
				e[0] += u - uo
				e[1] += v - vo
				e[2] += u*u - uo*uo
				e[3] += v*v - vo*vo
				e[4] += u*v - uo*vo
			}
		} else {
			xa, xb := a[sy*w:(sy+1)*w], b[sy*w:(sy+1)*w]
			xa, xb = xa[:len(cc)], xb[:len(cc)]
			for x := range cc {
				uo, vo := oa[x], ob[x]
				u, v := xa[x], xb[x]
				e := &cc[x]
				e[0] += u - uo
				e[1] += v - vo
				e[2] += u*u - uo*uo
				e[3] += v*v - vo*vo
				e[4] += u*v - uo*vo
			}
			ra[start], rb[start] = xa, xb
		}
		start = (start + 1) % win
	}
}

// imageStrips splits rows [y0, y1) into one strip per processor and runs f on each in
// parallel; f returns a partial sum and count.
func imageStrips(y0, y1 int, f func(a, b int) (float64, int)) (float64, int) {
	n := min(runtime.GOMAXPROCS(0), max(1, (y1-y0)/64))
	sums := make([]float64, n)
	cnts := make([]int, n)
	var wg sync.WaitGroup
	for k := 0; k < n; k++ {
		a := y0 + (y1-y0)*k/n
		b := y0 + (y1-y0)*(k+1)/n
		wg.Add(1)
		go func(k, a, b int) {
			defer wg.Done()
			sums[k], cnts[k] = f(a, b)
		}(k, a, b)
	}
	wg.Wait()
	s, c := 0.0, 0
	for k := range sums {
		s += sums[k]
		c += cnts[k]
	}
	return s, c
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
	var na, nb [2]float64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		na = imageMinMax(pred.Pix)
	}()
	nb = imageMinMax(gt.Pix)
	wg.Wait()
	a, b := pred.Pix, gt.Pix
	w, h := pred.W, pred.H
	inv := 1 / float64(win*win)
	sum, cnt := imageStrips(0, h, func(y0, y1 int) (float64, int) {
		s, c := 0.0, 0
		imageColumns(a, b, na, nb, w, h, win, imageReflect101, y0, y1, func(_ int, cs [][5]float64) {
			// Entry x of cs is image column x − r: the window of x is entries x … x+win−1.
			var v0, v1, v2, v3, v4 float64
			for i := 0; i < win; i++ {
				e := &cs[i]
				v0, v1, v2, v3, v4 = v0+e[0], v1+e[1], v2+e[2], v3+e[3], v4+e[4]
			}
			s, c = lnccRow(v0, v1, v2, v3, v4, inv, cs, win, w, s, c)
		})
		return s, c
	})
	if cnt == 0 {
		for i := range a {
			x, y := (a[i]-na[0])/na[1], (b[i]-nb[0])/nb[1]
			if math.Abs(x-y) > 1e-8+1e-5*math.Abs(y) {
				return 0, nil
			}
		}
		return 1, nil
	}
	return sum / float64(cnt), nil
}

// imageMinMax returns the min–max normalisation of p as the USenhance grader writes it:
// lo = min and d = max − min + 1e-8, the value v becoming (v − lo)/d.
func imageMinMax(p []float64) [2]float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range p {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return [2]float64{lo, hi - lo + 1e-8}
}

// DataRange is max(a ∪ b) − min(a ∪ b), the data_range the USenhance grader passes to SSIM
// and PSNR.
func DataRange(a, b Image) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range [][]float64{a.Pix, b.Pix} {
		for _, v := range p {
			if v < lo {
				lo = v
			}
			if v > hi {
				hi = v
			}
		}
	}
	return hi - lo
}

// SSIMWindow is the side of SSIM's window: the smallest image SSIM is defined on.
const SSIMWindow = 7

// SSIM is skimage.metrics.structural_similarity with its defaults for a 2D grayscale image:
// 7×7 uniform window (scipy uniform_filter, mode 'reflect'), K1 = 0.01, K2 = 0.03, sample
// covariance (factor 49/48), and the mean of the SSIM map without its 3-pixel border.
// dataRange is passed as the grader passes it. Images smaller than 7×7 are an error, as in
// skimage. It computes in float64 (skimage computes float32 input in float32).
func SSIM(a, b Image, dataRange float64) (float64, error) {
	const win = SSIMWindow
	if err := imageCheck(a, b, win); err != nil {
		return math.NaN(), err
	}
	const np = win * win
	const pad = (win - 1) / 2
	covNorm := float64(np) / float64(np-1)
	c1 := (0.01 * dataRange) * (0.01 * dataRange)
	c2 := (0.03 * dataRange) * (0.03 * dataRange)
	inv := 1 / float64(np)
	w, h := a.W, a.H
	sum, _ := imageStrips(pad, h-pad, func(y0, y1 int) (float64, int) {
		s := 0.0
		imageColumns(a.Pix, b.Pix, [2]float64{0, 1}, [2]float64{0, 1}, w, h, win, imageReflect, y0, y1, func(_ int, cs [][5]float64) {
			// Entry x + pad of cs is image column x: the window of x is entries
			// x … x+win−1.
			var v0, v1, v2, v3, v4 float64
			for i := pad; i < pad+win; i++ {
				e := &cs[i]
				v0, v1, v2, v3, v4 = v0+e[0], v1+e[1], v2+e[2], v3+e[3], v4+e[4]
			}
			s = ssimRow(v0, v1, v2, v3, v4, inv, covNorm, c1, c2, cs, pad, win, w-2*pad, s)
		})
		return s, 0
	})
	return sum / float64((w-2*pad)*(h-2*pad)), nil
}

// lnccRow adds up LNCC's per-pixel terms along one row of w pixels, starting from the
// window sums v of pixel 0 (entries 0 … win−1 of the column sums cs); each step to the
// next window adds entry x+win less entry x.
func lnccRow(v0, v1, v2, v3, v4, inv float64, cs [][5]float64, win, w int, s float64, c int) (float64, int) {
	in := cs[win : win+w]
	out := cs[:len(in)]
	for x := range in {
		mu1, mu2 := v0*inv, v1*inv
		s1 := v2*inv - mu1*mu1
		s2 := v3*inv - mu2*mu2
		if s1 > 1e-10 && s2 > 1e-10 {
			s += (v4*inv - mu1*mu2) / math.Sqrt(s1*s2)
			c++
		}
		p, q := &in[x], &out[x]
		v0 += p[0] - q[0]
		v1 += p[1] - q[1]
		v2 += p[2] - q[2]
		v3 += p[3] - q[3]
		v4 += p[4] - q[4]
	}
	return s, c
}

// ssimRow adds up SSIM's per-pixel terms along n pixels of one row, starting from the
// window sums v of the first (entries pad … pad+win−1 of the column sums cs); each step to
// the next window adds entry x+win less entry x.
func ssimRow(v0, v1, v2, v3, v4, inv, covNorm, c1, c2 float64, cs [][5]float64, pad, win, n int, s float64) float64 {
	in := cs[pad+win : pad+win+n]
	out := cs[pad : pad+len(in)]
	for x := range in {
		ux, uy := v0*inv, v1*inv
		vx := covNorm * (v2*inv - ux*ux)
		vy := covNorm * (v3*inv - uy*uy)
		vxy := covNorm * (v4*inv - ux*uy)
		a1, a2 := 2*ux*uy+c1, 2*vxy+c2
		b1, b2 := ux*ux+uy*uy+c1, vx+vy+c2
		s += (a1 * a2) / (b1 * b2)
		p, q := &in[x], &out[x]
		v0 += p[0] - q[0]
		v1 += p[1] - q[1]
		v2 += p[2] - q[2]
		v3 += p[3] - q[3]
		v4 += p[4] - q[4]
	}
	return s
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

// psnrCap is the PSNR an image metric scores identical images with, where the grader's
// PSNR is +Inf: a mean over cases with one +Inf says nothing of the others and cannot be
// recorded as JSON. 100 dB lies above any reconstruction short of an exact one: the
// rounding of an 8-bit image alone costs 10·log10(12·255²) ≈ 58.9 dB.
const psnrCap = 100

// ImageMetricNames are the full-reference image metrics [ImageMetric] knows, in the
// USenhance grader's terms.
var ImageMetricNames = []string{"lncc", "ssim", "psnr"}

// ImageMetric is the full-reference image metric named name (case-insensitive, one of
// [ImageMetricNames]), higher better: LNCC, SSIM and PSNR with the grader's data range
// ([DataRange]); PSNR of identical images is capped at 100 dB.
func ImageMetric(name string) (func(pred, gt Image) (float64, error), error) {
	switch strings.ToLower(name) {
	case "lncc":
		return LNCC, nil
	case "ssim":
		return func(p, g Image) (float64, error) { return SSIM(p, g, DataRange(p, g)) }, nil
	case "psnr":
		return func(p, g Image) (float64, error) {
			v, err := PSNR(p, g, DataRange(p, g))
			return math.Min(v, psnrCap), err
		}, nil
	}
	return nil, fmt.Errorf("no image metric %q (known: %s)", name, strings.Join(ImageMetricNames, ", "))
}
