package nifti

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
	"unsafe"

	kgzip "github.com/klauspost/compress/gzip"

	"amid/assets/fileio"
	"amid/viewer/volume"
)

// Codes the writer stores (nifti1.h).
const (
	xformScanner = 1 // NIFTI_XFORM_SCANNER_ANAT, the qform's code
	xformAligned = 2 // NIFTI_XFORM_ALIGNED_ANAT, the sform's code
	unitsMM      = 2 // NIFTI_UNITS_MM
)

var dtypeCode = map[volume.DType]int16{
	volume.Uint8: dtUint8, volume.Int8: dtInt8, volume.Uint16: dtUint16, volume.Int16: dtInt16,
	volume.Uint32: dtUint32, volume.Int32: dtInt32, volume.Float32: dtFloat32, volume.Float64: dtFloat64,
}

// Write stores v as a NIfTI-1 file at path, gzip-compressed when the name ends in
// ".nii.gz" and plain when it ends in ".nii". It is written atomically and durably
// (amid/assets/fileio), so a failed write leaves no partial file.
func Write(path string, v *volume.Volume) error {
	lower := strings.ToLower(path)
	gz := strings.HasSuffix(lower, ".nii.gz")
	if !gz && !strings.HasSuffix(lower, ".nii") {
		return fmt.Errorf("nifti %s: %w: the file name must end in .nii or .nii.gz", path, volume.ErrFormat)
	}
	err := fileio.WriteWith(path, func(w io.Writer) error {
		if !gz {
			return Encode(w, v)
		}
		zw, _ := kgzip.NewWriterLevel(w, kgzip.DefaultCompression)
		if err := Encode(zw, v); err != nil {
			return err
		}
		return zw.Close()
	})
	if err != nil {
		return fmt.Errorf("nifti %s: %w", path, err)
	}
	return nil
}

// Encode writes v to w as an uncompressed NIfTI-1 single file, little-endian: a 348-byte
// header, 4 zero extension bytes, then the data with channels as the 4th (time)
// dimension. See the package documentation for the header fields it sets.
func Encode(w io.Writer, v *volume.Volume) error {
	h, err := headerFor(v)
	if err != nil {
		return err
	}
	b := h.marshal()
	b = append(b, 0, 0, 0, 0)
	if _, err := w.Write(b); err != nil {
		return err
	}
	switch d := v.Data.(type) {
	case []uint8:
		return writeData(w, d, v.Dims[3])
	case []int8:
		return writeData(w, d, v.Dims[3])
	case []uint16:
		return writeData(w, d, v.Dims[3])
	case []int16:
		return writeData(w, d, v.Dims[3])
	case []uint32:
		return writeData(w, d, v.Dims[3])
	case []int32:
		return writeData(w, d, v.Dims[3])
	case []float32:
		return writeData(w, d, v.Dims[3])
	case []float64:
		return writeData(w, d, v.Dims[3])
	}
	return fmt.Errorf("%w: data of Go type %T", volume.ErrDType, v.Data)
}

