// Package nrrd reads and writes NRRD files: .nrrd (header and data in one file), .nhdr (a
// header naming a detached data file) and 3D Slicer segmentations (.seg.nrrd, a labelmap
// NRRD whose key/value pairs describe the segments).
//
// # Geometry
//
// The volume is LPS. "space" left-posterior-superior (LPS), scanner-xyz and
// 3D-right-handed are taken as LPS, right-anterior-superior (RAS) negates the first two
// world coordinates and left-anterior-superior (LAS) the second, as ITK's NrrdImageIO does.
// Each spatial axis's space direction vector gives its spacing (the vector's length) and
// its direction (the unit vector). Without space directions, "spacings" give the spacing
// (1 where missing or nan, as in ITK) with identity direction, and the origin is the
// space origin (converted to LPS) or zero. A 2D space
// (space dimension 2) is embedded in 3D with z along +S.
//
// Reading back a written oblique volume reproduces spacing and direction to within a few
// units in the last place, not bit for bit: NRRD stores their product, and the reader takes
// the vector's length. Axis-aligned geometry and all voxel values round-trip exactly.
//
// # Channels
//
// At most one axis may be non-spatial: a "none" space direction, or, without space
// directions, a kind other than domain/space (or a nan spacing); in a 4D file without
// either the last axis is taken. That axis becomes the volume's channels wherever it
// lies in the file (first, as for RGB or a multi-layer segmentation, or last, as for a
// time series); the data are reordered so that channels vary fastest.
//
// # Encodings
//
// raw, gzip (gz), bzip2 (bz2), ascii (text, txt) and hex. "data file" may name one
// detached file; the LIST and file-pattern forms are refused. "line skip" and "byte skip"
// apply as in teem: byte skip -1 (the data are the file's last bytes) only with raw data,
// and for compressed data the byte skip counts decompressed bytes.
package nrrd

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"

	"amid/assets/fileio"
	"amid/viewer/internal/rawio"
	"amid/viewer/volume"
)

const (
	maxLine   = 64 << 10
	maxLines  = 4096
	maxInflat = 1032 // deflate's largest expansion ratio
)

var types = map[string]volume.DType{}

func init() {
	add := func(t volume.DType, names ...string) {
		for _, n := range names {
			types[n] = t
		}
	}
	add(volume.Int8, "signed char", "int8", "int8_t")
	add(volume.Uint8, "uchar", "unsigned char", "uint8", "uint8_t")
	add(volume.Int16, "short", "short int", "signed short", "signed short int", "int16", "int16_t")
	add(volume.Uint16, "ushort", "unsigned short", "unsigned short int", "uint16", "uint16_t")
	add(volume.Int32, "int", "signed int", "int32", "int32_t")
	add(volume.Uint32, "uint", "unsigned int", "uint32", "uint32_t")
	add(volume.Float32, "float")
	add(volume.Float64, "double")
}

var typeNames = map[volume.DType]string{
	volume.Int8: "signed char", volume.Uint8: "unsigned char", volume.Int16: "short",
	volume.Uint16: "unsigned short", volume.Int32: "int", volume.Uint32: "unsigned int",
	volume.Float32: "float", volume.Float64: "double",
}

// Segment is one segment of a 3D Slicer segmentation (.seg.nrrd), from the key/value pairs
// Segment<Index>_<Field>.
type Segment struct {
	Index      int    // the <Index> in the key names
	ID         string // Segment<i>_ID
	Name       string // Segment<i>_Name
	LabelValue int    // the voxel value of the segment in its layer (1 when absent)
	Layer      int    // the channel holding the segment (the index when absent, old format)
	Color      [3]float64
}

// Image is a NRRD file's volume with its header.
type Image struct {
	Volume *volume.Volume
	// Fields are the header fields, keyed by lower-case field name.
	Fields map[string]string
	// KeyValues are the "key:=value" pairs.
	KeyValues map[string]string
	// Segments are the 3D Slicer segments described in KeyValues, by Index; nil when none.
	Segments []Segment
}

func errf(name string, base error, format string, a ...any) error {
	return fmt.Errorf("nrrd: %s: %w: %s", name, base, fmt.Sprintf(format, a...))
}

