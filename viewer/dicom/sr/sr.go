// Package sr writes and reads DICOM Structured Reports of what a model found on an image
// series: the Measurement Report of PS3.16 TID 1500 (the form dcmqi and highdicom write),
// stored beside the images it refers to.
//
// # Writing
//
// [Encode] and [Write] write a [Report] as a Comprehensive 3D SR (SOP Class
// 1.2.840.10008.5.1.4.1.1.88.34, Explicit VR Little Endian): the one SR storage class whose
// IOD admits both SCOORD (a region on one image) and SCOORD3D (a region in patient space)
// content items (Comprehensive and Enhanced SR admit no SCOORD3D, which a 3D box needs);
// dciodvfy passes it. The object copies the source series' Patient and General
// Study modules (amid/viewer/dicom/source), belongs to a new SR series, and lists every
// source instance in its Current Requested Procedure Evidence Sequence. Its content tree:
//
//	CONTAINER  DCM 126000 Imaging Measurement Report          (TID 1500)
//	  HAS CONCEPT MOD  CODE DCM 121049 Language …             = RFC5646 en-US
//	  HAS OBS CONTEXT  CODE DCM 121005 Observer Type          = DCM 121007 Device
//	  HAS OBS CONTEXT  UIDREF/TEXT DCM 121012–121015          the model as device observer
//	  HAS CONCEPT MOD  CODE DCM 121058 Procedure reported     = SCT 363679005 Imaging procedure
//	  CONTAINS CONTAINER DCM 111028 Image Library             (TID 1600)
//	    CONTAINS CONTAINER DCM 126200 Image Library Group
//	      CONTAINS IMAGE                                      one per source instance
//	  CONTAINS CONTAINER DCM 126010 Imaging Measurements
//	    CONTAINS CONTAINER DCM 125007 Measurement Group       one per finding, class or score
//
// Each Measurement Group starts with its Tracking Identifier (DCM 112039, TEXT) and Tracking
// Unique Identifier (DCM 112040, UIDREF), then:
//
//   - a detected object ([Finding]; TID 1410 Planar ROI for a 2D box or point, TID 1411
//     Volumetric ROI for a 3D box): CODE DCM 121071 Finding = its class; SCOORD DCM 111030
//     Image Region, a closed POLYLINE of 5 points (a box) or a POINT, with a SELECTED FROM
//     IMAGE child naming the source instance; or, for a 3D box, six SCOORD3D DCM 121231
//     Volume Surface POLYGONs (its faces, in the source's frame of reference, mm) and UIDREF
//     DCM 121232 Source series for segmentation; a CODE per attribute (name = class); and
//     its score as NUM DCM 111012 Certainty of Finding in UCUM "%" (score × 100);
//   - a class a classification head predicts ([Evaluation]; TID 1501): CODE head = class,
//     with NUM DCM 111012 Certainty of Finding when the model says how sure it is;
//   - an image-level number ([Measurement]; TID 1501): NUM name = value in its UCUM units
//     (an image quality score: DCM 111029 Image Quality Rating in UCUM "{score}"), with an
//     optional HAS CONCEPT MOD CODE DCM 121401 Derivation (SCT 255605001 Minimum for a
//     certainty that is the least over several heads);
//   - a reader's measurement ([Measured], with Options.Reader the observer; TID 1501 with
//     TID 300): a NUM per value (Length, Long Axis, Short Axis, Area, Mean, Standard
//     Deviation, Minimum, Maximum, Angle; UCUM units) INFERRED FROM its region, an SCOORD
//     on its slice's instance or an SCOORD3D in the frame of reference (see measured.go).
//
// A report of nothing found (a detection without boxes) has an empty Imaging
// Measurements container, which says so.
//
// 2D coordinates are SCOORD's: column and row of the image, from its top-left corner
// (the centre of the first pixel is 0.5, 0.5), which is how AMID's box and point
// annotations measure them. A 3D box's voxel indices (voxel centres) become the corners
// of its outer voxels: index − 0.5 to index + size − 0.5 along each axis.
//
// Codes a task gives no code for are written in AMID's private scheme 99AMID (PS3.16 §8.2),
// declared in the Coding Scheme Identification Sequence. The same report, source and time
// give the same bytes: UIDs derive from them (dataset.UIDFrom).
//
// # Reading
//
// [Read] and [Decode] parse any SR document's content tree into [Item]s (value type,
// relationship, concept, value, coordinates, references), for tests and for any reader of
// a report; the dataset parser bounds nesting and lengths, so a crafted file is an
// error, never a panic.
package sr

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/source"
	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// Comprehensive3DSRStorage is the SOP Class of the reports Encode writes.
