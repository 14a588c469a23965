// Package rtstruct reads DICOM RT Structure Sets (RTSTRUCT, PS3.3 §A.19) and rasterises
// their regions of interest onto an image grid, and writes structure sets from contours.
//
// # Reading
//
// [Read] takes the Structure Set ROI Sequence (number, name, frame of reference), the ROI
// Contour Sequence (each ROI's contours: geometric type, points in mm, the images they
// were drawn on) and the RT ROI Observations (interpreted type), in any native transfer
// syntax (amid/viewer/dicom/dataset).
//
// # Rasterising
//
// [StructureSet.Rasterise] fills each ROI's CLOSED_PLANAR contours on the image grid the
// way plastimatch does (its rasterize_slice with --xor-contours), so that the two agree
// voxel for voxel up to rounding:
//
//   - a contour lies on the slice nearest to its points (the mean of their slice
//     coordinates); contours off the grid are skipped and counted;
//   - a voxel is inside a contour when its centre is: on each row through voxel centres,
//     the edges crossing it give x positions, and the voxels from the ceiling of one
//     crossing up to, not including, the ceiling of the next are inside (an edge covers
//     the rows from its lower end up to, not including, its upper end);
//   - the contours of an ROI on one slice combine by even-odd (exclusive or), so a
//     contour inside another is a hole, and a keyhole contour (one outline that runs in
//     to the hole and back) gives the same hole.
//
// POINT and OPEN contours mark no area and are skipped. ROIs map to label values; where
// ROIs overlap, the voxel takes the highest label value among them (as in amid/viewer/
// dicom/seg).
//
// # Writing
//
// [Encode] writes closed planar contours as a structure set referencing its image series
// (SOP Class RT Structure Set Storage 1.2.840.10008.5.1.4.1.1.481.3, Explicit VR Little
// Endian, or Implicit VR Little Endian when a contour's points are too many for a DS
// value's 16-bit length), and [FromLabelMap] outlines a label map as contours along its
// voxel edges: the generated test data of amid/host/synth uses both.
package rtstruct

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/source"
	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// Contour geometric types (PS3.3 §C.8.8.6.1).
const (
	ClosedPlanar = "CLOSED_PLANAR"
	Point        = "POINT"
)

// Contour is one contour of an ROI.
type Contour struct {
	Type   string
	Points [][3]float64 // mm, LPS
	Images []string     // SOP Instance UIDs of the images it was drawn on
}

// ROI is one region of interest.
type ROI struct {
	Number              int
	Name                string
	Description         string
	FrameOfReferenceUID string
	InterpretedType     string // RT ROI Interpreted Type: ORGAN, PTV, …
	Contours            []Contour
}

// StructureSet is a parsed RTSTRUCT object.
type StructureSet struct {
	Label               string
	StudyInstanceUID    string
	SeriesInstanceUID   string
	SOPInstanceUID      string
	FrameOfReferenceUID string
	ReferencedSeriesUID string
	ROIs                []ROI
}

// ErrFrame marks a structure set drawn in another frame of reference than the image.
var ErrFrame = errors.New("the structure set is not in the image's frame of reference")

// Read reads the structure set at path. Errors name the file.
func Read(path string) (*StructureSet, error) { return dataset.ReadAs(path, FromDataSet) }

// Decode parses the bytes of a structure set file.
func Decode(b []byte) (*StructureSet, error) { return dataset.DecodeAs(b, FromDataSet) }

// IsStructureSet reports whether a parsed file is a structure set.
func IsStructureSet(f *dataset.File) bool {
	return f.DataSet.String(tag.SOPClassUID) == source.RTStructureSetStore
}

