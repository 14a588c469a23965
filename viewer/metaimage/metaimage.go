// Package metaimage reads and writes ITK MetaImage files: a text header and the voxel data
// in one file (.mha, ElementDataFile = LOCAL) or a header (.mhd) beside a raw data file
// (.raw, or .zraw when CompressedData = True).
//
// # Geometry
//
// MetaImage coordinates are ITK's physical space, which is LPS, so no axis is flipped.
// Offset (alias Position, Origin) is the origin and ElementSpacing the spacing (ElementSize
// when ElementSpacing is absent, as MetaIO does). TransformMatrix (alias Rotation,
// Orientation) lists the direction cosines one axis after the other: its n values read in
// rows of NDims give row i = the unit vector of index axis i, that is the direction matrix
// transposed (itk::MetaImageIO calls SetDirection(i, row i)). ITK's example files
// BrainProtonDensitySliceBorder20DirectionPlus30.mhd (TransformMatrix = 0.866 0.5 -0.5
// 0.866) and its NRRD twin (space directions: (0.866025,0.5) (-0.5,0.866025)) show it:
// axis 0 points along (0.866, 0.5), a +30° rotation. The writer stores the matrix the same
// way. AnatomicalOrientation is informational and ignored, as in ITK.
//
// # Channels
//
// ElementNumberOfChannels becomes the volume's channel count; a 4D image (NDims = 4) keeps
// its fourth axis as channels too (reordered so that channels vary fastest). The writer
// stores channels as ElementNumberOfChannels.
//
// # Limits
//
// Binary data only (BinaryData = False is refused), one data file (LIST and file-pattern
// forms of ElementDataFile are refused), element types MET_UCHAR, MET_CHAR, MET_USHORT,
// MET_SHORT, MET_UINT, MET_INT (and MET_ULONG, MET_LONG, which MetaIO stores in 4 bytes),
// MET_FLOAT and MET_DOUBLE. Compressed data may be zlib or gzip, as MetaIO's inflate
// accepts both.
package metaimage

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"

	"amid/assets/fileio"
	"amid/viewer/internal/rawio"
	"amid/viewer/volume"
)

// Limits on the header text, so that a binary file is refused quickly.
const (
	maxLine   = 64 << 10
	maxLines  = 4096
	maxInflat = 1032 // deflate's largest expansion ratio, plus slack in checkExpansion
)

var types = map[string]volume.DType{
	"MET_UCHAR":  volume.Uint8,
	"MET_CHAR":   volume.Int8,
	"MET_USHORT": volume.Uint16,
	"MET_SHORT":  volume.Int16,
	"MET_UINT":   volume.Uint32,
	"MET_INT":    volume.Int32,
	"MET_ULONG":  volume.Uint32,
	"MET_LONG":   volume.Int32,
	"MET_FLOAT":  volume.Float32,
	"MET_DOUBLE": volume.Float64,
}

var typeNames = map[volume.DType]string{
	volume.Uint8:   "MET_UCHAR",
	volume.Int8:    "MET_CHAR",
	volume.Uint16:  "MET_USHORT",
	volume.Int16:   "MET_SHORT",
	volume.Uint32:  "MET_UINT",
	volume.Int32:   "MET_INT",
	volume.Float32: "MET_FLOAT",
	volume.Float64: "MET_DOUBLE",
}

// Header is the parsed MetaImage header.
type Header struct {
	NDims       int
	DimSize     []int
	Type        volume.DType
	Channels    int       // ElementNumberOfChannels, 1 when absent
	Spacing     []float64 // NDims values
	Offset      []float64 // NDims values
	Transform   []float64 // NDims² values as written (row i = axis i's direction)
	MSB         bool      // big-endian data
	Compressed  bool
	CompSize    int64 // CompressedDataSize, -1 when absent
	HeaderSize  int64 // bytes to skip in the data file; -1: the data are the file's tail
	DataFile    string
	Orientation string // AnatomicalOrientation, informational
	// Fields holds every key and value in file order.
	Fields [][2]string
}

func errf(name string, base error, format string, a ...any) error {
	return fmt.Errorf("metaimage: %s: %w: %s", name, base, fmt.Sprintf(format, a...))
}

