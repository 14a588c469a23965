package jpegls

import (
	"fmt"
	"math/bits"
	"sync"
)

// jOrder is J, the order of the run-length codes by run index (T.87 A.2.1, step 3).
var jOrder = [32]int{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 9, 10, 11, 12, 13, 14, 15}

// context holds the variables of one regular-mode context (T.87 A.2.1): A, the sum of
// error magnitudes; B, the bias; C, the prediction correction; N, the count.
type context struct{ a, b, c, n int32 }

// runContext holds the variables of the two run-interruption contexts (T.87 A.7.2).
type runContext struct{ a, n, nn int32 }

// Limits on the context variables: valid data keeps A below 2¹⁶ × RESET; beyond this
// the data is corrupt (CharLS uses the same bound).
const maxContextSum = 1 << 24

// scanState is the coding state of one scan.
type scanState struct {
	maxval, near, rng, qbpp, limit, reset int
	esc                                   int    // limit − qbpp − 1: the unary length of an escaped code
	quant                                 []int8 // quantised gradient of d at index d + maxval
	ctx                                   [365]context
	run                                   [2]runContext
	runIndex                              int
}

// thresholds are default or preset gradient thresholds, keyed for the quantisation cache.
type thresholds struct{ maxval, near, t1, t2, t3 int }

// quantCache keeps gradient quantisation tables: a series has one set of parameters, and a
// 16-bit table takes longer to build than a small frame takes to decode.
var quantCache sync.Map // thresholds → []int8

// init sets up the scan's parameters (T.87 C.2.4.1, A.2.1) and contexts.
func (s *scanState) init(precision, near int, p preset) error {
	maxval := 1<<precision - 1
	if p.maxval != 0 {
		if p.maxval > maxval {
			return fmt.Errorf("%w: MAXVAL %d above the %d-bit range", ErrFormat, p.maxval, precision)
		}
		maxval = p.maxval
	}
	if near > min(255, maxval/2) {
		return fmt.Errorf("%w: NEAR %d for MAXVAL %d", ErrFormat, near, maxval)
	}
	th := defaultThresholds(maxval, near)
	// Preset values, checked as T.87 Table C.1 asks; zero keeps the default.
	if p.t1 != 0 {
		if p.t1 < near+1 || p.t1 > maxval {
			return fmt.Errorf("%w: threshold T1 %d outside %d…%d", ErrFormat, p.t1, near+1, maxval)
		}
		th.t1 = p.t1
	}
	if p.t2 != 0 {
		if p.t2 < th.t1 || p.t2 > maxval {
			return fmt.Errorf("%w: threshold T2 %d outside %d…%d", ErrFormat, p.t2, th.t1, maxval)
		}
		th.t2 = p.t2
	}
	if p.t3 != 0 {
		if p.t3 < th.t2 || p.t3 > maxval {
			return fmt.Errorf("%w: threshold T3 %d outside %d…%d", ErrFormat, p.t3, th.t2, maxval)
		}
		th.t3 = p.t3
	}
	reset := 64
	if p.reset != 0 {
		if p.reset < 3 || p.reset > max(255, maxval) {
			return fmt.Errorf("%w: RESET %d", ErrFormat, p.reset)
		}
		reset = p.reset
	}
	s.maxval, s.near, s.reset = maxval, near, reset
	s.rng = (maxval+2*near)/(2*near+1) + 1
	s.qbpp = ceilLog2(s.rng)
	bpp := max(2, ceilLog2(maxval+1))
	s.limit = 2 * (bpp + max(8, bpp))
	s.esc = s.limit - s.qbpp - 1
	if q, ok := quantCache.Load(th); ok {
		s.quant = q.([]int8)
	} else {
		s.quant = quantTable(th)
		quantCache.Store(th, s.quant)
	}
	s.resetContexts()
	return nil
}

func ceilLog2(n int) int {
	k := 0
	for 1<<k < n {
		k++
	}
	return k
}