// FromDataSet reads a structure set from a parsed file.
func FromDataSet(f *dataset.File) (*StructureSet, error) {
	ds := f.DataSet
	if !IsStructureSet(f) && ds.String(tag.Modality) != "RTSTRUCT" {
		return nil, fmt.Errorf("%w: not a structure set (SOP Class %s, modality %q)", volume.ErrFormat, ds.String(tag.SOPClassUID), ds.String(tag.Modality))
	}
	s := &StructureSet{
		Label:             ds.String(tag.StructureSetLabel),
		StudyInstanceUID:  ds.String(tag.StudyInstanceUID),
		SeriesInstanceUID: ds.String(tag.SeriesInstanceUID),
		SOPInstanceUID:    ds.String(tag.SOPInstanceUID),
	}
	ref := ds.Item(tag.ReferencedFrameOfReferenceSequence)
	s.FrameOfReferenceUID = ref.String(tag.FrameOfReferenceUID)
	if s.FrameOfReferenceUID == "" {
		s.FrameOfReferenceUID = ds.String(tag.FrameOfReferenceUID)
	}
	s.ReferencedSeriesUID = ref.Item(tag.RTReferencedStudySequence).Item(tag.RTReferencedSeriesSequence).String(tag.SeriesInstanceUID)
	byNumber := map[int]int{}
	for i, it := range ds.Items(tag.StructureSetROISequence) {
		n, ok := it.Int(tag.ROINumber)
		if !ok {
			return nil, fmt.Errorf("%w: ROI item %d has no ROI Number", volume.ErrFormat, i+1)
		}
		if _, dup := byNumber[n]; dup {
			return nil, fmt.Errorf("%w: ROI number %d is given twice", volume.ErrFormat, n)
		}
		byNumber[n] = len(s.ROIs)
		s.ROIs = append(s.ROIs, ROI{Number: n, Name: it.String(tag.ROIName), Description: it.String(tag.ROIDescription),
			FrameOfReferenceUID: it.String(tag.ReferencedFrameOfReferenceUID)})
	}
	if len(s.ROIs) == 0 {
		return nil, fmt.Errorf("%w: the Structure Set ROI Sequence is empty", volume.ErrFormat)
	}
	for _, it := range ds.Items(tag.RTROIObservationsSequence) {
		if n, ok := it.Int(tag.ReferencedROINumber); ok {
			if i, ok := byNumber[n]; ok {
				s.ROIs[i].InterpretedType = it.String(tag.RTROIInterpretedType)
			}
		}
	}
	for i, it := range ds.Items(tag.ROIContourSequence) {
		n, ok := it.Int(tag.ReferencedROINumber)
		if !ok {
			return nil, fmt.Errorf("%w: ROI contour item %d names no ROI", volume.ErrFormat, i+1)
		}
		r, ok := byNumber[n]
		if !ok {
			return nil, fmt.Errorf("%w: ROI contour item %d is for ROI %d, which the Structure Set ROI Sequence does not describe", volume.ErrFormat, i+1, n)
		}
		for j, c := range it.Items(tag.ContourSequence) {
			data := c.Floats(tag.ContourData)
			if len(data)%3 != 0 {
				return nil, fmt.Errorf("%w: ROI %d contour %d has %d coordinates, not a multiple of 3", volume.ErrFormat, n, j+1, len(data))
			}
			ct := Contour{Type: c.String(tag.ContourGeometricType), Points: make([][3]float64, len(data)/3)}
			for k := range ct.Points {
				ct.Points[k] = [3]float64{data[3*k], data[3*k+1], data[3*k+2]}
			}
			for _, im := range c.Items(tag.ContourImageSequence) {
				if u := im.String(tag.ReferencedSOPInstanceUID); u != "" {
					ct.Images = append(ct.Images, u)
				}
			}
			s.ROIs[r].Contours = append(s.ROIs[r].Contours, ct)
		}
	}
	return s, nil
}

// ROI returns the ROI with number n.
func (s *StructureSet) ROI(n int) (ROI, bool) {
	for _, r := range s.ROIs {
		if r.Number == n {
			return r, true
		}
	}
	return ROI{}, false
}

// Result says what rasterising left out.
type Result struct {
	// Skipped counts, per ROI number, closed contours that lie off the grid's slices.
	Skipped map[int]int
	// NotClosed counts, per ROI number, contours that are not CLOSED_PLANAR (points,
	// open lines) and so mark no area.
	NotClosed map[int]int
}

