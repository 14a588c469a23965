package engine

import "math"

// Elementwise reductions: float32 lanes summed in blocks, blocks summed in float64. The
// block size keeps the float32 partial sums short (rounding near 256·2⁻²⁴ relative) while
// the loop stays free of conversions.

const sumBlock = 256

// sum32 is Σ s.
func sum32(s []float32) float64 {
	var t float64
	for len(s) > 0 {
		b := s[:min(sumBlock, len(s))]
		s = s[len(b):]
		var a0, a1, a2, a3 float32
		i := 0
		for ; i+4 <= len(b); i += 4 {
			a0 += b[i]
			a1 += b[i+1]
			a2 += b[i+2]
			a3 += b[i+3]
		}
		for ; i < len(b); i++ {
			a0 += b[i]
		}
		t += float64((a0 + a1) + (a2 + a3))
	}
	return t
}

// sqDev32 is Σ (s − m)².
func sqDev32(s []float32, m float32) float64 {
	var t float64
	for len(s) > 0 {
		b := s[:min(sumBlock, len(s))]
		s = s[len(b):]
		var a0, a1, a2, a3 float32
		i := 0
		for ; i+4 <= len(b); i += 4 {
			d0, d1, d2, d3 := b[i]-m, b[i+1]-m, b[i+2]-m, b[i+3]-m
			a0 += d0 * d0
			a1 += d1 * d1
			a2 += d2 * d2
			a3 += d3 * d3
		}
		for ; i < len(b); i++ {
			d := b[i] - m
			a0 += d * d
		}
		t += float64((a0 + a1) + (a2 + a3))
	}
	return t
}

// leaky is the LeakyReLU factor for a value v: 1 when v ≥ 0, else k1+1 (k1 = slope − 1;
// k1 = 0 means no activation). It reads the sign bit instead of branching: signs of
// normalised values are random, and a mispredicted branch per value costs more than the
// arithmetic.
func leaky(v, k1 float32) float32 {
	return 1 + k1*float32(math.Float32bits(v)>>31)
}

// normSums returns Σ d and Σ d·(x − mean) over one normalised row, d being dy behind the
// activation (read off the output y, negative exactly where its input was).
func normSums(x, y, dy []float32, mean, k1 float32) (sd, sdx float64) {
	for len(x) > 0 {
		k := min(sumBlock, len(x))
		xb, yb, db := x[:k], y[:k:k], dy[:k:k]
		x, y, dy = x[k:], y[k:], dy[k:]
		var a, b float32
		for i, v := range xb {
			d := db[i] * leaky(yb[i], k1)
			a += d
			b += d * (v - mean)
		}
		sd += float64(a)
		sdx += float64(b)
	}
	return sd, sdx
}