// defaultThresholds returns the default thresholds of T.87 C.2.4.1.1.1.
func defaultThresholds(maxval, near int) thresholds {
	clamp := func(i, j int) int {
		if i > maxval || i < j {
			return j
		}
		return i
	}
	const basicT1, basicT2, basicT3 = 3, 7, 21
	th := thresholds{maxval: maxval, near: near}
	if maxval >= 128 {
		f := (min(maxval, 4095) + 128) / 256
		th.t1 = clamp(f*(basicT1-2)+2+3*near, near+1)
		th.t2 = clamp(f*(basicT2-3)+3+5*near, th.t1)
		th.t3 = clamp(f*(basicT3-4)+4+7*near, th.t2)
		return th
	}
	f := 256 / (maxval + 1)
	th.t1 = clamp(max(2, basicT1/f+3*near), near+1)
	th.t2 = clamp(max(3, basicT2/f+5*near), th.t1)
	th.t3 = clamp(max(4, basicT3/f+7*near), th.t2)
	return th
}

// quantTable tabulates the gradient quantisation of T.87 A.3.3 (code segment A.4) for
// gradients −maxval…maxval.
func quantTable(th thresholds) []int8 {
	q := make([]int8, 2*th.maxval+1)
	for i := range q {
		d := i - th.maxval
		var v int8
		switch {
		case d <= -th.t3:
			v = -4
		case d <= -th.t2:
			v = -3
		case d <= -th.t1:
			v = -2
		case d < -th.near:
			v = -1
		case d <= th.near:
			v = 0
		case d < th.t1:
			v = 1
		case d < th.t2:
			v = 2
		case d < th.t3:
			v = 3
		default:
			v = 4
		}
		q[i] = v
	}
	return q
}

// resetContexts sets every context to its initial state (T.87 A.2.1, A.8 step 1), at the
// start of a scan and after each restart marker.
func (s *scanState) resetContexts() {
	a := int32(max(2, (s.rng+32)/64))
	for i := range s.ctx {
		s.ctx[i] = context{a: a, n: 1}
	}
	s.run = [2]runContext{{a: a, n: 1}, {a: a, n: 1}}
	s.runIndex = 0
}

// predict is the median edge detector (T.87 A.4.1).
func predict(ra, rb, rc int32) int32 {
	mn, mx := ra, rb
	if rb < ra {
		mn, mx = rb, ra
	}
	switch {
	case rc >= mx:
		return mn
	case rc <= mn:
		return mx
	}
	return ra + rb - rc
}

// line decodes one line of a single component; prev and cur hold the line above and
// this line with an edge sample either side (samples at 1…w).
func (s *scanState) line(b *bitReader, prev, cur []int32, w int) {
	quant := s.quant
	off := int32(s.maxval)
	prev, cur = prev[:w+2], cur[:w+2]
	for x := 1; x <= w; {
		ra, rb, rc, rd := cur[x-1], prev[x], prev[x-1], prev[x+1]
		q1 := int(quant[rd-rb+off])
		q2 := int(quant[rb-rc+off])
		q3 := int(quant[rc-ra+off])
		if q1|q2|q3 == 0 {
			x += s.runMode(b, prev, cur, x, w)
			continue
		}
		cur[x] = s.regular(b, (q1*9+q2)*9+q3, predict(ra, rb, rc))
		x++
	}
}

// linePixels decodes one line of a sample-interleaved scan of per components; a pixel's
// samples are consecutive and the edges are whole pixels.
func (s *scanState) linePixels(b *bitReader, prev, cur []int32, w, per int) {
	quant := s.quant
	off := int32(s.maxval)
	var qs [4]int
	for x := 1; x <= w; {
		zero := true
		for k := 0; k < per; k++ {
			i := x*per + k
			ra, rb, rc, rd := cur[i-per], prev[i], prev[i-per], prev[i+per]
			q := (int(quant[rd-rb+off])*9+int(quant[rb-rc+off]))*9 + int(quant[rc-ra+off])
			qs[k] = q
			zero = zero && q == 0
		}
		if zero {
			x += s.runModePixels(b, prev, cur, x, w, per)
			continue
		}
		for k := 0; k < per; k++ {
			i := x*per + k
			cur[i] = s.regular(b, qs[k], predict(cur[i-per], prev[i], prev[i-per]))
		}
		x++
	}
}

