package dicom

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"

	"amid/viewer/volume"
)

// resampling maps the stored slices of a stack that does not lie on a regular grid onto
// one, as dcm2niix does (nii_saveNII3Dtilt and nii_saveNII3Deq in its
// console/nii_dicom_batch.cpp):
//
//   - Slices shifted in their plane (a CT gantry tilt: the images are tilted, the table
//     moves straight) are each moved back onto the normal through the first slice by
//     linear interpolation; the grid grows by the shift, in whole pixels, so that nothing
//     is cut off. Where a slice does not reach, the grid holds the Pixel Padding Value, or
//     else the volume's lowest value. Next to a padding pixel the nearest pixel is taken
//     instead of a blend (dcm2niix issue 262). shiftPlane gives the rules at the edges.
//   - Uneven steps along the normal are resampled by linear interpolation between the two
//     nearest slices onto steps of the smallest step, from the first slice as far as the
//     last (at most twice as many slices as stored, and then evenly between the two).
//     dcm2niix makes ceil((L − s/2)/step) slices where L is the stack's length and s its
//     last step, which leaves out up to a step and a half at the end; this grid keeps all
//     but what is left of the stack's length after whole steps.
//
// Both may apply; integer values are rounded half away from zero.
type resampling struct {
	out *volume.Volume // the output grid's dims and geometry (no data)
	// z are the stored slices' positions along the normal, from the first (mm); nil when
	// the steps are even (output slice k is stored slice k). step is the output step.
	z    []float64
	step float64
	// offX and offY are, per stored slice, where output pixel (0, 0) lies in the slice's
	// own pixel coordinates; nil when no slice is shifted.
	offX, offY []float64
	pad        float64 // the value where a shifted slice does not reach …
	hasPad     bool    // … when the file gives one; else the volume's lowest value
	warnings   []string
}

// snapPx is how close (in pixels) a shift must be to a whole number to be taken as one, so
// that positions written in decimal do not blur a stack that is shifted by whole pixels.
const snapPx = 1e-3

// newResampling plans the resampling of the stack sl (sorted, with v's geometry as placed)
// given its slices' positions along the normal z and shifts in their plane du (along
// rows) and dv (along columns), in mm; z is nil when the steps are even, du and dv when
// no slice is shifted. minStep is the smallest step.
func newResampling(v *volume.Volume, sl []slice, z, du, dv []float64, minStep float64, h0 *header) (*resampling, error) {
	n := len(sl)
	rs := &resampling{pad: h0.padding, hasPad: h0.hasPadding}
	out := &volume.Volume{Dims: v.Dims, Spacing: v.Spacing, Origin: v.Origin, Direction: v.Direction}
	sx, sy := v.Spacing[0], v.Spacing[1]
	if du != nil {
		a, b := make([]float64, n), make([]float64, n)
		for k := range sl {
			a[k], b[k] = snap(du[k]/sx), snap(dv[k]/sy)
		}
		loA, hiA := math.Floor(minOf(a)), math.Ceil(maxOf(a))
		loB, hiB := math.Floor(minOf(b)), math.Ceil(maxOf(b))
		if hiA-loA > float64(volume.MaxVoxels) || hiB-loB > float64(volume.MaxVoxels) {
			return nil, fmt.Errorf("%w: the slices are shifted in their plane by %g × %g pixels", volume.ErrTooLarge, hiA-loA, hiB-loB)
		}
		out.Dims[0] += int(hiA - loA)
		out.Dims[1] += int(hiB - loB)
		for i := 0; i < 3; i++ {
			out.Origin[i] += loA*sx*v.Direction[3*i] + loB*sy*v.Direction[3*i+1]
		}
		rs.offX, rs.offY = make([]float64, n), make([]float64, n)
		for k := range sl {
			rs.offX[k], rs.offY[k] = loA-a[k], loB-b[k]
		}
		last := n - 1
		shift := math.Hypot(du[last], dv[last])
		var most float64
		for k := range sl {
			most = math.Max(most, math.Hypot(du[k], dv[k]))
		}
		length := sl[last].proj - sl[0].proj
		rs.warnings = append(rs.warnings, fmt.Sprintf("the slices are shifted in their plane by up to %.2f mm (a gantry tilt of %.2f°): each was moved onto the normal through the first slice by linear interpolation, and the grid grew by %d columns and %d rows",
			most, math.Atan2(shift, length)*180/math.Pi, out.Dims[0]-v.Dims[0], out.Dims[1]-v.Dims[1]))
	}
	rs.step = v.Spacing[2]
	if z != nil {
		last := z[n-1]
		rs.z, rs.step = z, minStep
		nz := 2 * n
		if f := math.Floor(last/minStep+snapPx) + 1; f <= float64(nz) {
			nz = int(f)
		} else {
			rs.step = last / float64(nz-1)
		}
		out.Dims[2] = nz
		out.Spacing[2] = rs.step
		maxStep := 0.0
		for k := 1; k < n; k++ {
			maxStep = math.Max(maxStep, z[k]-z[k-1])
		}
		rs.warnings = append(rs.warnings, fmt.Sprintf("the slice spacing varies from %.3f to %.3f mm: the %d slices were resampled to %d slices %.3f mm apart by linear interpolation",
			minStep, maxStep, n, nz, rs.step))
	}
	if err := volume.CheckSize(out.Dims, volume.Float64); err != nil {
		return nil, err
	}
	// A real stack grows by its tilt (a few times the image at 45° over a long stack) and
	// at most doubles its slices; positions that make far more are wrong.
	stored := int64(v.Dims[0]) * int64(v.Dims[1]) * int64(v.Dims[2])
	if grid := int64(out.Dims[0]) * int64(out.Dims[1]) * int64(out.Dims[2]); grid > maxGrowth*stored {
		return nil, fmt.Errorf("%w: resampling the %d×%d×%d stored voxels would take a grid of %d×%d×%d: the slice positions are not plausible",
			volume.ErrGeometry, v.Dims[0], v.Dims[1], v.Dims[2], out.Dims[0], out.Dims[1], out.Dims[2])
	}
	rs.out = out
	return rs, nil
}

