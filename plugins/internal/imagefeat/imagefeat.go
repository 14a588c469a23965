// Package imagefeat computes global features of one image: a fixed vector of numbers that
// says how large the image is, how its intensities are distributed, how noisy and how
// textured it is, and where it is bright, so that a fast learner (a random forest,
// amid/plugins/internal/forest) can classify or grade whole images in seconds where a
// network from scratch needs thousands of steps. The classification and the IQA
// plugins' fast lanes use it.
//
// The features, in the order of [Names] ([Count] of them):
//
//   - Geometry (what kind of acquisition made the image: a radiograph is large and
//     rectangular, a CT slice 512², an MR slice smaller): log_x, log_y, log_z, the natural
//     logarithms of the three dimensions; log_aspect, log(X/Y); log_channels, the logarithm
//     of the channels per voxel (the features below are of the channels' mean).
//   - Raw intensities (what the scanner's units and the display window left): p01, p05,
//     p25, p50, p75, p95, p99, the percentiles (linear interpolation between order
//     statistics, numpy's default); mean and std (population); frac_min and frac_max, the
//     fraction of voxels equal to the minimum and to the maximum (a background or a
//     saturated window); log_distinct, log(1 + the number of distinct values), low for
//     quantised or synthetic images.
//   - The shape of the histogram whatever the scale: hist_00 … hist_15, the fractions of
//     voxels in 16 equal bins of the image scaled to its 0.5–99.5 percentiles, the values
//     outside them counted in the end bins (nnU-Net clips CT to the same percentiles).
//   - Noise and texture: lap_1, lap_2, lap_4, the robust standard deviation (the median
//     absolute deviation times 1.4826, its ratio to σ for a normal distribution) of the
//     in-plane 4-neighbour Laplacian at spacings 1, 2 and 4 pixels, divided by √20 so that
//     it estimates σ for white Gaussian noise of standard deviation σ (the residual
//     4·I − ΣI of independent voxels has variance (16 + 4)σ²; Immerkær's fast noise
//     estimate uses a Laplacian the same way); grad, the mean in-plane gradient magnitude
//     (central differences); lap_1_rel … grad_rel, the same divided by the 0.5–99.5
//     percentile range (0 for a constant image), so that they compare across scales.
//   - A coarse layout (where the body and the background lie): layout_r_c, the image scaled
//     to its 0.5–99.5 percentiles and clipped to [0, 1], area-averaged onto 6 × 6 cells
//     (row r from the first row of the image, column c from its first column); for a
//     volume, of its middle slice along Z.
//
// Non-finite voxels (NaN, ±Inf, and float64 values beyond float32's range) are left out of
// the statistics and read as the median of the finite ones where the filters and the
// layout need a value; every feature is finite (a volume with no finite voxel, or data
// that does not match its dims, gives zeros for all but the geometry).
//
// The cost is linear in the voxels: the percentiles and the distinct values are of an
// evenly strided sample of at most 2¹⁶ voxels (all of them up to 256²; a percentile's rank
// is then within a few tenths of a percent), sorted by a radix sort, the Laplacians' MADs
// of one of at most 2¹⁴ interior positions (the MAD's standard error, 1.67σ/√n for normal
// residuals, is then 1.3 %), found by selection, and the mean gradient of one of at most
// 2¹⁶; a 512² image takes a few milliseconds.
//
// It is written here because it is small and at the core of the fast lanes, and no Go
// library computes such a vector: the image-feature libraries (pyradiomics' first-order
// and texture features, for one) are Python, describe a region that a mask gives, and
// leave out what this vector needs for whole images (the geometry, the layout, a noise
// estimate).
package imagefeat

import (
	"cmp"
	"fmt"
	"math"

	"amid/viewer/volume"
)

// Layout is the side of the coarse layout's grid.
const Layout = 6

// HistBins is the number of bins of the scaled histogram.
const HistBins = 16

// Spacings are the Laplacians' spacings in pixels.
var Spacings = [3]int{1, 2, 4}