const Comprehensive3DSRStorage = "1.2.840.10008.5.1.4.1.1.88.34"

// Code is a coded concept (dataset.Code).
type Code = dataset.Code

// The concepts of the content tree (PS3.16 Annex D for DCM; SNOMED CT; UCUM).
var (
	ImagingMeasurementReport   = Code{Value: "126000", Scheme: "DCM", Meaning: "Imaging Measurement Report"}
	LanguageOfContent          = Code{Value: "121049", Scheme: "DCM", Meaning: "Language of Content Item and Descendants"}
	EnglishUS                  = Code{Value: "en-US", Scheme: "RFC5646", Meaning: "English (United States)"}
	ObserverType               = Code{Value: "121005", Scheme: "DCM", Meaning: "Observer Type"}
	Device                     = Code{Value: "121007", Scheme: "DCM", Meaning: "Device"}
	DeviceObserverUID          = Code{Value: "121012", Scheme: "DCM", Meaning: "Device Observer UID"}
	DeviceObserverName         = Code{Value: "121013", Scheme: "DCM", Meaning: "Device Observer Name"}
	DeviceObserverManufacturer = Code{Value: "121014", Scheme: "DCM", Meaning: "Device Observer Manufacturer"}
	DeviceObserverModelName    = Code{Value: "121015", Scheme: "DCM", Meaning: "Device Observer Model Name"}
	ProcedureReported          = Code{Value: "121058", Scheme: "DCM", Meaning: "Procedure reported"}
	ImagingProcedure           = Code{Value: "363679005", Scheme: "SCT", Meaning: "Imaging procedure"}
	ImageLibrary               = Code{Value: "111028", Scheme: "DCM", Meaning: "Image Library"}
	ImageLibraryGroup          = Code{Value: "126200", Scheme: "DCM", Meaning: "Image Library Group"}
	ImagingMeasurements        = Code{Value: "126010", Scheme: "DCM", Meaning: "Imaging Measurements"}
	MeasurementGroup           = Code{Value: "125007", Scheme: "DCM", Meaning: "Measurement Group"}
	TrackingIdentifier         = Code{Value: "112039", Scheme: "DCM", Meaning: "Tracking Identifier"}
	TrackingUniqueIdentifier   = Code{Value: "112040", Scheme: "DCM", Meaning: "Tracking Unique Identifier"}
	FindingCode                = Code{Value: "121071", Scheme: "DCM", Meaning: "Finding"}
	ClinicalFinding            = Code{Value: "404684003", Scheme: "SCT", Meaning: "Clinical finding"}
	ImageRegion                = Code{Value: "111030", Scheme: "DCM", Meaning: "Image Region"}
	VolumeSurface              = Code{Value: "121231", Scheme: "DCM", Meaning: "Volume Surface"}
	SourceSeries               = Code{Value: "121232", Scheme: "DCM", Meaning: "Source series for segmentation"}
	CertaintyOfFinding         = Code{Value: "111012", Scheme: "DCM", Meaning: "Certainty of Finding"}
	ImageQualityRating         = Code{Value: "111029", Scheme: "DCM", Meaning: "Image Quality Rating"}
	Derivation                 = Code{Value: "121401", Scheme: "DCM", Meaning: "Derivation"}
	Minimum                    = Code{Value: "255605001", Scheme: "SCT", Meaning: "Minimum"}
	Percent                    = Code{Value: "%", Scheme: "UCUM", Meaning: "Percent"}
	ScoreUnits                 = Code{Value: "{score}", Scheme: "UCUM", Meaning: "score"}
)

// OwnScheme is the coding scheme of the concepts a task names without a code.
const OwnScheme = "99AMID"

// OwnCode is a concept of AMID's private scheme: value, with meaning.
func OwnCode(value, meaning string) Code {
	return Code{Value: value, Scheme: OwnScheme, Meaning: meaning}
}

