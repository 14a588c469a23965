package seg

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/source"
	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// Label describes one label value of a label map as a segment.
type Label struct {
	Value    int
	Name     string
	Category Code // zero: DefaultCategory
	Type     Code // zero: OwnCode(Value, Name)
}

// DefaultCategory is the Segmented Property Category of a label without one: SNOMED CT
// 85756007 "Tissue" (the category dcmqi and 3D Slicer use by default).
var DefaultCategory = Code{Value: "85756007", Scheme: "SCT", Meaning: "Tissue"}

// OwnCode is the Segmented Property Type of a label the task gives no code for: the label
// value in AMID's private coding scheme (PS3.16 §8.2: private scheme designators begin
// with "99"), with the label's name as meaning.
func OwnCode(value int, name string) Code {
	return Code{Value: strconv.Itoa(value), Scheme: "99AMID", Meaning: name}
}

// Options describe the written object. Zero fields take the defaults given.
type Options struct {
	SeriesDescription string // "AMID segmentation"
	SeriesNumber      int    // 9001
	Algorithm         string // Segment Algorithm Name: "AMID"
	SoftwareVersion   string // "unknown"
	// Corrected marks a segmentation a reader corrected by hand: its Segment Algorithm
	// Type is SEMIAUTOMATIC (the algorithm's, then the reader's), else AUTOMATIC.
	Corrected bool
	// Created is the content date and time; zero: now. The SOP Instance and Series
	// Instance UIDs derive from it, the source series and the label map, so the same
	// inputs give the same object.
	Created time.Time
}

