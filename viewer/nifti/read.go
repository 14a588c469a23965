package nifti

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"unsafe"

	kflate "github.com/klauspost/compress/flate"
	kgzip "github.com/klauspost/compress/gzip"

	"amid/viewer/volume"
)

// gunzip opens a gzip stream with the inflater the readers use; see the package
// documentation for the choice. The benchmark passes decode others to compare.
func gunzip(r io.Reader) (io.ReadCloser, error) { return kgzip.NewReader(r) }

// how says how decode reads: the inflater of a gzip stream, and the limits of what it may
// allocate. The readers take readers(); the benchmark and the fuzz test pass their own.
type how struct {
	inflate func(io.Reader) (io.ReadCloser, error)
	lim     volume.Limits
}

// readers is how Read, Decode and their header forms read.
func readers() how { return how{inflate: gunzip, lim: volume.DefaultLimits()} }

// hostLE reports whether this machine stores integers little-endian.
var hostLE = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// Read decodes the NIfTI-1 or NIfTI-2 file at path (.nii, or gzip-compressed .nii.gz,
// recognised by its content).
func Read(path string) (*volume.Volume, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("nifti: %w", err)
	}
	defer f.Close()
	size := int64(-1)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	_, v, err := decode(f, path, size, true, readers())
	return v, err
}

// ReadHeader decodes only the header of the file at path. It checks the header's size
// and magic but not its dims, datatype or geometry, so that a file Read refuses can
// still be inspected; when only the magic is wrong it returns the decoded header along
// with the error.
func ReadHeader(path string) (*Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("nifti: %w", err)
	}
	defer f.Close()
	h, _, err := decode(f, path, -1, false, readers())
	return h, err
}

// Decode reads a NIfTI-1 or NIfTI-2 image, gzip-compressed or not, from r. name is used
// in error messages only.
// When r reports its remaining length (as bytes.Reader and strings.Reader do), truncated
// uncompressed data is refused before the volume is allocated.
func Decode(r io.Reader, name string) (*volume.Volume, error) {
	size := int64(-1)
	if l, ok := r.(interface{ Len() int }); ok {
		size = int64(l.Len())
	}
	_, v, err := decode(r, name, size, true, readers())
	return v, err
}

// DecodeHeader reads only the header from r, as ReadHeader.
func DecodeHeader(r io.Reader, name string) (*Header, error) {
	h, _, err := decode(r, name, -1, false, readers())
	return h, err
}

// readErr turns an error from reading part what of the file into one that names the file
// and wraps the matching shared error.
func readErr(name, what string, err error) error {
	var corrupt flate.CorruptInputError
	var kcorrupt kflate.CorruptInputError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("nifti %s: %w: the file ends inside the %s", name, volume.ErrTruncated, what)
	case errors.As(err, &corrupt), errors.As(err, &kcorrupt), errors.Is(err, kgzip.ErrChecksum),
		errors.Is(err, kgzip.ErrHeader), errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader):
		return fmt.Errorf("nifti %s: %w: the gzip stream is corrupt in the %s (%w)", name, volume.ErrFormat, what, err)
	}
	return fmt.Errorf("nifti %s: reading the %s: %w", name, what, err)
}

// decode reads the header and, when data is set, the image, as opt says. size is the byte
// length of an uncompressed source when known (-1 otherwise); it lets truncation be caught
// before allocating.
func decode(r io.Reader, name string, size int64, data bool, opt how) (*Header, *volume.Volume, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var src io.Reader = br
	if m, _ := br.Peek(2); len(m) == 2 && m[0] == 0x1f && m[1] == 0x8b {
		gz, err := opt.inflate(br)
		if err != nil {
			return nil, nil, readErr(name, "gzip header", err)
		}
		defer gz.Close()
		src = gz
		size = -1
	}
	h, err := readHeader(src, name)
	if err != nil || !data {
		return h, nil, err
	}
	v, err := readData(src, h, name, size, opt.lim)
	return h, v, err
}