// Read reads a .nrrd, .nhdr or .seg.nrrd file.
func Read(path string) (*volume.Volume, error) {
	im, err := ReadImage(path)
	if err != nil {
		return nil, err
	}
	return im.Volume, nil
}

// ReadImage reads a file with its header fields, key/value pairs and segments.
func ReadImage(path string) (*Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("nrrd: %w", err)
	}
	defer f.Close()
	size := int64(-1)
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	return decode(f, filepath.Base(path), size, filepath.Dir(path), volume.DefaultLimits())
}

// Decode reads a NRRD file with attached data from r; name is used in error messages only.
// A header that names a detached data file is refused.
func Decode(r io.Reader, name string) (*volume.Volume, error) {
	im, err := DecodeImage(r, name)
	if err != nil {
		return nil, err
	}
	return im.Volume, nil
}

// DecodeImage is Decode keeping the header.
func DecodeImage(r io.Reader, name string) (*Image, error) {
	return decode(r, name, -1, "", volume.DefaultLimits())
}

type header struct {
	fields map[string]string
	kv     map[string]string
	typ    volume.DType
	sizes  []int
	enc    string
	big    bool
	space  string
	sdim   int
	dirs   [][]float64 // per axis, nil for none; nil slice when absent
	origin []float64
	spc    []float64
	kinds  []string
	file   string
	lskip  int64
	bskip  int64
}

