package raster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"io"
	"math"

	"github.com/klauspost/compress/zlib"
	"golang.org/x/image/tiff"
	"golang.org/x/image/tiff/lzw"

	"amid/viewer/volume"
)

// TIFF tags the reader and writer use (TIFF 6.0, section 8 and appendix A).
const (
	tWidth        = 256
	tHeight       = 257
	tBits         = 258
	tCompression  = 259
	tPhotometric  = 262
	tStripOffsets = 273
	tSamples      = 277
	tRowsPerStrip = 278
	tStripCounts  = 279
	tXRes         = 282
	tYRes         = 283
	tPlanar       = 284
	tResUnit      = 296
	tPredictor    = 317
	tTileWidth    = 322
	tTileLength   = 323
	tTileOffsets  = 324
	tTileCounts   = 325
	tExtraSamples = 338
	tSampleFormat = 339
)

// errLeave marks a TIFF the own reader leaves to golang.org/x/image/tiff.
var errLeave = errors.New("left to x/image/tiff")

type ifd struct {
	order binary.ByteOrder
	b     []byte
	tags  map[uint16][]float64
}

// typeSize is the byte size of the TIFF field types 1-12.
var typeSize = [13]int{0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8}

func decodeTIFF(b []byte, lim volume.Limits) (*volume.Volume, error) {
	v, err := decodeOwnTIFF(b, lim)
	if errors.Is(err, errLeave) {
		return decodeLibTIFF(b, lim, err)
	}
	return v, err
}

// parseIFD reads the first image file directory's tags as numbers.
func parseIFD(b []byte) (*ifd, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%w: TIFF header", volume.ErrTruncated)
	}
	d := &ifd{b: b, tags: map[uint16][]float64{}}
	if b[0] == 'I' {
		d.order = binary.LittleEndian
	} else {
		d.order = binary.BigEndian
	}
	if d.order.Uint16(b[2:]) != 42 {
		return nil, fmt.Errorf("%w: TIFF version %d (BigTIFF is not supported)", volume.ErrFormat, d.order.Uint16(b[2:]))
	}
	off := int64(d.order.Uint32(b[4:]))
	if off < 8 || off+2 > int64(len(b)) {
		return nil, fmt.Errorf("%w: TIFF directory offset %d outside the %d-byte file", volume.ErrTruncated, off, len(b))
	}
	n := int64(d.order.Uint16(b[off:]))
	if off+2+12*n > int64(len(b)) {
		return nil, fmt.Errorf("%w: TIFF directory of %d entries", volume.ErrTruncated, n)
	}
	for i := int64(0); i < n; i++ {
		e := b[off+2+12*i:]
		tag, typ, count := d.order.Uint16(e), d.order.Uint16(e[2:]), int64(d.order.Uint32(e[4:]))
		if typ == 0 || typ > 12 || typ == 2 || typ == 7 {
			continue // ASCII, UNDEFINED and unknown types carry nothing we read
		}
		size := int64(typeSize[typ])
		if count > 1<<24 {
			return nil, fmt.Errorf("%w: TIFF tag %d has %d values", volume.ErrFormat, tag, count)
		}
		data := e[8:12]
		if size*count > 4 {
			p := int64(d.order.Uint32(e[8:]))
			if p+size*count > int64(len(b)) {
				return nil, fmt.Errorf("%w: TIFF tag %d data beyond the end of the file", volume.ErrTruncated, tag)
			}
			data = b[p : p+size*count]
		}
		vals := make([]float64, count)
		for k := range vals {
			x := data[int64(k)*size:]
			switch typ {
			case 1:
				vals[k] = float64(x[0])
			case 6:
				vals[k] = float64(int8(x[0]))
			case 3:
				vals[k] = float64(d.order.Uint16(x))
			case 8:
				vals[k] = float64(int16(d.order.Uint16(x)))
			case 4:
				vals[k] = float64(d.order.Uint32(x))
			case 9:
				vals[k] = float64(int32(d.order.Uint32(x)))
			case 5:
				vals[k] = float64(d.order.Uint32(x)) / float64(d.order.Uint32(x[4:]))
			case 10:
				vals[k] = float64(int32(d.order.Uint32(x))) / float64(int32(d.order.Uint32(x[4:])))
			case 11:
				vals[k] = float64(math.Float32frombits(d.order.Uint32(x)))
			case 12:
				vals[k] = math.Float64frombits(d.order.Uint64(x))
			}
		}
		d.tags[tag] = vals
	}
	return d, nil
}

