// Package raster reads PNG, TIFF and BMP images as single-slice volumes (Z = 1) and writes
// PNG and TIFF.
//
// # Element types and channels
//
// 8-bit grey becomes uint8 with one channel, 16-bit grey uint16, RGB three uint8 channels
// (uint16 for 16-bit PNG and TIFF), RGBA four, grey with alpha two. Alpha is kept only
// when the file has it. A palette image whose colours are all opaque greys becomes one
// grey channel (the palette's grey levels, as a medical viewer shows it); any other
// palette becomes RGB, or RGBA when the palette has transparency. TIFF files may also hold
// int8, int16, uint32, int32, float32 and float64 samples (SampleFormat 2 and 3), as
// instance-label and microscopy images do.
//
// # TIFF
//
// The package's own baseline reader handles the first image of the file (later pages are
// ignored): strips or tiles, interleaved samples (PlanarConfiguration 1) of 8, 16, 32 or
// 64 bits, uncompressed, LZW, Deflate or PackBits, with or without horizontal predictor.
// golang.org/x/image/tiff, which refuses SampleFormat other than unsigned and samples over
// 16 bits, takes over for what the own reader leaves (palette, bilevel, min-is-white and
// CCITT images). The writer is the package's own: uncompressed, little-endian, one image,
// any element type, 1 to 4 channels.
//
// # Geometry
//
// Origin is 0 and direction identity. Spacing is 1 mm unless the file says otherwise, as
// ITK reads it: a PNG sCAL chunk gives the spacing in mm (ITK writes mm there whatever the
// unit byte says); pHYs is ignored, since it mostly holds a screen resolution (72 dpi in
// most of ITK's and scikit-image's example PNGs). TIFF XResolution and YResolution give
// 25.4/res mm per inch unit (the default unit) or 10/res mm per centimetre unit, and
// nothing when the unit is "none". BMP spacing is always 1. The writers store a non-unit
// spacing the same way: exactly in PNG's sCAL text, to six digits of a TIFF rational.
package raster

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/image/bmp"

	"amid/assets/fileio"
	"amid/viewer/volume"
)

// Read reads a PNG, TIFF or BMP file, recognised by its first bytes.
func Read(path string) (*volume.Volume, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("raster: %w", err)
	}
	defer f.Close()
	return Decode(f, filepath.Base(path))
}

// Decode reads a PNG, TIFF or BMP image from r; name is used in error messages only.
func Decode(r io.Reader, name string) (*volume.Volume, error) {
	return decode(r, name, volume.DefaultLimits())
}

// decode is Decode within lim.
func decode(r io.Reader, name string, lim volume.Limits) (*volume.Volume, error) {
	b, err := io.ReadAll(io.LimitReader(r, lim.Bytes+1))
	if err != nil {
		return nil, fmt.Errorf("raster: %s: %w", name, err)
	}
	var v *volume.Volume
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		v, err = decodePNG(b, lim)
	case bytes.HasPrefix(b, []byte("II*\x00")), bytes.HasPrefix(b, []byte("MM\x00*")):
		v, err = decodeTIFF(b, lim)
	case bytes.HasPrefix(b, []byte("BM")):
		v, err = decodeBMP(b, lim)
	case len(b) < 8:
		return nil, fmt.Errorf("raster: %s: %w: %d bytes are too few for an image", name, volume.ErrTruncated, len(b))
	default:
		return nil, fmt.Errorf("raster: %s: %w: not a PNG, TIFF or BMP file", name, volume.ErrFormat)
	}
	if err != nil {
		return nil, fmt.Errorf("raster: %s: %w", name, err)
	}
	if err := v.Validate(); err != nil {
		return nil, fmt.Errorf("raster: %s: %w", name, err)
	}
	return v, nil
}

// checkConfig rejects sizes beyond lim before a library decoder allocates.
func checkConfig(lim volume.Limits, w, h int, t volume.DType, c int) error {
	return lim.Check([4]int{w, h, 1, c}, t)
}