// Percentiles are the raw intensity percentiles of the features p01 … p99.
var Percentiles = [7]float64{1, 5, 25, 50, 75, 95, 99}

// Scale are the percentiles to which the histogram, the relative texture features and the
// layout scale the image.
var Scale = [2]float64{0.5, 99.5}

// Limits of the samples (see the package documentation).
const (
	maxSorted  = 1 << 16 // voxels whose values give the percentiles
	maxTexture = 1 << 14 // interior positions whose Laplacian gives its robust σ
	maxGrad    = 1 << 16 // interior positions whose gradient gives its mean
)

// madNormal is the ratio of the standard deviation to the median absolute deviation of a
// normal distribution, 1/Φ⁻¹(3/4).
const madNormal = 1.4826

// Indices of the feature groups in the vector.
const (
	iGeom     = 0
	iPct      = iGeom + 5
	iMean     = iPct + len(Percentiles)
	iStd      = iMean + 1
	iFracMin  = iStd + 1
	iFracMax  = iFracMin + 1
	iDistinct = iFracMax + 1
	iHist     = iDistinct + 1
	iLap      = iHist + HistBins
	iGrad     = iLap + len(Spacings)
	iLapRel   = iGrad + 1
	iGradRel  = iLapRel + len(Spacings)
	iLayout   = iGradRel + 1
	// Count is the number of features.
	Count = iLayout + Layout*Layout
)

// Names are the features' names, in the vector's order.
func Names() []string {
	out := []string{"log_x", "log_y", "log_z", "log_aspect", "log_channels"}
	for _, p := range Percentiles {
		out = append(out, fmt.Sprintf("p%02d", int(p)))
	}
	out = append(out, "mean", "std", "frac_min", "frac_max", "log_distinct")
	for b := range HistBins {
		out = append(out, fmt.Sprintf("hist_%02d", b))
	}
	for _, s := range Spacings {
		out = append(out, fmt.Sprintf("lap_%d", s))
	}
	out = append(out, "grad")
	for _, s := range Spacings {
		out = append(out, fmt.Sprintf("lap_%d_rel", s))
	}
	out = append(out, "grad_rel")
	for r := range Layout {
		for c := range Layout {
			out = append(out, fmt.Sprintf("layout_%d_%d", r, c))
		}
	}
	return out
}

// Of returns the Count features of v (see the package documentation). It never panics:
// a nil volume, one whose data does not match its dims, or one of an unknown element type
// gives zeros beyond the geometry of its dims.
func Of(v *volume.Volume) []float32 {
	f := make([]float64, Count)
	out := make([]float32, Count)
	if v == nil {
		return out
	}
	d := v.Dims
	for i := range d {
		d[i] = max(d[i], 1)
	}
	f[iGeom] = math.Log(float64(d[0]))
	f[iGeom+1] = math.Log(float64(d[1]))
	f[iGeom+2] = math.Log(float64(d[2]))
	f[iGeom+3] = f[iGeom] - f[iGeom+1]
	f[iGeom+4] = math.Log(float64(d[3]))
	if g, ok := gray(v); ok {
		intensity(g, [3]int{d[0], d[1], d[2]}, f)
	}
	for i, x := range f {
		switch {
		case math.IsNaN(x):
			out[i] = 0
		case x > math.MaxFloat32:
			out[i] = math.MaxFloat32
		case x < -math.MaxFloat32:
			out[i] = -math.MaxFloat32
		default:
			out[i] = float32(x)
		}
	}
	return out
}

