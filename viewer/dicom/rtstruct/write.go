package rtstruct

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/source"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// Options describe a written structure set. Zero fields take the defaults given.
type Options struct {
	Label        string    // Structure Set Label: "AMID"
	SeriesNumber int       // 9002
	Created      time.Time // zero: now; the UIDs derive from it and the source series
}

// detachedStudy is the SOP Class the RT Referenced Study Sequence names
// (Detached Study Management, retired but still required there: PS3.3 §C.8.8.5).
const detachedStudy = "1.2.840.10008.3.1.2.3.1"

// Write writes a structure set of rois (their CLOSED_PLANAR contours) drawn on the source
// series src at path.
func Write(path string, rois []ROI, src *source.Series, o Options) error {
	f, err := Encode(rois, src, o)
	if err != nil {
		return fmt.Errorf("dicom: %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("dicom: %w", err)
	}
	return dataset.WriteFile(path, f)
}

// Encode builds a structure set (see Write). Each contour references the image of the
// series whose plane lies within 1 mm of its first point.
func Encode(rois []ROI, src *source.Series, o Options) (*dataset.File, error) {
	if src == nil || src.Header == nil {
		return nil, fmt.Errorf("no source series to reference")
	}
	if o.Label == "" {
		o.Label = "AMID"
	}
	if o.SeriesNumber == 0 {
		o.SeriesNumber = 9002
	}
	if o.Created.IsZero() {
		o.Created = time.Now()
	}
	created := o.Created.UTC()
	stamp := created.Format(time.RFC3339Nano)
	date, tm := created.Format("20060102"), created.Format("150405")
	sopUID := dataset.UIDFrom("rtstruct instance", src.SeriesInstanceUID, stamp)
	frame := src.FrameOfReferenceUID
	if frame == "" {
		return nil, fmt.Errorf("the source series %s has no Frame of Reference UID", src.SeriesInstanceUID)
	}
	var images []*dataset.DataSet
	seen := map[string]bool{}
	for _, in := range src.Instances {
		if !seen[in.SOPInstanceUID] {
			seen[in.SOPInstanceUID] = true
			images = append(images, in.Ref())
		}
	}
	var roiItems, contourItems, observations []*dataset.DataSet
	long := false
	for i, r := range rois {
		roiItems = append(roiItems, dataset.New(
			dataset.IS(tag.ROINumber, r.Number),
			dataset.Text(tag.ReferencedFrameOfReferenceUID, "UI", frame),
			dataset.Text(tag.ROIName, "LO", r.Name),
			dataset.Text(tag.ROIGenerationAlgorithm, "CS", "AUTOMATIC"),
		))
		var contours []*dataset.DataSet
		for j, c := range r.Contours {
			if c.Type != ClosedPlanar || len(c.Points) < 3 {
				return nil, fmt.Errorf("ROI %s contour %d: only closed planar contours of 3 or more points are written", r.Name, j+1)
			}
			data := make([]float64, 0, 3*len(c.Points))
			for _, p := range c.Points {
				data = append(data, p[0], p[1], p[2])
			}
			item := dataset.New(
				dataset.Text(tag.ContourGeometricType, "CS", ClosedPlanar),
				dataset.IS(tag.NumberOfContourPoints, len(c.Points)),
				// Ten significant digits: 1e-7 mm at 100 mm, far below any voxel.
				dataset.DSDigits(tag.ContourData, 10, data...),
			)
			if len(item.Get(tag.ContourData).Value) > 0xFFFE {
				long = true
			}
			if in, ok := src.Nearest(c.Points[0]); ok {
				item.Put(dataset.Seq(tag.ContourImageSequence, in.Ref()))
			}
			contours = append(contours, item)
		}
		contourItems = append(contourItems, dataset.New(
			dataset.IS(tag.ReferencedROINumber, r.Number),
			dataset.IS(tag.ROIDisplayColor, palette[i%len(palette)][:]...),
			dataset.Seq(tag.ContourSequence, contours...),
		))
		observations = append(observations, dataset.New(
			dataset.IS(tag.ObservationNumber, r.Number),
			dataset.IS(tag.ReferencedROINumber, r.Number),
			dataset.Text(tag.RTROIInterpretedType, "CS", orDefault(r.InterpretedType, "ORGAN")),
			dataset.Text(tag.ROIInterpreter, "PN"),
		))
	}
	ds := dataset.New(
		dataset.Text(tag.SOPClassUID, "UI", source.RTStructureSetStore),
		dataset.Text(tag.SOPInstanceUID, "UI", sopUID),
		dataset.Text(tag.InstanceCreationDate, "DA", date), dataset.Text(tag.InstanceCreationTime, "TM", tm),
		dataset.Text(tag.Modality, "CS", "RTSTRUCT"),
		dataset.Text(tag.SeriesInstanceUID, "UI", dataset.UIDFrom("rtstruct series", src.SeriesInstanceUID, stamp)),
		dataset.IS(tag.SeriesNumber, o.SeriesNumber),
		dataset.Text(tag.OperatorsName, "PN"),
		dataset.Text(tag.Manufacturer, "LO", "AMID"),
		dataset.Text(tag.StructureSetLabel, "SH", o.Label),
		dataset.Text(tag.StructureSetDate, "DA", date), dataset.Text(tag.StructureSetTime, "TM", tm),
		dataset.IS(tag.InstanceNumber, 1),
		dataset.Seq(tag.ReferencedFrameOfReferenceSequence, dataset.New(
			dataset.Text(tag.FrameOfReferenceUID, "UI", frame),
			dataset.Seq(tag.RTReferencedStudySequence, dataset.New(
				dataset.Text(tag.ReferencedSOPClassUID, "UI", detachedStudy),
				dataset.Text(tag.ReferencedSOPInstanceUID, "UI", src.StudyInstanceUID),
				dataset.Seq(tag.RTReferencedSeriesSequence, dataset.New(
					dataset.Text(tag.SeriesInstanceUID, "UI", src.SeriesInstanceUID),
					dataset.Seq(tag.ContourImageSequence, images...),
				)),
			)),
		)),
		dataset.Seq(tag.StructureSetROISequence, roiItems...),
		dataset.Seq(tag.ROIContourSequence, contourItems...),
		dataset.Seq(tag.RTROIObservationsSequence, observations...),
	)
	src.CopyPatientStudy(ds)
	ts := dataset.ExplicitVRLittleEndian
	if long {
		// A contour too long for a DS value's 16-bit length in explicit VR: implicit VR
		// (32-bit lengths) holds it, and every DICOM reader reads it.
		ts = dataset.ImplicitVRLittleEndian
	}
	return &dataset.File{TransferSyntax: ts, DataSet: ds}, nil
}

// palette are the ROI display colours, in order.
var palette = [][3]int{{255, 0, 0}, {0, 200, 0}, {0, 0, 255}, {255, 200, 0}, {200, 0, 200}, {0, 200, 200}}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