func readHeader(src io.Reader, name string) (*Header, error) {
	var b [size2]byte
	if _, err := io.ReadFull(src, b[:4]); err != nil {
		return nil, readErr(name, "header", err)
	}
	var version int
	var order binary.ByteOrder
	switch {
	case binary.LittleEndian.Uint32(b[:]) == size1:
		version, order = 1, binary.LittleEndian
	case binary.BigEndian.Uint32(b[:]) == size1:
		version, order = 1, binary.BigEndian
	case binary.LittleEndian.Uint32(b[:]) == size2:
		version, order = 2, binary.LittleEndian
	case binary.BigEndian.Uint32(b[:]) == size2:
		version, order = 2, binary.BigEndian
	default:
		return nil, fmt.Errorf("nifti %s: %w: sizeof_hdr is %d, neither 348 (NIfTI-1) nor 540 (NIfTI-2)", name, volume.ErrFormat, int32(binary.LittleEndian.Uint32(b[:])))
	}
	n := size1
	if version == 2 {
		n = size2
	}
	if _, err := io.ReadFull(src, b[4:n]); err != nil {
		return nil, readErr(name, "header", err)
	}
	h, err := parseHeader(b[:n], version, order)
	if err != nil {
		return nil, err
	}
	if version == 1 {
		switch string(b[344:348]) {
		case "n+1\x00":
		case "\x00\x00\x00\x00":
			return h, fmt.Errorf("nifti %s: %w: the header has no NIfTI magic (an Analyze 7.5 header?); only NIfTI is supported", name, volume.ErrFormat)
		case "ni1\x00":
			return h, fmt.Errorf("nifti %s: %w: magic \"ni1\" marks the header of a .hdr/.img pair, which is not supported; convert it to a single .nii", name, volume.ErrFormat)
		default:
			return h, fmt.Errorf("nifti %s: %w: magic %q is not the NIfTI-1 single-file magic \"n+1\"", name, volume.ErrFormat, b[344:348])
		}
		return h, nil
	}
	switch string(b[4:12]) {
	case "n+2\x00\r\n\x1a\n":
	case "ni2\x00\r\n\x1a\n":
		return h, fmt.Errorf("nifti %s: %w: magic \"ni2\" marks the header of a .hdr/.img pair, which is not supported; convert it to a single .nii", name, volume.ErrFormat)
	default:
		return h, fmt.Errorf("nifti %s: %w: magic %q is not the NIfTI-2 single-file magic \"n+2\\x00\\r\\n\\x1a\\n\"", name, volume.ErrFormat, b[4:12])
	}
	return h, nil
}

// maxExtensions bounds the bytes between the header and the data, so that a small
// gzip stream cannot make the reader inflate without end before the data start. Real
// extensions (DICOM tags, CIFTI XML) take kilobytes to a few megabytes.
const maxExtensions = 1 << 30

// plan is what the header says about the data: the grid, the element types on disk and
// in memory, the scaling, and the byte offset of the data.
type plan struct {
	x, y, z, t, vec, k int // k: interleaved components per voxel (RGB)
	raw, out           volume.DType
	scale              bool
	slope, inter       float64
	offset             int64
}

func (p *plan) rawBytes() int64 {
	return int64(p.x) * int64(p.y) * int64(p.z) * int64(p.t) * int64(p.vec) * int64(p.k) * int64(p.raw.Size())
}

// makePlan checks the header's dims, datatype, scaling and offset, and that the image fits
// lim.
func makePlan(h *Header, name string, lim volume.Limits) (*plan, error) {
	nd := h.Dim[0]
	if nd < 1 || nd > 7 {
		return nil, fmt.Errorf("nifti %s: %w: dim[0] is %d, not 1 to 7", name, volume.ErrFormat, nd)
	}
	var d [8]int64
	for i := 1; i < 8; i++ {
		d[i] = 1
		if int64(i) <= nd {
			d[i] = h.Dim[i]
		}
		if d[i] < 1 {
			return nil, fmt.Errorf("nifti %s: %w: dim[%d] is %d", name, volume.ErrGeometry, i, d[i])
		}
		if d[i] > lim.Voxels {
			return nil, fmt.Errorf("nifti %s: %w: dim[%d] is %d", name, volume.ErrTooLarge, i, d[i])
		}
	}
	for i := 6; i < 8; i++ {
		if d[i] > 1 {
			if h.IntentCode >= 3000 && h.IntentCode < 3100 {
				return nil, fmt.Errorf("nifti %s: %w: a CIFTI file (intent %d) is a matrix, not an image volume", name, volume.ErrFormat, h.IntentCode)
			}
			return nil, fmt.Errorf("nifti %s: %w: dim[%d] is %d; only up to 5 dimensions (x, y, z, time, vector) are supported", name, volume.ErrFormat, i, d[i])
		}
	}
	raw, k, err := elem(h.Datatype)
	if err != nil {
		return nil, fmt.Errorf("nifti %s: %w", name, err)
	}
	p := &plan{x: int(d[1]), y: int(d[2]), z: int(d[3]), t: int(d[4]), vec: int(d[5]), k: k, raw: raw, out: raw}
	if d[4]*d[5] > lim.Voxels {
		return nil, fmt.Errorf("nifti %s: %w: %d×%d time points and vector components", name, volume.ErrTooLarge, d[4], d[5])
	}
	s, in := h.SclSlope, h.SclInter
	if k == 1 && s != 0 && !math.IsNaN(s) && !math.IsInf(s, 0) && !(s == 1 && in == 0) {
		if math.IsNaN(in) || math.IsInf(in, 0) {
			return nil, fmt.Errorf("nifti %s: %w: scl_slope is %g but scl_inter is %g", name, volume.ErrFormat, s, in)
		}
		p.scale, p.slope, p.inter = true, s, in
		p.out = volume.Float32
		if raw == volume.Float64 {
			p.out = volume.Float64
		}
	}
	if err := lim.Check(p.dims(), p.out); err != nil {
		return nil, fmt.Errorf("nifti %s: %w", name, err)
	}
	hs := int64(size1)
	if h.Version == 2 {
		hs = size2
	}
	switch o := h.VoxOffset; {
	case o == 0:
		p.offset = hs + 4 // unset: data follow the header and the 4 extension bytes
	case !(o >= float64(hs+4)):
		return nil, fmt.Errorf("nifti %s: %w: vox_offset %g is inside the %d-byte header", name, volume.ErrFormat, o, hs+4)
	case o > float64(hs+4+maxExtensions):
		return nil, fmt.Errorf("nifti %s: %w: vox_offset %g leaves more than 1 GiB for header extensions", name, volume.ErrFormat, o)
	default:
		p.offset = int64(o)
	}
	return p, nil
}