// Report is what a model found on one image series.
type Report struct {
	Findings     []Finding     `json:"findings,omitempty"`
	Evaluations  []Evaluation  `json:"evaluations,omitempty"`
	Measurements []Measurement `json:"measurements,omitempty"`
	// Measured are a reader's measurements on the image (measured.go).
	Measured []Measured `json:"measured,omitempty"`
}

// Finding is one detected object: a 2D box or point on one slice, or a 3D box.
type Finding struct {
	// Type is what was found (the value of Finding); zero: ClinicalFinding.
	Type Code `json:"type,omitzero"`
	// Attributes are the object's attributes, each a name and its class.
	Attributes []Evaluation `json:"attributes,omitempty"`
	// Score is how sure the model is, 0 to 1 (nil: it does not say).
	Score *float64 `json:"score,omitempty"`
	// Exactly one of Rect, Point (2D, on slice Slice of the grid) and Box (3D).
	Rect  *Rect       `json:"rect,omitempty"`
	Point *[2]float64 `json:"point,omitempty"` // column, row
	Box   *Box        `json:"box,omitempty"`
	Slice int         `json:"slice,omitempty"`
}

// Rect is a 2D box: X, Y its top-left corner, W, H its size, in pixels (SCOORD
// coordinates).
type Rect struct {
	X, Y, W, H float64
}

// Box is a 3D box in voxels of the grid: Min the first voxel's index per axis (x, y, z),
// Size the number of voxels.
type Box struct {
	Min, Size [3]int
}

// Evaluation is a coded answer: Name = Value (a classification head and its class, or an
// object's attribute and its class).
type Evaluation struct {
	Name  Code `json:"name"`
	Value Code `json:"value"`
	// Certainty is how sure the model is of it, 0 to 1 (nil: it does not say; unused for
	// a finding's attributes).
	Certainty *float64 `json:"certainty,omitempty"`
}

// Measurement is an image-level number.
type Measurement struct {
	Name  Code    `json:"name"`
	Value float64 `json:"value"`
	Units Code    `json:"units"`
	// Derivation, when set, says how the value was derived (Minimum, …).
	Derivation Code `json:"derivation,omitzero"`
}

// Options describe the written report. Zero fields take the defaults given.
type Options struct {
	SeriesDescription string // "AMID report"
	SeriesNumber      int    // 9003
	// Device is the model as the report's observer: its name ("AMID"), model name (the
	// name again) and UID (derived from name and model).
	DeviceName, DeviceModel, DeviceUID string
	SoftwareVersion                    string // "unknown"
	// Reader, when set, is the person who made the report (a reader's measurements): the
	// report's observer, instead of the device.
	Reader string
	// Created is the content date and time; zero: now. The UIDs derive from it, the
	// source series and the report, so the same inputs give the same object.
	Created time.Time
}

func (o Options) withDefaults() Options {
	if o.SeriesDescription == "" {
		o.SeriesDescription = "AMID report"
	}
	if o.SeriesNumber == 0 {
		o.SeriesNumber = 9003
	}
	if o.DeviceName == "" {
		o.DeviceName = "AMID"
	}
	if o.DeviceModel == "" {
		o.DeviceModel = o.DeviceName
	}
	if o.DeviceUID == "" {
		o.DeviceUID = dataset.UIDFrom("sr device", o.DeviceName, o.DeviceModel)
	}
	if o.SoftwareVersion == "" {
		o.SoftwareVersion = "unknown"
	}
	if o.Created.IsZero() {
		o.Created = time.Now()
	}
	return o
}

