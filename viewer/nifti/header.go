package nifti

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"amid/viewer/volume"
)

// Header holds the raw fields of a NIfTI-1 or NIfTI-2 header, widened to the NIfTI-2
// types (int64 and float64) so both versions share one struct. Nothing is corrected: a
// reader that wants geometry calls Affine.
type Header struct {
	Version   int              // 1 or 2
	ByteOrder binary.ByteOrder // byte order of the header and the data
	Magic     string           // "n+1", "ni1", "n+2" or "ni2" (without the NUL and NIfTI-2 tail)

	DimInfo       uint8
	Dim           [8]int64 // Dim[0] is the number of dimensions
	IntentP1      float64
	IntentP2      float64
	IntentP3      float64
	IntentCode    int32
	Datatype      int16
	Bitpix        int16
	SliceStart    int64
	Pixdim        [8]float64 // Pixdim[0] is qfac
	VoxOffset     float64    // byte offset of the data (float in NIfTI-1, int64 in NIfTI-2)
	SclSlope      float64
	SclInter      float64
	SliceEnd      int64
	SliceCode     int32
	XYZTUnits     int32
	CalMax        float64
	CalMin        float64
	SliceDuration float64
	Toffset       float64
	Descrip       string
	AuxFile       string
	QformCode     int32
	SformCode     int32
	QuaternB      float64
	QuaternC      float64
	QuaternD      float64
	QoffsetX      float64
	QoffsetY      float64
	QoffsetZ      float64
	SrowX         [4]float64
	SrowY         [4]float64
	SrowZ         [4]float64
	IntentName    string
}

// NIfTI datatype codes (nifti1.h).
const (
	dtUint8   = 2
	dtInt16   = 4
	dtInt32   = 8
	dtFloat32 = 16
	dtFloat64 = 64
	dtRGB24   = 128
	dtInt8    = 256
	dtUint16  = 512
	dtUint32  = 768
	dtInt64   = 1024
	dtUint64  = 1280
	dtRGBA32  = 2304
)

// Header sizes and minimal single-file data offsets.
const (
	size1 = 348
	size2 = 540
)

// elem returns the element type of the decoded volume for a datatype code and the number
// of interleaved components per voxel on disk (3 for RGB24, 4 for RGBA32, else 1).
func elem(code int16) (volume.DType, int, error) {
	switch code {
	case dtUint8:
		return volume.Uint8, 1, nil
	case dtInt8:
		return volume.Int8, 1, nil
	case dtInt16:
		return volume.Int16, 1, nil
	case dtUint16:
		return volume.Uint16, 1, nil
	case dtInt32:
		return volume.Int32, 1, nil
	case dtUint32:
		return volume.Uint32, 1, nil
	case dtFloat32:
		return volume.Float32, 1, nil
	case dtFloat64:
		return volume.Float64, 1, nil
	case dtRGB24:
		return volume.Uint8, 3, nil
	case dtRGBA32:
		return volume.Uint8, 4, nil
	case dtInt64, dtUint64:
		return volume.Invalid, 0, fmt.Errorf("%w: 64-bit integer data (datatype %d) is not supported; convert it to int32 or float64", volume.ErrDType, code)
	}
	return volume.Invalid, 0, fmt.Errorf("%w: NIfTI datatype %d", volume.ErrDType, code)
}