// decode reads an NRRD of at most lim from r (size bytes when known, else -1), its
// detached data file, if any, in dir.
func decode(r io.Reader, name string, size int64, dir string, lim volume.Limits) (*Image, error) {
	br := bufio.NewReaderSize(r, maxLine)
	h, consumed, err := parseHeader(br, name)
	if err != nil {
		return nil, err
	}
	if err := h.check(name); err != nil {
		return nil, err
	}
	src := io.Reader(br)
	remain := int64(-1)
	if size >= 0 {
		remain = size - consumed
	}
	dataName := name
	if h.file != "" {
		if dir == "" {
			return nil, errf(name, volume.ErrFormat, "data are in a detached file %q, which a stream cannot reach; read the header by path", h.file)
		}
		p := h.file
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		df, err := os.Open(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("nrrd: %s: data file %s is missing: %w", name, h.file, err)
			}
			return nil, fmt.Errorf("nrrd: %s: data file: %w", name, err)
		}
		defer df.Close()
		src, remain, dataName = bufio.NewReaderSize(df, 1<<16), -1, filepath.Base(p)
		if st, err := df.Stat(); err == nil {
			remain = st.Size()
		}
	}

	layout, err := h.layout(name)
	if err != nil {
		return nil, err
	}
	if err := lim.Check(layout.dims, h.typ); err != nil {
		return nil, fmt.Errorf("nrrd: %s: %w", name, err)
	}
	n := int64(layout.dims[0]) * int64(layout.dims[1]) * int64(layout.dims[2]) * int64(layout.dims[3])
	nbytes := n * int64(h.typ.Size())

	// line skip: whole lines of the data file.
	if h.lskip > 0 {
		lr := bufio.NewReader(src)
		for i := int64(0); i < h.lskip; i++ {
			for {
				b, err := lr.ReadSlice('\n')
				if remain >= 0 {
					remain -= int64(len(b))
				}
				if err == nil {
					break
				}
				if err != bufio.ErrBufferFull {
					return nil, errf(dataName, volume.ErrTruncated, "ends within line skip %d", h.lskip)
				}
			}
		}
		src = lr
	}

	var raw []byte
	switch h.enc {
	case "raw":
		if h.bskip == -1 {
			tail, err := rawio.Last(src, remain, nbytes, lim.Bytes)
			if err != nil {
				return nil, fmt.Errorf("nrrd: %s: %w", dataName, err)
			}
			src, remain = tail, nbytes
		} else if h.bskip > 0 {
			if _, err := io.CopyN(io.Discard, src, h.bskip); err != nil {
				return nil, errf(dataName, volume.ErrTruncated, "shorter than byte skip %d", h.bskip)
			}
			if remain >= 0 {
				remain -= h.bskip
			}
		}
		if remain >= 0 && remain < nbytes {
			return nil, errf(dataName, volume.ErrTruncated, "holds %d bytes of data, %d needed for sizes %v of %s", remain, nbytes, h.sizes, typeNames[h.typ])
		}
		raw, err = rawio.ReadN(src, nbytes, remain >= 0)
		if err != nil {
			return nil, errf(dataName, volume.ErrTruncated, "%v", err)
		}
	case "gzip", "bzip2":
		if remain >= 0 && (nbytes+h.bskip)/maxInflat > remain+64 {
			return nil, errf(dataName, volume.ErrTruncated, "%d compressed bytes cannot hold %d bytes of data", remain, nbytes)
		}
		var zr io.Reader
		if h.enc == "gzip" {
			gz, err := gzip.NewReader(src)
			if err != nil {
				return nil, errf(dataName, volume.ErrFormat, "gzip data: %v", err)
			}
			zr = gz
		} else {
			zr = bzip2.NewReader(src)
		}
		if h.bskip > 0 {
			if _, err := io.CopyN(io.Discard, zr, h.bskip); err != nil {
				return nil, errf(dataName, volume.ErrTruncated, "decompressed data shorter than byte skip %d: %v", h.bskip, err)
			}
		}
		raw, err = rawio.ReadN(zr, nbytes, remain >= 0 && h.enc == "gzip")
		if err != nil {
			return nil, errf(dataName, volume.ErrTruncated, "decompressing: %v", err)
		}
	case "hex":
		text, err := io.ReadAll(io.LimitReader(src, 3*lim.Bytes))
		if err != nil {
			return nil, fmt.Errorf("nrrd: %s: %w", dataName, err)
		}
		digits := bytes.Join(bytes.Fields(text), nil)
		if int64(len(digits)) < 2*nbytes {
			return nil, errf(dataName, volume.ErrTruncated, "holds %d hex digits, %d needed", len(digits), 2*nbytes)
		}
		raw = make([]byte, nbytes)
		if _, err := hex.Decode(raw, digits[:2*nbytes]); err != nil {
			return nil, errf(dataName, volume.ErrFormat, "hex data: %v", err)
		}
	case "ascii":
		text, err := io.ReadAll(io.LimitReader(src, 64*lim.Bytes))
		if err != nil {
			return nil, fmt.Errorf("nrrd: %s: %w", dataName, err)
		}
		f := bytes.FieldsFunc(text, func(c rune) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' })
		if int64(len(f)) < n {
			return nil, errf(dataName, volume.ErrTruncated, "holds %d values, %d needed", len(f), n)
		}
		raw = make([]byte, nbytes)
		for i := int64(0); i < n; i++ {
			if err := putText(raw, int(i), h.typ, string(f[i])); err != nil {
				return nil, errf(dataName, volume.ErrFormat, "value %d: %v", i, err)
			}
		}
		h.big = false
	}

	var order binary.ByteOrder = binary.LittleEndian
	if h.big {
		order = binary.BigEndian
	}
	raw = channelsFirst(raw, h.typ.Size(), layout.inner, layout.dims[3], layout.outer)
	v := &volume.Volume{Dims: layout.dims, Data: volume.DecodeBytes(raw, h.typ, order)}
	if err := h.geometry(v, layout, name); err != nil {
		return nil, err
	}
	if err := v.Validate(); err != nil {
		return nil, fmt.Errorf("nrrd: %s: %w", name, err)
	}
	im := &Image{Volume: v, Fields: h.fields, KeyValues: h.kv}
	im.Segments = segments(h.kv)
	return im, nil
}

// putText stores the decimal value s as element i of raw (little-endian).
func putText(raw []byte, i int, t volume.DType, s string) error {
	le := binary.LittleEndian
	if t == volume.Float32 || t == volume.Float64 {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		if t == volume.Float32 {
			le.PutUint32(raw[4*i:], math.Float32bits(float32(f)))
		} else {
			le.PutUint64(raw[8*i:], math.Float64bits(f))
		}
		return nil
	}
	bits := 8 * t.Size()
	var x uint64
	if t == volume.Uint8 || t == volume.Uint16 || t == volume.Uint32 {
		u, err := strconv.ParseUint(s, 10, bits)
		if err != nil {
			return fmt.Errorf("%q is not a %v", s, t)
		}
		x = u
	} else {
		k, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return fmt.Errorf("%q is not a %v", s, t)
		}
		x = uint64(k)
	}
	switch t.Size() {
	case 1:
		raw[i] = byte(x)
	case 2:
		le.PutUint16(raw[2*i:], uint16(x))
	case 4:
		le.PutUint32(raw[4*i:], uint32(x))
	}
	return nil
}

