package synth

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/rtstruct"
	"amid/viewer/dicom/seg"
	"amid/viewer/dicom/source"
	"amid/viewer/nifti"
	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// DICOMTask is the DICOM demo task's definition: the demo's head CT segmentation with
// every case a DICOM CT series folder and every training label a DICOM SEG (even cases)
// or RTSTRUCT (odd cases), as a PACS export and a treatment planning system give them.
// The labels carry SNOMED CT codes, which the SEG segments match by; the RTSTRUCT ROIs
// match by name, through names where a planning system names them otherwise.
const DICOMTask = `# AMID's DICOM demo task: the demo's head CT segmentation on generated DICOM series
# with DICOM SEG and RTSTRUCT labels (amid/host/synth).
id: demo-headct-dicom
title: Head CT tissue segmentation from DICOM (generated demo)
description: >-
  Segment soft tissue, skull, brain, ventricles and a haemorrhage on small head CT series
  stored as DICOM, labelled by DICOM SEG and RTSTRUCT objects. The data are generated, so
  nothing here is a patient.
kind: segmentation
dims: 3
modality: CT
channels: [ct]
labels:
  - {value: 0, name: background}
  - {value: 1, name: soft tissue, code: {scheme: SCT, value: "87784001", meaning: Soft tissue}}
  - {value: 2, name: bone, code: {scheme: SCT, value: "272673000", meaning: Bone structure}}
  - {value: 3, name: brain, code: {scheme: SCT, value: "12738006", meaning: Brain}}
  - {value: 4, name: ventricle, code: {scheme: SCT, value: "35764002", meaning: Brain ventricle structure}}
  - value: 5
    name: haemorrhage
    code: {scheme: SCT, value: "50960005", meaning: Hemorrhage}
    category: {scheme: SCT, value: "49755003", meaning: Morphologically Altered Structure}
data:
  train:
    images: ["train/images/{id}"]
    label: {path: "train/labels/{id}.dcm", format: dicom, names: {SKULL: bone, Scalp: soft tissue, Ventricles: ventricle}}
  test:
    images: ["test/images/{id}"]
  # In a study folder (amid demo --dicom --studies), the thin axial CT series; the
  # thicker one and the localizer are passed over with a note.
  series: [{modality: CT, orientation: axial, prefer: thinnest}]
metric: {name: dice, direction: max}
submission:
  columns: [case_id, predicted_mask_path]
  id_column: case_id
  file_column: predicted_mask_path
  path: "predictions/{id}_seg.nii.gz"
budget: 3m
`

// Transfer syntaxes the generated series cycle through by default: the native ones and
// the two compressed ones AMID decodes without the JPEG family (deflate, RLE Lossless).
var DICOMSyntaxes = []string{dataset.ExplicitVRLittleEndian, dataset.ImplicitVRLittleEndian, dataset.DeflatedExplicitVRLE, RLELossless}

// RLELossless is the RLE Lossless transfer syntax (PS3.5 Annex G).
const RLELossless = "1.2.840.10008.1.2.5"

// DICOMOptions tune DemoDICOM.
type DICOMOptions struct {
	// Syntaxes are the transfer syntaxes of the cases' series, case i taking
	// Syntaxes[i mod len]; empty: DICOMSyntaxes.
	Syntaxes []string
	// Studies makes each case folder a study as PACS exports it: the axial series, a
	// second series of thicker slices and a localizer, side by side. The task's series
	// selector (data.series) picks the axial series.
	Studies bool
}

// segNames and roiNames are how the generated SEG segments and RTSTRUCT ROIs name the
// head CT labels: as 3D Slicer and a treatment planning system might.
var (
	segNames = map[int]string{SoftTissue: "Soft Tissue", Bone: "Skull bone", Brain: "Brain", Ventricle: "Lateral ventricles", Haemorrhage: "Haemorrhage"}
	roiNames = map[int]string{SoftTissue: "Scalp", Bone: "SKULL", Brain: "BRAIN", Ventricle: "Ventricles", Haemorrhage: "haemorrhage"}
	codes    = map[int]seg.Code{SoftTissue: {Value: "87784001", Scheme: "SCT", Meaning: "Soft tissue"}, Bone: {Value: "272673000", Scheme: "SCT", Meaning: "Bone structure"},
		Brain: {Value: "12738006", Scheme: "SCT", Meaning: "Brain"}, Ventricle: {Value: "35764002", Scheme: "SCT", Meaning: "Brain ventricle structure"},
		Haemorrhage: {Value: "50960005", Scheme: "SCT", Meaning: "Hemorrhage"}}
)

