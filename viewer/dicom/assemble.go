package dicom

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	"amid/viewer/volume"
)

// slice is one frame of one file, placed in the volume by assemble.
type slice struct {
	f     *file
	frame int // 0-based frame within the file
	frameInfo
	min, max int32
	proj     float64 // position along the slice normal
}

func (s *slice) name() string {
	if s.f.h.frames > 1 {
		return fmt.Sprintf("frame %d of %s", s.frame+1, filepath.Base(s.f.path))
	}
	return filepath.Base(s.f.path)
}

// Tolerances of the geometry checks.
const (
	gapFactor   = 1.5   // a step above gapFactor × median is a missing slice
	posRelTol   = 0.02  // a slice may lie 2% of the step …
	posAbsTol   = 0.1   // … plus 0.1 mm off its place on a regular grid (positions are often written to 0.1 mm)
	driftPx     = 0.25  // a slice may lie a quarter pixel …
	driftMM     = 0.1   // … and at least 0.1 mm off the normal through the first slice
	orientTol   = 1e-3  // direction cosines of all slices agree to this
	duplicateMM = 1e-3  // positions closer than this along the normal are the same slice
	integerTol  = 1e-12 // a rescale value this close to an integer is one
)

// stack is the frames of a series in slice order with the grid they are read onto.
type stack struct {
	files []*file
	sl    []slice
	h0    *header
	// grid has the output volume's dims and geometry (no data yet).
	grid *volume.Volume
	// rs maps the stored slices onto grid when they do not lie on a regular grid (gantry
	// tilt, uneven spacing); nil when they do.
	rs       *resampling
	warnings []string
}

// assemble stacks the frames of files (one multi-frame file, or single-frame files of one
// series) into a volume.
func assemble(files []*file) (*volume.Volume, *Meta, error) {
	st, err := newStack(files)
	if err != nil {
		return nil, nil, err
	}
	return st.read()
}

// newStack orders the frames of files and works out their grid from the headers alone.
func newStack(files []*file) (*stack, error) {
	if len(files) > 1 {
		for _, f := range files {
			if f.h.frames > 1 {
				return nil, fmt.Errorf("%w: %s has %d frames in a series of %d files; read multi-frame files one by one",
					volume.ErrFormat, filepath.Base(f.path), f.h.frames, len(files))
			}
		}
	}
	h0 := files[0].h
	var sl []slice
	for _, f := range files {
		h := f.h
		if h.rows <= 0 || h.cols <= 0 || h.frames <= 0 {
			return nil, fmt.Errorf("%w: %s has %d rows, %d columns and %d frames", volume.ErrFormat, filepath.Base(f.path), h.rows, h.cols, h.frames)
		}
		if h.rows != h0.rows || h.cols != h0.cols || h.spp != h0.spp || h.photometric != h0.photometric {
			return nil, fmt.Errorf("%w: %s is %d×%d %s, %s is %d×%d %s", volume.ErrGeometry,
				filepath.Base(files[0].path), h0.cols, h0.rows, h0.photometric, filepath.Base(f.path), h.cols, h.rows, h.photometric)
		}
		for i := 0; i < h.frames; i++ {
			s := slice{f: f, frame: i, frameInfo: frameInfo{h.geometry, h.rescale}}
			if h.perFrame != nil {
				s.frameInfo = h.perFrame[i]
			}
			sl = append(sl, s)
		}
	}
	v := &volume.Volume{Dims: [4]int{h0.cols, h0.rows, len(sl), h0.spp}, Spacing: [3]float64{1, 1, 1}, Direction: volume.Identity}
	rs, err := place(v, sl, h0)
	if err != nil {
		return nil, err
	}
	st := &stack{files: files, sl: sl, h0: h0, grid: v, rs: rs}
	if rs != nil {
		st.grid = rs.out
		st.warnings = rs.warnings
	}
	return st, nil
}