// gray is v's channel mean per voxel as float32 (false when v's data does not match its
// dims or is of an unknown type).
func gray(v *volume.Volume) ([]float32, bool) {
	total := int64(1) // voxels times channels, checked against the limit before it can overflow
	for _, x := range v.Dims {
		if x <= 0 || int64(x) > volume.MaxVoxels/total {
			return nil, false
		}
		total *= int64(x)
	}
	c := int64(v.Dims[3])
	if int64(volume.DataLen(v.Data)) != total {
		return nil, false
	}
	switch d := v.Data.(type) {
	case []uint8:
		return mean(d, int(c)), true
	case []int8:
		return mean(d, int(c)), true
	case []uint16:
		return mean(d, int(c)), true
	case []int16:
		return mean(d, int(c)), true
	case []uint32:
		return mean(d, int(c)), true
	case []int32:
		return mean(d, int(c)), true
	case []float32:
		return mean(d, int(c)), true
	case []float64:
		return mean(d, int(c)), true
	}
	return nil, false
}

type number interface {
	~uint8 | ~int8 | ~uint16 | ~int16 | ~uint32 | ~int32 | ~float32 | ~float64
}

// mean is the mean of each run of c values of d, as float32.
func mean[T number](d []T, c int) []float32 {
	out := make([]float32, len(d)/c)
	if c == 1 {
		for i, x := range d {
			out[i] = float32(x)
		}
		return out
	}
	for i := range out {
		var s float64
		for _, x := range d[i*c : (i+1)*c] {
			s += float64(x)
		}
		out[i] = float32(s / float64(c))
	}
	return out
}

func finite(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }

// intensity fills every feature but the geometry from the voxels g of an image of dims.
func intensity(g []float32, dims [3]int, f []float64) {
	n := len(g)
	// The strided sample of the finite values, and the exact moments, extremes and counts.
	stride := (n + maxSorted - 1) / maxSorted
	sample := make([]float32, 0, (n+stride-1)/stride)
	var sum, sq float64
	lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
	fin := 0
	for i, x := range g {
		if !finite(x) {
			continue
		}
		fin++
		sum += float64(x)
		lo, hi = min(lo, x), max(hi, x)
		if i%stride == 0 {
			sample = append(sample, x)
		}
	}
	if fin == 0 {
		return
	}
	if len(sample) == 0 { // every finite voxel fell between the strides
		for _, x := range g {
			if finite(x) {
				sample = append(sample, x)
				break
			}
		}
	}
	m := sum / float64(fin)
	atMin, atMax := 0, 0
	for _, x := range g {
		if !finite(x) {
			continue
		}
		sq += (float64(x) - m) * (float64(x) - m)
		if x == lo {
			atMin++
		}
		if x == hi {
			atMax++
		}
	}
	sortFloat32(sample)
	for k, p := range Percentiles {
		f[iPct+k] = percentile(sample, p)
	}
	f[iMean] = m
	f[iStd] = math.Sqrt(sq / float64(fin))
	f[iFracMin] = float64(atMin) / float64(fin)
	f[iFracMax] = float64(atMax) / float64(fin)
	distinct := 1
	for i := 1; i < len(sample); i++ {
		if sample[i] != sample[i-1] {
			distinct++
		}
	}
	f[iDistinct] = math.Log1p(float64(distinct))

	// Non-finite voxels read as the median of the finite ones from here on.
	if fin < n {
		med := float32(percentile(sample, 50))
		c := make([]float32, n)
		for i, x := range g {
			if !finite(x) {
				x = med
			}
			c[i] = x
		}
		g = c
	}
	sLo, sHi := percentile(sample, Scale[0]), percentile(sample, Scale[1])
	scale := 0.0
	if sHi > sLo {
		scale = 1 / (sHi - sLo)
	}
	norm := scaler{sLo, scale}
	var hist [HistBins]int
	for _, x := range g {
		hist[min(int(norm.at(x)*HistBins), HistBins-1)]++
	}
	for b, c := range hist {
		f[iHist+b] = float64(c) / float64(n)
	}
	for k, s := range Spacings {
		f[iLap+k] = laplacianSigma(g, dims, s)
		f[iLapRel+k] = f[iLap+k] * scale
	}
	f[iGrad] = meanGradient(g, dims)
	f[iGradRel] = f[iGrad] * scale
	z := dims[2] / 2
	layout(g[z*dims[0]*dims[1]:(z+1)*dims[0]*dims[1]], dims[0], dims[1], norm, f[iLayout:])
}