func (d *ifd) get(tag uint16, def float64) float64 {
	if v := d.tags[tag]; len(v) > 0 {
		return v[0]
	}
	return def
}

func (d *ifd) spacing() (sx, sy float64, ok bool) {
	x, y := d.get(tXRes, 0), d.get(tYRes, 0)
	if !(x > 0) || !(y > 0) || math.IsInf(x, 0) || math.IsInf(y, 0) {
		return 0, 0, false
	}
	switch d.get(tResUnit, 2) {
	case 2:
		return 25.4 / x, 25.4 / y, true
	case 3:
		return 10 / x, 10 / y, true
	}
	return 0, 0, false
}

func decodeOwnTIFF(b []byte, lim volume.Limits) (*volume.Volume, error) {
	d, err := parseIFD(b)
	if err != nil {
		return nil, err
	}
	w, h := int(d.get(tWidth, 0)), int(d.get(tHeight, 0))
	spp := int(d.get(tSamples, 1))
	bitsList := d.tags[tBits]
	if len(bitsList) == 0 {
		bitsList = []float64{1}
	}
	bits := int(bitsList[0])
	for _, x := range bitsList {
		if int(x) != bits {
			return nil, fmt.Errorf("%w: TIFF samples of different sizes %v", volume.ErrDType, bitsList)
		}
	}
	photo := int(d.get(tPhotometric, -1))
	comp := int(d.get(tCompression, 1))
	if photo != 1 && photo != 2 || bits < 8 {
		return nil, fmt.Errorf("%w: photometric %d, %d bits", errLeave, photo, bits)
	}
	if w <= 0 || h <= 0 || spp <= 0 || spp > 16 {
		return nil, fmt.Errorf("%w: TIFF image %d×%d with %d samples", volume.ErrFormat, w, h, spp)
	}
	planes := 1 // PlanarConfiguration 2 stores each sample in its own set of blocks
	if int(d.get(tPlanar, 1)) == 2 {
		planes = spp
	}
	sf := int(d.get(tSampleFormat, 1))
	var t volume.DType
	switch {
	case sf == 1 && bits == 8:
		t = volume.Uint8
	case sf == 2 && bits == 8:
		t = volume.Int8
	case sf == 1 && bits == 16:
		t = volume.Uint16
	case sf == 2 && bits == 16:
		t = volume.Int16
	case sf == 1 && bits == 32:
		t = volume.Uint32
	case sf == 2 && bits == 32:
		t = volume.Int32
	case sf == 3 && bits == 32:
		t = volume.Float32
	case sf == 3 && bits == 64:
		t = volume.Float64
	default:
		return nil, fmt.Errorf("%w: TIFF sample format %d with %d bits", volume.ErrDType, sf, bits)
	}
	switch comp {
	case 1, 5, 8, 32946, 32773:
	default:
		return nil, fmt.Errorf("%w: compression %d", errLeave, comp)
	}
	pred := int(d.get(tPredictor, 1))
	if pred != 1 && (pred != 2 || sf == 3) {
		return nil, fmt.Errorf("%w: TIFF predictor %d with sample format %d is not supported", volume.ErrFormat, pred, sf)
	}
	if err := lim.Check([4]int{w, h, 1, spp}, t); err != nil {
		return nil, err
	}
	es := t.Size()
	px := es * spp       // bytes per pixel in the image
	bpx := px / planes   // bytes per pixel in a block
	bspp := spp / planes // samples per pixel in a block
	// Blocks: strips are tiles as wide as the image.
	tw, tl := w, int(d.get(tRowsPerStrip, float64(h)))
	offs, counts := d.tags[tStripOffsets], d.tags[tStripCounts]
	_, tiled := d.tags[tTileWidth]
	if tiled {
		tw, tl = int(d.get(tTileWidth, 0)), int(d.get(tTileLength, 0))
		offs, counts = d.tags[tTileOffsets], d.tags[tTileCounts]
	}
	if tl > h && !tiled || tl <= 0 {
		tl = h
	}
	// A block may overhang the image (tiles are multiples of 16), but not by much.
	if tw <= 0 || int64(tw)*int64(tl)*int64(px) > max(4*int64(w)*int64(h)*int64(px), 1<<20) {
		return nil, fmt.Errorf("%w: TIFF blocks of %d×%d pixels", volume.ErrFormat, tw, tl)
	}
	across, down := (w+tw-1)/tw, (h+tl-1)/tl
	nb := across * down
	if len(offs) < nb*planes || len(counts) < nb*planes {
		return nil, fmt.Errorf("%w: TIFF has %d data blocks, %d needed", volume.ErrFormat, min(len(offs), len(counts)), nb*planes)
	}
	out := make([]byte, w*h*px)
	blockRow := tw * bpx
	block := make([]byte, blockRow*tl)
	for pl := 0; pl < planes; pl++ {
		for by := 0; by < down; by++ {
			for bx := 0; bx < across; bx++ {
				i := pl*nb + by*across + bx
				off, cnt := int64(offs[i]), int64(counts[i])
				if off < 0 || cnt < 0 || off+cnt > int64(len(b)) {
					return nil, fmt.Errorf("%w: TIFF data block %d at %d+%d beyond the %d-byte file", volume.ErrTruncated, i, off, cnt, len(b))
				}
				rows := tl
				if by == down-1 && !tiled {
					rows = h - by*tl // the last strip may be short
				}
				need := blockRow * rows
				if err := inflate(comp, b[off:off+cnt], block[:need]); err != nil {
					return nil, fmt.Errorf("TIFF data block %d: %w", i, err)
				}
				if pred == 2 {
					unpredict(block[:need], d.order, tw, rows, bspp, es)
				}
				x0 := bx * tw
				cols := min(tw, w-x0)
				for r := 0; r < rows && by*tl+r < h; r++ {
					y := by*tl + r
					src := block[r*blockRow : r*blockRow+cols*bpx]
					dst := out[(y*w+x0)*px:]
					if planes == 1 {
						copy(dst[:cols*px], src)
						continue
					}
					for x := 0; x < cols; x++ {
						copy(dst[x*px+pl*es:x*px+pl*es+es], src[x*es:(x+1)*es])
					}
				}
			}
		}
	}
	v := &volume.Volume{Dims: [4]int{w, h, 1, spp}, Spacing: [3]float64{1, 1, 1}, Direction: volume.Identity, Data: volume.DecodeBytes(out, t, d.order)}
	if sx, sy, ok := d.spacing(); ok {
		v.Spacing[0], v.Spacing[1] = sx, sy
	}
	return v, nil
}