func parseHeader(br *bufio.Reader, name string) (*header, int64, error) {
	h := &header{fields: map[string]string{}, kv: map[string]string{}}
	var consumed int64
	for lineNo := 1; ; lineNo++ {
		if lineNo > maxLines {
			return nil, 0, errf(name, volume.ErrFormat, "header longer than %d lines", maxLines)
		}
		line, err := br.ReadSlice('\n')
		consumed += int64(len(line))
		if err == bufio.ErrBufferFull {
			return nil, 0, errf(name, volume.ErrFormat, "header line %d is longer than %d bytes", lineNo, maxLine)
		}
		atEOF := err != nil
		if err != nil && err != io.EOF {
			return nil, 0, fmt.Errorf("nrrd: %s: %w", name, err)
		}
		s := strings.TrimRight(string(line), "\r\n")
		if atEOF && len(line) > 0 && lineNo > 1 && h.file == "" && !strings.HasPrefix(strings.ToLower(s), "data") {
			// A detached header may end without a newline; an attached one may not.
			return nil, 0, errf(name, volume.ErrTruncated, "header ends within line %d", lineNo)
		}
		if lineNo == 1 {
			if len(s) != 8 || !strings.HasPrefix(s, "NRRD000") || s[7] < '1' || s[7] > '5' {
				return nil, 0, errf(name, volume.ErrFormat, "not a NRRD file (no NRRD000x magic)")
			}
			if atEOF {
				return nil, 0, errf(name, volume.ErrTruncated, "header ends after the magic line")
			}
			continue
		}
		if s == "" {
			if atEOF && len(line) == 0 && h.fields["data file"] == "" && h.fields["datafile"] == "" {
				return nil, 0, errf(name, volume.ErrTruncated, "header ends without data")
			}
			return h, consumed, nil
		}
		if s[0] == '#' {
			if atEOF {
				return h, consumed, nil
			}
			continue
		}
		if k, v, ok := strings.Cut(s, ":="); ok && !strings.Contains(k, ": ") {
			h.kv[unescape(k)] = unescape(v)
		} else if k, v, ok := strings.Cut(s, ": "); ok {
			k = strings.ToLower(strings.TrimSpace(k))
			h.fields[k] = strings.TrimSpace(v)
			if err := h.set(k, strings.TrimSpace(v), name); err != nil {
				return nil, 0, err
			}
		} else {
			return nil, 0, errf(name, volume.ErrFormat, "header line %d %q is not \"field: value\"", lineNo, clip(s))
		}
		if atEOF {
			return h, consumed, nil
		}
	}
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// unescape undoes teem's \n and \\ escapes in key/value pairs.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	return strings.NewReplacer(`\n`, "\n", `\\`, `\`).Replace(s)
}

func parseVector(s string) ([]float64, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "(") || !strings.HasSuffix(s, ")") {
		return nil, fmt.Errorf("%q is not a (x,y,z) vector", s)
	}
	parts := strings.Split(s[1:len(s)-1], ",")
	out := make([]float64, len(parts))
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%q is not a finite vector", s)
		}
		out[i] = f
	}
	return out, nil
}

// vectors splits "(a,b) none (c,d)" into its items.
func vectors(s string) []string {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] == '(' {
			i := strings.IndexByte(s, ')')
			if i < 0 {
				return append(out, s)
			}
			out = append(out, s[:i+1])
			s = s[i+1:]
			continue
		}
		f := strings.Fields(s)
		out = append(out, f[0])
		s = s[len(f[0]):]
	}
	return out
}