// DemoDICOM writes the DICOM demo task into dir: task.yaml; train/images/<id>/ (a CT
// series per case) with train/labels/<id>.dcm (a SEG for even cases, an RTSTRUCT for odd
// ones); test/images/<id>/ for max(n/4, 1) test cases; and answers/<id>_seg.nii.gz, the
// test label maps on their series' grid. Case i's series uses transfer syntax
// o.Syntaxes[i mod len]. The same seed writes the same bytes.
func DemoDICOM(dir string, n int, seed uint64, o DICOMOptions) error {
	if n < 2 {
		return fmt.Errorf("demo: %d training cases; at least 2 are needed", n)
	}
	syntaxes := o.Syntaxes
	if len(syntaxes) == 0 {
		syntaxes = DICOMSyntaxes
	}
	for _, d := range []string{"train/images", "train/labels", "test/images", "answers"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "task.yaml"), []byte(DICOMTask), 0o644); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(seed) * time.Minute)
	test := max(n/4, 1)
	for i := range n + test {
		ct, lab, err := HeadCT(seed+uint64(i), DemoDims, DemoSpacing)
		if err != nil {
			return err
		}
		id := fmt.Sprintf("head%03d", i+1)
		split := "train"
		if i >= n {
			split = "test"
		}
		study := Study{Patient: fmt.Sprintf("SYNTHETIC^%s", id), PatientID: fmt.Sprintf("SYN-%03d", i+1), Seed: seed + uint64(i), Date: created}
		series := filepath.Join(dir, split, "images", id)
		if err := WriteSeries(series, ct, study, SeriesOptions{Syntax: syntaxes[i%len(syntaxes)], Number: 2, Description: "HEAD 8mm"}); err != nil {
			return err
		}
		if o.Studies {
			if err := writeStudyExtras(series, ct, study, syntaxes[i%len(syntaxes)]); err != nil {
				return err
			}
		}
		if split == "test" {
			if err := nifti.Write(filepath.Join(dir, "answers", id+"_seg.nii.gz"), lab); err != nil {
				return err
			}
			continue
		}
		src, err := source.Read(series, study.SeriesUID(2))
		if err != nil {
			return err
		}
		label := filepath.Join(dir, "train", "labels", id+".dcm")
		if i%2 == 0 {
			var ls []seg.Label
			for v := SoftTissue; v <= Haemorrhage; v++ {
				ls = append(ls, seg.Label{Value: v, Name: segNames[v], Type: codes[v]})
			}
			err = seg.Write(label, lab, src, ls, seg.Options{SeriesDescription: "Slicer segmentation", Created: created})
		} else {
			var rois []rtstruct.ROI
			if rois, err = rtstruct.FromLabelMap(lab, roiNames); err == nil {
				err = rtstruct.Write(label, rois, src, rtstruct.Options{Label: "PLAN", Created: created})
			}
		}
		if err != nil {
			return fmt.Errorf("demo: case %s: %w", id, err)
		}
	}
	return nil
}

// Study is a generated patient's study.
type Study struct {
	Patient, PatientID string
	Seed               uint64
	Date               time.Time
}

// UID derives the study's UIDs from its seed.
func (s Study) UID(kind string, n ...int) string {
	return dataset.UIDFrom(fmt.Sprint("synth ", kind, s.Seed, n))
}

// SeriesUID is the UID of the study's series number n.
func (s Study) SeriesUID(n int) string { return s.UID("series", n) }

// SeriesOptions describe a written series.
type SeriesOptions struct {
	Syntax      string // transfer syntax; empty: Explicit VR Little Endian
	Number      int    // Series Number, from which its UID derives
	Description string
	// ImageType is the Image Type's third value: AXIAL (default) or LOCALIZER.
	ImageType string
}