// libErr wraps an error of a library decoder, as truncation when it is one.
func libErr(format string, err error) error {
	if err == io.ErrUnexpectedEOF || err == io.EOF || strings.Contains(err.Error(), "unexpected EOF") || strings.Contains(err.Error(), "not enough pixel data") {
		return fmt.Errorf("%w: %s: %v", volume.ErrTruncated, format, err)
	}
	return fmt.Errorf("%w: %s: %v", volume.ErrFormat, format, err)
}

func decodePNG(b []byte, lim volume.Limits) (*volume.Volume, error) {
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, libErr("PNG", err)
	}
	// IHDR is the first chunk: bit depth at byte 24, colour type at byte 25.
	if len(b) < 26 {
		return nil, fmt.Errorf("%w: PNG header", volume.ErrTruncated)
	}
	depth, ctype := b[24], b[25]
	t := volume.Uint8
	if depth == 16 {
		t = volume.Uint16
	}
	c := map[byte]int{0: 1, 2: 3, 3: 4, 4: 2, 6: 4}[ctype]
	if c == 0 {
		return nil, fmt.Errorf("%w: PNG colour type %d", volume.ErrFormat, ctype)
	}
	if err := checkConfig(lim, cfg.Width, cfg.Height, t, c); err != nil {
		return nil, err
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, libErr("PNG", err)
	}
	var v *volume.Volume
	if ctype == 3 {
		v, err = fromImage(img, 0)
	} else {
		v, err = fromImage(img, c)
	}
	if err != nil {
		return nil, err
	}
	if sx, sy, ok := pngSpacing(b); ok {
		v.Spacing[0], v.Spacing[1] = sx, sy
	}
	return v, nil
}

// pngSpacing returns the spacing from an sCAL chunk, read as millimetres whatever its unit
// byte says, as ITK's PNGImageIO reads and writes it. pHYs is ignored: it mostly holds a
// screen resolution (72 dpi in most of ITK's and scikit-image's example PNGs).
func pngSpacing(b []byte) (sx, sy float64, ok bool) {
	for p := 8; p+12 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[p:]))
		typ := string(b[p+4 : p+8])
		if n < 0 || n > len(b)-p-12 || typ == "IDAT" {
			return 0, 0, false
		}
		if typ == "sCAL" && n > 1 {
			w, h, found := strings.Cut(string(b[p+9:p+8+n]), "\x00")
			x, errx := strconv.ParseFloat(w, 64)
			y, erry := strconv.ParseFloat(h, 64)
			if found && errx == nil && erry == nil && x > 0 && y > 0 && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
				return x, y, true
			}
			return 0, 0, false
		}
		p += 12 + n
	}
	return 0, 0, false
}

func decodeBMP(b []byte, lim volume.Limits) (*volume.Volume, error) {
	cfg, err := bmp.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, libErr("BMP", err)
	}
	if err := checkConfig(lim, cfg.Width, cfg.Height, volume.Uint8, 4); err != nil {
		return nil, err
	}
	img, err := bmp.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, libErr("BMP", err)
	}
	c := 3
	switch img.(type) {
	case *image.Paletted:
		c = 0
	case *image.NRGBA:
		c = 4
	}
	return fromImage(img, c)
}

// fromImage converts a decoded image to a volume with c channels taken from its
// non-premultiplied R, G, B, A (c = 1: R; 2: R, A; 3: R, G, B; 4: all). c = 0 picks grey,
// RGB or RGBA from a palette. 16-bit image types give uint16, others uint8.
func fromImage(img image.Image, c int) (*volume.Volume, error) {
	if p, ok := img.(*image.Paletted); ok && c == 0 {
		c = paletteChannels(p.Palette)
	} else if c == 0 {
		c = 4
	}
	r := img.Bounds()
	w, h := r.Dx(), r.Dy()
	wide := false
	switch img.(type) {
	case *image.Gray16, *image.RGBA64, *image.NRGBA64:
		wide = true
	}
	t := volume.Uint8
	if wide {
		t = volume.Uint16
	}
	v, err := volume.New(t, [4]int{w, h, 1, c})
	if err != nil {
		return nil, err
	}
	pick := [5][]int{nil, {0}, {0, 3}, {0, 1, 2}, {0, 1, 2, 3}}[c]
	at := pixelFunc(img)
	put := func(i int, px [4]uint16) {}
	switch d := v.Data.(type) {
	case []uint8:
		put = func(i int, px [4]uint16) {
			for k, ch := range pick {
				d[i*c+k] = uint8(px[ch] >> 8)
			}
		}
	case []uint16:
		put = func(i int, px [4]uint16) {
			for k, ch := range pick {
				d[i*c+k] = px[ch]
			}
		}
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			put(y*w+x, at(r.Min.X+x, r.Min.Y+y))
		}
	}
	return v, nil
}

