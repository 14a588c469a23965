package imageio

import (
	"fmt"
	"io"
	"os"

	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/rtstruct"
	"amid/viewer/dicom/seg"
	"amid/viewer/dicom/source"
	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// DICOM objects that hold labels rather than an image.
const (
	objNone = iota
	objSEG
	objRTSTRUCT
)

// labelObject tells a DICOM SEG or RTSTRUCT file from its header; objNone for anything
// else (an image, another format, a folder).
func labelObject(path string) int {
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		return objNone
	}
	if f, err := FormatOf(path); err != nil || f != DICOM {
		return objNone
	}
	fh, err := os.Open(path)
	if err != nil {
		return objNone
	}
	defer fh.Close()
	// The SOP Class UID lies in the first hundred bytes or so of the data set.
	head := make([]byte, 16<<10)
	n, _ := io.ReadFull(fh, head)
	f, err := dataset.Parse(head[:n], dataset.Options{Until: tag.Tag{Group: 0x0008, Element: 0x0017}})
	if err != nil {
		return objNone
	}
	switch f.DataSet.String(tag.SOPClassUID) {
	case source.SegmentationStorage:
		return objSEG
	case source.RTStructureSetStore:
		return objRTSTRUCT
	}
	return objNone
}

// ReadLabels reads the labels of the image ref from path: a DICOM SEG is placed on ref's
// grid by its frames' positions (each segment's number as label value), a DICOM RTSTRUCT
// rasterised on it (the n-th ROI as label value n), and any other file read as Read does.
// This is how the viewer and the Review screen open a DICOM series with its SEG.
func ReadLabels(path string, ref *volume.Volume) (*volume.Volume, error) {
	switch labelObject(path) {
	case objSEG:
		return readSEG(path, ref)
	case objRTSTRUCT:
		if ref == nil {
			return nil, fmt.Errorf("%s: a structure set needs its image to be drawn on", path)
		}
		s, err := rtstruct.Read(path)
		if err != nil {
			return nil, err
		}
		m := map[int]int{}
		for i, r := range s.ROIs {
			m[r.Number] = i + 1
		}
		v, _, err := s.Rasterise(ref, nil, m)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return v, nil
	}
	return Read(path)
}

// readSEG reads a segmentation onto ref's grid, or onto the grid of its own frames when
// ref is nil.
func readSEG(path string, ref *volume.Volume) (*volume.Volume, error) {
	s, err := seg.Read(path)
	if err != nil {
		return nil, err
	}
	if ref == nil {
		if ref, err = s.Grid(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	v, err := s.LabelMap(ref, nil, s.Labels())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}
