// Package derived writes an image computed from a DICOM series (a model's enhanced image)
// as a new series of the same study: one file per slice, each the copy of its source
// instance with new pixel data, so that it keeps the source's SOP Class, patient, study,
// frame of reference, equipment context and geometry (Image Position and Orientation,
// Pixel Spacing, Slice Thickness) and lies on the same grid.
//
// Each file (Explicit VR Little Endian) changes what a derived image must (PS3.3 §C.7.6.1):
// Image Type DERIVED\SECONDARY (its other values kept: CT's AXIAL), new SOP Instance and
// Series Instance UIDs, the series number and a Series Description saying what derived
// it, a Derivation Description, and a Source Image Sequence naming the source instance
// (purpose DCM 121322 "Source image for image processing operation"). Its pixel data is
// 16-bit greyscale (MONOCHROME2): the values as they are when they are integers that 16
// bits hold (signed when any is negative), else stored in 0…65535 with a Rescale Slope
// and Intercept that give them back to about one part in 65535 of their range. The
// source's private elements and what described its own pixel data (padding, LUTs, colour
// palettes, the smallest and largest values, and, for a MONOCHROME1 source, whose values
// amid/viewer/dicom inverted, its windows; a window narrower than 1 is no window either)
// are left out; the new series' Laterality is the source's, else empty (unknown) where
// the source names no body part, which might be a paired one; the marks of lossy compression
// are kept, and added where the source's transfer syntax was lossy.
//
// Multi-frame sources (enhanced CT and MR) are refused: their frames would need a
// multi-frame object of their own. The same image, source and time give the same bytes.
package derived

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"amid/viewer/dicom"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/source"
	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// Options describe the written series. Zero fields take the defaults given.
type Options struct {
	SeriesDescription string // "AMID derived image"
	SeriesNumber      int    // 9004
	// Description is the Derivation Description: how the image was derived ("derived
	// by AMID").
	Description     string
	SoftwareVersion string // "unknown"
	// Created is the content date and time; zero: now. The UIDs derive from it, the
	// source series and the image.
	Created time.Time
}

func (o Options) withDefaults() Options {
	if o.SeriesDescription == "" {
		o.SeriesDescription = "AMID derived image"
	}
	if o.SeriesNumber == 0 {
		o.SeriesNumber = 9004
	}
	if o.Description == "" {
		o.Description = "derived by AMID"
	}
	if o.SoftwareVersion == "" {
		o.SoftwareVersion = "unknown"
	}
	if o.Created.IsZero() {
		o.Created = time.Now()
	}
	return o
}

// Name is the file name of slice k (from 0) in the written folder.
func Name(k int) string { return fmt.Sprintf("IM%04d.dcm", k+1) }