func (h *header) set(k, v, name string) error {
	bad := func(why string) error { return errf(name, volume.ErrFormat, "%s: %q: %s", k, clip(v), why) }
	switch k {
	case "type":
		t, ok := types[strings.ToLower(v)]
		if !ok {
			return errf(name, volume.ErrDType, "type %q is not supported", v)
		}
		h.typ = t
	case "dimension":
		d, err := strconv.Atoi(v)
		if err != nil || d < 1 || d > 4 {
			return bad("dimension must be 1 to 4")
		}
		_ = d
	case "sizes":
		for _, f := range strings.Fields(v) {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				return bad("sizes must be positive integers")
			}
			h.sizes = append(h.sizes, n)
		}
	case "encoding":
		switch strings.ToLower(v) {
		case "raw":
			h.enc = "raw"
		case "gzip", "gz":
			h.enc = "gzip"
		case "bzip2", "bz2":
			h.enc = "bzip2"
		case "ascii", "text", "txt":
			h.enc = "ascii"
		case "hex":
			h.enc = "hex"
		default:
			return errf(name, volume.ErrFormat, "encoding %q is not supported (raw, gzip, bzip2, ascii, hex)", v)
		}
	case "endian":
		switch strings.ToLower(v) {
		case "little":
		case "big":
			h.big = true
		default:
			return bad("endian must be little or big")
		}
	case "space":
		h.space = strings.ToLower(v)
		switch h.space {
		case "left-posterior-superior", "lps", "right-anterior-superior", "ras",
			"left-anterior-superior", "las", "scanner-xyz", "3d-right-handed":
			h.sdim = 3
		default:
			return errf(name, volume.ErrGeometry, "space %q is not supported", v)
		}
	case "space dimension":
		d, err := strconv.Atoi(v)
		if err != nil || d < 2 || d > 3 {
			return bad("space dimension must be 2 or 3")
		}
		if h.space != "" && d != 3 {
			return bad("space " + h.space + " is 3D")
		}
		h.sdim = d
	case "space directions":
		h.dirs = [][]float64{}
		for _, it := range vectors(v) {
			if strings.EqualFold(it, "none") {
				h.dirs = append(h.dirs, nil)
				continue
			}
			vec, err := parseVector(it)
			if err != nil {
				return bad(err.Error())
			}
			h.dirs = append(h.dirs, vec)
		}
	case "space origin":
		o, err := parseVector(v)
		if err != nil {
			return bad(err.Error())
		}
		h.origin = o
	case "spacings":
		for _, f := range strings.Fields(v) {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return bad(fmt.Sprintf("%q is not a number", f))
			}
			h.spc = append(h.spc, x)
		}
	case "kinds":
		h.kinds = strings.Fields(strings.ToLower(v))
	case "data file", "datafile":
		switch f := strings.Fields(v); {
		case len(f) == 0:
			return bad("empty")
		case f[0] == "LIST":
			return errf(name, volume.ErrFormat, "data file: LIST (several data files) is not supported")
		case len(f) > 1 && strings.Contains(f[0], "%"):
			return errf(name, volume.ErrFormat, "data file pattern %q is not supported", v)
		}
		h.file = v
	case "line skip", "lineskip":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return bad("must be a line count")
		}
		h.lskip = n
	case "byte skip", "byteskip":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < -1 {
			return bad("must be a byte count or -1")
		}
		h.bskip = n
	}
	return nil
}

func (h *header) check(name string) error {
	if h.typ == volume.Invalid {
		return errf(name, volume.ErrFormat, "type is missing")
	}
	if _, ok := h.fields["dimension"]; !ok {
		return errf(name, volume.ErrFormat, "dimension is missing")
	}
	d, _ := strconv.Atoi(h.fields["dimension"])
	if len(h.sizes) != d {
		return errf(name, volume.ErrFormat, "sizes has %d values, dimension is %d", len(h.sizes), d)
	}
	if h.enc == "" {
		return errf(name, volume.ErrFormat, "encoding is missing")
	}
	if h.bskip == -1 && h.enc != "raw" {
		return errf(name, volume.ErrFormat, "byte skip -1 needs raw encoding, not %s", h.enc)
	}
	if h.dirs != nil {
		if len(h.dirs) != d {
			return errf(name, volume.ErrFormat, "space directions has %d items, dimension is %d", len(h.dirs), d)
		}
		if h.sdim == 0 {
			return errf(name, volume.ErrFormat, "space directions without space or space dimension")
		}
		for i, v := range h.dirs {
			if v != nil && len(v) != h.sdim {
				return errf(name, volume.ErrGeometry, "space direction %d has %d components, space dimension is %d", i, len(v), h.sdim)
			}
		}
	}
	if h.origin != nil && len(h.origin) != h.sdim {
		return errf(name, volume.ErrGeometry, "space origin has %d components, space dimension is %d", len(h.origin), h.sdim)
	}
	if h.spc != nil && len(h.spc) != d {
		return errf(name, volume.ErrFormat, "spacings has %d values, dimension is %d", len(h.spc), d)
	}
	if h.kinds != nil && len(h.kinds) != d {
		return errf(name, volume.ErrFormat, "kinds has %d values, dimension is %d", len(h.kinds), d)
	}
	return nil
}