// pixelFunc returns a function giving the non-premultiplied 16-bit R, G, B, A of a pixel;
// 8-bit values are scaled by 257, so that the high byte is the stored value. Colours
// under zero alpha are kept, as the file stores them.
func pixelFunc(img image.Image) func(x, y int) [4]uint16 {
	switch m := img.(type) {
	case *image.Gray:
		return func(x, y int) [4]uint16 {
			g := uint16(m.Pix[m.PixOffset(x, y)]) * 257
			return [4]uint16{g, g, g, 0xffff}
		}
	case *image.Gray16:
		return func(x, y int) [4]uint16 {
			p := m.PixOffset(x, y)
			g := uint16(m.Pix[p])<<8 | uint16(m.Pix[p+1])
			return [4]uint16{g, g, g, 0xffff}
		}
	case *image.NRGBA:
		return func(x, y int) [4]uint16 {
			p := m.Pix[m.PixOffset(x, y):]
			return [4]uint16{uint16(p[0]) * 257, uint16(p[1]) * 257, uint16(p[2]) * 257, uint16(p[3]) * 257}
		}
	case *image.RGBA:
		return func(x, y int) [4]uint16 {
			p := m.Pix[m.PixOffset(x, y):]
			if p[3] == 255 {
				return [4]uint16{uint16(p[0]) * 257, uint16(p[1]) * 257, uint16(p[2]) * 257, 0xffff}
			}
			return nrgba64(color.RGBA{p[0], p[1], p[2], p[3]})
		}
	case *image.NRGBA64:
		return func(x, y int) [4]uint16 {
			p := m.Pix[m.PixOffset(x, y):]
			return [4]uint16{uint16(p[0])<<8 | uint16(p[1]), uint16(p[2])<<8 | uint16(p[3]), uint16(p[4])<<8 | uint16(p[5]), uint16(p[6])<<8 | uint16(p[7])}
		}
	case *image.Paletted:
		pal := make([][4]uint16, 256)
		for i, col := range m.Palette {
			pal[i] = nrgba64(col)
		}
		return func(x, y int) [4]uint16 { return pal[m.Pix[m.PixOffset(x, y)]] }
	}
	return func(x, y int) [4]uint16 { return nrgba64(img.At(x, y)) }
}

// nrgba64 converts a colour to non-premultiplied 16-bit components, exactly for the
// non-premultiplied colour types.
func nrgba64(col color.Color) [4]uint16 {
	switch n := col.(type) {
	case color.NRGBA:
		return [4]uint16{uint16(n.R) * 257, uint16(n.G) * 257, uint16(n.B) * 257, uint16(n.A) * 257}
	case color.NRGBA64:
		return [4]uint16{n.R, n.G, n.B, n.A}
	}
	r, g, b, a := col.RGBA()
	if a == 0 || a == 0xffff {
		return [4]uint16{uint16(r), uint16(g), uint16(b), uint16(a)}
	}
	un := func(x uint32) uint16 { return uint16(x * 0xffff / a) }
	return [4]uint16{un(r), un(g), un(b), uint16(a)}
}

// paletteChannels is 1 for a palette of opaque greys, 4 when any colour is transparent, 3
// otherwise.
func paletteChannels(p color.Palette) int {
	grey, alpha := true, false
	for _, col := range p {
		n := color.NRGBAModel.Convert(col).(color.NRGBA)
		if n.A != 255 {
			alpha = true
		}
		if n.R != n.G || n.G != n.B {
			grey = false
		}
	}
	switch {
	case alpha:
		return 4
	case grey:
		return 1
	}
	return 3
}

