// Package seg reads and writes DICOM Segmentation objects (SEG, PS3.3 §A.51 and §C.8.20)
// and turns them into label maps and back.
//
// # Reading
//
// [Read] and [Decode] take binary and fractional segmentations with one or many segments,
// in any native transfer syntax (amid/viewer/dicom/dataset; compressed pixel data is
// refused with an error naming the syntax). Each frame belongs to one segment (Segment
// Identification, per frame or shared) and is placed on an image grid by
// [Segmentation.LabelMap]: by the source image it was derived from (the Derivation Image
// Sequence of its per-frame functional groups, looked up in the source series read with
// amid/viewer/dicom/source), else by its own Image Position (Patient) (Plane Position),
// which is how frames that name no source, or name one that is not at hand, are placed.
// When both are known they must agree. The segmentation's rows, columns, pixel spacing
// and orientation must be the image's: frames are placed, never resampled.
//
// A binary segment covers the voxels whose bit is set; a fractional one (probability or
// occupancy) the voxels whose value is at least half of Maximum Fractional Value. Where
// segments overlap, the voxel takes the highest label value among them (a lesion inside
// an organ keeps the lesion's label when the lesion has the higher value, as in most
// tasks' label tables). [Segmentation.Grid] builds a grid from the frames alone, for a
// segmentation whose image is not at hand.
//
// # Writing
//
// [Encode] and [Write] write a label map as a binary segmentation (SOP Class
// Segmentation Storage 1.2.840.10008.5.1.4.1.1.66.4, Explicit VR Little Endian
// 1.2.840.10008.1.2.1, uncompressed: every archive and viewer reads it, and 1-bit frames
// are small): one segment per label with the label's name and codes, and one frame per
// segment and slice that holds any of it, so empty slices take no room. A label map with
// no foreground at all gets one empty frame, since a segmentation needs at least one.
// Each frame names its source image (SOP Class and Instance UID) in its Derivation Image
// Sequence, and the object copies the source series' patient, study and frame of
// reference, references the series in the Referenced Series Sequence, and belongs to the
// same study, so that it goes back to the archive beside its images.
package seg