// Read reads a .mha or .mhd file (and the data file a .mhd names, relative to its folder).
func Read(path string) (*volume.Volume, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("metaimage: %w", err)
	}
	defer f.Close()
	size := int64(-1)
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	return decode(f, filepath.Base(path), size, filepath.Dir(path), volume.DefaultLimits())
}

// Decode reads a MetaImage whose data are in the same stream (ElementDataFile = LOCAL);
// name is used in error messages only. A header that names a separate data file is refused.
func Decode(r io.Reader, name string) (*volume.Volume, error) {
	return decode(r, name, -1, "", volume.DefaultLimits())
}

// ReadHeader parses the header of a .mha or .mhd file without reading the data.
func ReadHeader(path string) (*Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("metaimage: %w", err)
	}
	defer f.Close()
	h, _, err := parseHeader(bufio.NewReaderSize(f, maxLine), filepath.Base(path))
	return h, err
}

// decode reads a MetaImage of at most lim from r (size bytes when known, else -1), its
// data file, if any, in dir.
func decode(r io.Reader, name string, size int64, dir string, lim volume.Limits) (*volume.Volume, error) {
	br := bufio.NewReaderSize(r, maxLine)
	h, consumed, err := parseHeader(br, name)
	if err != nil {
		return nil, err
	}
	if err := h.check(name); err != nil {
		return nil, err
	}
	// Where the data are: the rest of this stream, or a separate file.
	var src io.Reader = br
	remain := int64(-1)
	if size >= 0 {
		remain = size - consumed
	}
	dataName := name
	if !strings.EqualFold(h.DataFile, "LOCAL") {
		if dir == "" {
			return nil, errf(name, volume.ErrFormat, "data are in a separate file %q, which a stream cannot reach; read the header by path", h.DataFile)
		}
		p := h.DataFile
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		df, err := os.Open(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("metaimage: %s: data file %s is missing: %w", name, h.DataFile, err)
			}
			return nil, fmt.Errorf("metaimage: %s: data file: %w", name, err)
		}
		defer df.Close()
		src, remain, consumed, dataName = df, -1, 0, filepath.Base(p)
		if st, err := df.Stat(); err == nil {
			remain = st.Size()
		}
	}
	dims, t := h.volumeDims()
	if err := lim.Check(dims, t); err != nil {
		return nil, fmt.Errorf("metaimage: %s: %w", name, err)
	}
	nbytes := int64(dims[0]) * int64(dims[1]) * int64(dims[2]) * int64(dims[3]) * int64(t.Size())

	// Position the reader at the data.
	switch {
	case h.HeaderSize == -1:
		if h.Compressed {
			return nil, errf(name, volume.ErrFormat, "HeaderSize = -1 with compressed data is not supported")
		}
		tail, err := rawio.Last(src, remain, nbytes, lim.Bytes)
		if err != nil {
			return nil, fmt.Errorf("metaimage: %s: %w", dataName, err)
		}
		src, remain = tail, nbytes
	case h.HeaderSize > 0:
		skip := h.HeaderSize - consumed
		if skip < 0 {
			return nil, errf(name, volume.ErrFormat, "HeaderSize %d ends inside the %d-byte header", h.HeaderSize, consumed)
		}
		if _, err := io.CopyN(io.Discard, src, skip); err != nil {
			return nil, errf(dataName, volume.ErrTruncated, "shorter than HeaderSize %d", h.HeaderSize)
		}
		if remain >= 0 {
			remain -= skip
		}
	}

	var raw []byte
	if h.Compressed {
		csize := remain
		if h.CompSize >= 0 {
			csize = h.CompSize
			if remain >= 0 && remain < csize {
				return nil, errf(dataName, volume.ErrTruncated, "holds %d compressed bytes, CompressedDataSize is %d", remain, csize)
			}
			src = io.LimitReader(src, csize)
		}
		if csize >= 0 && nbytes/maxInflat > csize+64 {
			return nil, errf(dataName, volume.ErrTruncated, "%d compressed bytes cannot hold %d bytes of data", csize, nbytes)
		}
		zr, err := inflater(src)
		if err != nil {
			return nil, errf(dataName, volume.ErrFormat, "compressed data: %v", err)
		}
		raw, err = rawio.ReadN(zr, nbytes, csize >= 0)
		if err != nil {
			return nil, errf(dataName, volume.ErrTruncated, "decompressing: %v", err)
		}
	} else {
		if remain >= 0 && remain < nbytes {
			return nil, errf(dataName, volume.ErrTruncated, "holds %d bytes of data, %d needed for %v %s", remain, nbytes, h.DimSize, typeNames[t])
		}
		raw, err = rawio.ReadN(src, nbytes, remain >= 0)
		if err != nil {
			return nil, errf(dataName, volume.ErrTruncated, "%v", err)
		}
	}

	var order binary.ByteOrder = binary.LittleEndian
	if h.MSB {
		order = binary.BigEndian
	}
	if h.NDims == 4 && h.DimSize[3] > 1 {
		raw = channelsLast(raw, t.Size()*h.Channels, dims[0]*dims[1]*dims[2], h.DimSize[3])
	}
	v := &volume.Volume{Dims: dims, Data: volume.DecodeBytes(raw, t, order)}
	h.geometry(v)
	if err := v.Validate(); err != nil {
		return nil, fmt.Errorf("metaimage: %s: %w", name, err)
	}
	return v, nil
}

