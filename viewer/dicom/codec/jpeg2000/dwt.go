package jpeg2000

// The inverse discrete wavelet transforms (T.800 Annex F), applied in place to a
// tile-component's coefficients in the Mallat layout, one resolution level at a time:
// rows (HOR_SR), then columns (VER_SR). Samples at even positions of the tile-component's
// grid are low-pass, so a resolution starting at an odd coordinate starts with a high-pass
// sample (its parity, cas).

// 9-7 lifting constants (T.800 Table F.4).
const (
	alpha97 = -1.586134342059924
	beta97  = -0.052980118572961
	gamma97 = 0.882911075530934
	delta97 = 0.443506852043971
	k97     = 1.230174104914001
)

// stripWidth is the number of columns transformed together in the vertical pass.
const stripWidth = 32

// idwt inverts the wavelet transform of a tile-component.
func (tc *tileComp) idwt() {
	if tc.icoef != nil {
		idwt(tc, tc.icoef, lift53, vlift53)
	} else {
		idwt(tc, tc.fcoef, lift97, vlift97)
	}
}

// idwt applies the inverse transform given by lift (one line) and vlift (the columns of a
// strip) to coef, resolution by resolution: rows in parallel, then column strips.
func idwt[T int32 | float32](tc *tileComp, coef []T, lift func([]T, int), vlift func([]T, int, int, int)) {
	stride := tc.w()
	for r := 1; r < len(tc.res); r++ {
		res, lo := &tc.res[r], &tc.res[r-1]
		w, h := res.x1-res.x0, res.y1-res.y0
		if w == 0 || h == 0 {
			continue
		}
		wl, hl := lo.x1-lo.x0, lo.y1-lo.y0
		casx, casy := res.x0&1, res.y0&1
		rows := rowChunks(h)
		parallel(rows, func(_, k int) {
			line := make([]T, w)
			for y := k * h / rows; y < (k+1)*h/rows; y++ {
				row := coef[y*stride : y*stride+w]
				interleave(line, row, wl, casx)
				lift(line, casx)
				copy(row, line)
			}
		})
		parallel(ceilDiv(w, stripWidth), func(_, k int) {
			x0 := k * stripWidth
			cw := min(stripWidth, w-x0)
			buf := make([]T, cw*h)
			gatherRows(buf, coef[x0:], stride, cw, h, hl, casy)
			vlift(buf, cw, h, casy)
			for y := range h {
				copy(coef[y*stride+x0:y*stride+x0+cw], buf[y*cw:(y+1)*cw])
			}
		})
	}
}

// rowChunks is how many pieces the rows of a horizontal pass are split into.
func rowChunks(h int) int { return min(h, 4*maxWorkers()) }

// interleave puts the nl low-pass samples src[:nl] at the positions of parity cas in dst
// and the high-pass samples src[nl:] between them.
func interleave[T int32 | float32](dst, src []T, nl, cas int) {
	for i, v := range src[:nl] {
		dst[cas+2*i] = v
	}
	for i, v := range src[nl:len(dst)] {
		dst[1-cas+2*i] = v
	}
}

// gatherRows copies columns [0, cw) of the h rows of src (low-pass rows first, hl of
// them) into buf, rows interleaved by parity cas.
func gatherRows[T int32 | float32](buf, src []T, stride, cw, h, hl, cas int) {
	for y := range h {
		j := cas + 2*y
		if y >= hl {
			j = 1 - cas + 2*(y-hl)
		}
		copy(buf[j*cw:(j+1)*cw], src[y*stride:y*stride+cw])
	}
}

// mirror returns the neighbours of position j in a signal of n ≥ 2 samples, extended
// symmetrically (T.800 F.3.7).
func mirror(j, n int) (l, r int) {
	l, r = j-1, j+1
	if l < 0 {
		l = r
	}
	if r >= n {
		r = l
	}
	return l, r
}

// lift53 inverts the reversible 5-3 transform of one interleaved line (T.800 F.3.8.1).
func lift53(x []int32, cas int) {
	n := len(x)
	if n == 1 {
		if cas == 1 {
			x[0] /= 2
		}
		return
	}
	for j := cas; j < n; j += 2 {
		l, r := mirror(j, n)
		x[j] -= (x[l] + x[r] + 2) >> 2
	}
	for j := 1 - cas; j < n; j += 2 {
		l, r := mirror(j, n)
		x[j] += (x[l] + x[r]) >> 1
	}
}

// vlift53 applies lift53 down the columns of buf (h rows of w).
func vlift53(buf []int32, w, h, cas int) {
	row := func(j int) []int32 { return buf[j*w : (j+1)*w] }
	if h == 1 {
		if cas == 1 {
			for i := range buf {
				buf[i] /= 2
			}
		}
		return
	}
	for j := cas; j < h; j += 2 {
		l, r := mirror(j, h)
		x, a, b := row(j), row(l), row(r)
		for i := range x {
			x[i] -= (a[i] + b[i] + 2) >> 2
		}
	}
	for j := 1 - cas; j < h; j += 2 {
		l, r := mirror(j, h)
		x, a, b := row(j), row(l), row(r)
		for i := range x {
			x[i] += (a[i] + b[i]) >> 1
		}
	}
}

// lift97 inverts the irreversible 9-7 transform of one interleaved line (T.800 F.3.8.2).
func lift97(x []float32, cas int) {
	n := len(x)
	if n == 1 {
		if cas == 1 {
			x[0] /= 2
		}
		return
	}
	for j := cas; j < n; j += 2 {
		x[j] *= k97
	}
	for j := 1 - cas; j < n; j += 2 {
		x[j] *= 1 / k97
	}
	for _, s := range [...]struct {
		start int
		c     float32
	}{{cas, delta97}, {1 - cas, gamma97}, {cas, beta97}, {1 - cas, alpha97}} {
		for j := s.start; j < n; j += 2 {
			l, r := mirror(j, n)
			x[j] -= s.c * (x[l] + x[r])
		}
	}
}

// vlift97 applies lift97 down the columns of buf (h rows of w).
func vlift97(buf []float32, w, h, cas int) {
	row := func(j int) []float32 { return buf[j*w : (j+1)*w] }
	if h == 1 {
		if cas == 1 {
			for i := range buf {
				buf[i] /= 2
			}
		}
		return
	}
	for j := 0; j < h; j++ {
		k := float32(k97)
		if (j-cas)&1 != 0 {
			k = 1 / k97
		}
		for i, x := 0, row(j); i < len(x); i++ {
			x[i] *= k
		}
	}
	for _, s := range [...]struct {
		start int
		c     float32
	}{{cas, delta97}, {1 - cas, gamma97}, {cas, beta97}, {1 - cas, alpha97}} {
		for j := s.start; j < h; j += 2 {
			l, r := mirror(j, h)
			x, a, b := row(j), row(l), row(r)
			for i := range x {
				x[i] -= s.c * (a[i] + b[i])
			}
		}
	}
}