import (
	"errors"
	"fmt"
	"strings"

	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/source"
	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// ErrUnsupported marks a valid segmentation this package does not read (compressed pixel
// data, or a labelmap segmentation).
var ErrUnsupported = errors.New("unsupported segmentation")

// Code is a coded concept: one item of a DICOM code sequence (dataset.Code, which the
// other derived objects share).
type Code = dataset.Code

// Segment is one segment of a segmentation.
type Segment struct {
	Number        int
	Label         string
	Description   string
	Category      Code // Segmented Property Category
	Type          Code // Segmented Property Type
	AlgorithmType string
	AlgorithmName string
}

// Ref is a source image a frame was derived from.
type Ref struct {
	UID   string
	Frame int // 1-based frame of a multi-frame source; 0 when not given
}

// Frame is one frame of a segmentation.
type Frame struct {
	Segment     int
	Position    [3]float64
	HasPosition bool
	Sources     []Ref
}

// Segmentation is a parsed SEG object. Its pixel data stays packed until frames are
// placed.
type Segmentation struct {
	Type                 string // BINARY or FRACTIONAL
	FractionalType       string // PROBABILITY or OCCUPANCY
	MaxFractional        int
	Rows, Columns        int
	Orientation          [6]float64
	HasOrientation       bool
	PixelSpacing         [2]float64 // between rows (Y), then between columns (X), mm
	HasSpacing           bool
	SliceThickness       float64
	SpacingBetweenSlices float64
	StudyInstanceUID     string
	SeriesInstanceUID    string
	SOPInstanceUID       string
	FrameOfReferenceUID  string
	ReferencedSeriesUID  string
	Segments             []Segment
	Frames               []Frame

	bits   int    // 1 or 8
	pixels []byte // the packed pixel data
}

// Read reads the segmentation at path. Errors name the file.
func Read(path string) (*Segmentation, error) { return dataset.ReadAs(path, FromDataSet) }

// Decode parses the bytes of a segmentation file.
func Decode(b []byte) (*Segmentation, error) { return dataset.DecodeAs(b, FromDataSet) }

// IsSegmentation reports whether a parsed file is a segmentation.
func IsSegmentation(f *dataset.File) bool {
	return f.DataSet.String(tag.SOPClassUID) == source.SegmentationStorage
}

// maxFrames bounds the number of frames (a guard for the per-frame bookkeeping; real
// segmentations have a few thousand at most).
const maxFrames = 1 << 20

// FromDataSet reads a segmentation from a parsed file.
func FromDataSet(f *dataset.File) (*Segmentation, error) {
	ds := f.DataSet
	if !IsSegmentation(f) && ds.String(tag.Modality) != "SEG" {
		return nil, fmt.Errorf("%w: not a segmentation (SOP Class %s, modality %q)", volume.ErrFormat, ds.String(tag.SOPClassUID), ds.String(tag.Modality))
	}
	s := &Segmentation{
		Type:                strings.ToUpper(ds.String(tag.SegmentationType)),
		FractionalType:      ds.String(tag.SegmentationFractionalType),
		StudyInstanceUID:    ds.String(tag.StudyInstanceUID),
		SeriesInstanceUID:   ds.String(tag.SeriesInstanceUID),
		SOPInstanceUID:      ds.String(tag.SOPInstanceUID),
		FrameOfReferenceUID: ds.String(tag.FrameOfReferenceUID),
		ReferencedSeriesUID: ds.Item(tag.ReferencedSeriesSequence).String(tag.SeriesInstanceUID),
	}
	if s.ReferencedSeriesUID == "" {
		s.ReferencedSeriesUID = ds.Item(tag.StudiesContainingOtherReferencedInstancesSequence).Item(tag.ReferencedSeriesSequence).String(tag.SeriesInstanceUID)
	}
	var ok bool
	s.Rows, _ = ds.Int(tag.Rows)
	s.Columns, _ = ds.Int(tag.Columns)
	s.bits, _ = ds.Int(tag.BitsAllocated)
	frames := 1
	if n, has := ds.Int(tag.NumberOfFrames); has {
		frames = n
	}
	switch {
	case s.Rows <= 0 || s.Columns <= 0:
		return nil, fmt.Errorf("%w: the segmentation has %d rows and %d columns", volume.ErrFormat, s.Rows, s.Columns)
	case frames <= 0 || frames > maxFrames:
		return nil, fmt.Errorf("%w: the segmentation has %d frames", volume.ErrFormat, frames)
	case s.Type == "LABELMAP":
		return nil, fmt.Errorf("%w: labelmap segmentations (Segmentation Type LABELMAP) are not read", ErrUnsupported)
	case s.Type != "BINARY" && s.Type != "FRACTIONAL":
		return nil, fmt.Errorf("%w: Segmentation Type %q is not BINARY or FRACTIONAL", volume.ErrFormat, s.Type)
	case s.Type == "BINARY" && s.bits != 1:
		return nil, fmt.Errorf("%w: a binary segmentation with %d bits allocated (1 expected)", volume.ErrFormat, s.bits)
	case s.Type == "FRACTIONAL" && s.bits != 8:
		return nil, fmt.Errorf("%w: a fractional segmentation with %d bits allocated (8 expected)", volume.ErrFormat, s.bits)
	}
	if spp, has := ds.Int(tag.SamplesPerPixel); has && spp != 1 {
		return nil, fmt.Errorf("%w: %d samples per pixel", volume.ErrFormat, spp)
	}
	if s.Type == "FRACTIONAL" {
		if s.MaxFractional, ok = ds.Int(tag.MaximumFractionalValue); !ok || s.MaxFractional < 1 || s.MaxFractional > 255 {
			return nil, fmt.Errorf("%w: Maximum Fractional Value %d is not in 1…255", volume.ErrFormat, s.MaxFractional)
		}
	}
	px := ds.Get(tag.PixelData)
	if px == nil {
		return nil, fmt.Errorf("%w: no pixel data", volume.ErrFormat)
	}
	if px.Encapsulated {
		return nil, fmt.Errorf("%w: compressed pixel data (transfer syntax %s); decompress it first, e.g. with gdcmconv --raw", ErrUnsupported, f.TransferSyntax)
	}
	need := (int64(s.Rows)*int64(s.Columns)*int64(frames)*int64(s.bits) + 7) / 8
	if int64(len(px.Value)) < need {
		return nil, fmt.Errorf("%w: the pixel data holds %d bytes, %d frames of %d×%d at %d bits need %d",
			volume.ErrTruncated, len(px.Value), frames, s.Columns, s.Rows, s.bits, need)
	}
	s.pixels = px.Value[:need]
	for i, it := range ds.Items(tag.SegmentSequence) {
		n, ok := it.Int(tag.SegmentNumber)
		if !ok {
			return nil, fmt.Errorf("%w: segment item %d has no Segment Number", volume.ErrFormat, i+1)
		}
		s.Segments = append(s.Segments, Segment{
			Number: n, Label: it.String(tag.SegmentLabel), Description: it.String(tag.SegmentDescription),
			Category: dataset.CodeOf(it.Item(tag.SegmentedPropertyCategoryCodeSequence)), Type: dataset.CodeOf(it.Item(tag.SegmentedPropertyTypeCodeSequence)),
			AlgorithmType: it.String(tag.SegmentAlgorithmType), AlgorithmName: it.String(tag.SegmentAlgorithmName),
		})
	}
	if len(s.Segments) == 0 {
		return nil, fmt.Errorf("%w: the Segment Sequence is empty", volume.ErrFormat)
	}
	s.geometry(ds)
	return s, s.frames(ds, frames)
}

// geometry reads the in-plane geometry from the shared functional groups (or the top
// level, as some writers put it).
func (s *Segmentation) geometry(ds *dataset.DataSet) {
	shared := ds.Item(tag.SharedFunctionalGroupsSequence)
	for _, src := range []*dataset.DataSet{ds, shared.Item(tag.PlaneOrientationSequence)} {
		if o := src.Floats(tag.ImageOrientationPatient); len(o) == 6 {
			copy(s.Orientation[:], o)
			s.HasOrientation = true
		}
	}
	for _, src := range []*dataset.DataSet{ds, shared.Item(tag.PixelMeasuresSequence)} {
		if p := src.Floats(tag.PixelSpacing); len(p) == 2 && p[0] > 0 && p[1] > 0 {
			s.PixelSpacing, s.HasSpacing = [2]float64{p[0], p[1]}, true
		}
		if t, ok := src.Float(tag.SliceThickness); ok && t > 0 {
			s.SliceThickness = t
		}
		if b, ok := src.Float(tag.SpacingBetweenSlices); ok && b > 0 {
			s.SpacingBetweenSlices = b
		}
	}
}

// frames reads each frame's segment, position and sources.
func (s *Segmentation) frames(ds *dataset.DataSet, n int) error {
	shared := ds.Item(tag.SharedFunctionalGroupsSequence)
	per := ds.Items(tag.PerFrameFunctionalGroupsSequence)
	if len(per) > 0 && len(per) < n {
		return fmt.Errorf("%w: %d per-frame functional group items for %d frames", volume.ErrFormat, len(per), n)
	}
	sharedSeg, hasShared := shared.Item(tag.SegmentIdentificationSequence).Int(tag.ReferencedSegmentNumber)
	sharedSrc := sources(shared)
	if len(sharedSrc) != 1 {
		// A shared Derivation Image Sequence that lists the whole series says nothing
		// about which image each frame comes from.
		sharedSrc = nil
	}
	known := map[int]bool{}
	for _, sg := range s.Segments {
		known[sg.Number] = true
	}
	s.Frames = make([]Frame, n)
	for i := range s.Frames {
		fr := &s.Frames[i]
		item := &dataset.DataSet{}
		if len(per) > 0 {
			item = per[i]
		}
		seg, ok := item.Item(tag.SegmentIdentificationSequence).Int(tag.ReferencedSegmentNumber)
		if !ok {
			seg, ok = sharedSeg, hasShared
		}
		if !ok && len(s.Segments) == 1 {
			seg, ok = s.Segments[0].Number, true
		}
		if !ok {
			return fmt.Errorf("%w: frame %d names no segment", volume.ErrFormat, i+1)
		}
		if !known[seg] {
			return fmt.Errorf("%w: frame %d belongs to segment %d, which the Segment Sequence does not describe", volume.ErrFormat, i+1, seg)
		}
		fr.Segment = seg
		pos := item.Item(tag.PlanePositionSequence).Floats(tag.ImagePositionPatient)
		if len(pos) != 3 {
			pos = shared.Item(tag.PlanePositionSequence).Floats(tag.ImagePositionPatient)
		}
		if len(pos) == 3 {
			fr.Position, fr.HasPosition = [3]float64{pos[0], pos[1], pos[2]}, true
		}
		fr.Sources = sources(item)
		if len(fr.Sources) == 0 {
			fr.Sources = sharedSrc
		}
	}
	return nil
}

// sources lists the source images of a functional groups item.
func sources(item *dataset.DataSet) []Ref {
	var out []Ref
	for _, d := range item.Items(tag.DerivationImageSequence) {
		for _, si := range d.Items(tag.SourceImageSequence) {
			r := Ref{UID: si.String(tag.ReferencedSOPInstanceUID)}
			if r.UID == "" {
				continue
			}
			r.Frame, _ = si.Int(tag.ReferencedFrameNumber)
			out = append(out, r)
		}
	}
	return out
}

// Segment returns the segment with number n.
func (s *Segmentation) Segment(n int) (Segment, bool) {
	for _, sg := range s.Segments {
		if sg.Number == n {
			return sg, true
		}
	}
	return Segment{}, false
}

// covered writes into dst (Rows×Columns) whether frame i covers each pixel.
func (s *Segmentation) covered(i int, dst []bool) {
	n := s.Rows * s.Columns
	if s.bits == 1 {
		// Frames of 1-bit data follow each other bit by bit, not byte-aligned (PS3.5
		// §8.1.1), the first pixel in the lowest bit.
		start := i * n
		for j := range n {
			b := start + j
			dst[j] = s.pixels[b>>3]>>(b&7)&1 != 0
		}
		return
	}
	px := s.pixels[i*n : (i+1)*n]
	for j, v := range px {
		dst[j] = 2*int(v) >= s.MaxFractional
	}
}