// parseHeader decodes a header from b, which holds at least size1 bytes and, for NIfTI-2,
// size2 bytes. version and order come from sizeof_hdr.
func parseHeader(b []byte, version int, o binary.ByteOrder) (*Header, error) {
	h := &Header{Version: version, ByteOrder: o}
	i16 := func(off int) int16 { return int16(o.Uint16(b[off:])) }
	i32 := func(off int) int32 { return int32(o.Uint32(b[off:])) }
	i64 := func(off int) int64 { return int64(o.Uint64(b[off:])) }
	f32 := func(off int) float64 { return float64(math.Float32frombits(o.Uint32(b[off:]))) }
	f64 := func(off int) float64 { return math.Float64frombits(o.Uint64(b[off:])) }
	str := func(off, n int) string {
		s := b[off : off+n]
		if i := strings.IndexByte(string(s), 0); i >= 0 {
			s = s[:i]
		}
		return string(s)
	}
	if version == 1 {
		h.Magic = str(344, 4)
		h.DimInfo = b[39]
		for i := range h.Dim {
			h.Dim[i] = int64(i16(40 + 2*i))
		}
		h.IntentP1, h.IntentP2, h.IntentP3 = f32(56), f32(60), f32(64)
		h.IntentCode = int32(i16(68))
		h.Datatype = i16(70)
		h.Bitpix = i16(72)
		h.SliceStart = int64(i16(74))
		for i := range h.Pixdim {
			h.Pixdim[i] = f32(76 + 4*i)
		}
		h.VoxOffset = f32(108)
		h.SclSlope, h.SclInter = f32(112), f32(116)
		h.SliceEnd = int64(i16(120))
		h.SliceCode = int32(b[122])
		h.XYZTUnits = int32(b[123])
		h.CalMax, h.CalMin = f32(124), f32(128)
		h.SliceDuration, h.Toffset = f32(132), f32(136)
		h.Descrip = str(148, 80)
		h.AuxFile = str(228, 24)
		h.QformCode, h.SformCode = int32(i16(252)), int32(i16(254))
		h.QuaternB, h.QuaternC, h.QuaternD = f32(256), f32(260), f32(264)
		h.QoffsetX, h.QoffsetY, h.QoffsetZ = f32(268), f32(272), f32(276)
		for i := 0; i < 4; i++ {
			h.SrowX[i], h.SrowY[i], h.SrowZ[i] = f32(280+4*i), f32(296+4*i), f32(312+4*i)
		}
		h.IntentName = str(328, 16)
		return h, nil
	}
	h.Magic = str(4, 8)
	h.Datatype = i16(12)
	h.Bitpix = i16(14)
	for i := range h.Dim {
		h.Dim[i] = i64(16 + 8*i)
	}
	h.IntentP1, h.IntentP2, h.IntentP3 = f64(80), f64(88), f64(96)
	for i := range h.Pixdim {
		h.Pixdim[i] = f64(104 + 8*i)
	}
	h.VoxOffset = float64(i64(168))
	h.SclSlope, h.SclInter = f64(176), f64(184)
	h.CalMax, h.CalMin = f64(192), f64(200)
	h.SliceDuration, h.Toffset = f64(208), f64(216)
	h.SliceStart, h.SliceEnd = i64(224), i64(232)
	h.Descrip = str(240, 80)
	h.AuxFile = str(320, 24)
	h.QformCode, h.SformCode = i32(344), i32(348)
	h.QuaternB, h.QuaternC, h.QuaternD = f64(352), f64(360), f64(368)
	h.QoffsetX, h.QoffsetY, h.QoffsetZ = f64(376), f64(384), f64(392)
	for i := 0; i < 4; i++ {
		h.SrowX[i], h.SrowY[i], h.SrowZ[i] = f64(400+8*i), f64(432+8*i), f64(464+8*i)
	}
	h.SliceCode = i32(496)
	h.XYZTUnits = i32(500)
	h.IntentCode = i32(504)
	h.IntentName = str(508, 16)
	h.DimInfo = b[524]
	return h, nil
}