// Write writes the label map lab (on the grid of the source series src: the volume
// amid/viewer/dicom reads from it) as a binary segmentation at path.
func Write(path string, lab *volume.Volume, src *source.Series, labels []Label, o Options) error {
	f, err := Encode(lab, src, labels, o)
	if err != nil {
		return fmt.Errorf("dicom: %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("dicom: %w", err)
	}
	return dataset.WriteFile(path, f)
}

// Encode builds the segmentation of label map lab (see Write).
func Encode(lab *volume.Volume, src *source.Series, labels []Label, o Options) (*dataset.File, error) {
	if src == nil || src.Header == nil {
		return nil, fmt.Errorf("no source series to reference")
	}
	if lab.Dims[3] != 1 || !lab.DType().IsInteger() {
		return nil, fmt.Errorf("the label map must be an integer image with one channel, not %s with %d", lab.DType(), lab.Dims[3])
	}
	bySlice, err := src.BySlice(lab)
	if err != nil {
		return nil, fmt.Errorf("the label map is not on the source series' grid: %w", err)
	}
	o = o.withDefaults()
	segNo := map[int]int{} // label value → segment number
	var segs []*dataset.DataSet
	for i, l := range labels {
		if l.Value <= 0 {
			return nil, fmt.Errorf("label %q has value %d; segments are for values above 0", l.Name, l.Value)
		}
		if _, dup := segNo[l.Value]; dup {
			return nil, fmt.Errorf("label value %d is given twice", l.Value)
		}
		segNo[l.Value] = i + 1
		segs = append(segs, segmentItem(i+1, l, o))
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("no labels to write as segments")
	}
	nx, ny, nz := lab.Dims[0], lab.Dims[1], lab.Dims[2]
	n := nx * ny
	// Which (segment, slice) pairs hold foreground.
	type frame struct{ seg, k int }
	var frames []frame
	present := map[frame]bool{}
	for k := range nz {
		for j := range n {
			v := int(lab.AtIndex(k*n + j))
			if v == 0 {
				continue
			}
			s, ok := segNo[v]
			if !ok {
				return nil, fmt.Errorf("the label map holds the value %d, which is not among the labels", v)
			}
			if f := (frame{s, k}); !present[f] {
				present[f] = true
				frames = append(frames, f)
			}
		}
	}
	empty := len(frames) == 0
	if empty {
		// A segmentation needs one frame: an empty one of the first segment.
		frames = []frame{{1, 0}}
	}
	sort.Slice(frames, func(a, b int) bool {
		if frames[a].seg != frames[b].seg {
			return frames[a].seg < frames[b].seg
		}
		return frames[a].k < frames[b].k
	})
	index := make(map[frame]int, len(frames))
	for i, f := range frames {
		index[f] = i
	}
	bits := make([]byte, (len(frames)*n+7)/8)
	if !empty {
		// One pass over the voxels: each sets its bit in its segment's frame of its slice.
		for k := range nz {
			for j := range n {
				v := int(lab.AtIndex(k*n + j))
				if v == 0 {
					continue
				}
				b := index[frame{segNo[v], k}]*n + j
				bits[b>>3] |= 1 << (b & 7)
			}
		}
	}
	perFrame := make([]*dataset.DataSet, len(frames))
	for i, f := range frames {
		in := bySlice[f.k]
		ref := in.Ref()
		ref.Put(dataset.Seq(tag.PurposeOfReferenceCodeSequence, source.PurposeSourceImage.Item()))
		pos := in.Position
		if !in.HasPosition {
			pos = lab.VoxelToWorld([3]float64{0, 0, float64(f.k)})
		}
		perFrame[i] = dataset.New(
			dataset.Seq(tag.DerivationImageSequence, dataset.New(
				dataset.Seq(tag.SourceImageSequence, ref),
				dataset.Seq(tag.DerivationCodeSequence, Code{Value: "113076", Scheme: "DCM", Meaning: "Segmentation"}.Item()),
			)),
			dataset.Seq(tag.FrameContentSequence, dataset.New(dataset.UL(tag.DimensionIndexValues, uint32(f.seg), uint32(f.k+1)))),
			dataset.Seq(tag.PlanePositionSequence, dataset.New(dataset.DS(tag.ImagePositionPatient, pos[:]...))),
			dataset.Seq(tag.SegmentIdentificationSequence, dataset.New(dataset.US(tag.ReferencedSegmentNumber, uint16(f.seg)))),
		)
	}
	h := sha256.New()
	h.Write(volume.EncodeBytes(lab.Data, binary.LittleEndian))
	content := hex.EncodeToString(h.Sum(nil))
	created := o.Created.UTC()
	stamp := created.Format(time.RFC3339Nano)
	sopUID := dataset.UIDFrom("seg instance", src.SeriesInstanceUID, content, stamp)
	seriesUID := dataset.UIDFrom("seg series", src.SeriesInstanceUID, content, stamp)
	date, tm := created.Format("20060102"), created.Format("150405")
	d := lab.Direction
	thickness, ok := src.Header.Float(tag.SliceThickness)
	if !ok || thickness <= 0 {
		thickness = lab.Spacing[2]
	}
	ds := dataset.New(
		dataset.Text(tag.SOPClassUID, "UI", source.SegmentationStorage),
		dataset.Text(tag.SOPInstanceUID, "UI", sopUID),
		dataset.Text(tag.InstanceCreationDate, "DA", date), dataset.Text(tag.InstanceCreationTime, "TM", tm),
		dataset.Text(tag.Modality, "CS", "SEG"),
		dataset.Text(tag.SeriesInstanceUID, "UI", seriesUID),
		dataset.IS(tag.SeriesNumber, o.SeriesNumber),
		dataset.Text(tag.SeriesDescription, "LO", o.SeriesDescription),
		dataset.Text(tag.SeriesDate, "DA", date), dataset.Text(tag.SeriesTime, "TM", tm),
		dataset.Text(tag.Manufacturer, "LO", "AMID"),
		dataset.Text(tag.ManufacturerModelName, "LO", "AMID"),
		dataset.Text(tag.DeviceSerialNumber, "LO", "1"),
		dataset.Text(tag.SoftwareVersions, "LO", o.SoftwareVersion),
		dataset.IS(tag.InstanceNumber, 1),
		dataset.Text(tag.ContentDate, "DA", date), dataset.Text(tag.ContentTime, "TM", tm),
		dataset.Text(tag.ImageType, "CS", "DERIVED", "PRIMARY"),
		dataset.Text(tag.ContentLabel, "CS", "AMID"),
		dataset.Text(tag.ContentDescription, "LO", o.SeriesDescription),
		dataset.Text(tag.ContentCreatorName, "PN"),
		dataset.Text(tag.SegmentationType, "CS", "BINARY"),
		dataset.Seq(tag.SegmentSequence, segs...),
		dataset.US(tag.SamplesPerPixel, 1),
		dataset.Text(tag.PhotometricInterpretation, "CS", "MONOCHROME2"),
		dataset.US(tag.Rows, uint16(ny)), dataset.US(tag.Columns, uint16(nx)),
		dataset.US(tag.BitsAllocated, 1), dataset.US(tag.BitsStored, 1), dataset.US(tag.HighBit, 0),
		dataset.US(tag.PixelRepresentation, 0),
		dataset.Text(tag.LossyImageCompression, "CS", "00"),
		dataset.IS(tag.NumberOfFrames, len(frames)),
		dataset.Seq(tag.DimensionOrganizationSequence, dataset.New(dataset.Text(tag.DimensionOrganizationUID, "UI", dataset.UIDFrom("seg dimensions", sopUID)))),
		dataset.Seq(tag.DimensionIndexSequence,
			dimension(sopUID, tag.ReferencedSegmentNumber, tag.SegmentIdentificationSequence, "ReferencedSegmentNumber"),
			dimension(sopUID, tag.ImagePositionPatient, tag.PlanePositionSequence, "ImagePositionPatient")),
		dataset.Seq(tag.SharedFunctionalGroupsSequence, dataset.New(
			dataset.Seq(tag.PlaneOrientationSequence, dataset.New(dataset.DS(tag.ImageOrientationPatient, d[0], d[3], d[6], d[1], d[4], d[7]))),
			dataset.Seq(tag.PixelMeasuresSequence, dataset.New(
				dataset.DS(tag.PixelSpacing, lab.Spacing[1], lab.Spacing[0]),
				dataset.DS(tag.SliceThickness, thickness),
				dataset.DS(tag.SpacingBetweenSlices, lab.Spacing[2]))),
		)),
		dataset.Seq(tag.PerFrameFunctionalGroupsSequence, perFrame...),
		dataset.Seq(tag.ReferencedSeriesSequence, dataset.New(
			dataset.Text(tag.SeriesInstanceUID, "UI", src.SeriesInstanceUID),
			dataset.Seq(tag.ReferencedInstanceSequence, src.Referenced()...))),
		&dataset.Element{Tag: tag.PixelData, VR: "OB", Value: bits},
	)
	src.CopyPatientStudy(ds)
	if usesOwnCodes(labels) {
		// Declare the private coding scheme (PS3.3 §C.12.1.1.5).
		ds.Put(dataset.Seq(tag.CodingSchemeIdentificationSequence, dataset.New(
			dataset.Text(tag.CodingSchemeDesignator, "SH", "99AMID"),
			dataset.Text(tag.CodingSchemeName, "ST", "AMID task label values"),
			dataset.Text(tag.CodingSchemeResponsibleOrganization, "ST", "AMID"))))
	}
	if !ds.Has(tag.FrameOfReferenceUID) {
		return nil, fmt.Errorf("the source series %s has no Frame of Reference UID", src.SeriesInstanceUID)
	}
	if !ds.Has(tag.SpecificCharacterSet) && !ascii(labels, o) {
		ds.Put(dataset.Text(tag.SpecificCharacterSet, "CS", "ISO_IR 192"))
	}
	return &dataset.File{TransferSyntax: dataset.ExplicitVRLittleEndian, DataSet: ds}, nil
}

func (o Options) withDefaults() Options {
	if o.SeriesDescription == "" {
		o.SeriesDescription = "AMID segmentation"
	}
	if o.SeriesNumber == 0 {
		o.SeriesNumber = 9001
	}
	if o.Algorithm == "" {
		o.Algorithm = "AMID"
	}
	if o.SoftwareVersion == "" {
		o.SoftwareVersion = "unknown"
	}
	if o.Created.IsZero() {
		o.Created = time.Now()
	}
	return o
}

// segmentItem is one item of the Segment Sequence.
func segmentItem(n int, l Label, o Options) *dataset.DataSet {
	cat, typ := l.Category, l.Type
	if cat.IsZero() {
		cat = DefaultCategory
	}
	if typ.IsZero() {
		typ = OwnCode(l.Value, l.Name)
	}
	kind := "AUTOMATIC"
	if o.Corrected {
		kind = "SEMIAUTOMATIC"
	}
	if typ.Meaning == "" {
		typ.Meaning = l.Name
	}
	name := l.Name
	if name == "" {
		name = typ.Meaning
	}
	return dataset.New(
		dataset.US(tag.SegmentNumber, uint16(n)),
		dataset.Text(tag.SegmentLabel, "LO", dataset.Clip(name, 64)),
		dataset.Seq(tag.SegmentedPropertyCategoryCodeSequence, cat.Item()),
		dataset.Seq(tag.SegmentedPropertyTypeCodeSequence, typ.Item()),
		dataset.Text(tag.SegmentAlgorithmType, "CS", kind),
		dataset.Text(tag.SegmentAlgorithmName, "LO", dataset.Clip(o.Algorithm, 64)),
	)
}

func dimension(uid string, pointer, group tag.Tag, label string) *dataset.DataSet {
	return dataset.New(
		dataset.Text(tag.DimensionOrganizationUID, "UI", dataset.UIDFrom("seg dimensions", uid)),
		dataset.AT(tag.DimensionIndexPointer, pointer),
		dataset.AT(tag.FunctionalGroupPointer, group),
		dataset.Text(tag.DimensionDescriptionLabel, "LO", label),
	)
}

func usesOwnCodes(labels []Label) bool {
	for _, l := range labels {
		if l.Type.IsZero() {
			return true
		}
	}
	return false
}

// ascii reports whether every text the segmentation adds is ASCII.
func ascii(labels []Label, o Options) bool {
	all := []string{o.SeriesDescription, o.Algorithm, o.SoftwareVersion}
	for _, l := range labels {
		all = append(all, l.Name, l.Type.Meaning, l.Category.Meaning)
	}
	return dataset.ASCII(all...)
}