// inflater returns a zlib or gzip reader, whichever the stream's first bytes announce.
func inflater(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		return gzip.NewReader(br)
	}
	return zlib.NewReader(br)
}

func isKey(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		ok := c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return false
		}
	}
	return true
}

// parseHeader reads header lines up to and including ElementDataFile and returns the header
// and the number of bytes it took.
func parseHeader(br *bufio.Reader, name string) (*Header, int64, error) {
	h := &Header{Channels: 1, CompSize: -1}
	var consumed int64
	seen := map[string]bool{}
	for lineNo := 1; ; lineNo++ {
		if lineNo > maxLines {
			return nil, 0, errf(name, volume.ErrFormat, "no ElementDataFile in the first %d header lines", maxLines)
		}
		line, err := br.ReadSlice('\n')
		consumed += int64(len(line))
		if err == bufio.ErrBufferFull {
			return nil, 0, errf(name, volume.ErrFormat, "header line %d is longer than %d bytes", lineNo, maxLine)
		}
		if err != nil && (err != io.EOF || len(line) == 0) {
			if lineNo == 1 || err == io.EOF {
				return nil, 0, errf(name, volume.ErrTruncated, "header ends before ElementDataFile")
			}
			return nil, 0, fmt.Errorf("metaimage: %s: %w", name, err)
		}
		s := strings.TrimSpace(string(line))
		if s == "" {
			if err == io.EOF {
				return nil, 0, errf(name, volume.ErrTruncated, "header ends before ElementDataFile")
			}
			continue
		}
		k, val, ok := strings.Cut(s, "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		if !ok || !isKey(k) {
			if err == io.EOF && lineNo > 1 {
				return nil, 0, errf(name, volume.ErrTruncated, "header ends within line %d", lineNo)
			}
			if lineNo == 1 {
				return nil, 0, errf(name, volume.ErrFormat, "not a MetaImage header (first line is not \"Key = Value\")")
			}
			return nil, 0, errf(name, volume.ErrFormat, "header line %d is not \"Key = Value\"", lineNo)
		}
		h.Fields = append(h.Fields, [2]string{k, val})
		if seen[k] && k != "Comment" {
			return nil, 0, errf(name, volume.ErrFormat, "%s appears twice", k)
		}
		seen[k] = true
		if err := h.set(k, val, name); err != nil {
			return nil, 0, err
		}
		if k == "ElementDataFile" {
			return h, consumed, nil
		}
		if err == io.EOF {
			return nil, 0, errf(name, volume.ErrTruncated, "header ends before ElementDataFile")
		}
	}
}

func parseBool(s string) bool {
	return strings.EqualFold(s, "true") || s == "1"
}

func parseFloats(s string) ([]float64, error) {
	f := strings.Fields(s)
	out := make([]float64, len(f))
	for i, x := range f {
		v, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", x)
		}
		out[i] = v
	}
	return out, nil
}