// Write writes the report r on the source series src (grid: the volume amid/viewer/dicom
// reads from it) at path.
func Write(path string, r *Report, grid *volume.Volume, src *source.Series, o Options) error {
	f, err := Encode(r, grid, src, o)
	if err != nil {
		return fmt.Errorf("dicom: %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("dicom: %w", err)
	}
	return dataset.WriteFile(path, f)
}

// Encode builds the structured report of r (see Write and the package documentation).
func Encode(r *Report, grid *volume.Volume, src *source.Series, o Options) (*dataset.File, error) {
	if src == nil || src.Header == nil || len(src.Instances) == 0 {
		return nil, fmt.Errorf("no source series to reference")
	}
	if grid == nil {
		return nil, fmt.Errorf("no image grid to place the findings on")
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	body, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	content := hex.EncodeToString(sum[:])
	created := o.Created.UTC()
	stamp := created.Format(time.RFC3339Nano)
	sopUID := dataset.UIDFrom("sr instance", src.SeriesInstanceUID, content, stamp)
	seriesUID := dataset.UIDFrom("sr series", src.SeriesInstanceUID, content, stamp)
	date, tm := created.Format("20060102"), created.Format("150405")

	var slices []source.Instance
	if needsSlices(r) {
		if slices, err = src.BySlice(grid); err != nil {
			return nil, fmt.Errorf("the image grid is not the source series': %w", err)
		}
	}
	var groups []*dataset.DataSet
	track := func(label string) []*dataset.DataSet {
		n := len(groups) + 1
		return []*dataset.DataSet{
			textItem("HAS OBS CONTEXT", TrackingIdentifier, label),
			uidItem("HAS OBS CONTEXT", TrackingUniqueIdentifier, dataset.UIDFrom("sr tracking", sopUID, strconv.Itoa(n))),
		}
	}
	for i, f := range r.Findings {
		kids := track(fmt.Sprintf("finding %d", i+1))
		typ := f.Type
		if typ.IsZero() {
			typ = ClinicalFinding
		}
		kids = append(kids, codeItem("CONTAINS", FindingCode, typ))
		region, err := findingRegion(f, grid, slices, src)
		if err != nil {
			return nil, fmt.Errorf("finding %d: %w", i+1, err)
		}
		kids = append(kids, region...)
		for _, a := range f.Attributes {
			kids = append(kids, codeItem("CONTAINS", a.Name, a.Value))
		}
		if f.Score != nil {
			c, err := certainty(*f.Score)
			if err != nil {
				return nil, fmt.Errorf("finding %d: %w", i+1, err)
			}
			kids = append(kids, c)
		}
		groups = append(groups, container("CONTAINS", MeasurementGroup, "", kids...))
	}
	for i, e := range r.Evaluations {
		kids := append(track(e.Name.Meaning), codeItem("CONTAINS", e.Name, e.Value))
		if e.Certainty != nil {
			c, err := certainty(*e.Certainty)
			if err != nil {
				return nil, fmt.Errorf("evaluation %d (%s): %w", i+1, e.Name.Meaning, err)
			}
			kids = append(kids, c)
		}
		groups = append(groups, container("CONTAINS", MeasurementGroup, "", kids...))
	}
	for _, m := range r.Measurements {
		num, err := numItem("CONTAINS", m.Name, m.Value, m.Units)
		if err != nil {
			return nil, fmt.Errorf("measurement %s: %w", m.Name.Meaning, err)
		}
		if !m.Derivation.IsZero() {
			num.Put(dataset.Seq(tag.ContentSequence, codeItem("HAS CONCEPT MOD", Derivation, m.Derivation)))
		}
		groups = append(groups, container("CONTAINS", MeasurementGroup, "", append(track(m.Name.Meaning), num)...))
	}
	measured, err := measuredGroups(r, grid, slices, src, track)
	if err != nil {
		return nil, err
	}
	groups = append(groups, measured...)

	var library []*dataset.DataSet
	seen := map[string]bool{}
	for _, in := range src.Instances {
		if !seen[in.SOPInstanceUID] {
			seen[in.SOPInstanceUID] = true
			in.Frame = 0 // the image, not one of its frames
			library = append(library, imageItem("CONTAINS", in))
		}
	}
	top := append([]*dataset.DataSet{codeItem("HAS CONCEPT MOD", LanguageOfContent, EnglishUS)}, observer(o)...)
	root := container("", ImagingMeasurementReport, "1500", append(top,
		codeItem("HAS CONCEPT MOD", ProcedureReported, ImagingProcedure),
		container("CONTAINS", ImageLibrary, "", container("CONTAINS", ImageLibraryGroup, "", library...)),
		container("CONTAINS", ImagingMeasurements, "", groups...),
	)...)
	ds := dataset.New(
		dataset.Text(tag.SOPClassUID, "UI", Comprehensive3DSRStorage),
		dataset.Text(tag.SOPInstanceUID, "UI", sopUID),
		dataset.Text(tag.InstanceCreationDate, "DA", date), dataset.Text(tag.InstanceCreationTime, "TM", tm),
		dataset.Text(tag.Modality, "CS", "SR"),
		dataset.Text(tag.SeriesInstanceUID, "UI", seriesUID),
		dataset.IS(tag.SeriesNumber, o.SeriesNumber),
		dataset.Text(tag.SeriesDescription, "LO", dataset.Clip(o.SeriesDescription, 64)),
		dataset.Text(tag.SeriesDate, "DA", date), dataset.Text(tag.SeriesTime, "TM", tm),
		dataset.Seq(tag.ReferencedPerformedProcedureStepSequence),
		dataset.Text(tag.Manufacturer, "LO", "AMID"),
		dataset.Text(tag.ManufacturerModelName, "LO", dataset.Clip(o.DeviceModel, 64)),
		dataset.Text(tag.DeviceSerialNumber, "LO", "1"),
		dataset.Text(tag.SoftwareVersions, "LO", dataset.Clip(o.SoftwareVersion, 64)),
		dataset.IS(tag.InstanceNumber, 1),
		dataset.Text(tag.ContentDate, "DA", date), dataset.Text(tag.ContentTime, "TM", tm),
		dataset.Text(tag.CompletionFlag, "CS", "COMPLETE"),
		dataset.Text(tag.VerificationFlag, "CS", "UNVERIFIED"),
		dataset.Seq(tag.PerformedProcedureCodeSequence),
		dataset.Seq(tag.CurrentRequestedProcedureEvidenceSequence, dataset.New(
			dataset.Text(tag.StudyInstanceUID, "UI", src.StudyInstanceUID),
			dataset.Seq(tag.ReferencedSeriesSequence, dataset.New(
				dataset.Text(tag.SeriesInstanceUID, "UI", src.SeriesInstanceUID),
				dataset.Seq(tag.ReferencedSOPSequence, src.Referenced()...))))),
	)
	for _, e := range root.Elements {
		ds.Put(e)
	}
	src.CopyPatientStudy(ds)
	// The SR IOD has no Frame of Reference module: SCOORD3D items name theirs.
	ds.Delete(tag.FrameOfReferenceUID)
	ds.Delete(tag.PositionReferenceIndicator)
	if usesOwnScheme(ds) {
		ds.Put(dataset.Seq(tag.CodingSchemeIdentificationSequence, dataset.New(
			dataset.Text(tag.CodingSchemeDesignator, "SH", OwnScheme),
			dataset.Text(tag.CodingSchemeName, "ST", "AMID task classes and attributes"),
			dataset.Text(tag.CodingSchemeResponsibleOrganization, "ST", "AMID"))))
	}
	if !ds.Has(tag.SpecificCharacterSet) && !asciiText(ds) {
		ds.Put(dataset.Text(tag.SpecificCharacterSet, "CS", "ISO_IR 192"))
	}
	return &dataset.File{TransferSyntax: dataset.ExplicitVRLittleEndian, DataSet: ds}, nil
}

// check reports the first score outside 0…1 or value that is not finite.
func (r *Report) check() error {
	sure := func(p *float64) error {
		if p != nil && !(*p >= 0 && *p <= 1) {
			return fmt.Errorf("the score %g is not between 0 and 1", *p)
		}
		return nil
	}
	for i, f := range r.Findings {
		if err := sure(f.Score); err != nil {
			return fmt.Errorf("finding %d: %w", i+1, err)
		}
		if b := f.Rect; b != nil && !finite(b.X, b.Y, b.W, b.H) || f.Point != nil && !finite(f.Point[0], f.Point[1]) {
			return fmt.Errorf("finding %d: its coordinates are not finite", i+1)
		}
	}
	for i, e := range r.Evaluations {
		if err := sure(e.Certainty); err != nil {
			return fmt.Errorf("evaluation %d (%s): %w", i+1, e.Name.Meaning, err)
		}
	}
	for _, m := range r.Measurements {
		if !finite(m.Value) {
			return fmt.Errorf("measurement %s: the value %g is not finite", m.Name.Meaning, m.Value)
		}
	}
	for i, m := range r.Measured {
		for _, v := range m.Values {
			if !finite(v.Value) {
				return fmt.Errorf("measurement %d (%s): the value %g is not finite", i+1, m.Label, v.Value)
			}
		}
	}
	return nil
}

// needsSlices reports whether a finding lies on a slice (so the instances must be placed).
func needsSlices(r *Report) bool {
	for _, f := range r.Findings {
		if f.Rect != nil || f.Point != nil {
			return true
		}
	}
	return measuredOnSlices(r)
}

// findingRegion is a finding's region: a SCOORD on its slice's instance, or a 3D box's
// faces in patient space.
func findingRegion(f Finding, grid *volume.Volume, slices []source.Instance, src *source.Series) ([]*dataset.DataSet, error) {
	n := 0
	for _, set := range []bool{f.Rect != nil, f.Point != nil, f.Box != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("a finding needs exactly one of a 2D box, a point and a 3D box, not %d", n)
	}
	if f.Box != nil {
		return boxFaces(*f.Box, grid, src)
	}
	if f.Slice < 0 || f.Slice >= len(slices) {
		return nil, fmt.Errorf("slice %d is outside the image's %d", f.Slice, len(slices))
	}
	in := slices[f.Slice]
	var pts []float64
	gtype := "POINT"
	if r := f.Rect; r != nil {
		if r.W <= 0 || r.H <= 0 {
			return nil, fmt.Errorf("the box (%g, %g, %g×%g) is not a box of positive size", r.X, r.Y, r.W, r.H)
		}
		gtype = "POLYLINE"
		x0, y0, x1, y1 := r.X, r.Y, r.X+r.W, r.Y+r.H
		pts = []float64{x0, y0, x1, y0, x1, y1, x0, y1, x0, y0}
	} else {
		p := *f.Point
		pts = p[:]
	}
	fl := make([]float32, len(pts))
	for i, v := range pts {
		fl[i] = float32(v)
	}
	sc := contentItem("CONTAINS", "SCOORD", &ImageRegion,
		dataset.Text(tag.GraphicType, "CS", gtype),
		dataset.FL(tag.GraphicData, fl...),
		dataset.Seq(tag.ContentSequence, imageItem("SELECTED FROM", in)))
	return []*dataset.DataSet{sc}, nil
}

// boxFaces are a 3D box's six faces as SCOORD3D polygons (Volume Surface) in the grid's
// patient space, and the source series they were drawn on.
func boxFaces(b Box, grid *volume.Volume, src *source.Series) ([]*dataset.DataSet, error) {
	for k := range 3 {
		if b.Size[k] <= 0 || b.Min[k] < 0 || b.Min[k]+b.Size[k] > grid.Dims[k] {
			return nil, fmt.Errorf("the 3D box min %v size %v is empty or leaves the %v grid", b.Min, b.Size, grid.Dims[:3])
		}
	}
	if src.FrameOfReferenceUID == "" {
		return nil, fmt.Errorf("the source series %s has no Frame of Reference UID", src.SeriesInstanceUID)
	}
	corner := func(c [3]int) [3]float64 {
		var idx [3]float64
		for k := range 3 {
			idx[k] = float64(b.Min[k]) - 0.5 + float64(c[k]*b.Size[k])
		}
		return grid.VoxelToWorld(idx)
	}
	// Each face: the axis it is normal to, at its low (0) or high (1) side; its corners
	// in order around it.
	var out []*dataset.DataSet
	for axis := range 3 {
		u, v := (axis+1)%3, (axis+2)%3
		for side := range 2 {
			var pts []float32
			for _, uv := range [][2]int{{0, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 0}} {
				var c [3]int
				c[axis], c[u], c[v] = side, uv[0], uv[1]
				p := corner(c)
				pts = append(pts, float32(p[0]), float32(p[1]), float32(p[2]))
			}
			out = append(out, contentItem("CONTAINS", "SCOORD3D", &VolumeSurface,
				dataset.Text(tag.GraphicType, "CS", "POLYGON"),
				dataset.FL(tag.GraphicData, pts...),
				dataset.Text(tag.ReferencedFrameOfReferenceUID, "UI", src.FrameOfReferenceUID)))
		}
	}
	return append(out, uidItem("CONTAINS", SourceSeries, src.SeriesInstanceUID)), nil
}

// certainty is a score from 0 to 1 as NUM Certainty of Finding in percent.
func certainty(score float64) (*dataset.DataSet, error) {
	if !(score >= 0 && score <= 1) {
		return nil, fmt.Errorf("the score %g is not between 0 and 1", score)
	}
	return numItem("CONTAINS", CertaintyOfFinding, 100*score, Percent)
}

func finite(v ...float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// contentItem is a content item of value type vt (PS3.3 §C.17.3 Document Content Macro)
// with relationship rel ("" for the root) and concept name (nil: none).
func contentItem(rel, vt string, name *Code, elems ...*dataset.Element) *dataset.DataSet {
	d := dataset.New(elems...)
	if rel != "" {
		d.Put(dataset.Text(tag.RelationshipType, "CS", rel))
	}
	d.Put(dataset.Text(tag.ValueType, "CS", vt))
	if name != nil {
		d.Put(dataset.Seq(tag.ConceptNameCodeSequence, name.Item()))
	}
	return d
}

// container is a CONTAINER of separate items, with the template that defines it
// (template "": none).
func container(rel string, name Code, template string, kids ...*dataset.DataSet) *dataset.DataSet {
	d := contentItem(rel, "CONTAINER", &name,
		dataset.Text(tag.ContinuityOfContent, "CS", "SEPARATE"),
		dataset.Seq(tag.ContentSequence, kids...))
	if template != "" {
		d.Put(dataset.Seq(tag.ContentTemplateSequence, dataset.New(
			dataset.Text(tag.MappingResource, "CS", "DCMR"),
			dataset.Text(tag.TemplateIdentifier, "CS", template))))
	}
	if len(kids) == 0 {
		d.Delete(tag.ContentSequence)
	}
	return d
}

func codeItem(rel string, name, value Code) *dataset.DataSet {
	return contentItem(rel, "CODE", &name, dataset.Seq(tag.ConceptCodeSequence, value.Item()))
}

func textItem(rel string, name Code, text string) *dataset.DataSet {
	return contentItem(rel, "TEXT", &name, dataset.Text(tag.TextValue, "UT", text))
}

func uidItem(rel string, name Code, uid string) *dataset.DataSet {
	return contentItem(rel, "UIDREF", &name, dataset.Text(tag.UID, "UI", uid))
}

// numItem is a NUM: its value as a decimal string, and as a double too where the string
// cannot hold it exactly (Floating Point Value, PS3.3 §C.18.1).
func numItem(rel string, name Code, v float64, units Code) (*dataset.DataSet, error) {
	if !finite(v) {
		return nil, fmt.Errorf("the value %g is not finite", v)
	}
	mv := dataset.New(
		dataset.DS(tag.NumericValue, v),
		dataset.Seq(tag.MeasurementUnitsCodeSequence, units.Item()))
	if f, err := strconv.ParseFloat(dataset.FormatDS(v), 64); err != nil || f != v {
		mv.Put(dataset.FD(tag.FloatingPointValue, v))
	}
	return contentItem(rel, "NUM", &name, dataset.Seq(tag.MeasuredValueSequence, mv)), nil
}

// imageItem is an IMAGE referring to instance in (and its frame, if any).
func imageItem(rel string, in source.Instance) *dataset.DataSet {
	return contentItem(rel, "IMAGE", nil, dataset.Seq(tag.ReferencedSOPSequence, in.Ref()))
}

// usesOwnScheme reports whether any code of ds is in OwnScheme.
func usesOwnScheme(ds *dataset.DataSet) bool {
	own := false
	ds.Walk(func(e *dataset.Element) bool {
		if e.Tag == tag.CodingSchemeDesignator && string(e.Value) == OwnScheme {
			own = true
		}
		return !own
	})
	return own
}

// asciiText reports whether every text element of ds is ASCII.
func asciiText(ds *dataset.DataSet) bool {
	ok := true
	ds.Walk(func(e *dataset.Element) bool {
		if dataset.IsString(e.VR) && !dataset.ASCII(string(e.Value)) {
			ok = false
		}
		return ok
	})
	return ok
}