// Rasterise fills the ROIs that labels maps (ROI number → label value; others are left
// out) on grid, the image's volume, and returns a label map with grid's geometry (uint8,
// or uint16 when a label value exceeds 255). When src is given, each ROI's frame of
// reference must be the image series'.
func (s *StructureSet) Rasterise(grid *volume.Volume, src *source.Series, labels map[int]int) (*volume.Volume, *Result, error) {
	out, err := source.NewLabelMap(grid, labels)
	if err != nil {
		return nil, nil, err
	}
	res := &Result{Skipped: map[int]int{}, NotClosed: map[int]int{}}
	nx, ny := grid.Dims[0], grid.Dims[1]
	n := nx * ny
	mask := make([]bool, n*grid.Dims[2])
	r := newRaster(nx, ny)
	for _, roi := range s.ROIs {
		value, ok := labels[roi.Number]
		if !ok || value == 0 {
			continue
		}
		if src != nil && src.FrameOfReferenceUID != "" {
			for _, f := range []string{roi.FrameOfReferenceUID, s.FrameOfReferenceUID} {
				if f != "" && f != src.FrameOfReferenceUID {
					return nil, nil, fmt.Errorf("%w: ROI %d (%s) is in %s, the image in %s", ErrFrame, roi.Number, roi.Name, f, src.FrameOfReferenceUID)
				}
			}
		}
		clear(mask)
		for _, c := range roi.Contours {
			if c.Type != ClosedPlanar || len(c.Points) < 3 {
				res.NotClosed[roi.Number]++
				continue
			}
			xs, ys := make([]float64, len(c.Points)), make([]float64, len(c.Points))
			z := 0.0
			for i, p := range c.Points {
				idx := grid.WorldToVoxel(p)
				xs[i], ys[i] = idx[0], idx[1]
				z += idx[2]
			}
			z /= float64(len(c.Points))
			k := int(math.Round(z))
			if math.IsNaN(z) || k < 0 || k >= grid.Dims[2] {
				res.Skipped[roi.Number]++
				continue
			}
			r.fill(xs, ys, mask[k*n:(k+1)*n])
		}
		source.Paint(out, 0, mask, value)
	}
	return out, res, nil
}

// raster fills polygons on one slice.
type raster struct {
	nx, ny int
	rows   [][]float64 // crossings per row
}

func newRaster(nx, ny int) *raster {
	return &raster{nx: nx, ny: ny, rows: make([][]float64, ny)}
}

// fill toggles (exclusive or) the voxels of dst (nx×ny) whose centre is inside the
// polygon with vertices (xs, ys) in voxel coordinates (see the package documentation).
func (r *raster) fill(xs, ys []float64, dst []bool) {
	n := len(xs)
	if n > 1 && xs[n-1] == xs[0] && ys[n-1] == ys[0] {
		n-- // a closing vertex that repeats the first
	}
	lo, hi := r.ny, -1
	for i := range n {
		j := i + 1
		if j == n {
			j = 0
		}
		xa, ya, xb, yb := xs[i], ys[i], xs[j], ys[j]
		if ya == yb || math.IsNaN(ya) || math.IsNaN(yb) {
			continue
		}
		if ya > yb {
			xa, ya, xb, yb = xb, yb, xa, ya
		}
		// Rows from ceil(ya) up to, not including, yb.
		y0 := math.Ceil(ya)
		y1 := math.Ceil(yb) - 1
		if y0 < 0 {
			y0 = 0
		}
		if y1 > float64(r.ny-1) {
			y1 = float64(r.ny - 1)
		}
		if y1 < y0 {
			continue
		}
		slope := (xb - xa) / (yb - ya)
		for y := int(y0); y <= int(y1); y++ {
			r.rows[y] = append(r.rows[y], xa+(float64(y)-ya)*slope)
		}
		lo, hi = min(lo, int(y0)), max(hi, int(y1))
	}
	for y := lo; y <= hi; y++ {
		c := r.rows[y]
		sort.Float64s(c)
		row := dst[y*r.nx : (y+1)*r.nx]
		for i := 0; i+1 < len(c); i += 2 {
			// Voxels x with c[i] <= x < c[i+1].
			a, b := math.Ceil(c[i]), math.Ceil(c[i+1])
			a, b = max(a, 0), min(b, float64(r.nx))
			for x := int(a); x < int(b); x++ {
				row[x] = !row[x]
			}
		}
		r.rows[y] = c[:0]
	}
}

// Names lists the ROI names, sorted.
func (s *StructureSet) Names() []string {
	out := make([]string, len(s.ROIs))
	for i, r := range s.ROIs {
		out[i] = r.Name
	}
	slices.Sort(out)
	return out
}