func (p *plan) dims() [4]int { return [4]int{p.x, p.y, p.z, p.t * p.vec * p.k} }

// readData reads the image after the header; src is positioned just after the header.
func readData(src io.Reader, h *Header, name string, size int64, lim volume.Limits) (*volume.Volume, error) {
	p, err := makePlan(h, name, lim)
	if err != nil {
		return nil, err
	}
	v := &volume.Volume{Dims: p.dims()}
	if err := setGeometry(v, h); err != nil {
		return nil, fmt.Errorf("nifti %s: %w", name, err)
	}
	hs := int64(size1)
	if h.Version == 2 {
		hs = size2
	}
	if size >= 0 {
		if p.offset > size {
			return nil, fmt.Errorf("nifti %s: %w: vox_offset %d is beyond the end of the %d-byte file", name, volume.ErrTruncated, p.offset, size)
		}
		if need := p.rawBytes(); size-p.offset < need {
			return nil, fmt.Errorf("nifti %s: %w: the dims need %d bytes of data but the file holds %d after vox_offset %d", name, volume.ErrTruncated, need, size-p.offset, p.offset)
		}
	}
	if _, err := io.CopyN(io.Discard, src, p.offset-hs); err != nil {
		return nil, readErr(name, "extensions before vox_offset", err)
	}
	v.Data = volume.MakeData(p.out, v.Len())
	swap := p.raw.Size() > 1 && (h.ByteOrder == binary.LittleEndian) != hostLE
	if !p.scale && p.t*p.vec == 1 {
		b := asBytes(v.Data)
		if _, err := io.ReadFull(src, b); err != nil {
			return nil, readErr(name, "image data", err)
		}
		if swap {
			swapBytes(b, p.raw.Size())
		}
	} else if err := readChunked(src, v.Data, p, swap, name); err != nil {
		return nil, err
	}
	if gz, ok := src.(io.ReadCloser); ok {
		// Reading one byte more lets the gzip reader verify its checksum when the stream
		// ends here; a stream with bytes after the data is left unread.
		// Bytes after the stream that are not another gzip member are ignored.
		var one [1]byte
		_, err := io.ReadAtLeast(gz, one[:], 1)
		if errors.Is(err, kgzip.ErrChecksum) || errors.Is(err, gzip.ErrChecksum) {
			return nil, readErr(name, "gzip trailer", err)
		}
	}
	return v, nil
}

// setGeometry sets v's spacing, origin and direction from the header's best affine,
// converted from RAS to LPS, and checks them.
func setGeometry(v *volume.Volume, h *Header) error {
	a, err := h.Affine()
	if err != nil {
		return err
	}
	for i := 0; i < 8; i++ {
		a[i] = -a[i]
	}
	v.SetAffine(a)
	for i, s := range v.Spacing {
		if !(s > 0) || math.IsInf(s, 0) {
			return fmt.Errorf("%w: spacing along axis %d is %v", volume.ErrGeometry, i, s)
		}
	}
	d := v.Direction
	det := d[0]*(d[4]*d[8]-d[5]*d[7]) - d[1]*(d[3]*d[8]-d[5]*d[6]) + d[2]*(d[3]*d[7]-d[4]*d[6])
	if math.Abs(det) < 1e-6 {
		return fmt.Errorf("%w: the affine's axes are (nearly) parallel", volume.ErrGeometry)
	}
	return nil
}