// read fills the stack's volume from the decoded pixels of its files.
func (st *stack) read() (*volume.Volume, *Meta, error) {
	sl := st.sl
	for i := range sl {
		if px := sl[i].f.px; px != nil {
			sl[i].min, sl[i].max = px.min[sl[i].frame], px.max[sl[i].frame]
		}
	}
	v := st.stored()
	m := meta(st.files, sl)
	if err := fill(v, sl, st.h0, m); err != nil {
		return nil, nil, err
	}
	return st.finish(v, m)
}

// stored is an empty volume of the stack's slices as stored, on the output grid's axes.
func (st *stack) stored() *volume.Volume {
	g := st.grid
	return &volume.Volume{Dims: [4]int{st.h0.cols, st.h0.rows, len(st.sl), st.h0.spp}, Spacing: g.Spacing, Origin: g.Origin, Direction: g.Direction}
}

// finish resamples v, filled with the stored slices, onto the output grid when the stack
// needs it, and checks it.
func (st *stack) finish(v *volume.Volume, m *Meta) (*volume.Volume, *Meta, error) {
	if st.rs != nil {
		var err error
		if v, err = st.rs.apply(v); err != nil {
			return nil, nil, err
		}
		m.Slices = v.Dims[2]
		m.Warnings = st.warnings
	}
	if err := v.Validate(); err != nil {
		return nil, nil, err
	}
	return v, m, nil
}

// place sorts the slices and sets the geometry of v. A stack whose slices do not lie on a
// regular grid (uneven steps, or slices shifted in their plane as by a gantry tilt) gets
// a resampling onto one; a missing slice, repeated positions and slices of different
// orientations or pixel spacings are errors.
func place(v *volume.Volume, sl []slice, h0 *header) (*resampling, error) {
	s0 := &sl[0]
	if s0.hasSpacing && s0.spacing[0] > 0 && s0.spacing[1] > 0 {
		// Pixel Spacing is (between rows, between columns) = (Y, X).
		v.Spacing[0], v.Spacing[1] = s0.spacing[1], s0.spacing[0]
	}
	zStep := 1.0
	switch {
	case h0.between > 0:
		zStep = h0.between
	case h0.thickness > 0:
		zStep = h0.thickness
	}
	v.Spacing[2] = zStep
	// A multi-frame file without per-frame positions has one position for all frames.
	all := h0.frames == 1 || h0.perFrame != nil
	for i := range sl {
		all = all && sl[i].hasIPP && sl[i].hasIOP
	}
	if !all {
		// No positions: keep Instance Number (then file) order.
		sort.SliceStable(sl, func(i, j int) bool { return sl[i].f.h.instance < sl[j].f.h.instance })
		if s0.hasIOP {
			if err := setDirection(v, s0.iop); err != nil {
				return nil, err
			}
		}
		if s0.hasIPP {
			v.Origin = s0.ipp
		}
		return nil, nil
	}
	iop := sl[0].iop
	if err := setDirection(v, iop); err != nil {
		return nil, err
	}
	n := [3]float64{v.Direction[2], v.Direction[5], v.Direction[8]}
	for i := range sl {
		s := &sl[i]
		if s.spacing != sl[0].spacing {
			return nil, fmt.Errorf("%w: %s and %s have different pixel spacings %v and %v", volume.ErrGeometry, sl[0].name(), s.name(), sl[0].spacing, s.spacing)
		}
		for k := range iop {
			if math.Abs(s.iop[k]-iop[k]) > orientTol {
				return nil, fmt.Errorf("%w: %s and %s have different orientations %v and %v", volume.ErrGeometry, sl[0].name(), s.name(), iop, s.iop)
			}
		}
		s.proj = dot(s.ipp, n)
	}
	sort.SliceStable(sl, func(i, j int) bool { return sl[i].proj < sl[j].proj })
	v.Origin = sl[0].ipp
	if len(sl) == 1 {
		return nil, nil
	}
	steps := make([]float64, len(sl)-1)
	for i := range steps {
		steps[i] = sl[i+1].proj - sl[i].proj
		if steps[i] < duplicateMM {
			return nil, fmt.Errorf("%w: %s and %s lie at the same position %.4f mm along the normal; the series holds several volumes (echoes, time points)",
				volume.ErrGeometry, sl[i].name(), sl[i+1].name(), sl[i].proj)
		}
	}
	sorted := append([]float64(nil), steps...)
	sort.Float64s(sorted)
	med := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	for i, d := range steps {
		if d > gapFactor*med {
			return nil, fmt.Errorf("%w: missing slice: a gap of %.3f mm between %s (slice %d, %.3f mm) and %s (slice %d, %.3f mm) is more than %.1f× the median step of %.3f mm",
				volume.ErrGeometry, d, sl[i].name(), i+1, sl[i].proj, sl[i+1].name(), i+2, sl[i+1].proj, gapFactor, med)
		}
	}
	length := sl[len(sl)-1].proj - sl[0].proj
	v.Spacing[2] = length / float64(len(sl)-1)
	// Where each slice lies: along the normal, from the first slice (z), and in its
	// plane, off the normal through the first slice (u along rows, v along columns).
	r := [3]float64{v.Direction[0], v.Direction[3], v.Direction[6]}
	c := [3]float64{v.Direction[1], v.Direction[4], v.Direction[7]}
	z, du, dv := make([]float64, len(sl)), make([]float64, len(sl)), make([]float64, len(sl))
	uneven, shifted := false, false
	posTol := posAbsTol + posRelTol*v.Spacing[2]
	driftTol := math.Max(driftMM, driftPx*math.Min(v.Spacing[0], v.Spacing[1]))
	for k := range sl {
		d := sub(sl[k].ipp, sl[0].ipp)
		z[k], du[k], dv[k] = sl[k].proj-sl[0].proj, dot(d, r), dot(d, c)
		uneven = uneven || math.Abs(z[k]-float64(k)*v.Spacing[2]) > posTol
		shifted = shifted || math.Hypot(du[k], dv[k]) > driftTol
	}
	if !uneven && !shifted {
		return nil, nil
	}
	if !uneven {
		z = nil
	}
	if !shifted {
		du, dv = nil, nil
	}
	return newResampling(v, sl, z, du, dv, sorted[0], h0)
}