func (h *Header) set(k, v, name string) error {
	bad := func(why string) error { return errf(name, volume.ErrFormat, "%s = %q: %s", k, v, why) }
	switch k {
	case "NDims":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 4 {
			return bad("NDims must be 1 to 4")
		}
		h.NDims = n
	case "DimSize":
		f := strings.Fields(v)
		h.DimSize = make([]int, len(f))
		for i, x := range f {
			n, err := strconv.Atoi(x)
			if err != nil || n < 1 {
				return bad("sizes must be positive integers")
			}
			h.DimSize[i] = n
		}
	case "ElementType":
		t, ok := types[v]
		if !ok {
			return errf(name, volume.ErrDType, "ElementType %s is not supported", v)
		}
		h.Type = t
	case "ElementNumberOfChannels":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return bad("must be a positive integer")
		}
		h.Channels = n
	case "ElementSpacing", "ElementSize":
		f, err := parseFloats(v)
		if err != nil {
			return bad(err.Error())
		}
		if k == "ElementSpacing" || h.Spacing == nil {
			h.Spacing = f
		}
	case "Offset", "Position", "Origin":
		f, err := parseFloats(v)
		if err != nil {
			return bad(err.Error())
		}
		h.Offset = f
	case "TransformMatrix", "Rotation", "Orientation":
		f, err := parseFloats(v)
		if err != nil {
			return bad(err.Error())
		}
		h.Transform = f
	case "BinaryDataByteOrderMSB", "ElementByteOrderMSB":
		h.MSB = parseBool(v)
	case "BinaryData":
		if !parseBool(v) {
			return errf(name, volume.ErrFormat, "BinaryData = %s: text data are not supported", v)
		}
	case "CompressedData":
		h.Compressed = parseBool(v)
	case "CompressedDataSize":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return bad("must be a byte count")
		}
		h.CompSize = n
	case "HeaderSize":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < -1 {
			return bad("must be a byte count or -1")
		}
		h.HeaderSize = n
	case "AnatomicalOrientation":
		h.Orientation = v
	case "ObjectType":
		if !strings.EqualFold(v, "Image") {
			return errf(name, volume.ErrFormat, "ObjectType %s is not an image", v)
		}
	case "ElementDataFile":
		switch f := strings.Fields(v); {
		case len(f) == 0:
			return bad("empty")
		case strings.EqualFold(f[0], "LIST"):
			return errf(name, volume.ErrFormat, "ElementDataFile = LIST (one file per slice) is not supported")
		case strings.Contains(v, "%") && len(f) > 1:
			return errf(name, volume.ErrFormat, "ElementDataFile file pattern %q is not supported", v)
		}
		h.DataFile = v
	}
	return nil
}

// check verifies that the header is complete and consistent.
func (h *Header) check(name string) error {
	if h.NDims == 0 {
		return errf(name, volume.ErrFormat, "NDims is missing")
	}
	if len(h.DimSize) != h.NDims {
		return errf(name, volume.ErrFormat, "DimSize has %d values, NDims is %d", len(h.DimSize), h.NDims)
	}
	if h.Type == volume.Invalid {
		return errf(name, volume.ErrFormat, "ElementType is missing")
	}
	for _, f := range []struct {
		k string
		v []float64
		n int
	}{{"ElementSpacing", h.Spacing, h.NDims}, {"Offset", h.Offset, h.NDims}, {"TransformMatrix", h.Transform, h.NDims * h.NDims}} {
		if f.v != nil && len(f.v) != f.n {
			return errf(name, volume.ErrFormat, "%s has %d values, %d expected for NDims %d", f.k, len(f.v), f.n, h.NDims)
		}
	}
	for i, s := range h.Spacing {
		if !(s > 0) || math.IsInf(s, 0) {
			return errf(name, volume.ErrGeometry, "spacing %d is %v", i, s)
		}
	}
	return nil
}

// volumeDims returns (X, Y, Z, C) and the element type.
func (h *Header) volumeDims() ([4]int, volume.DType) {
	d := [4]int{1, 1, 1, h.Channels}
	for i := 0; i < h.NDims && i < 3; i++ {
		d[i] = h.DimSize[i]
	}
	if h.NDims == 4 {
		d[3] *= h.DimSize[3]
	}
	return d, h.Type
}