// inflate decompresses one data block into dst, which it must fill exactly.
func inflate(comp int, src, dst []byte) error {
	var r io.Reader
	switch comp {
	case 1:
		if len(src) < len(dst) {
			return fmt.Errorf("%w: %d of %d bytes", volume.ErrTruncated, len(src), len(dst))
		}
		copy(dst, src)
		return nil
	case 32773:
		return unpackBits(src, dst)
	case 5:
		lr := lzw.NewReader(bytes.NewReader(src), lzw.MSB, 8)
		defer lr.Close()
		r = lr
	case 8, 32946:
		zr, err := zlib.NewReader(bytes.NewReader(src))
		if err != nil {
			return fmt.Errorf("%w: deflate: %v", volume.ErrFormat, err)
		}
		r = zr
	}
	if n, err := io.ReadFull(r, dst); err != nil {
		return fmt.Errorf("%w: decompressed %d of %d bytes: %v", volume.ErrTruncated, n, len(dst), err)
	}
	return nil
}

func unpackBits(src, dst []byte) error {
	o := 0
	for i := 0; i < len(src) && o < len(dst); {
		n := int(int8(src[i]))
		i++
		switch {
		case n >= 0:
			k := n + 1
			if i+k > len(src) || o+k > len(dst) {
				return fmt.Errorf("%w: PackBits literal run", volume.ErrTruncated)
			}
			copy(dst[o:], src[i:i+k])
			i, o = i+k, o+k
		case n != -128:
			k := 1 - n
			if i >= len(src) || o+k > len(dst) {
				return fmt.Errorf("%w: PackBits repeat run", volume.ErrTruncated)
			}
			for j := 0; j < k; j++ {
				dst[o+j] = src[i]
			}
			i, o = i+1, o+k
		}
	}
	if o < len(dst) {
		return fmt.Errorf("%w: PackBits gave %d of %d bytes", volume.ErrTruncated, o, len(dst))
	}
	return nil
}