// Write writes img (on grid, the volume amid/viewer/dicom reads from the source series
// src) into dir as one file per slice (Name) and returns their paths.
func Write(dir string, img, grid *volume.Volume, src *source.Series, o Options) ([]string, error) {
	files, err := Encode(img, grid, src, o)
	if err != nil {
		return nil, fmt.Errorf("dicom: %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("dicom: %w", err)
	}
	paths := make([]string, len(files))
	for k, f := range files {
		paths[k] = filepath.Join(dir, Name(k))
		if err := dataset.WriteFile(paths[k], f); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// lossy names the lossy transfer syntaxes amid/viewer/dicom decodes, with the Lossy
// Image Compression Method each means (PS3.3 §C.7.6.1.1.5.1).
var lossy = map[string]string{
	dicom.JPEGBaseline:       "ISO_10918_1",
	dicom.JPEGExtended:       "ISO_10918_1",
	dicom.JPEGLSNearLossless: "ISO_14495_1",
	dicom.JPEG2000:           "ISO_15444_1",
}

// dropped are the source elements that described its own pixel data.
var dropped = []tag.Tag{
	tag.PlanarConfiguration, tag.PixelPaddingValue, tag.PixelPaddingRangeLimit,
	tag.SmallestImagePixelValue, tag.LargestImagePixelValue,
	tag.SmallestPixelValueInSeries, tag.LargestPixelValueInSeries,
	tag.RedPaletteColorLookupTableDescriptor, tag.GreenPaletteColorLookupTableDescriptor, tag.BluePaletteColorLookupTableDescriptor,
	tag.RedPaletteColorLookupTableData, tag.GreenPaletteColorLookupTableData, tag.BluePaletteColorLookupTableData,
	tag.PaletteColorLookupTableUID, tag.ICCProfile, tag.ModalityLUTSequence, tag.VOILUTSequence,
	tag.RescaleSlope, tag.RescaleIntercept, tag.NumberOfFrames, tag.SourceImageSequence,
	tag.DerivationCodeSequence, tag.StationName, tag.DeviceSerialNumber,
}

// Encode builds the derived series (see Write): one file per slice, in slice order.
func Encode(img, grid *volume.Volume, src *source.Series, o Options) ([]*dataset.File, error) {
	if src == nil || len(src.Instances) == 0 {
		return nil, fmt.Errorf("no source series to derive from")
	}
	if img.Dims[0] != grid.Dims[0] || img.Dims[1] != grid.Dims[1] || img.Dims[2] != grid.Dims[2] {
		return nil, fmt.Errorf("the image is %v, the source series %v", img.Dims[:3], grid.Dims[:3])
	}
	if img.Dims[3] != 1 {
		return nil, fmt.Errorf("the image has %d channels; a derived greyscale series takes 1", img.Dims[3])
	}
	if img.Dims[0] > math.MaxUint16 || img.Dims[1] > math.MaxUint16 {
		return nil, fmt.Errorf("the image's %d×%d pixels exceed DICOM's rows and columns", img.Dims[0], img.Dims[1])
	}
	bySlice, err := src.BySlice(grid)
	if err != nil {
		return nil, fmt.Errorf("the image is not on the source series' grid: %w", err)
	}
	for _, in := range bySlice {
		if in.Frame > 0 {
			return nil, fmt.Errorf("the source instance %s is a multi-frame image; a derived series is written from single-frame instances only", in.SOPInstanceUID)
		}
	}
	o = o.withDefaults()
	enc, err := encoding(img)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	h.Write(volume.EncodeBytes(img.Data, binary.LittleEndian))
	content := hex.EncodeToString(h.Sum(nil))
	created := o.Created.UTC()
	stamp := created.Format(time.RFC3339Nano)
	seriesUID := dataset.UIDFrom("derived series", src.SeriesInstanceUID, content, stamp)
	date, tm := created.Format("20060102"), created.Format("150405")
	n := img.Dims[0] * img.Dims[1]
	out := make([]*dataset.File, len(bySlice))
	for k, in := range bySlice {
		sf, err := dataset.ReadFile(in.Path, dataset.Options{StopAtPixelData: true})
		if err != nil {
			return nil, err
		}
		ds := sf.DataSet
		if frames, ok := ds.Int(tag.NumberOfFrames); ok && frames > 1 {
			return nil, fmt.Errorf("the source instance %s holds %d frames; a derived series is written from single-frame instances only", in.SOPInstanceUID, frames)
		}
		mono1 := ds.String(tag.PhotometricInterpretation) == "MONOCHROME1"
		var private []tag.Tag
		for _, e := range ds.Elements {
			if e.Tag.Group%2 == 1 {
				private = append(private, e.Tag)
			}
		}
		for _, t := range append(private, dropped...) {
			ds.Delete(t)
		}
		if mono1 || !validWindows(ds) {
			// amid/viewer/dicom inverted a MONOCHROME1 source's values, for which its
			// windows were; a width below 1 is no window (PS3.3 §C.11.2.1.2.1).
			for _, t := range []tag.Tag{tag.WindowCenter, tag.WindowWidth, tag.WindowCenterWidthExplanation, tag.VOILUTFunction} {
				ds.Delete(t)
			}
		}
		if !ds.Has(tag.Laterality) && !ds.Has(tag.ImageLaterality) && ds.String(tag.BodyPartExamined) == "" {
			// The new series' General Series module: Laterality is type 2C, needed for a
			// paired body part; when the source does not say which part, it is unknown.
			ds.Put(dataset.Text(tag.Laterality, "CS"))
		}
		if ds.Has(tag.PresentationLUTShape) {
			ds.Put(dataset.Text(tag.PresentationLUTShape, "CS", "IDENTITY"))
		}
		if method, ok := lossy[sf.TransferSyntax]; ok && ds.String(tag.LossyImageCompression) != "01" {
			ds.Put(dataset.Text(tag.LossyImageCompression, "CS", "01"))
			ds.Put(dataset.Text(tag.LossyImageCompressionMethod, "CS", method))
		}
		imageType := ds.Strings(tag.ImageType)
		for len(imageType) < 2 {
			imageType = append(imageType, "")
		}
		imageType[0], imageType[1] = "DERIVED", "SECONDARY"
		ref := in.Ref()
		ref.Put(dataset.Seq(tag.PurposeOfReferenceCodeSequence, source.PurposeSourceImage.Item()))
		for _, e := range []*dataset.Element{
			dataset.Text(tag.ImageType, "CS", imageType...),
			dataset.Text(tag.SOPInstanceUID, "UI", dataset.UIDFrom("derived instance", in.SOPInstanceUID, content, stamp)),
			dataset.Text(tag.InstanceCreationDate, "DA", date), dataset.Text(tag.InstanceCreationTime, "TM", tm),
			dataset.Text(tag.SeriesInstanceUID, "UI", seriesUID),
			dataset.IS(tag.SeriesNumber, o.SeriesNumber),
			dataset.Text(tag.SeriesDescription, "LO", dataset.Clip(o.SeriesDescription, 64)),
			dataset.Text(tag.SeriesDate, "DA", date), dataset.Text(tag.SeriesTime, "TM", tm),
			dataset.Text(tag.ContentDate, "DA", date), dataset.Text(tag.ContentTime, "TM", tm),
			dataset.Text(tag.Manufacturer, "LO", "AMID"),
			dataset.Text(tag.ManufacturerModelName, "LO", "AMID"),
			dataset.Text(tag.SoftwareVersions, "LO", dataset.Clip(o.SoftwareVersion, 64)),
			dataset.Text(tag.DerivationDescription, "ST", dataset.Clip(o.Description, 1024)),
			dataset.Seq(tag.SourceImageSequence, ref),
			dataset.US(tag.SamplesPerPixel, 1),
			dataset.Text(tag.PhotometricInterpretation, "CS", "MONOCHROME2"),
			dataset.US(tag.Rows, uint16(img.Dims[1])), dataset.US(tag.Columns, uint16(img.Dims[0])),
			dataset.US(tag.BitsAllocated, 16), dataset.US(tag.BitsStored, 16), dataset.US(tag.HighBit, 15),
			dataset.US(tag.PixelRepresentation, enc.signed),
			{Tag: tag.PixelData, VR: "OW", Value: enc.slice(img, k*n, n)},
		} {
			ds.Put(e)
		}
		if enc.rescaled || ds.String(tag.Modality) == "CT" {
			// CT images must say their rescale (PS3.3 §C.8.2.1), others where it is not
			// the identity.
			ds.Put(dataset.Text(tag.RescaleIntercept, "DS", enc.intercept))
			ds.Put(dataset.Text(tag.RescaleSlope, "DS", enc.slope))
			if !ds.Has(tag.RescaleType) && ds.String(tag.Modality) != "CT" {
				ds.Put(dataset.Text(tag.RescaleType, "LO", "US"))
			}
		}
		if !ds.Has(tag.SpecificCharacterSet) && !dataset.ASCII(o.SeriesDescription, o.Description, o.SoftwareVersion) {
			ds.Put(dataset.Text(tag.SpecificCharacterSet, "CS", "ISO_IR 192"))
		}
		out[k] = &dataset.File{TransferSyntax: dataset.ExplicitVRLittleEndian, DataSet: ds}
	}
	return out, nil
}

// values is how an image's values are stored in 16 bits.
type values struct {
	signed             uint16 // Pixel Representation
	rescaled           bool
	slope, intercept   string // as written
	scale, offset      float64
	minStore, maxStore float64
}

// encoding chooses how img's values are stored: as they are when they are integers that
// int16 or uint16 holds, else rescaled onto 0…65535.
func encoding(img *volume.Volume) (*values, error) {
	lo, hi := math.Inf(1), math.Inf(-1)
	whole := true
	for i := range img.Len() {
		v := img.AtIndex(i)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("the image holds the value %v, which DICOM pixel data cannot", v)
		}
		lo, hi = min(lo, v), max(hi, v)
		whole = whole && v == math.Trunc(v)
	}
	e := &values{slope: "1", intercept: "0", scale: 1}
	switch {
	case whole && lo >= 0 && hi <= math.MaxUint16:
		e.minStore, e.maxStore = 0, math.MaxUint16
		return e, nil
	case whole && lo >= math.MinInt16 && hi <= math.MaxInt16:
		e.signed, e.minStore, e.maxStore = 1, math.MinInt16, math.MaxInt16
		return e, nil
	}
	// v = stored·slope + intercept, with the slope and intercept as the decimal strings
	// hold them.
	e.rescaled, e.minStore, e.maxStore = true, 0, math.MaxUint16
	e.intercept = dataset.FormatDS(lo)
	slope := 1.0
	if hi > lo {
		slope = (hi - lo) / math.MaxUint16
	}
	e.slope = dataset.FormatDS(slope)
	e.offset, _ = strconv.ParseFloat(e.intercept, 64)
	e.scale, _ = strconv.ParseFloat(e.slope, 64)
	return e, nil
}

// slice encodes n values of img from index off as little-endian 16-bit stored values.
func (e *values) slice(img *volume.Volume, off, n int) []byte {
	b := make([]byte, 2*n)
	for j := range n {
		s := math.Round((img.AtIndex(off+j) - e.offset) / e.scale)
		s = min(max(s, e.minStore), e.maxStore)
		var u uint16
		if e.signed == 1 {
			u = uint16(int16(s))
		} else {
			u = uint16(s)
		}
		binary.LittleEndian.PutUint16(b[2*j:], u)
	}
	return b
}

// validWindows reports whether every VOI window of ds has a width of at least 1.
func validWindows(ds *dataset.DataSet) bool {
	for _, w := range ds.Floats(tag.WindowWidth) {
		if w < 1 {
			return false
		}
	}
	return true
}