// layout says where the file's axes go in the volume.
type layout struct {
	dims         [4]int
	spatial      []int // file axes that are X, Y, Z in order
	channel      int   // the non-spatial file axis, -1 when none
	inner, outer int   // voxels per channel block below and above the channel axis
}

// spatialKind reports whether an axis of this kind may be spatial; "???" and "none" are
// teem's unknown kind.
func spatialKind(k string) bool {
	switch k {
	case "domain", "space", "???", "none":
		return true
	}
	return false
}

func (h *header) layout(name string) (layout, error) {
	l := layout{dims: [4]int{1, 1, 1, 1}, channel: -1, inner: 1, outer: 1}
	nonSpatial := func(i int) bool {
		switch {
		case h.dirs != nil:
			return h.dirs[i] == nil
		case h.kinds != nil:
			return !spatialKind(h.kinds[i])
		case h.spc != nil:
			return math.IsNaN(h.spc[i])
		}
		return len(h.sizes) == 4 && i == 3
	}
	for i := range h.sizes {
		if nonSpatial(i) {
			if l.channel >= 0 {
				return l, errf(name, volume.ErrGeometry, "axes %d and %d are both non-spatial; at most one may be", l.channel, i)
			}
			l.channel = i
			continue
		}
		l.spatial = append(l.spatial, i)
	}
	if len(l.spatial) > 3 {
		return l, errf(name, volume.ErrGeometry, "%d spatial axes; at most 3 are supported", len(l.spatial))
	}
	for j, a := range l.spatial {
		l.dims[j] = h.sizes[a]
	}
	if l.channel >= 0 {
		l.dims[3] = h.sizes[l.channel]
		for i, s := range h.sizes {
			if i < l.channel {
				l.inner *= s
			} else if i > l.channel {
				l.outer *= s
			}
		}
	}
	return l, nil
}

func (h *header) geometry(v *volume.Volume, l layout, name string) error {
	v.Spacing = [3]float64{1, 1, 1}
	v.Direction = volume.Identity
	if h.dirs == nil {
		for j, a := range l.spatial {
			if h.spc != nil && !math.IsNaN(h.spc[a]) {
				v.Spacing[j] = h.spc[a]
			}
		}
		copy(v.Origin[:], h.origin)
		flipOrigin(v, h.space)
		return nil
	}
	var cols [3][3]float64
	for j, a := range l.spatial {
		d := h.dirs[a]
		n := 0.0
		for _, x := range d {
			n += x * x
		}
		n = math.Sqrt(n)
		if n == 0 {
			return errf(name, volume.ErrGeometry, "space direction of axis %d is zero", a)
		}
		v.Spacing[j] = n
		for r := range d {
			cols[j][r] = d[r] / n
		}
	}
	switch len(l.spatial) {
	case 0:
		cols = [3][3]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	case 1:
		e := [3]float64{0, 1, 0}
		if math.Abs(cols[0][1]) > 0.9 {
			e = [3]float64{1, 0, 0}
		}
		cols[1] = unit(cross(cross(cols[0], e), cols[0]))
		cols[2] = cross(cols[0], cols[1])
	case 2:
		cols[2] = cross(cols[0], cols[1])
	}
	if h.sdim == 2 && len(l.spatial) == 2 {
		cols[2] = [3]float64{0, 0, 1}
	}
	for j := 0; j < 3; j++ {
		for r := 0; r < 3; r++ {
			v.Direction[3*r+j] = cols[j][r]
		}
	}
	copy(v.Origin[:], h.origin)
	for r, f := range flips(h.space) {
		if f {
			for j := 0; j < 3; j++ {
				v.Direction[3*r+j] = -v.Direction[3*r+j]
			}
		}
	}
	flipOrigin(v, h.space)
	return nil
}