// unpredict undoes horizontal differencing (predictor 2) on integer samples.
func unpredict(b []byte, o binary.ByteOrder, w, rows, spp, es int) {
	row := w * spp * es
	for r := 0; r < rows; r++ {
		p := b[r*row : (r+1)*row]
		for i := spp; i < w*spp; i++ {
			switch es {
			case 1:
				p[i] += p[i-spp]
			case 2:
				o.PutUint16(p[2*i:], o.Uint16(p[2*i:])+o.Uint16(p[2*(i-spp):]))
			case 4:
				o.PutUint32(p[4*i:], o.Uint32(p[4*i:])+o.Uint32(p[4*(i-spp):]))
			case 8:
				o.PutUint64(p[8*i:], o.Uint64(p[8*i:])+o.Uint64(p[8*(i-spp):]))
			}
		}
	}
}

// decodeLibTIFF decodes with golang.org/x/image/tiff what the own reader leaves.
func decodeLibTIFF(b []byte, lim volume.Limits, why error) (*volume.Volume, error) {
	cfg, err := tiff.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: TIFF (%v): %v", volume.ErrFormat, why, err)
	}
	if err := checkConfig(lim, cfg.Width, cfg.Height, volume.Uint16, 4); err != nil {
		return nil, err
	}
	img, err := tiff.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, libErr("TIFF", err)
	}
	c := 3
	switch m := img.(type) {
	case *image.Gray, *image.Gray16:
		c = 1
	case *image.Paletted:
		c = 0
	case *image.NRGBA, *image.NRGBA64:
		c = 4
	case *image.RGBA:
		if !m.Opaque() {
			c = 4
		}
	case *image.RGBA64:
		if !m.Opaque() {
			c = 4
		}
	}
	v, err := fromImage(img, c)
	if err != nil {
		return nil, err
	}
	if d, err := parseIFD(b); err == nil {
		if sx, sy, ok := d.spacing(); ok {
			v.Spacing[0], v.Spacing[1] = sx, sy
		}
	}
	return v, nil
}

// encodeTIFF writes an uncompressed TIFF.
func encodeTIFF(w *bytes.Buffer, v *volume.Volume) error { return encodeTIFFWith(w, v, 1) }

