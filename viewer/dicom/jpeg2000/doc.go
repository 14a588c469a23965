// Package jpeg2000 decodes JPEG 2000 Part 1 codestreams (ITU-T T.800 | ISO/IEC 15444-1)
// and JP2 files into planes of int32 samples, keeping each component's precision and
// signedness. It serves the DICOM transfer syntaxes 1.2.840.10008.1.2.4.90 (lossless,
// reversible 5-3 wavelet) and 1.2.840.10008.1.2.4.91 (lossy, irreversible 9-7), in pure
// Go without cgo.
package jpeg2000