// Options control WriteWith.
type Options struct {
	// Compress writes TIFF strips Deflate-compressed (PNG is always compressed).
	Compress bool
}

// Write writes v (Z = 1) as PNG or TIFF, chosen by path's extension (.png, .tif, .tiff);
// TIFF uncompressed. PNG takes uint8 or uint16 with 1, 3 or 4 channels; TIFF any element
// type with 1 to 4 channels. Origin and direction are not stored: neither format holds
// them.
func Write(path string, v *volume.Volume) error { return WriteWith(path, v, Options{}) }

// WriteWith is Write with options.
func WriteWith(path string, v *volume.Volume, o Options) error {
	name := filepath.Base(path)
	if err := v.Validate(); err != nil {
		return fmt.Errorf("raster: %s: %w", name, err)
	}
	if v.Dims[2] != 1 {
		return fmt.Errorf("raster: %s: %w: %d slices; PNG and TIFF hold one (Z = 1)", name, volume.ErrGeometry, v.Dims[2])
	}
	var buf bytes.Buffer
	var err error
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".png":
		err = encodePNG(&buf, v)
	case ".tif", ".tiff":
		comp := 1
		if o.Compress {
			comp = 8
		}
		err = encodeTIFFWith(&buf, v, comp)
	default:
		return fmt.Errorf("raster: %s: writing %q files is not supported (.png, .tif, .tiff)", name, ext)
	}
	if err != nil {
		return fmt.Errorf("raster: %s: %w", name, err)
	}
	return writeFile(path, buf.Bytes())
}

func encodePNG(w *bytes.Buffer, v *volume.Volume) error {
	t, c := v.DType(), v.Dims[3]
	if (t != volume.Uint8 && t != volume.Uint16) || (c != 1 && c != 3 && c != 4) {
		return fmt.Errorf("%w: PNG holds uint8 or uint16 with 1, 3 or 4 channels, not %v with %d", volume.ErrDType, t, c)
	}
	wd, h := v.Dims[0], v.Dims[1]
	r := image.Rect(0, 0, wd, h)
	var img image.Image
	switch d := v.Data.(type) {
	case []uint8:
		switch c {
		case 1:
			img = &image.Gray{Pix: d, Stride: wd, Rect: r}
		case 3:
			n := image.NewNRGBA(r)
			for i := 0; i < wd*h; i++ {
				copy(n.Pix[4*i:4*i+3], d[3*i:3*i+3])
				n.Pix[4*i+3] = 255
			}
			img = n
		case 4:
			img = &image.NRGBA{Pix: d, Stride: 4 * wd, Rect: r}
		}
	case []uint16:
		n := image.NewNRGBA64(r)
		g := image.NewGray16(r)
		for i := 0; i < wd*h; i++ {
			if c == 1 {
				g.Pix[2*i], g.Pix[2*i+1] = byte(d[i]>>8), byte(d[i])
				continue
			}
			for k := 0; k < 4; k++ {
				x := uint16(0xffff)
				if k < c {
					x = d[c*i+k]
				}
				n.Pix[8*i+2*k], n.Pix[8*i+2*k+1] = byte(x>>8), byte(x)
			}
		}
		img = n
		if c == 1 {
			img = g
		}
	}
	var out bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.DefaultCompression}).Encode(&out, img); err != nil {
		return err
	}
	b := out.Bytes()
	if v.Spacing[0] != 1 || v.Spacing[1] != 1 {
		// Insert sCAL after IHDR (8-byte signature + 25-byte IHDR chunk).
		w.Write(b[:33])
		w.Write(pngChunk("sCAL", scalData(v.Spacing[0], v.Spacing[1])))
		w.Write(b[33:])
		return nil
	}
	w.Write(b)
	return nil
}

// scalData is an sCAL chunk's payload: unit 1 and the spacing in mm, as ITK writes it.
func scalData(sx, sy float64) []byte {
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	return []byte("\x01" + num(sx) + "\x00" + num(sy))
}

// writeFile writes the parts to path atomically, with the package's error prefix.
func writeFile(path string, parts ...[]byte) error {
	if err := fileio.Write(path, parts...); err != nil {
		return fmt.Errorf("raster: %w", err)
	}
	return nil
}