// maxGrowth bounds the voxels of a resampled grid, as a multiple of the stored ones.
const maxGrowth = 16

func snap(px float64) float64 {
	if r := math.Round(px); math.Abs(px-r) < snapPx {
		return r
	}
	return px
}

func minOf(s []float64) float64 {
	m := s[0]
	for _, x := range s[1:] {
		m = math.Min(m, x)
	}
	return m
}

func maxOf(s []float64) float64 {
	m := s[0]
	for _, x := range s[1:] {
		m = math.Max(m, x)
	}
	return m
}

// apply resamples v, filled with the stored slices in order, onto the output grid.
func (rs *resampling) apply(v *volume.Volume) (*volume.Volume, error) {
	out := &volume.Volume{Dims: rs.out.Dims, Spacing: rs.out.Spacing, Origin: rs.out.Origin, Direction: rs.out.Direction}
	if err := volume.CheckSize(out.Dims, v.DType()); err != nil {
		return nil, err
	}
	switch d := v.Data.(type) {
	case []uint8:
		out.Data = resampleData(rs, d, v.Dims, out.Dims)
	case []int16:
		out.Data = resampleData(rs, d, v.Dims, out.Dims)
	case []uint16:
		out.Data = resampleData(rs, d, v.Dims, out.Dims)
	case []int32:
		out.Data = resampleData(rs, d, v.Dims, out.Dims)
	case []float32:
		out.Data = resampleData(rs, d, v.Dims, out.Dims)
	case []float64:
		out.Data = resampleData(rs, d, v.Dims, out.Dims)
	default:
		return nil, fmt.Errorf("%w: cannot resample %T", volume.ErrDType, v.Data)
	}
	return out, nil
}

type sample interface {
	~uint8 | ~int16 | ~uint16 | ~int32 | ~float32 | ~float64
}

// resampleData computes the output slices on GOMAXPROCS goroutines.
func resampleData[T sample](rs *resampling, in []T, di, do [4]int) []T {
	out := make([]T, do[0]*do[1]*do[2]*do[3])
	pad := rs.pad
	if !rs.hasPad {
		pad = float64(lowest(in))
	}
	lo, hi, integer := limits[T]()
	conv := func(f float64) T {
		if integer {
			f = math.Max(lo, math.Min(hi, math.Round(f)))
		}
		return T(f)
	}
	inLen, outLen := di[0]*di[1]*di[3], do[0]*do[1]*do[3]
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < min(runtime.GOMAXPROCS(0), do[2]); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, b := make([]float64, outLen), make([]float64, outLen)
			for zo := range next {
				k, w := rs.bracket(zo, di[2])
				shiftPlane(a, in[k*inLen:(k+1)*inLen], rs, k, di, do, pad)
				dst := out[zo*outLen : (zo+1)*outLen]
				if w == 0 {
					for i, x := range a {
						dst[i] = conv(x)
					}
					continue
				}
				shiftPlane(b, in[(k+1)*inLen:(k+2)*inLen], rs, k+1, di, do, pad)
				for i := range a {
					dst[i] = conv(a[i]*(1-w) + b[i]*w)
				}
			}
		}()
	}
	for zo := 0; zo < do[2]; zo++ {
		next <- zo
	}
	close(next)
	wg.Wait()
	return out
}