// setDirection sets the direction columns to the row direction, the column direction and
// their cross product.
func setDirection(v *volume.Volume, iop [6]float64) error {
	r := [3]float64{iop[0], iop[1], iop[2]}
	c := [3]float64{iop[3], iop[4], iop[5]}
	nr, nc := norm(r), norm(c)
	if nr < 0.5 || nc < 0.5 || math.Abs(dot(r, c)) > 0.01 {
		return fmt.Errorf("%w: image orientation %v is not two orthogonal unit vectors", volume.ErrGeometry, iop)
	}
	for i := 0; i < 3; i++ {
		r[i] /= nr
		c[i] /= nc
	}
	n := [3]float64{r[1]*c[2] - r[2]*c[1], r[2]*c[0] - r[0]*c[2], r[0]*c[1] - r[1]*c[0]}
	for i := 0; i < 3; i++ {
		v.Direction[3*i+0] = r[i]
		v.Direction[3*i+1] = c[i]
		v.Direction[3*i+2] = n[i]
	}
	return nil
}

func dot(a, b [3]float64) float64    { return a[0]*b[0] + a[1]*b[1] + a[2]*b[2] }
func sub(a, b [3]float64) [3]float64 { return [3]float64{a[0] - b[0], a[1] - b[1], a[2] - b[2]} }
func norm(a [3]float64) float64      { return math.Sqrt(dot(a, a)) }

