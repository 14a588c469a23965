package main

import (
	"math"
	"testing"

	"amid/viewer/volume"
)

// TestScoresUnderSSIMWindow: an image smaller than SSIM's 7×7 window (a one-pixel image,
// issue 32's degenerate sweep) has an LNCC and a PSNR and no SSIM, which is NaN, not an
// error: before, the validation failed on it ("1×1 is smaller than the 7×7 window") and
// the lane with it.
func TestScoresUnderSSIMWindow(t *testing.T) {
	pred, err := volume.New(volume.Uint8, [4]int{1, 1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	ref := pred.Clone()
	pred.SetIndex(0, 100)
	ref.SetIndex(0, 120)
	lncc, ssim, psnr, err := scores(pred, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(ssim) || math.IsNaN(lncc) || math.IsInf(psnr, 0) || math.IsNaN(psnr) {
		t.Errorf("lncc %v, ssim %v, psnr %v; want a finite LNCC and PSNR and no SSIM", lncc, ssim, psnr)
	}
}