// asBytes views a data slice's memory as bytes (no copy).
func asBytes(data any) []byte {
	switch d := data.(type) {
	case []uint8:
		return d
	case []int8:
		return bytesOf(d)
	case []uint16:
		return bytesOf(d)
	case []int16:
		return bytesOf(d)
	case []uint32:
		return bytesOf(d)
	case []int32:
		return bytesOf(d)
	case []float32:
		return bytesOf(d)
	case []float64:
		return bytesOf(d)
	}
	return nil
}

func bytesOf[T number](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}

// swapBytes reverses the byte order of each size-byte element of b in place.
func swapBytes(b []byte, size int) {
	switch size {
	case 2:
		for i := 0; i+1 < len(b); i += 2 {
			b[i], b[i+1] = b[i+1], b[i]
		}
	case 4:
		for i := 0; i+3 < len(b); i += 4 {
			b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
		}
	case 8:
		for i := 0; i+7 < len(b); i += 8 {
			b[i], b[i+1], b[i+2], b[i+3], b[i+4], b[i+5], b[i+6], b[i+7] = b[i+7], b[i+6], b[i+5], b[i+4], b[i+3], b[i+2], b[i+1], b[i]
		}
	}
}

type number interface {
	~uint8 | ~int8 | ~uint16 | ~int16 | ~uint32 | ~int32 | ~float32 | ~float64
}

// readChunked reads the data one z-slice of one time point at a time into a scratch
// buffer and moves it into out, interleaving time points and vector components as
// channels and applying the scaling. Peak memory is out plus one slice.
func readChunked(src io.Reader, out any, p *plan, swap bool, name string) error {
	switch p.raw {
	case volume.Uint8:
		return chunks[uint8](src, out, p, swap, name)
	case volume.Int8:
		return chunks[int8](src, out, p, swap, name)
	case volume.Uint16:
		return chunks[uint16](src, out, p, swap, name)
	case volume.Int16:
		return chunks[int16](src, out, p, swap, name)
	case volume.Uint32:
		return chunks[uint32](src, out, p, swap, name)
	case volume.Int32:
		return chunks[int32](src, out, p, swap, name)
	case volume.Float32:
		return chunks[float32](src, out, p, swap, name)
	case volume.Float64:
		return chunks[float64](src, out, p, swap, name)
	}
	return fmt.Errorf("nifti %s: %w: %v", name, volume.ErrDType, p.raw)
}

func chunks[S number](src io.Reader, out any, p *plan, swap bool, name string) error {
	n := p.x * p.y * p.k
	buf := make([]S, n)
	b := bytesOf(buf)
	var sc *plan
	if p.scale {
		sc = p
	}
	tv := p.t * p.vec
	for q := 0; q < p.z*tv; q++ {
		if _, err := io.ReadFull(src, b); err != nil {
			return readErr(name, "image data", err)
		}
		if swap {
			swapBytes(b, p.raw.Size())
		}
		c, z := q/p.z, q%p.z // disk order: slices of time point 0, then of 1, ...
		p0 := z * p.x * p.y  // first voxel of the slice
		switch d := out.(type) {
		case []S:
			place(d, buf, p0, c, tv, p.k, sc)
		case []float32:
			place(d, buf, p0, c, tv, p.k, sc)
		case []float64:
			place(d, buf, p0, c, tv, p.k, sc)
		default:
			return fmt.Errorf("nifti %s: %w: output %T for input %v", name, volume.ErrDType, out, p.raw)
		}
	}
	return nil
}

// place stores the k-component voxels of src, starting at voxel p0, into channel block c
// of tv blocks of dst, converting (and scaling when sc is not nil).
func place[S, D number](dst []D, src []S, p0, c, tv, k int, sc *plan) {
	if sc != nil {
		m, a := sc.slope, sc.inter
		for i := 0; i < len(src)/k; i++ {
			o := ((p0+i)*tv + c) * k
			for j := 0; j < k; j++ {
				dst[o+j] = D(float64(src[i*k+j])*m + a)
			}
		}
		return
	}
	if tv == 1 {
		d := dst[p0*k : p0*k+len(src)]
		for i, s := range src {
			d[i] = D(s)
		}
		return
	}
	if k == 1 {
		for i, s := range src {
			dst[(p0+i)*tv+c] = D(s)
		}
		return
	}
	for i := 0; i < len(src)/k; i++ {
		o := ((p0+i)*tv + c) * k
		for j := 0; j < k; j++ {
			dst[o+j] = D(src[i*k+j])
		}
	}
}
