package seg

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"amid/viewer/dicom/source"
	"amid/viewer/volume"
)

// ErrGrid marks a segmentation that does not fit the image grid it is placed on.
var ErrGrid = errors.New("the segmentation does not fit the image")

// directionTolerance is how far apart (1 − cosine) the segmentation's row and column
// directions may be from the image's: 1e-4 is 0.8°, far below any real re-orientation
// and above the rounding of direction cosines written to six decimals.
const directionTolerance = 1e-4

// LabelMap places the frames of the segments that labels maps (segment number → label
// value; other segments are left out) on grid, the volume of the image the segmentation
// was drawn on, and returns a label map with grid's geometry: uint8, or uint16 when a
// label value exceeds 255. src, the image's series, may be nil; frames are then placed by
// their positions only (see the package documentation).
func (s *Segmentation) LabelMap(grid *volume.Volume, src *source.Series, labels map[int]int) (*volume.Volume, error) {
	if err := s.fits(grid); err != nil {
		return nil, err
	}
	out, err := source.NewLabelMap(grid, labels)
	if err != nil {
		return nil, err
	}
	n := s.Rows * s.Columns
	cover := make([]bool, n)
	for i, fr := range s.Frames {
		value, ok := labels[fr.Segment]
		if !ok || value == 0 {
			continue
		}
		k, err := s.slice(i, grid, src)
		if err != nil {
			return nil, err
		}
		s.covered(i, cover)
		source.Paint(out, k*n, cover, value)
	}
	return out, nil
}

// fits checks the segmentation's in-plane grid against the image's.
func (s *Segmentation) fits(grid *volume.Volume) error {
	if s.Columns != grid.Dims[0] || s.Rows != grid.Dims[1] {
		return fmt.Errorf("%w: its frames are %d×%d, the image's slices %d×%d", ErrGrid, s.Columns, s.Rows, grid.Dims[0], grid.Dims[1])
	}
	if s.HasSpacing {
		for i, want := range []float64{grid.Spacing[1], grid.Spacing[0]} {
			if math.Abs(s.PixelSpacing[i]-want) > 1e-3*want {
				return fmt.Errorf("%w: pixel spacing %g×%g mm, the image's %g×%g mm", ErrGrid, s.PixelSpacing[1], s.PixelSpacing[0], grid.Spacing[0], grid.Spacing[1])
			}
		}
	}
	if s.HasOrientation {
		d := grid.Direction
		for axis := range 2 {
			dot := 0.0
			for r := range 3 {
				dot += s.Orientation[3*axis+r] * d[3*r+axis]
			}
			if 1-dot > directionTolerance {
				return fmt.Errorf("%w: its row and column directions %v are not the image's (resampled segmentations are not read)", ErrGrid, s.Orientation)
			}
		}
	}
	return nil
}

// slice finds the slice of grid that frame i lies on.
func (s *Segmentation) slice(i int, grid *volume.Volume, src *source.Series) (int, error) {
	fr := s.Frames[i]
	k, byRef := -1, ""
	if src != nil {
		for _, r := range fr.Sources {
			in, ok := src.Find(r.UID, r.Frame)
			if !ok || !in.HasPosition {
				continue
			}
			kk, err := source.SliceOf(grid, in.Position)
			if err != nil {
				return 0, fmt.Errorf("frame %d (segment %d): its source image %s: %w", i+1, fr.Segment, r.UID, err)
			}
			k, byRef = kk, r.UID
			break
		}
	}
	if fr.HasPosition {
		kk, err := source.SliceOf(grid, fr.Position)
		if err != nil {
			return 0, fmt.Errorf("frame %d (segment %d): %w", i+1, fr.Segment, err)
		}
		if k >= 0 && kk != k {
			return 0, fmt.Errorf("%w: frame %d (segment %d) lies on slice %d by its position but its source image %s is slice %d", ErrGrid, i+1, fr.Segment, kk, byRef, k)
		}
		k = kk
	}
	if k < 0 {
		if grid.Dims[2] == 1 {
			return 0, nil
		}
		return 0, fmt.Errorf("%w: frame %d (segment %d) has no position and no source image of this series", ErrGrid, i+1, fr.Segment)
	}
	return k, nil
}

// Grid builds an image grid from the segmentation alone: its frames' rows, columns,
// pixel spacing and orientation, and slices from the lowest to the highest frame
// position along the normal, Spacing Between Slices apart (else the smallest step
// between frame positions). It is for a segmentation whose image is not at hand; the
// grid is geometry only: its Data is nil.
func (s *Segmentation) Grid() (*volume.Volume, error) {
	if !s.HasSpacing {
		return nil, fmt.Errorf("%w: the segmentation has no pixel spacing", ErrGrid)
	}
	o := s.Orientation
	if !s.HasOrientation {
		o = [6]float64{1, 0, 0, 0, 1, 0}
	}
	row, col := [3]float64{o[0], o[1], o[2]}, [3]float64{o[3], o[4], o[5]}
	normal := [3]float64{row[1]*col[2] - row[2]*col[1], row[2]*col[0] - row[0]*col[2], row[0]*col[1] - row[1]*col[0]}
	var pos []float64
	var first [3]float64
	for _, fr := range s.Frames {
		if !fr.HasPosition {
			continue
		}
		d := fr.Position[0]*normal[0] + fr.Position[1]*normal[1] + fr.Position[2]*normal[2]
		if len(pos) == 0 || d < minOf(pos) {
			first = fr.Position
		}
		pos = append(pos, d)
	}
	nz := 1
	step := s.SpacingBetweenSlices
	if len(pos) == 0 {
		if len(s.Frames) > 1 {
			return nil, fmt.Errorf("%w: %d frames without positions", ErrGrid, len(s.Frames))
		}
	} else {
		sort.Float64s(pos)
		uniq := pos[:1]
		for _, p := range pos[1:] {
			if p-uniq[len(uniq)-1] > 1e-3 {
				uniq = append(uniq, p)
			}
		}
		if step <= 0 {
			step = math.Inf(1)
			for i := 1; i < len(uniq); i++ {
				step = min(step, uniq[i]-uniq[i-1])
			}
			if math.IsInf(step, 1) {
				step = max(s.SliceThickness, 1)
			}
		}
		for _, p := range uniq {
			f := (p - uniq[0]) / step
			if math.Abs(f-math.Round(f)) > source.Tolerance {
				return nil, fmt.Errorf("%w: frame positions are not multiples of the %g mm slice step", ErrGrid, step)
			}
		}
		nz = int(math.Round((uniq[len(uniq)-1]-uniq[0])/step)) + 1
	}
	if step <= 0 || math.IsInf(step, 0) {
		step = max(s.SliceThickness, 1)
	}
	if err := volume.CheckSize([4]int{s.Columns, s.Rows, nz, 1}, volume.Uint8); err != nil {
		return nil, err
	}
	v := &volume.Volume{Dims: [4]int{s.Columns, s.Rows, nz, 1}, Spacing: [3]float64{s.PixelSpacing[1], s.PixelSpacing[0], step}, Origin: first}
	v.Direction = [9]float64{row[0], col[0], normal[0], row[1], col[1], normal[1], row[2], col[2], normal[2]}
	return v, nil
}

func minOf(f []float64) float64 {
	m := f[0]
	for _, x := range f[1:] {
		m = min(m, x)
	}
	return m
}

// Labels maps every segment to its own number as label value (for viewing a
// segmentation without a task's labels).
func (s *Segmentation) Labels() map[int]int {
	m := make(map[int]int, len(s.Segments))
	for _, sg := range s.Segments {
		m[sg.Number] = sg.Number
	}
	return m
}