// regular decodes one sample in regular mode (T.87 A.4–A.6) with context q (−364…364,
// signed) and prediction px.
func (s *scanState) regular(b *bitReader, q int, px int32) int32 {
	sign := int32(q >> 63)
	q = (q ^ int(sign)) - int(sign)
	c := &s.ctx[q]
	// Prediction correction (A.4.2).
	px += (c.c ^ sign) - sign
	if px < 0 {
		px = 0
	} else if px > int32(s.maxval) {
		px = int32(s.maxval)
	}
	// Golomb parameter (A.5.1): the least k with N·2^k ≥ A, from the difference of the
	// leading zeros, which is k or one less (A < 2²⁴ and N ≥ 1 bound it by 24).
	k := max(0, bits.LeadingZeros32(uint32(c.n))-bits.LeadingZeros32(uint32(c.a)))
	if c.n<<uint(k) < c.a {
		k++
	}
	// The mapped error (A.5.3): unary high bits and k low bits, read from the buffered
	// bits when they hold the whole code, else by golomb.
	if b.n < 48 {
		b.fill()
	}
	var m int
	if z := bits.LeadingZeros64(b.acc); z < s.esc && z+1+k <= b.n && k <= 16 {
		acc := b.acc << uint(z+1)
		m = z<<uint(k) | int(acc>>uint(64-k))
		b.acc = acc << uint(k)
		b.n -= z + 1 + k
	} else {
		if k > 16 {
			b.setErr(fmt.Errorf("%w: Golomb parameter above 16", ErrFormat))
			return 0
		}
		m = s.golomb(b, k, s.limit)
	}
	e := int32(m>>1) ^ -int32(m&1)
	if k == 0 && s.near == 0 && 2*c.b+c.n-1 < 0 {
		// Error mapping of A.5.2 when the bias is negative.
		e = ^e
	}
	// Context update (A.6.1, A.6.2).
	if e < 0 {
		c.a -= e
	} else {
		c.a += e
	}
	c.b += e * int32(2*s.near+1)
	if c.a >= maxContextSum || c.b >= maxContextSum || c.b <= -maxContextSum {
		b.setErr(fmt.Errorf("%w: context statistics out of range", ErrFormat))
		*c = context{a: 2, n: 1}
		return 0
	}
	if c.n == int32(s.reset) {
		c.a >>= 1
		c.b >>= 1
		c.n >>= 1
	}
	c.n++
	if c.b+c.n <= 0 {
		c.b += c.n
		if c.b <= -c.n {
			c.b = -c.n + 1
		}
		if c.c > -128 {
			c.c--
		}
	} else if c.b > 0 {
		c.b -= c.n
		if c.b > 0 {
			c.b = 0
		}
		if c.c < 127 {
			c.c++
		}
	}
	e = (e ^ sign) - sign
	return s.fix(px + e*int32(2*s.near+1))
}

// golomb reads a limited-length Golomb code of parameter k (T.87 A.5.3): unary high bits,
// then k low bits; or, after limit − qbpp − 1 zeros, the value minus one in qbpp bits.
func (s *scanState) golomb(b *bitReader, k, limit int) int {
	esc := limit - s.qbpp - 1
	u := b.unary(esc)
	if u < esc {
		return u<<uint(k) | b.read(k)
	}
	return b.read(s.qbpp) + 1
}

// fix reduces a reconstructed value modulo the range and clamps it (T.87 A.4.5, A.6.3).
func (s *scanState) fix(v int32) int32 {
	near, maxval := int32(s.near), int32(s.maxval)
	if v < -near {
		v += int32(s.rng) * (2*near + 1)
	} else if v > maxval+near {
		v -= int32(s.rng) * (2*near + 1)
	}
	if v < 0 {
		return 0
	}
	if v > maxval {
		return maxval
	}
	return v
}

