package jpegextended

// The inverse DCT is the Loeffler–Ligtenberg–Moschytz factorisation (C. Loeffler,
// A. Ligtenberg, G. Moschytz, "Practical fast 1-D DCT algorithms with 11 multiplications",
// ICASSP 1989) with its constants scaled by 2¹³, done on columns and then rows, as
// libjpeg's default integer method does: the same arithmetic gives the same rounding, and
// so the same pixels as GDCM and dcmtk, which use libjpeg.

// constBits is the fixed-point scale of the constants.
const constBits = 13

// The multipliers, round(x · 2¹³) for the x each name spells (0.298631336 …): the
// cosine combinations of the factorisation's rotations.
const (
	fix0298631336 = 2446
	fix0390180644 = 3196
	fix0541196100 = 4433
	fix0765366865 = 6270
	fix0899976223 = 7373
	fix1175875602 = 9633
	fix1501321110 = 12299
	fix1847759065 = 15137
	fix1961570560 = 16069
	fix2053119869 = 16819
	fix2562915447 = 20995
	fix3072711026 = 25172
)

// idct transforms the dequantised coefficients of blk (row-major) into an 8×8 block of
// samples at dst (rows stride apart): level-shifted by level and clamped to 0…maxv.
// pass1 is the number of fraction bits kept between the passes (2 at 8 bits, 1 at 12).
func idct(blk *[64]int32, dst []uint16, stride, pass1 int, level, maxv int32) {
	var ws [64]int
	// Pass 1: columns, results scaled up by 2^pass1.
	for c := 0; c < 8; c++ {
		in := func(r int) int { return int(blk[8*r+c]) }
		if blk[8+c] == 0 && blk[16+c] == 0 && blk[24+c] == 0 && blk[32+c] == 0 &&
			blk[40+c] == 0 && blk[48+c] == 0 && blk[56+c] == 0 {
			// Only the DC term: the column is constant.
			dc := in(0) << uint(pass1)
			for r := 0; r < 8; r++ {
				ws[8*r+c] = dc
			}
			continue
		}
		var out [8]int
		butterfly(in(0), in(1), in(2), in(3), in(4), in(5), in(6), in(7), constBits-pass1, &out)
		for r := 0; r < 8; r++ {
			ws[8*r+c] = out[r]
		}
	}
	// Pass 2: rows, scaled down by the constants, the pass-1 bits and the 8 of the
	// transform's normalisation.
	shift := constBits + pass1 + 3
	for r := 0; r < 8; r++ {
		w := ws[8*r : 8*r+8]
		row := dst[r*stride : r*stride+8]
		if w[1] == 0 && w[2] == 0 && w[3] == 0 && w[4] == 0 && w[5] == 0 && w[6] == 0 && w[7] == 0 {
			v := clamp(descale(w[0], pass1+3)+int(level), maxv)
			for i := range row {
				row[i] = v
			}
			continue
		}
		var out [8]int
		butterfly(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], shift, &out)
		for i := range row {
			row[i] = clamp(out[i]+int(level), maxv)
		}
	}
}

// butterfly is the one-dimensional 8-point inverse DCT of in0…in7, its results scaled
// down by shift bits with rounding.
func butterfly(in0, in1, in2, in3, in4, in5, in6, in7, shift int, out *[8]int) {
	// Even part: the rotation of inputs 2 and 6, and the sum and difference of 0 and 4.
	z1 := (in2 + in6) * fix0541196100
	t2 := z1 - in6*fix1847759065
	t3 := z1 + in2*fix0765366865
	t0 := (in0 + in4) << constBits
	t1 := (in0 - in4) << constBits
	t10, t13 := t0+t3, t0-t3
	t11, t12 := t1+t2, t1-t2
	// Odd part: inputs 7, 5, 3 and 1.
	o0, o1, o2, o3 := in7, in5, in3, in1
	a1, a2, a3, a4 := o0+o3, o1+o2, o0+o2, o1+o3
	z5 := (a3 + a4) * fix1175875602
	o0 *= fix0298631336
	o1 *= fix2053119869
	o2 *= fix3072711026
	o3 *= fix1501321110
	a1 *= -fix0899976223
	a2 *= -fix2562915447
	a3 = a3*-fix1961570560 + z5
	a4 = a4*-fix0390180644 + z5
	o0 += a1 + a3
	o1 += a2 + a4
	o2 += a2 + a3
	o3 += a1 + a4
	out[0] = descale(t10+o3, shift)
	out[7] = descale(t10-o3, shift)
	out[1] = descale(t11+o2, shift)
	out[6] = descale(t11-o2, shift)
	out[2] = descale(t12+o1, shift)
	out[5] = descale(t12-o1, shift)
	out[3] = descale(t13+o0, shift)
	out[4] = descale(t13-o0, shift)
}

// descale divides by 2^n, rounding half up.
func descale(x, n int) int { return (x + 1<<uint(n-1)) >> uint(n) }

func clamp(v int, maxv int32) uint16 {
	if v < 0 {
		return 0
	}
	if v > int(maxv) {
		return uint16(maxv)
	}
	return uint16(v)
}