// marshal encodes h as a NIfTI-1 or NIfTI-2 header (by h.Version) in h.ByteOrder. The
// writer uses version 1, little-endian; tests use the others to build files.
func (h *Header) marshal() []byte {
	o := h.ByteOrder
	if o == nil {
		o = binary.LittleEndian
	}
	n := size1
	if h.Version == 2 {
		n = size2
	}
	b := make([]byte, n)
	p16 := func(off int, v int64) { o.PutUint16(b[off:], uint16(int16(v))) }
	p32 := func(off int, v int32) { o.PutUint32(b[off:], uint32(v)) }
	p64 := func(off int, v int64) { o.PutUint64(b[off:], uint64(v)) }
	f32 := func(off int, v float64) { o.PutUint32(b[off:], math.Float32bits(float32(v))) }
	f64 := func(off int, v float64) { o.PutUint64(b[off:], math.Float64bits(v)) }
	str := func(off, max int, s string) { copy(b[off:off+max], s) }
	p32(0, int32(n))
	if h.Version != 2 {
		b[38] = 'r'
		b[39] = h.DimInfo
		for i, d := range h.Dim {
			p16(40+2*i, d)
		}
		f32(56, h.IntentP1)
		f32(60, h.IntentP2)
		f32(64, h.IntentP3)
		p16(68, int64(h.IntentCode))
		p16(70, int64(h.Datatype))
		p16(72, int64(h.Bitpix))
		p16(74, h.SliceStart)
		for i, v := range h.Pixdim {
			f32(76+4*i, v)
		}
		f32(108, h.VoxOffset)
		f32(112, h.SclSlope)
		f32(116, h.SclInter)
		p16(120, h.SliceEnd)
		b[122] = byte(h.SliceCode)
		b[123] = byte(h.XYZTUnits)
		f32(124, h.CalMax)
		f32(128, h.CalMin)
		f32(132, h.SliceDuration)
		f32(136, h.Toffset)
		str(148, 80, h.Descrip)
		str(228, 24, h.AuxFile)
		p16(252, int64(h.QformCode))
		p16(254, int64(h.SformCode))
		f32(256, h.QuaternB)
		f32(260, h.QuaternC)
		f32(264, h.QuaternD)
		f32(268, h.QoffsetX)
		f32(272, h.QoffsetY)
		f32(276, h.QoffsetZ)
		for i := 0; i < 4; i++ {
			f32(280+4*i, h.SrowX[i])
			f32(296+4*i, h.SrowY[i])
			f32(312+4*i, h.SrowZ[i])
		}
		str(328, 16, h.IntentName)
		str(344, 4, h.Magic)
		return b
	}
	copy(b[4:12], h.Magic+"\x00\r\n\x1a\n")
	p16(12, int64(h.Datatype))
	p16(14, int64(h.Bitpix))
	for i, d := range h.Dim {
		p64(16+8*i, d)
	}
	f64(80, h.IntentP1)
	f64(88, h.IntentP2)
	f64(96, h.IntentP3)
	for i, v := range h.Pixdim {
		f64(104+8*i, v)
	}
	p64(168, int64(h.VoxOffset))
	f64(176, h.SclSlope)
	f64(184, h.SclInter)
	f64(192, h.CalMax)
	f64(200, h.CalMin)
	f64(208, h.SliceDuration)
	f64(216, h.Toffset)
	p64(224, h.SliceStart)
	p64(232, h.SliceEnd)
	str(240, 80, h.Descrip)
	str(320, 24, h.AuxFile)
	p32(344, h.QformCode)
	p32(348, h.SformCode)
	f64(352, h.QuaternB)
	f64(360, h.QuaternC)
	f64(368, h.QuaternD)
	f64(376, h.QoffsetX)
	f64(384, h.QoffsetY)
	f64(392, h.QoffsetZ)
	for i := 0; i < 4; i++ {
		f64(400+8*i, h.SrowX[i])
		f64(432+8*i, h.SrowY[i])
		f64(464+8*i, h.SrowZ[i])
	}
	p32(496, h.SliceCode)
	p32(500, h.XYZTUnits)
	p32(504, h.IntentCode)
	str(508, 16, h.IntentName)
	b[524] = h.DimInfo
	return b
}

// validCode reports whether an sform or qform code is one nibabel recognises (0–5);
// nibabel resets any other code to 0 on load, and so do we.
func validCode(c int32) bool { return c >= 1 && c <= 5 }