// flips says which world axes of a space are negated to reach LPS.
func flips(space string) [3]bool {
	switch space {
	case "right-anterior-superior", "ras":
		return [3]bool{true, true, false}
	case "left-anterior-superior", "las":
		return [3]bool{false, true, false}
	}
	return [3]bool{}
}

func flipOrigin(v *volume.Volume, space string) {
	for r, f := range flips(space) {
		if f {
			v.Origin[r] = -v.Origin[r]
		}
	}
}

func cross(a, b [3]float64) [3]float64 {
	return [3]float64{a[1]*b[2] - a[2]*b[1], a[2]*b[0] - a[0]*b[2], a[0]*b[1] - a[1]*b[0]}
}

func unit(a [3]float64) [3]float64 {
	n := math.Sqrt(a[0]*a[0] + a[1]*a[1] + a[2]*a[2])
	return [3]float64{a[0] / n, a[1] / n, a[2] / n}
}

// segments collects the Segment<i>_<field> key/value pairs.
func segments(kv map[string]string) []Segment {
	by := map[int]*Segment{}
	hasLabel, hasLayer := map[int]bool{}, map[int]bool{}
	for k, val := range kv {
		if !strings.HasPrefix(k, "Segment") {
			continue
		}
		num, field, ok := strings.Cut(k[len("Segment"):], "_")
		i, err := strconv.Atoi(num)
		if !ok || err != nil || i < 0 {
			continue
		}
		s := by[i]
		if s == nil {
			s = &Segment{Index: i}
			by[i] = s
		}
		switch field {
		case "ID":
			s.ID = val
		case "Name":
			s.Name = val
		case "LabelValue":
			if n, err := strconv.Atoi(strings.TrimSpace(val)); err == nil {
				s.LabelValue, hasLabel[i] = n, true
			}
		case "Layer":
			if n, err := strconv.Atoi(strings.TrimSpace(val)); err == nil {
				s.Layer, hasLayer[i] = n, true
			}
		case "Color":
			if f := strings.Fields(val); len(f) == 3 {
				for c := range f {
					s.Color[c], _ = strconv.ParseFloat(f[c], 64)
				}
			}
		}
	}
	if len(by) == 0 {
		return nil
	}
	out := make([]Segment, 0, len(by))
	for i, s := range by {
		if !hasLabel[i] {
			s.LabelValue = 1
		}
		if !hasLayer[i] {
			s.Layer = i
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Index < out[b].Index })
	return out
}

// Options control WriteWith.
type Options struct {
	// Raw stores the data uncompressed; the default is gzip.
	Raw bool
	// KeyValues are written as "key:=value" pairs (e.g. Segment0_Name for 3D Slicer).
	KeyValues map[string]string
}

// Write writes v as a gzip-compressed .nrrd with attached data in space
// left-posterior-superior. Channels, when C > 1, are the first axis (kind RGB-color for
// 3 uint8 channels, RGBA-color for 4, list otherwise), with space direction none.
func Write(path string, v *volume.Volume) error { return WriteWith(path, v, Options{}) }