// meta gathers the non-identifying description of the volume.
func meta(files []*file, sl []slice) *Meta {
	h := files[0].h
	m := &Meta{
		Modality:                  h.modality,
		Manufacturer:              h.manufacturer,
		SeriesDescription:         h.description,
		SeriesInstanceUID:         h.seriesUID,
		PhotometricInterpretation: h.photometric,
		SamplesPerPixel:           h.spp,
		BitsAllocated:             h.bitsAlloc,
		BitsStored:                h.bitsStored,
		Signed:                    h.signed,
		TransferSyntaxUID:         files[0].ts,
		TransferSyntax:            SyntaxName(files[0].ts),
		RescaleSlope:              sl[0].slope,
		RescaleIntercept:          sl[0].intercept,
		WindowCenter:              h.window[0],
		WindowWidth:               h.window[1],
		Slices:                    len(sl),
		Files:                     len(files),
		SliceThickness:            h.thickness,
	}
	for _, s := range sl {
		if s.rescale != sl[0].rescale {
			m.RescaleVaries = true
		}
	}
	return m
}

func isInteger(f float64) bool { return math.Abs(f-math.Round(f)) <= integerTol }

// fill chooses the element type, allocates the data and writes the rescaled values.
func fill(v *volume.Volume, sl []slice, h0 *header, m *Meta) error {
	if h0.spp == 3 {
		if err := volume.CheckSize(v.Dims, volume.Uint8); err != nil {
			return err
		}
		out := make([]uint8, v.Len())
		fl := sl[0].f.px.frameLen
		for z, s := range sl {
			d := out[z*fl : (z+1)*fl]
			for i, x := range s.f.px.frame(s.frame, nil) {
				d[i] = uint8(x)
			}
		}
		v.Data = out
		return nil
	}
	inv := h0.photometric == "MONOCHROME1"
	// Signed 16-bit data without rescale is int16 whatever its range, so it need not be
	// measured (MR); otherwise measure what was left unmeasured.
	plain := !inv
	for _, s := range sl {
		plain = plain && s.f.px.signed16() && s.slope == 1 && s.intercept == 0
	}
	if plain {
		if err := volume.CheckSize(v.Dims, volume.Int16); err != nil {
			return err
		}
		v.Data = inParallel(make([]int16, v.Len()), sl, func(o []int16, s []slice) { fillInt(o, s, false, 0) })
		return nil
	}
	inParallel(make([]struct{}, len(sl)), sl, func(_ []struct{}, s []slice) {
		for i := range s {
			if s[i].f.px.lazy {
				// Cannot fail: signed 16-bit values need no check.
				s[i].min, s[i].max, _ = s[i].f.px.measure(s[i].frame)
			}
		}
	})
	integer := true
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range sl {
		integer = integer && isInteger(s.slope) && isInteger(s.intercept)
		a := float64(s.min)*s.slope + s.intercept
		b := float64(s.max)*s.slope + s.intercept
		lo, hi = math.Min(lo, math.Min(a, b)), math.Max(hi, math.Max(a, b))
	}
	t := volume.Float32
	if integer {
		switch {
		case h0.bitsAlloc == 8 && lo >= 0 && hi <= math.MaxUint8:
			t = volume.Uint8
		case lo >= math.MinInt16 && hi <= math.MaxInt16:
			t = volume.Int16
		case lo >= 0 && hi <= math.MaxUint16:
			t = volume.Uint16
		case lo >= math.MinInt32 && hi <= math.MaxInt32:
			t = volume.Int32
		default:
			t = volume.Float64
		}
	}
	if err := volume.CheckSize(v.Dims, t); err != nil {
		return err
	}
	flip := lo + hi
	if inv {
		m.Inverted = true
		if m.WindowWidth > 0 {
			m.WindowCenter = flip - m.WindowCenter
		}
	}
	n := v.Len()
	switch t {
	case volume.Uint8:
		v.Data = inParallel(make([]uint8, n), sl, func(o []uint8, s []slice) { fillInt(o, s, inv, int64(flip)) })
	case volume.Int16:
		v.Data = inParallel(make([]int16, n), sl, func(o []int16, s []slice) { fillInt(o, s, inv, int64(flip)) })
	case volume.Uint16:
		v.Data = inParallel(make([]uint16, n), sl, func(o []uint16, s []slice) { fillInt(o, s, inv, int64(flip)) })
	case volume.Int32:
		v.Data = inParallel(make([]int32, n), sl, func(o []int32, s []slice) { fillInt(o, s, inv, int64(flip)) })
	case volume.Float32:
		v.Data = inParallel(make([]float32, n), sl, func(o []float32, s []slice) { fillFloat(o, s, inv, flip) })
	case volume.Float64:
		v.Data = inParallel(make([]float64, n), sl, func(o []float64, s []slice) { fillFloat(o, s, inv, flip) })
	}
	return nil
}