func (h *Header) geometry(v *volume.Volume) {
	v.Spacing = [3]float64{1, 1, 1}
	v.Direction = volume.Identity
	n := min(h.NDims, 3)
	for i := 0; i < n; i++ {
		if h.Spacing != nil {
			v.Spacing[i] = h.Spacing[i]
		}
		if h.Offset != nil {
			v.Origin[i] = h.Offset[i]
		}
	}
	if h.Transform != nil {
		for j := 0; j < n; j++ { // axis j
			for r := 0; r < n; r++ {
				v.Direction[3*r+j] = h.Transform[j*h.NDims+r]
			}
		}
	}
}

// Options control Write.
type Options struct {
	// Compress stores the data zlib-compressed (CompressedData = True).
	Compress bool
}

// Write writes v as .mha (data in the same file) or .mhd (data beside it in .raw, or .zraw
// when compressed), chosen by path's extension, with zlib compression.
func Write(path string, v *volume.Volume) error {
	return WriteWith(path, v, Options{Compress: true})
}

// WriteWith is Write with options.
func WriteWith(path string, v *volume.Volume, o Options) error {
	name := filepath.Base(path)
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".mha" && ext != ".mhd" {
		return fmt.Errorf("metaimage: %s: extension must be .mha or .mhd", name)
	}
	if err := v.Validate(); err != nil {
		return fmt.Errorf("metaimage: %s: %w", name, err)
	}
	data := volume.EncodeBytes(v.Data, binary.LittleEndian)
	if o.Compress {
		var buf bytes.Buffer
		zw := zlib.NewWriter(&buf)
		if _, err := zw.Write(data); err != nil {
			return fmt.Errorf("metaimage: %s: %w", name, err)
		}
		if err := zw.Close(); err != nil {
			return fmt.Errorf("metaimage: %s: %w", name, err)
		}
		data = buf.Bytes()
	}
	var hb strings.Builder
	hdr := func(k, val string) { fmt.Fprintf(&hb, "%s = %s\n", k, val) }
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	nums := func(f []float64) string {
		s := make([]string, len(f))
		for i, x := range f {
			s[i] = num(x)
		}
		return strings.Join(s, " ")
	}
	d := v.Direction
	nd := 3
	if v.Dims[2] == 1 && d[2] == 0 && d[5] == 0 && d[6] == 0 && d[7] == 0 && d[8] == 1 && v.Origin[2] == 0 && v.Spacing[2] == 1 {
		nd = 2
	}
	var tm []float64
	for j := 0; j < nd; j++ {
		for r := 0; r < nd; r++ {
			tm = append(tm, d[3*r+j])
		}
	}
	dims := make([]string, nd)
	for i := range dims {
		dims[i] = strconv.Itoa(v.Dims[i])
	}
	hdr("ObjectType", "Image")
	hdr("NDims", strconv.Itoa(nd))
	hdr("BinaryData", "True")
	hdr("BinaryDataByteOrderMSB", "False")
	if o.Compress {
		hdr("CompressedData", "True")
		hdr("CompressedDataSize", strconv.Itoa(len(data)))
	} else {
		hdr("CompressedData", "False")
	}
	hdr("TransformMatrix", nums(tm))
	hdr("Offset", nums(v.Origin[:nd]))
	hdr("CenterOfRotation", strings.TrimSpace(strings.Repeat("0 ", nd)))
	hdr("ElementSpacing", nums(v.Spacing[:nd]))
	hdr("DimSize", strings.Join(dims, " "))
	if v.Dims[3] > 1 {
		hdr("ElementNumberOfChannels", strconv.Itoa(v.Dims[3]))
	}
	hdr("ElementType", typeNames[v.DType()])
	if ext == ".mha" {
		hdr("ElementDataFile", "LOCAL")
		return writeFile(path, []byte(hb.String()), data)
	}
	dataPath := strings.TrimSuffix(path, filepath.Ext(path)) + ".raw"
	if o.Compress {
		dataPath = strings.TrimSuffix(dataPath, ".raw") + ".zraw"
	}
	hdr("ElementDataFile", filepath.Base(dataPath))
	if err := writeFile(dataPath, data); err != nil {
		return err
	}
	return writeFile(path, []byte(hb.String()))
}

// writeFile writes the parts to path atomically, with the package's error prefix.
func writeFile(path string, parts ...[]byte) error {
	if err := fileio.Write(path, parts...); err != nil {
		return fmt.Errorf("metaimage: %w", err)
	}
	return nil
}