// Affine returns the voxel→RAS matrix (4×4, row-major) that nibabel's get_best_affine
// chooses: the sform when sform_code is a known non-zero code, else the qform when
// qform_code is, else the base affine built from pixdim (x flipped, centred on the grid).
// Pixdim follows nibabel's fixes: negative values count as their absolute value, zero
// ones as 1 on singleton axes; zero or NaN spacing along a longer axis, a quaternion
// that is not unit length, or a non-finite matrix is an ErrGeometry.
func (h *Header) Affine() ([16]float64, error) {
	var a [16]float64
	a[15] = 1
	switch {
	case validCode(h.SformCode):
		copy(a[0:4], h.SrowX[:])
		copy(a[4:8], h.SrowY[:])
		copy(a[8:12], h.SrowZ[:])
	case validCode(h.QformCode):
		zooms, err := h.zooms(false)
		if err != nil {
			return a, err
		}
		b, c, d := h.QuaternB, h.QuaternC, h.QuaternD
		w2 := 1 - (b*b + c*c + d*d)
		w := 0.0
		switch {
		case w2 >= 0:
			w = math.Sqrt(w2)
		case w2 < h.quatThreshold():
			return a, fmt.Errorf("%w: qform quaternion (%g, %g, %g) is longer than 1", volume.ErrGeometry, b, c, d)
		}
		r := quatToMat(w, b, c, d)
		qfac := h.Pixdim[0]
		if qfac != -1 {
			qfac = 1 // nibabel sets a qfac other than ±1 to 1
		}
		zooms[2] *= qfac
		for i := 0; i < 3; i++ {
			for j := 0; j < 3; j++ {
				a[4*i+j] = r[3*i+j] * zooms[j]
			}
		}
		a[3], a[7], a[11] = h.QoffsetX, h.QoffsetY, h.QoffsetZ
	default:
		zooms, err := h.zooms(true)
		if err != nil {
			return a, err
		}
		var shape [3]float64
		for i := range shape {
			shape[i] = 1
			if int64(i) < h.Dim[0] {
				shape[i] = float64(h.Dim[i+1])
			}
		}
		zooms[0] = -zooms[0]
		for i := 0; i < 3; i++ {
			a[5*i] = zooms[i]
			a[4*i+3] = -(shape[i] - 1) / 2 * zooms[i]
		}
	}
	for i, x := range a {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return a, fmt.Errorf("%w: affine element %d is %v", volume.ErrGeometry, i, x)
		}
	}
	return a, nil
}

// quatThreshold is nibabel's quaternion_threshold: how far below zero 1-(b²+c²+d²) may
// fall (rounding) before the quaternion is refused, -3 eps of the header's float type.
func (h *Header) quatThreshold() float64 {
	if h.Version == 2 {
		return -3 * 2.220446049250313e-16
	}
	return -3 * 1.1920928955078125e-07
}

// zooms returns pixdim[1..3] as nibabel fixes them (absolute values; zero on an axis of
// length 1 becomes 1), or ErrGeometry for zero, NaN or infinite spacing along an axis
// longer than one voxel. For the base affine (base), axes beyond dim[0] have zoom 1, as
// nibabel's shape_zoom_affine pads them.
func (h *Header) zooms(base bool) ([3]float64, error) {
	var z [3]float64
	for i := range z {
		p := math.Abs(h.Pixdim[i+1])
		n := int64(1)
		if int64(i) < h.Dim[0] {
			n = h.Dim[i+1]
		}
		if base && int64(i) >= h.Dim[0] {
			p = 1
		}
		if p == 0 && n <= 1 {
			p = 1
		}
		if !(p > 0) || math.IsInf(p, 0) {
			return z, fmt.Errorf("%w: pixdim[%d] is %v", volume.ErrGeometry, i+1, h.Pixdim[i+1])
		}
		z[i] = p
	}
	return z, nil
}

// quatToMat is nibabel's quat2mat: the rotation of the quaternion (w, x, y, z), row-major.
func quatToMat(w, x, y, z float64) [9]float64 {
	n := w*w + x*x + y*y + z*z
	if n < 2.220446049250313e-16 { // float64 eps, as nibabel
		return volume.Identity
	}
	s := 2 / n
	X, Y, Z := x*s, y*s, z*s
	wX, wY, wZ := w*X, w*Y, w*Z
	xX, xY, xZ := x*X, x*Y, x*Z
	yY, yZ, zZ := y*Y, y*Z, z*Z
	return [9]float64{
		1 - (yY + zZ), xY - wZ, xZ + wY,
		xY + wZ, 1 - (xX + zZ), yZ - wX,
		xZ - wY, yZ + wX, 1 - (xX + yY),
	}
}