// encodeTIFFWith writes a little-endian baseline TIFF: header, pixel data in strips of
// about 64 KiB, uncompressed (comp 1) or Deflate (comp 8), then the directory.
func encodeTIFFWith(w *bytes.Buffer, v *volume.Volume, comp int) error {
	t, c := v.DType(), v.Dims[3]
	if c > 4 {
		return fmt.Errorf("%w: TIFF writer takes 1 to 4 channels, not %d", volume.ErrDType, c)
	}
	le := binary.LittleEndian
	data := volume.EncodeBytes(v.Data, le)
	wd, h := v.Dims[0], v.Dims[1]
	rowBytes := wd * c * t.Size()
	rps := max(1, min(h, (64<<10)/rowBytes))
	nStrips := (h + rps - 1) / rps
	w.Write([]byte{'I', 'I', 42, 0, 0, 0, 0, 0})
	var offs, counts []uint32
	for s := 0; s < nStrips; s++ {
		a, e := s*rps*rowBytes, min(h, (s+1)*rps)*rowBytes
		offs = append(offs, uint32(w.Len()))
		n0 := w.Len()
		if comp == 8 {
			zw := zlib.NewWriter(w)
			zw.Write(data[a:e])
			if err := zw.Close(); err != nil {
				return err
			}
		} else {
			w.Write(data[a:e])
		}
		counts = append(counts, uint32(w.Len()-n0))
	}
	if w.Len()%2 == 1 {
		w.WriteByte(0)
	}
	if int64(w.Len())+int64(8*nStrips)+1024 > math.MaxUint32 {
		return fmt.Errorf("%w: %d bytes exceed a classic TIFF's 4 GiB", volume.ErrTooLarge, w.Len())
	}
	sf := uint32(1)
	switch t {
	case volume.Int8, volume.Int16, volume.Int32:
		sf = 2
	case volume.Float32, volume.Float64:
		sf = 3
	}
	photo := uint32(1)
	if c >= 3 {
		photo = 2
	}
	type entry struct {
		tag, typ uint16
		vals     []uint32 // SHORT, LONG or RATIONAL pairs
	}
	rep := func(x uint32, n int) []uint32 {
		out := make([]uint32, n)
		for i := range out {
			out[i] = x
		}
		return out
	}
	es := []entry{
		{tWidth, 4, []uint32{uint32(wd)}},
		{tHeight, 4, []uint32{uint32(h)}},
		{tBits, 3, rep(uint32(8*t.Size()), c)},
		{tCompression, 3, []uint32{uint32(comp)}},
		{tPhotometric, 3, []uint32{photo}},
		{tStripOffsets, 4, offs},
		{tSamples, 3, []uint32{uint32(c)}},
		{tRowsPerStrip, 4, []uint32{uint32(rps)}},
		{tStripCounts, 4, counts},
	}
	if v.Spacing[0] != 1 || v.Spacing[1] != 1 {
		// Pixels per centimetre as a rational with denominator 10⁶.
		res := func(s float64) []uint32 { return []uint32{uint32(math.Min(10/s*1e6+0.5, math.MaxUint32)), 1000000} }
		es = append(es, entry{tXRes, 5, res(v.Spacing[0])}, entry{tYRes, 5, res(v.Spacing[1])})
	}
	es = append(es, entry{tPlanar, 3, []uint32{1}})
	if v.Spacing[0] != 1 || v.Spacing[1] != 1 {
		es = append(es, entry{tResUnit, 3, []uint32{3}})
	}
	if c == 2 || c == 4 {
		es = append(es, entry{tExtraSamples, 3, []uint32{2}}) // unassociated alpha
	}
	es = append(es, entry{tSampleFormat, 3, rep(sf, c)})

	// Out-of-line values go after the directory.
	dirOff := w.Len()
	extra := dirOff + 2 + 12*len(es) + 4
	var tail bytes.Buffer
	var dir bytes.Buffer
	var u16 [2]byte
	var u32 [4]byte
	le.PutUint16(u16[:], uint16(len(es)))
	dir.Write(u16[:])
	for _, e := range es {
		size := map[uint16]int{3: 2, 4: 4, 5: 8}[e.typ]
		count := len(e.vals)
		if e.typ == 5 {
			count /= 2
		}
		var val bytes.Buffer
		for _, x := range e.vals {
			if e.typ == 3 {
				le.PutUint16(u16[:], uint16(x))
				val.Write(u16[:])
			} else {
				le.PutUint32(u32[:], x)
				val.Write(u32[:])
			}
		}
		le.PutUint16(u16[:], e.tag)
		dir.Write(u16[:])
		le.PutUint16(u16[:], e.typ)
		dir.Write(u16[:])
		le.PutUint32(u32[:], uint32(count))
		dir.Write(u32[:])
		if size*count <= 4 {
			var inline [4]byte
			copy(inline[:], val.Bytes())
			dir.Write(inline[:])
			continue
		}
		le.PutUint32(u32[:], uint32(extra+tail.Len()))
		dir.Write(u32[:])
		tail.Write(val.Bytes())
		if tail.Len()%2 == 1 {
			tail.WriteByte(0)
		}
	}
	dir.Write([]byte{0, 0, 0, 0}) // no next directory
	w.Write(dir.Bytes())
	w.Write(tail.Bytes())
	out := w.Bytes()
	le.PutUint32(out[4:], uint32(dirOff))
	return nil
}

// pngChunk frames data as a PNG chunk with its CRC.
func pngChunk(typ string, data []byte) []byte {
	out := make([]byte, 8+len(data)+4)
	binary.BigEndian.PutUint32(out, uint32(len(data)))
	copy(out[4:], typ)
	copy(out[8:], data)
	binary.BigEndian.PutUint32(out[8+len(data):], crc32.ChecksumIEEE(out[4:8+len(data)]))
	return out
}