// HeadSeries writes the demo's head CT of nz slices (HeadCT with seed 1, DemoDims' rows
// and columns, DemoSpacing) into dir as series 2 of a synthetic patient's study, for what
// reads, references or derives from a DICOM series; it returns the CT and its labels.
func HeadSeries(dir string, nz int) (ct, labels *volume.Volume, err error) {
	ct, labels, err = HeadCT(1, [3]int{DemoDims[0], DemoDims[1], nz}, DemoSpacing)
	if err != nil {
		return nil, nil, err
	}
	st := Study{Patient: "SYNTHETIC^HEAD", PatientID: "SYN-HEAD", Seed: 1, Date: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	if err := WriteSeries(dir, ct, st, SeriesOptions{Number: 2, Description: "HEAD"}); err != nil {
		return nil, nil, err
	}
	return ct, labels, nil
}

// ctImageStorage is the CT Image Storage SOP Class.
const ctImageStorage = "1.2.840.10008.5.1.4.1.1.2"

// WriteSeries writes ct (int16 Hounsfield units) as a CT series, one file per slice
// (IM0001.dcm, …), into dir.
func WriteSeries(dir string, ct *volume.Volume, s Study, o SeriesOptions) error {
	hu, ok := ct.Data.([]int16)
	if !ok || ct.Dims[3] != 1 {
		return fmt.Errorf("synth: a CT series is int16 with one channel, not %s", ct.DType())
	}
	if o.Syntax == "" {
		o.Syntax = dataset.ExplicitVRLittleEndian
	}
	if o.ImageType == "" {
		o.ImageType = "AXIAL"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	nx, ny := ct.Dims[0], ct.Dims[1]
	d := ct.Direction
	date, tm := s.Date.Format("20060102"), s.Date.Format("150405")
	for k := range ct.Dims[2] {
		pos := ct.VoxelToWorld([3]float64{0, 0, float64(k)})
		px := make([]byte, 2*nx*ny)
		for j, v := range hu[k*nx*ny : (k+1)*nx*ny] {
			binary.LittleEndian.PutUint16(px[2*j:], uint16(v))
		}
		pixels := &dataset.Element{Tag: tag.PixelData, VR: "OW", Value: px}
		if o.Syntax == RLELossless {
			pixels = &dataset.Element{Tag: tag.PixelData, VR: "OB", Encapsulated: true, Fragments: [][]byte{nil, encodeRLE16(px, nx, ny)}}
		}
		ds := dataset.New(
			dataset.Text(tag.SpecificCharacterSet, "CS", "ISO_IR 100"),
			dataset.Text(tag.ImageType, "CS", "ORIGINAL", "PRIMARY", o.ImageType),
			dataset.Text(tag.SOPClassUID, "UI", ctImageStorage),
			dataset.Text(tag.SOPInstanceUID, "UI", s.UID("instance", o.Number, k)),
			dataset.Text(tag.StudyDate, "DA", date), dataset.Text(tag.StudyTime, "TM", tm),
			dataset.Text(tag.SeriesDate, "DA", date), dataset.Text(tag.SeriesTime, "TM", tm),
			dataset.Text(tag.AccessionNumber, "SH", fmt.Sprintf("SYNACC%d", s.Seed)),
			dataset.Text(tag.Modality, "CS", "CT"),
			dataset.Text(tag.BodyPartExamined, "CS", "HEAD"),
			dataset.Text(tag.Manufacturer, "LO", "AMID synth"),
			dataset.Text(tag.ReferringPhysicianName, "PN"),
			dataset.Text(tag.SeriesDescription, "LO", o.Description),
			dataset.Text(tag.PatientName, "PN", s.Patient),
			dataset.Text(tag.PatientID, "LO", s.PatientID),
			dataset.Text(tag.PatientBirthDate, "DA", "19700101"),
			dataset.Text(tag.PatientSex, "CS", "O"),
			dataset.DS(tag.SliceThickness, ct.Spacing[2]),
			dataset.Text(tag.KVP, "DS", "120"),
			dataset.Text(tag.PatientPosition, "CS", "HFS"),
			dataset.Text(tag.StudyInstanceUID, "UI", s.UID("study")),
			dataset.Text(tag.SeriesInstanceUID, "UI", s.SeriesUID(o.Number)),
			dataset.Text(tag.StudyID, "SH", "1"),
			dataset.IS(tag.SeriesNumber, o.Number),
			dataset.IS(tag.AcquisitionNumber, 1),
			dataset.IS(tag.InstanceNumber, k+1),
			dataset.DS(tag.ImagePositionPatient, pos[:]...),
			dataset.DS(tag.ImageOrientationPatient, d[0], d[3], d[6], d[1], d[4], d[7]),
			dataset.Text(tag.FrameOfReferenceUID, "UI", s.UID("frame")),
			dataset.Text(tag.PositionReferenceIndicator, "LO"),
			dataset.US(tag.SamplesPerPixel, 1),
			dataset.Text(tag.PhotometricInterpretation, "CS", "MONOCHROME2"),
			dataset.US(tag.Rows, uint16(ny)), dataset.US(tag.Columns, uint16(nx)),
			dataset.DS(tag.PixelSpacing, ct.Spacing[1], ct.Spacing[0]),
			dataset.US(tag.BitsAllocated, 16), dataset.US(tag.BitsStored, 16), dataset.US(tag.HighBit, 15),
			dataset.US(tag.PixelRepresentation, 1),
			dataset.Text(tag.WindowCenter, "DS", "40"), dataset.Text(tag.WindowWidth, "DS", "400"),
			dataset.Text(tag.RescaleIntercept, "DS", "0"), dataset.Text(tag.RescaleSlope, "DS", "1"),
			dataset.Text(tag.RescaleType, "LO", "HU"),
			pixels,
		)
		f := &dataset.File{TransferSyntax: o.Syntax, DataSet: ds}
		if err := dataset.WriteFile(filepath.Join(dir, fmt.Sprintf("S%dIM%04d.dcm", o.Number, k+1)), f); err != nil {
			return err
		}
	}
	return nil
}

// writeStudyExtras adds, beside a case's axial series, what a PACS export of the study
// holds too: the same head reconstructed with 16 mm slices (series 3) and a lateral
// localizer (series 1, one image).
func writeStudyExtras(dir string, ct *volume.Volume, s Study, syntax string) error {
	nx, ny, nz := ct.Dims[0], ct.Dims[1], ct.Dims[2]
	thick, err := volume.New(volume.Int16, [4]int{nx, ny, (nz + 1) / 2, 1})
	if err != nil {
		return err
	}
	thick.Spacing, thick.Origin, thick.Direction = [3]float64{ct.Spacing[0], ct.Spacing[1], 2 * ct.Spacing[2]}, ct.Origin, ct.Direction
	src, dst := ct.Data.([]int16), thick.Data.([]int16)
	for k := range thick.Dims[2] {
		copy(dst[k*nx*ny:(k+1)*nx*ny], src[2*k*nx*ny:(2*k+1)*nx*ny])
	}
	if err := WriteSeries(dir, thick, s, SeriesOptions{Syntax: syntax, Number: 3, Description: "HEAD 16mm"}); err != nil {
		return err
	}
	// The localizer: a lateral projection (mean along x) on a sagittal plane.
	loc, err := volume.New(volume.Int16, [4]int{ny, nz, 1, 1})
	if err != nil {
		return err
	}
	loc.Spacing = [3]float64{ct.Spacing[1], ct.Spacing[2], 1}
	loc.Origin = ct.Origin
	// Columns run to posterior (+y), rows down the patient (−z); their normal is −x.
	loc.Direction = [9]float64{0, 0, -1, 1, 0, 0, 0, -1, 0}
	loc.Origin[2] = ct.Origin[2] + float64(nz-1)*ct.Spacing[2]
	ld := loc.Data.([]int16)
	for z := range nz {
		for y := range ny {
			var sum float64
			for x := range nx {
				sum += float64(src[(z*ny+y)*nx+x])
			}
			ld[(nz-1-z)*ny+y] = int16(math.Round(sum / float64(nx)))
		}
	}
	return WriteSeries(dir, loc, s, SeriesOptions{Syntax: syntax, Number: 1, Description: "SCOUT", ImageType: "LOCALIZER"})
}

// encodeRLE16 encodes one frame of 16-bit little-endian samples as RLE Lossless (PS3.5
// Annex G): a 64-byte header, then the most significant byte plane and the least
// significant one, each row PackBits-encoded on its own and each segment of even length.
func encodeRLE16(px []byte, nx, ny int) []byte {
	var segs [2][]byte
	row := make([]byte, nx)
	for plane := range 2 {
		k := 1 - plane // byte 1 (most significant) first
		for y := range ny {
			for x := range nx {
				row[x] = px[2*(y*nx+x)+k]
			}
			segs[plane] = packBits(segs[plane], row)
		}
		if len(segs[plane])%2 == 1 {
			segs[plane] = append(segs[plane], 0)
		}
	}
	out := make([]byte, 64, 64+len(segs[0])+len(segs[1]))
	binary.LittleEndian.PutUint32(out, 2)
	binary.LittleEndian.PutUint32(out[4:], 64)
	binary.LittleEndian.PutUint32(out[8:], uint32(64+len(segs[0])))
	out = append(out, segs[0]...)
	return append(out, segs[1]...)
}

// packBits appends the PackBits encoding of b (PS3.5 §G.3.1): runs of 2 to 128 equal
// bytes as (1−n, byte), everything else as literal runs of up to 128 bytes (n−1, bytes).
func packBits(out, b []byte) []byte {
	for i := 0; i < len(b); {
		run := 1
		for i+run < len(b) && run < 128 && b[i+run] == b[i] {
			run++
		}
		if run >= 2 {
			out = append(out, byte(1-run), b[i])
			i += run
			continue
		}
		j := i + 1
		for j < len(b) && j-i < 128 && !(j+1 < len(b) && b[j+1] == b[j]) {
			j++
		}
		out = append(out, byte(j-i-1))
		out = append(out, b[i:j]...)
		i = j
	}
	return out
}
