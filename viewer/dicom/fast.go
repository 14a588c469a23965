package dicom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"

	"amid/viewer/volume"
)

// errNoFit is readFast's signal that a value does not fit int16: the series takes the
// general path.
var errNoFit = errors.New("a value does not fit int16")

// fastable reports whether every file of a series is a single-frame native little-endian
// 16-bit greyscale (MONOCHROME2) image whose rescale is a whole slope and intercept and
// whose header told where its pixel data lies: the common CT and MR series, which
// readFast reads straight into the volume.
func fastable(files []*file) bool {
	for _, f := range files {
		h := f.h
		s, ok := syntaxes[f.ts]
		if !ok || s.codec != nil || s.deflate || s.bo != binary.LittleEndian || h.frames != 1 || h.spp != 1 ||
			h.bitsAlloc != 16 || h.photometric != "MONOCHROME2" || f.pixOff < 0 || f.pixLen == undefined ||
			int64(f.pixLen) < int64(2*h.rows*h.cols) || !isInteger(h.rescale.slope) || !isInteger(h.rescale.intercept) ||
			math.Abs(h.rescale.slope) > math.MaxInt16 || math.Abs(h.rescale.intercept) > math.MaxInt32 {
			return false
		}
	}
	return true
}

// readFast reads a fastable series: each file's pixel data, and nothing after it, is read
// into a buffer of the worker's and converted (Bits Stored mask or sign, rescale) straight
// into the int16 volume, in parallel. It returns errNoFit when a rescaled value does not
// fit int16, for the general path to choose a wider type.
func readFast(files []*file) (*volume.Volume, *Meta, error) {
	st, err := newStack(files)
	if err != nil {
		return nil, nil, err
	}
	v := st.stored()
	if err := volume.CheckSize(v.Dims, volume.Int16); err != nil {
		return nil, nil, err
	}
	fl := v.Dims[0] * v.Dims[1]
	out := make([]int16, fl*len(st.sl))
	errs := make([]error, len(st.sl))
	pool := sync.Pool{New: func() any { b := make([]byte, 2*fl); return &b }}
	parallel(len(st.sl), func(z int) {
		bp := pool.Get().(*[]byte)
		defer pool.Put(bp)
		errs[z] = fastSlice(out[z*fl:(z+1)*fl], *bp, &st.sl[z])
	})
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	v.Data = out
	return st.finish(v, meta(st.files, st.sl))
}

// fastSlice reads the pixel data of one slice's file into buf and converts it into dst.
func fastSlice(dst []int16, buf []byte, s *slice) error {
	f := s.f
	fh, err := os.Open(f.path)
	if err != nil {
		return fmt.Errorf("dicom: %w", err)
	}
	defer fh.Close()
	if _, err := fh.ReadAt(buf, f.pixOff); err != nil {
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: pixel data cut short (the file changed since its header was read?)", volume.ErrTruncated)
		}
		return fmt.Errorf("dicom: %s: %w", f.path, err)
	}
	a, b := int64(math.Round(s.slope)), int64(math.Round(s.intercept))
	bs := uint(f.h.bitsStored)
	shift := 32 - bs
	mask := uint32(1)<<bs - 1
	signed := f.h.signed
	src := buf[:2*len(dst)]
	if bs == 16 && a == 1 && b >= math.MinInt16 && b <= math.MaxInt16 {
		// The common cases (CT: an intercept; MR: neither slope nor intercept) in one
		// pass: the values wrap in int16 if they do not fit, which their range tells.
		var lo, hi int32
		if signed {
			lo, hi = addInt16(dst, src, int16(b))
		} else {
			lo, hi = addUint16(dst, src, int16(b))
		}
		if lo+int32(b) < math.MinInt16 || hi+int32(b) > math.MaxInt16 {
			return fmt.Errorf("%s: %w", filepath.Base(f.path), errNoFit)
		}
		return nil
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range dst {
		u := uint32(binary.LittleEndian.Uint16(src[2*i:]))
		var x int64
		if signed {
			x = int64(int32(u<<shift) >> shift)
		} else {
			x = int64(u & mask)
		}
		y := x*a + b
		lo, hi = min(lo, y), max(hi, y)
		dst[i] = int16(y)
	}
	if lo < math.MinInt16 || hi > math.MaxInt16 {
		return fmt.Errorf("%s: %w", filepath.Base(f.path), errNoFit)
	}
	return nil
}

// addInt16 stores the signed little-endian samples of src plus b in dst and returns the
// samples' range.
func addInt16(dst []int16, src []byte, b int16) (lo, hi int32) {
	l, h := int16(math.MaxInt16), int16(math.MinInt16)
	src = src[:2*len(dst)]
	for i := range dst {
		v := int16(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
		l, h = min(l, v), max(h, v)
		dst[i] = v + b
	}
	return int32(l), int32(h)
}

// addUint16 is addInt16 for unsigned samples.
func addUint16(dst []int16, src []byte, b int16) (lo, hi int32) {
	l, h := uint16(math.MaxUint16), uint16(0)
	src = src[:2*len(dst)]
	for i := range dst {
		v := uint16(src[2*i]) | uint16(src[2*i+1])<<8
		l, h = min(l, v), max(h, v)
		dst[i] = int16(v) + b
	}
	return int32(l), int32(h)
}