// WriteWith is Write with options.
func WriteWith(path string, v *volume.Volume, o Options) error {
	name := filepath.Base(path)
	if !strings.EqualFold(filepath.Ext(path), ".nrrd") {
		return fmt.Errorf("nrrd: %s: extension must be .nrrd", name)
	}
	if err := v.Validate(); err != nil {
		return fmt.Errorf("nrrd: %s: %w", name, err)
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	vec := func(a [3]float64) string { return "(" + num(a[0]) + "," + num(a[1]) + "," + num(a[2]) + ")" }
	var b strings.Builder
	b.WriteString("NRRD0004\n")
	fmt.Fprintf(&b, "type: %s\n", typeNames[v.DType()])
	var sizes, dirs, kinds []string
	if c := v.Dims[3]; c > 1 {
		kind := "list"
		if v.DType() == volume.Uint8 && c == 3 {
			kind = "RGB-color"
		} else if v.DType() == volume.Uint8 && c == 4 {
			kind = "RGBA-color"
		}
		sizes, dirs, kinds = append(sizes, strconv.Itoa(c)), append(dirs, "none"), append(kinds, kind)
	}
	for j := 0; j < 3; j++ {
		var d [3]float64
		for r := 0; r < 3; r++ {
			d[r] = v.Direction[3*r+j] * v.Spacing[j]
		}
		sizes, dirs, kinds = append(sizes, strconv.Itoa(v.Dims[j])), append(dirs, vec(d)), append(kinds, "domain")
	}
	fmt.Fprintf(&b, "dimension: %d\n", len(sizes))
	b.WriteString("space: left-posterior-superior\n")
	fmt.Fprintf(&b, "sizes: %s\n", strings.Join(sizes, " "))
	fmt.Fprintf(&b, "space directions: %s\n", strings.Join(dirs, " "))
	fmt.Fprintf(&b, "kinds: %s\n", strings.Join(kinds, " "))
	if v.DType().Size() > 1 {
		b.WriteString("endian: little\n")
	}
	enc := "gzip"
	if o.Raw {
		enc = "raw"
	}
	fmt.Fprintf(&b, "encoding: %s\n", enc)
	fmt.Fprintf(&b, "space origin: %s\n", vec(v.Origin))
	keys := make([]string, 0, len(o.KeyValues))
	for k := range o.KeyValues {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	esc := strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	for _, k := range keys {
		if strings.Contains(k, ":=") {
			return fmt.Errorf("nrrd: %s: key %q contains \":=\"", name, k)
		}
		fmt.Fprintf(&b, "%s:=%s\n", esc.Replace(k), esc.Replace(o.KeyValues[k]))
	}
	b.WriteString("\n")
	data := volume.EncodeBytes(v.Data, binary.LittleEndian)
	if !o.Raw {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(data); err != nil {
			return fmt.Errorf("nrrd: %s: %w", name, err)
		}
		if err := zw.Close(); err != nil {
			return fmt.Errorf("nrrd: %s: %w", name, err)
		}
		data = buf.Bytes()
	}
	return writeFile(path, []byte(b.String()), data)
}

// WriteSegmentation writes a label map as a 3D Slicer segmentation (.seg.nrrd): v holds
// the labels (one channel per layer), segs name them. Each segment's Index is rewritten to
// its position in segs; a zero Color is left for Slicer to choose.
func WriteSegmentation(path string, v *volume.Volume, segs []Segment) error {
	if !v.DType().IsInteger() {
		return fmt.Errorf("nrrd: %s: %w: a segmentation needs integer labels, not %v", filepath.Base(path), volume.ErrDType, v.DType())
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	kv := map[string]string{
		"Segmentation_MasterRepresentation":         "Binary labelmap",
		"Segmentation_ContainedRepresentationNames": "Binary labelmap|",
		"Segmentation_ReferenceImageExtentOffset":   "0 0 0",
	}
	extent := fmt.Sprintf("0 %d 0 %d 0 %d", v.Dims[0]-1, v.Dims[1]-1, v.Dims[2]-1)
	for i, s := range segs {
		if s.Layer < 0 || s.Layer >= v.Dims[3] {
			return fmt.Errorf("nrrd: %s: segment %q is in layer %d of %d", filepath.Base(path), s.Name, s.Layer, v.Dims[3])
		}
		p := fmt.Sprintf("Segment%d_", i)
		id := s.ID
		if id == "" {
			id = fmt.Sprintf("Segment_%d", i+1)
		}
		kv[p+"ID"] = id
		kv[p+"Name"] = s.Name
		kv[p+"NameAutoGenerated"] = "0"
		kv[p+"LabelValue"] = strconv.Itoa(s.LabelValue)
		kv[p+"Layer"] = strconv.Itoa(s.Layer)
		kv[p+"Extent"] = extent
		if s.Color != [3]float64{} {
			kv[p+"Color"] = num(s.Color[0]) + " " + num(s.Color[1]) + " " + num(s.Color[2])
			kv[p+"ColorAutoGenerated"] = "0"
		} else {
			kv[p+"ColorAutoGenerated"] = "1"
		}
	}
	return WriteWith(path, v, Options{KeyValues: kv})
}

// writeFile writes the parts to path atomically, with the package's error prefix.
func writeFile(path string, parts ...[]byte) error {
	if err := fileio.Write(path, parts...); err != nil {
		return fmt.Errorf("nrrd: %w", err)
	}
	return nil
}