// scaler maps a value to [0, 1]: (x − lo)·k, clipped.
type scaler struct{ lo, k float64 }

func (s scaler) at(x float32) float64 { return min(max((float64(x)-s.lo)*s.k, 0), 1) }

// percentile is the p-th percentile of the ascending values s (not empty), interpolated
// linearly between the order statistics.
func percentile(s []float32, p float64) float64 {
	pos := p / 100 * float64(len(s)-1)
	i := int(pos)
	if i >= len(s)-1 {
		return float64(s[len(s)-1])
	}
	w := pos - float64(i)
	return float64(s[i])*(1-w) + float64(s[i+1])*w
}

// interior calls fn with the index of every step-th voxel (in raster order) that lies at
// least margin pixels inside its slice's edges, step chosen so that at most limit are
// visited; it returns how many were.
func interior(dims [3]int, margin, limit int, fn func(i int)) int {
	w, h := dims[0]-2*margin, dims[1]-2*margin
	if w <= 0 || h <= 0 {
		return 0
	}
	total := w * h * dims[2]
	step := (total + limit - 1) / limit
	visited := 0
	for k := 0; k < total; k += step {
		x, y, z := k%w+margin, (k/w)%h+margin, k/(w*h)
		fn((z*dims[1]+y)*dims[0] + x)
		visited++
	}
	return visited
}

// laplacianSigma is the robust σ of the in-plane 4-neighbour Laplacian at spacing s,
// divided by √20 (0 for an image too small for it).
func laplacianSigma(g []float32, dims [3]int, s int) float64 {
	X := dims[0]
	row := s * X
	r := make([]float32, 0, min(maxTexture, dims[0]*dims[1]*dims[2]))
	interior(dims, s, maxTexture, func(i int) {
		v := 4*float64(g[i]) - float64(g[i-s]) - float64(g[i+s]) - float64(g[i-row]) - float64(g[i+row])
		r = append(r, float32(v))
	})
	if len(r) == 0 {
		return 0
	}
	return mad(r) * madNormal / math.Sqrt(20)
}

// mad is the median absolute deviation from the median of r (reordered).
func mad(r []float32) float64 {
	med := median(r)
	for i, v := range r {
		r[i] = float32(math.Abs(float64(v) - med))
	}
	return median(r)
}

// median is the median of r (not empty; reordered), the mean of the middle two of an
// even count, as percentile(sorted r, 50) gives it.
func median(r []float32) float64 {
	k := (len(r) - 1) / 2
	m := float64(nth(r, k))
	if len(r)%2 == 1 {
		return m
	}
	// After nth, r[k+1:] holds the values at or above the k-th: its least is the next.
	return (m + float64(minOf(r[k+1:]))) / 2
}

func minOf(r []float32) float32 {
	m := r[0]
	for _, v := range r[1:] {
		m = min(m, v)
	}
	return m
}

// nth reorders a (finite values) so that a[k] is the value a sorted a would hold there,
// none of a[:k] above it and none of a[k+1:] below it, and returns it: Hoare's selection
// with a median-of-three pivot and a three-way partition (many equal values, as in a
// quantised image's residuals, shrink the range at once), in linear expected time.
func nth(a []float32, k int) float32 {
	lo, hi := 0, len(a)
	for hi-lo > 16 {
		p := median3(a[lo], a[(lo+hi)/2], a[hi-1])
		// Three-way partition of a[lo:hi]: [lo, lt) below p, [lt, gt) equal, [gt, hi) above.
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch v := a[i]; {
			case v < p:
				a[lt], a[i] = a[i], a[lt]
				lt++
				i++
			case v > p:
				gt--
				a[gt], a[i] = a[i], a[gt]
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return p
		}
	}
	sortSmall(a[lo:hi])
	return a[k]
}

