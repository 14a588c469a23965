package jpegextended

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestIDCT compares the integer inverse DCT with the transform's definition (T.81 A.3.3)
// computed in float64 on random 12-bit blocks: the integer factorisation's rounding keeps
// every sample within one grey level (IEEE 1180's bound for an 8-bit IDCT is the same).
func TestIDCT(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var cos [8][8]float64
	for x := 0; x < 8; x++ {
		for u := 0; u < 8; u++ {
			cos[x][u] = math.Cos(float64(2*x+1) * float64(u) * math.Pi / 16)
			if u == 0 {
				cos[x][u] /= math.Sqrt2
			}
		}
	}
	worst := 0.0
	for n := 0; n < 2000; n++ {
		var blk [64]int32
		// Coefficients of natural images fall off with frequency; keep most high ones 0.
		for k := 0; k < 64; k++ {
			if k < 10 || rng.IntN(4) == 0 {
				blk[k] = int32(rng.IntN(2001) - 1000)
			}
		}
		blk[0] = int32(rng.IntN(16001) - 8000)
		in := blk
		out := make([]uint16, 64)
		idct(&in, out, 8, 1, 2048, 4095)
		for y := 0; y < 8; y++ {
			for x := 0; x < 8; x++ {
				s := 0.0
				for v := 0; v < 8; v++ {
					for u := 0; u < 8; u++ {
						s += cos[x][u] * cos[y][v] * float64(blk[8*v+u])
					}
				}
				want := math.Min(4095, math.Max(0, math.Round(s/4+2048)))
				d := math.Abs(float64(out[8*y+x]) - want)
				worst = math.Max(worst, d)
			}
		}
	}
	if worst > 1 {
		t.Errorf("integer IDCT differs from the definition by up to %v grey levels", worst)
	}
}