// bracket returns the stored slice k at or below output slice zo and the weight w of
// slice k+1 (0 when zo falls on slice k or past the last slice).
func (rs *resampling) bracket(zo, n int) (int, float64) {
	if rs.z == nil {
		return zo, 0
	}
	p := float64(zo) * rs.step
	k := sort.SearchFloat64s(rs.z, p) // first stored slice at or past p
	switch {
	case k >= n:
		return n - 1, 0
	case rs.z[k] == p || k == 0:
		return k, 0
	}
	k--
	return k, (p - rs.z[k]) / (rs.z[k+1] - rs.z[k])
}

// shiftPlane samples slice k of the stored stack (in: di[0] × di[1] pixels of di[3]
// samples) at the output grid's pixels by linear interpolation between the two nearest
// pixels along each axis. A coordinate c in (−1, size − 1] has a value: between −1 and 0
// that of the first pixel; outside, the pixel is pad. Next to a padding value the nearest
// pixel is taken (the lower one at a tie). These are dcm2niix's rules read on its
// bottom-up rows, so that its rows, read top-down, agree with these at the edges too.
func shiftPlane[T sample](dst []float64, in []T, rs *resampling, k int, di, do [4]int, pad float64) {
	ch := di[3]
	if rs.offX == nil {
		for i, x := range in {
			dst[i] = float64(x)
		}
		return
	}
	ox, oy := rs.offX[k], rs.offY[k]
	x0, y0 := int(math.Floor(ox)), int(math.Floor(oy))
	fx, fy := ox-math.Floor(ox), oy-math.Floor(oy)
	// inside reports whether pixel p (floor of the coordinate, f its fraction) has a
	// value in a row or column of n pixels; lo and hi are the two pixels blended.
	span := func(p int, f float64, n int) (lo, hi int, ok bool) {
		switch {
		case p < -1 || p == -1 && f == 0 || p > n-1 || p == n-1 && f > 0:
			return 0, 0, false
		case f == 0:
			return p, p, true // one pixel, not blended: its neighbour plays no part
		}
		return max(p, 0), min(p+1, n-1), true
	}
	for y := 0; y < do[1]; y++ {
		row := dst[y*do[0]*ch : (y+1)*do[0]*ch]
		yl, yh, ok := span(y+y0, fy, di[1])
		if !ok {
			for i := range row {
				row[i] = pad
			}
			continue
		}
		for x := 0; x < do[0]; x++ {
			xl, xh, ok := span(x+x0, fx, di[0])
			for c := 0; c < ch; c++ {
				o := x*ch + c
				if !ok {
					row[o] = pad
					continue
				}
				p00 := float64(in[(yl*di[0]+xl)*ch+c])
				if fx == 0 && fy == 0 {
					row[o] = p00
					continue
				}
				p01 := float64(in[(yl*di[0]+xh)*ch+c])
				p10 := float64(in[(yh*di[0]+xl)*ch+c])
				p11 := float64(in[(yh*di[0]+xh)*ch+c])
				if rs.hasPad && (p00 == pad || p01 == pad || p10 == pad || p11 == pad) {
					// The nearest of the four (dcm2niix issue 262).
					switch {
					case fx <= 0.5 && fy <= 0.5:
						row[o] = p00
					case fy <= 0.5:
						row[o] = p01
					case fx <= 0.5:
						row[o] = p10
					default:
						row[o] = p11
					}
					continue
				}
				row[o] = (p00*(1-fx)+p01*fx)*(1-fy) + (p10*(1-fx)+p11*fx)*fy
			}
		}
	}
}

// lowest is the smallest value of s.
func lowest[T sample](s []T) T {
	if len(s) == 0 {
		return 0
	}
	m := s[0]
	for _, x := range s[1:] {
		m = min(m, x)
	}
	return m
}

// limits returns the range of T and whether it is an integer type.
func limits[T sample]() (lo, hi float64, integer bool) {
	switch any(T(0)).(type) {
	case uint8:
		return 0, math.MaxUint8, true
	case int16:
		return math.MinInt16, math.MaxInt16, true
	case uint16:
		return 0, math.MaxUint16, true
	case int32:
		return math.MinInt32, math.MaxInt32, true
	}
	return 0, 0, false
}
