package quality

import (
	"errors"
	"math"
	"testing"
)

// TestKnownValues checks figures that follow from the definitions: an image against
// itself, against its negative, against a constant offset, and sizes that do not fit.
// (The grader's own implementations are compared in amid/host/metrics, which plugins may
// not import.)
func TestKnownValues(t *testing.T) {
	w, h := 20, 15
	a, neg, off := Image{W: w, H: h}, Image{W: w, H: h}, Image{W: w, H: h}
	for y := range h {
		for x := range w {
			v := float64((x*x + 3*y) % 17)
			a.Pix = append(a.Pix, v)
			neg.Pix = append(neg.Pix, -v)
			off.Pix = append(off.Pix, v+2)
		}
	}
	rng := DataRange(a, a)
	if rng != 16 {
		t.Fatalf("data range %v, want 16 (values 0…16)", rng)
	}
	if v, _ := LNCC(a, a); math.Abs(v-1) > 1e-9 {
		t.Errorf("LNCC of an image with itself %v, want 1", v)
	}
	// The negative, min–max normalised, is 1 − the image: correlation −1 in every window.
	if v, _ := LNCC(neg, a); math.Abs(v+1) > 1e-9 {
		t.Errorf("LNCC with the negative %v, want −1", v)
	}
	if v, _ := SSIM(a, a, rng); math.Abs(v-1) > 1e-12 {
		t.Errorf("SSIM of an image with itself %v, want 1", v)
	}
	if v, _ := PSNR(a, a, rng); !math.IsInf(v, 1) {
		t.Errorf("PSNR of an image with itself %v, want +Inf", v)
	}
	// A constant offset of 2 on a range of 18: MSE 4, PSNR 10·log10(18²/4).
	r2 := DataRange(off, a)
	if v, _ := PSNR(off, a, r2); math.Abs(v-10*math.Log10(18*18/4.0)) > 1e-12 || r2 != 18 {
		t.Errorf("PSNR with an offset of 2: %v (range %v)", v, r2)
	}
	small := Image{W: 6, H: 6, Pix: make([]float64, 36)}
	if _, err := SSIM(small, small, 1); !errors.Is(err, ErrShape) {
		t.Errorf("SSIM of 6×6 images: %v, want ErrShape", err)
	}
	if _, err := LNCC(a, small); !errors.Is(err, ErrShape) {
		t.Errorf("LNCC of different sizes: %v, want ErrShape", err)
	}
	if _, err := PSNR(Image{W: 2, H: 2, Pix: []float64{1}}, Image{W: 2, H: 2, Pix: []float64{1}}, 1); !errors.Is(err, ErrShape) {
		t.Errorf("PSNR of short pixel slices: %v, want ErrShape", err)
	}
	flat := Image{W: 8, H: 8, Pix: make([]float64, 64)}
	if v, _ := SSIM(flat, flat, 0); v != 1 {
		t.Errorf("SSIM of two equal flat images %v, want 1", v)
	}
	if v, _ := LNCC(flat, flat); v != 1 {
		t.Errorf("LNCC of two equal flat images %v, want 1", v)
	}
}