func fillInt[T uint8 | int16 | uint16 | int32](out []T, sl []slice, inv bool, flip int64) {
	fl := sl[0].f.px.frameLen
	var scratch []int32 // for raw frames outside the fast path
	for z, s := range sl {
		d := out[z*fl : (z+1)*fl]
		a, b := int64(math.Round(s.slope)), int64(math.Round(s.intercept))
		if px := s.f.px; px.raw != nil && px.bo == binary.LittleEndian && px.h.bitsAlloc == 16 && px.h.bitsStored == 16 && a == 1 && b == 0 && !inv {
			// The common case (CT, MR): straight from the file's bytes.
			fillLE16(d, px.raw[2*fl*s.frame:2*fl*(s.frame+1)], px.h.signed)
			continue
		}
		if scratch == nil && s.f.px.raw != nil {
			scratch = make([]int32, fl)
		}
		pix := s.f.px.frame(s.frame, scratch)
		if a == 1 && b == 0 && !inv {
			for i, x := range pix {
				d[i] = T(x)
			}
			continue
		}
		for i, x := range pix {
			y := int64(x)*a + b
			if inv {
				y = flip - y
			}
			d[i] = T(y)
		}
	}
}

// fillLE16 converts little-endian 16-bit samples that use all 16 bits. The caller chose T
// to hold every value.
func fillLE16[T uint8 | int16 | uint16 | int32](d []T, raw []byte, signed bool) {
	raw = raw[:2*len(d)]
	if signed {
		for i := range d {
			d[i] = T(int16(binary.LittleEndian.Uint16(raw[2*i:])))
		}
		return
	}
	for i := range d {
		d[i] = T(binary.LittleEndian.Uint16(raw[2*i:]))
	}
}

func fillFloat[T float32 | float64](out []T, sl []slice, inv bool, flip float64) {
	fl := sl[0].f.px.frameLen
	scratch := scratchFor(sl)
	for z, s := range sl {
		d := out[z*fl : (z+1)*fl]
		for i, x := range s.f.px.frame(s.frame, scratch) {
			y := float64(x)*s.slope + s.intercept
			if inv {
				y = flip - y
			}
			d[i] = T(y)
		}
	}
}

// scratchFor returns a frame-sized buffer when some slice keeps raw data, else nil.
func scratchFor(sl []slice) []int32 {
	for _, s := range sl {
		if s.f.px.raw != nil {
			return make([]int32, s.f.px.frameLen)
		}
	}
	return nil
}

// inParallel fills out, one frame per slice, by running fill on runs of slices on
// GOMAXPROCS goroutines, and returns out.
func inParallel[T any](out []T, sl []slice, fill func(out []T, sl []slice)) []T {
	fl := len(out) / len(sl)
	w := min(runtime.GOMAXPROCS(0), len(sl))
	var wg sync.WaitGroup
	for i := 0; i < w; i++ {
		lo, hi := i*len(sl)/w, (i+1)*len(sl)/w
		wg.Add(1)
		go func() {
			defer wg.Done()
			fill(out[lo*fl:hi*fl], sl[lo:hi])
		}()
	}
	wg.Wait()
	return out
}
