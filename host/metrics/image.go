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

// imageWindows visits rows [y0, y1) of the 5 local-mean planes of a, b, a², b² and ab over
// a win×win window (border by edge): for each row y it calls visit with the five rows of
// window sums (divide by win² for means). Column sums run over rows of horizontal window
// sums kept in a ring of win rows, so no full-size plane is ever allocated.
//
// Each input value v enters as (v − lo)/d with the lo and d of its image (min–max
// normalisation on the fly; lo 0 and d 1 leave values unchanged).
func imageWindows(a, b []float64, na, nb [2]float64, w, h, win int, edge func(i, n int) int, y0, y1 int, visit func(y int, s *[5][]float64)) {
	r := win / 2
	var vs [5][]float64
	for k := range vs {
		vs[k] = make([]float64, w)
	}
	ring := make([][5][]float64, win)
	for i := range ring {
		for k := range ring[i] {
			ring[i][k] = make([]float64, w)
		}
	}
	pa := make([]float64, w+2*r)
	pb := make([]float64, w+2*r)
	hrow := func(sy int, hs *[5][]float64) {
		ra, rb := a[sy*w:(sy+1)*w], b[sy*w:(sy+1)*w]
		qa, qb := pa[r:r+w], pb[r:r+w]
		if na == [2]float64{0, 1} && nb == [2]float64{0, 1} {
			copy(qa, ra)
			copy(qb, rb)
		} else {
			for i := range qa {
				qa[i] = (ra[i] - na[0]) / na[1]
				qb[i] = (rb[i] - nb[0]) / nb[1]
			}
		}
		for i := 0; i < r; i++ {
			pa[i], pb[i] = qa[edge(i-r, w)], qb[edge(i-r, w)]
			pa[r+w+i], pb[r+w+i] = qa[edge(w+i, w)], qb[edge(w+i, w)]
		}
		var s0, s1, s2, s3, s4 float64
		for i := 0; i < win; i++ {
			x, y := pa[i], pb[i]
			s0 += x
			s1 += y
			s2 += x * x
			s3 += y * y
			s4 += x * y
		}
		h0, h1, h2, h3, h4 := hs[0][:w], hs[1][:w], hs[2][:w], hs[3][:w], hs[4][:w]
		h0[0], h1[0], h2[0], h3[0], h4[0] = s0, s1, s2, s3, s4
		h0, h1, h2, h3, h4 = h0[1:], h1[1:], h2[1:], h3[1:], h4[1:]
		ia, ib := pa[win:win+w-1], pb[win:win+w-1]
		oa, ob := pa[:w-1], pb[:w-1]
		for x := range ia {
			xa, ya := ia[x], ib[x]
			xs, ys := oa[x], ob[x]
			s0 += xa - xs
			s1 += ya - ys
			s2 += xa*xa - xs*xs
			s3 += ya*ya - ys*ys
			s4 += xa*ya - xs*ys
			h0[x], h1[x], h2[x], h3[x], h4[x] = s0, s1, s2, s3, s4
		}
	}
	for i := 0; i < win; i++ {
		hrow(edge(y0-r+i, h), &ring[i])
		for k := range vs {
			v, hk := vs[k], ring[i][k][:w]
			for x := range v {
				v[x] += hk[x]
			}
		}
	}
	next := 0 // ring slot of the oldest row
	var fresh [5][]float64
	for k := range fresh {
		fresh[k] = make([]float64, w)
	}
	for y := y0; y < y1; y++ {
		visit(y, &vs)
		if y+1 < y1 {
			hrow(edge(y+1+r, h), &fresh)
			old := &ring[next]
			for k := range vs {
				v, nk, ok := vs[k], fresh[k][:w], old[k][:w]
				for x := range v {
					v[x] += nk[x] - ok[x]
				}
			}
			ring[next], fresh = fresh, ring[next]
			next = (next + 1) % win
		}
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
	na, nb := imageMinMax(pred.Pix), imageMinMax(gt.Pix)
	a, b := pred.Pix, gt.Pix
	w, h := pred.W, pred.H
	inv := 1 / float64(win*win)
	sum, cnt := imageStrips(0, h, func(y0, y1 int) (float64, int) {
		s, c := 0.0, 0
		imageWindows(a, b, na, nb, w, h, win, imageReflect101, y0, y1, func(_ int, v *[5][]float64) {
			for x := 0; x < w; x++ {
				mu1, mu2 := v[0][x]*inv, v[1][x]*inv
				s1 := v[2][x]*inv - mu1*mu1
				s2 := v[3][x]*inv - mu2*mu2
				if s1 > 1e-10 && s2 > 1e-10 {
					s += (v[4][x]*inv - mu1*mu2) / math.Sqrt(s1*s2)
					c++
				}
			}
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
	const np = win * win
	const pad = (win - 1) / 2
	covNorm := float64(np) / float64(np-1)
	c1 := (0.01 * dataRange) * (0.01 * dataRange)
	c2 := (0.03 * dataRange) * (0.03 * dataRange)
	inv := 1 / float64(np)
	w, h := a.W, a.H
	sum, _ := imageStrips(pad, h-pad, func(y0, y1 int) (float64, int) {
		s := 0.0
		imageWindows(a.Pix, b.Pix, [2]float64{0, 1}, [2]float64{0, 1}, w, h, win, imageReflect, y0, y1, func(_ int, v *[5][]float64) {
			for x := pad; x < w-pad; x++ {
				ux, uy := v[0][x]*inv, v[1][x]*inv
				vx := covNorm * (v[2][x]*inv - ux*ux)
				vy := covNorm * (v[3][x]*inv - uy*uy)
				vxy := covNorm * (v[4][x]*inv - ux*uy)
				a1, a2 := 2*ux*uy+c1, 2*vxy+c2
				b1, b2 := ux*ux+uy*uy+c1, vx+vy+c2
				s += (a1 * a2) / (b1 * b2)
			}
		})
		return s, 0
	})
	return sum / float64((w-2*pad)*(h-2*pad)), nil
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