func median3(a, b, c float32) float32 {
	if a > b {
		a, b = b, a
	}
	if b > c {
		b = c
	}
	return max(a, b)
}

// meanGradient is the mean in-plane gradient magnitude by central differences (0 for an
// image too small for them).
func meanGradient(g []float32, dims [3]int) float64 {
	X := dims[0]
	var sum float64
	n := interior(dims, 1, maxGrad, func(i int) {
		gx := (float64(g[i+1]) - float64(g[i-1])) / 2
		gy := (float64(g[i+X]) - float64(g[i-X])) / 2
		sum += math.Sqrt(gx*gx + gy*gy)
	})
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// layout writes into out (Layout² values, row-major) the area averages of the scaled
// X × Y slice g over a Layout × Layout grid of equal cells: each pixel weighs by the area
// it shares with a cell, so that an image smaller than the grid still fills every cell.
func layout(g []float32, X, Y int, norm scaler, out []float64) {
	wx, wy := overlaps(X), overlaps(Y)
	var rows [Layout]float64
	for y := range Y {
		clear(rows[:])
		for x := range X {
			v := norm.at(g[y*X+x])
			for _, o := range wx[x] {
				rows[o.cell] += o.w * v
			}
		}
		for _, oy := range wy[y] {
			for c := range Layout {
				out[oy.cell*Layout+c] += oy.w * rows[c]
			}
		}
	}
	// A cell's area is (X/Layout)·(Y/Layout) pixels.
	area := float64(X) * float64(Y) / (Layout * Layout)
	for i := range out[:Layout*Layout] {
		out[i] /= area
	}
}

type overlap struct {
	cell int
	w    float64
}

// overlaps lists, for each of n pixels along an axis, the cells of the layout grid it
// shares length with and how much: pixel p spans [p, p+1), cell c spans [c·n/L, (c+1)·n/L).
func overlaps(n int) [][]overlap {
	out := make([][]overlap, n)
	for p := range n {
		first := p * Layout / n
		for c := first; c < Layout; c++ {
			a, b := float64(c)*float64(n)/Layout, float64(c+1)*float64(n)/Layout
			w := min(float64(p+1), b) - max(float64(p), a)
			if w <= 0 {
				if a >= float64(p+1) {
					break
				}
				continue
			}
			out[p] = append(out[p], overlap{c, w})
		}
	}
	return out
}

// sortFloat32 sorts finite values ascending with a least-significant-digit radix sort of
// their order-preserving bit patterns (linear in len(a), unlike a comparison sort).
func sortFloat32(a []float32) {
	if len(a) < 256 {
		sortSmall(a)
		return
	}
	keys := make([]uint32, len(a))
	for i, x := range a {
		b := math.Float32bits(x)
		if b&(1<<31) != 0 {
			b = ^b // negative: reverse their order below the positives
		} else {
			b |= 1 << 31
		}
		keys[i] = b
	}
	tmp := make([]uint32, len(a))
	var count [256]int
	for shift := 0; shift < 32; shift += 8 {
		clear(count[:])
		for _, k := range keys {
			count[(k>>shift)&0xff]++
		}
		if count[(keys[0]>>shift)&0xff] == len(keys) {
			continue // every key has this digit: the pass would not move anything
		}
		pos := 0
		for d, c := range count {
			count[d] = pos
			pos += c
		}
		for _, k := range keys {
			d := (k >> shift) & 0xff
			tmp[count[d]] = k
			count[d]++
		}
		keys, tmp = tmp, keys
	}
	for i, b := range keys {
		if b&(1<<31) != 0 {
			b &^= 1 << 31
		} else {
			b = ^b
		}
		a[i] = math.Float32frombits(b)
	}
}

// sortSmall is an insertion sort, faster than the radix sort's passes on a few values.
func sortSmall(a []float32) {
	for i := 1; i < len(a); i++ {
		x := a[i]
		j := i
		for j > 0 && cmp.Less(x, a[j-1]) {
			a[j] = a[j-1]
			j--
		}
		a[j] = x
	}
}