// headerFor builds the NIfTI-1 header of v.
func headerFor(v *volume.Volume) (*Header, error) {
	if err := v.Validate(); err != nil {
		return nil, err
	}
	for i, d := range v.Dims {
		if d > math.MaxInt16 {
			return nil, fmt.Errorf("%w: dimension %d is %d, above NIfTI-1's limit of %d", volume.ErrTooLarge, i, d, math.MaxInt16)
		}
	}
	t := v.DType()
	h := &Header{
		Version:   1,
		ByteOrder: binary.LittleEndian,
		Magic:     "n+1",
		Dim:       [8]int64{3, int64(v.Dims[0]), int64(v.Dims[1]), int64(v.Dims[2]), 1, 1, 1, 1},
		Datatype:  dtypeCode[t],
		Bitpix:    int16(8 * t.Size()),
		VoxOffset: size1 + 4,
		SclSlope:  1,
		XYZTUnits: unitsMM,
		Descrip:   "AMID",
		QformCode: xformScanner,
		SformCode: xformAligned,
	}
	if c := v.Dims[3]; c > 1 {
		h.Dim[0], h.Dim[4] = 4, int64(c)
	}
	// LPS → RAS: negate the first two rows.
	a := v.Affine()
	for i := 0; i < 8; i++ {
		a[i] = -a[i]
	}
	copy(h.SrowX[:], a[0:4])
	copy(h.SrowY[:], a[4:8])
	copy(h.SrowZ[:], a[8:12])
	var r [9]float64
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			r[3*i+j] = v.Direction[3*i+j]
			if i < 2 {
				r[3*i+j] = -r[3*i+j]
			}
		}
	}
	qfac, b, c, d := quaternion(r)
	h.Pixdim = [8]float64{qfac, v.Spacing[0], v.Spacing[1], v.Spacing[2], 1, 1, 1, 1}
	h.QuaternB, h.QuaternC, h.QuaternD = b, c, d
	h.QoffsetX, h.QoffsetY, h.QoffsetZ = a[3], a[7], a[11]
	return h, nil
}

// quaternion is nifti1_io's nifti_mat44_to_quatern for a rotation (or reflection) matrix
// r with unit columns: qfac is -1 for a left-handed r, whose third column is then
// negated, and (b, c, d) the quaternion's vector part with a ≥ 0. For a sheared r (not
// orthogonal) the result is only an approximation; the sform stays exact.
func quaternion(r [9]float64) (qfac, b, c, d float64) {
	det := r[0]*(r[4]*r[8]-r[5]*r[7]) - r[1]*(r[3]*r[8]-r[5]*r[6]) + r[2]*(r[3]*r[7]-r[4]*r[6])
	qfac = 1
	if det < 0 {
		qfac = -1
		r[2], r[5], r[8] = -r[2], -r[5], -r[8]
	}
	r11, r12, r13 := r[0], r[1], r[2]
	r21, r22, r23 := r[3], r[4], r[5]
	r31, r32, r33 := r[6], r[7], r[8]
	var a float64
	if s := r11 + r22 + r33 + 1; s > 0.5 {
		a = 0.5 * math.Sqrt(s)
		b = 0.25 * (r32 - r23) / a
		c = 0.25 * (r13 - r31) / a
		d = 0.25 * (r21 - r12) / a
	} else {
		xd := 1 + r11 - (r22 + r33)
		yd := 1 + r22 - (r11 + r33)
		zd := 1 + r33 - (r11 + r22)
		switch {
		case xd > 1:
			b = 0.5 * math.Sqrt(xd)
			c = 0.25 * (r12 + r21) / b
			d = 0.25 * (r13 + r31) / b
			a = 0.25 * (r32 - r23) / b
		case yd > 1:
			c = 0.5 * math.Sqrt(yd)
			b = 0.25 * (r12 + r21) / c
			d = 0.25 * (r23 + r32) / c
			a = 0.25 * (r13 - r31) / c
		default:
			d = 0.5 * math.Sqrt(zd)
			b = 0.25 * (r13 + r31) / d
			c = 0.25 * (r23 + r32) / d
			a = 0.25 * (r21 - r12) / d
		}
		if a < 0 {
			b, c, d = -b, -c, -d
		}
	}
	return qfac, b, c, d
}

// writeData writes d, c channels per voxel, in NIfTI order (each channel's whole grid in
// turn), little-endian.
func writeData[T number](w io.Writer, d []T, c int) error {
	if c == 1 && hostLE {
		_, err := w.Write(bytesOf(d))
		return err
	}
	n := len(d) / c
	buf := make([]T, min(n, 1<<16))
	var z T
	size := int(unsafe.Sizeof(z))
	for ch := 0; ch < c; ch++ {
		for start := 0; start < n; start += len(buf) {
			m := min(len(buf), n-start)
			for i := 0; i < m; i++ {
				buf[i] = d[(start+i)*c+ch]
			}
			b := bytesOf(buf[:m])
			if !hostLE {
				swapBytes(b, size)
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
	}
	return nil
}