// runLength reads the length of a run starting at sample x of a line of w samples (T.87
// A.7.1.2) and reports whether it ends before the line does (an interruption follows).
func (s *scanState) runLength(b *bitReader, x, w int) (count int, interrupted bool) {
	remaining := w - x + 1
	for b.bit() == 1 {
		seg := 1 << uint(jOrder[s.runIndex])
		n := min(seg, remaining-count)
		count += n
		if n == seg && s.runIndex < 31 {
			s.runIndex++
		}
		if count == remaining {
			return count, false
		}
	}
	if j := jOrder[s.runIndex]; j > 0 {
		count += b.read(j)
	}
	if count >= remaining {
		if count > remaining {
			b.setErr(fmt.Errorf("%w: run of %d samples past the end of the line", ErrFormat, count))
		}
		return remaining, false
	}
	return count, true
}

// runMode decodes a run and its interruption sample starting at sample x; it returns
// the number of samples decoded.
func (s *scanState) runMode(b *bitReader, prev, cur []int32, x, w int) int {
	ra := cur[x-1]
	count, interrupted := s.runLength(b, x, w)
	for i := x; i < x+count; i++ {
		cur[i] = ra
	}
	if !interrupted {
		return count
	}
	// The run interruption sample (A.7.2).
	i := x + count
	rb := prev[i]
	d := ra - rb
	if d < 0 {
		d = -d
	}
	if d <= int32(s.near) {
		cur[i] = s.fix(ra + s.runError(b, 1)*int32(2*s.near+1))
	} else {
		e := s.runError(b, 0)
		if rb < ra {
			e = -e
		}
		cur[i] = s.fix(rb + e*int32(2*s.near+1))
	}
	if s.runIndex > 0 {
		s.runIndex--
	}
	return count + 1
}

// runModePixels is runMode for sample-interleaved scans: a run repeats whole pixels, and
// each sample of the interruption pixel is coded against the one above in the first
// run-interruption context, as CharLS does.
func (s *scanState) runModePixels(b *bitReader, prev, cur []int32, x, w, per int) int {
	count, interrupted := s.runLength(b, x, w)
	for i := x * per; i < (x+count)*per; i++ {
		cur[i] = cur[i-per]
	}
	if !interrupted {
		return count
	}
	i := (x + count) * per
	for k := 0; k < per; k++ {
		ra, rb := cur[x*per-per+k], prev[i+k]
		e := s.runError(b, 0)
		if rb < ra {
			e = -e
		}
		cur[i+k] = s.fix(rb + e*int32(2*s.near+1))
	}
	if s.runIndex > 0 {
		s.runIndex--
	}
	return count + 1
}

// runError decodes the error of a run interruption sample of type ritype (T.87 A.7.2,
// code segments A.20–A.23).
func (s *scanState) runError(b *bitReader, ritype int32) int32 {
	c := &s.run[ritype]
	temp := c.a + (c.n>>1)*ritype
	k := 0
	for n := c.n; n < temp; n <<= 1 {
		k++
		if k > 16 {
			b.setErr(fmt.Errorf("%w: Golomb parameter above 16", ErrFormat))
			return 0
		}
	}
	m := int32(s.golomb(b, k, s.limit-jOrder[s.runIndex]-1))
	t := m + ritype
	odd := t&1 == 1
	abs := (t + t&1) >> 1
	e := abs
	if (k != 0 || 2*c.nn >= c.n) == odd {
		e = -abs
	}
	if e < 0 {
		c.nn++
	}
	c.a += (m + 1 - ritype) >> 1
	if c.a >= maxContextSum {
		b.setErr(fmt.Errorf("%w: context statistics out of range", ErrFormat))
		*c = runContext{a: 2, n: 1}
		return 0
	}
	if c.n == int32(s.reset) {
		c.a >>= 1
		c.n >>= 1
		c.nn >>= 1
	}
	c.n++
	return e
}
