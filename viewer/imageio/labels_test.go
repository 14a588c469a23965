package imageio

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"amid/viewer/dicom/dicomtest"
	"amid/viewer/dicom/rtstruct"
	"amid/viewer/dicom/seg"
	"amid/viewer/dicom/source"
	"amid/viewer/volume"
)

// TestReadLabels: the viewer opens a real DICOM series with its SEG (placed by its frames'
// positions) or its RTSTRUCT (rasterised), and a SEG alone on its own frames' grid.
func TestReadLabels(t *testing.T) {
	dir := dicomtest.Series(t)
	img, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, src, err := source.Image(dir)
	if err != nil {
		t.Fatal(err)
	}
	lab := dicomtest.LabelMap(t, img)
	d := lab.Data.([]uint8)
	nx, ny := img.Dims[0], img.Dims[1]
	var roi rtstruct.ROI
	roi.Number, roi.Name = 5, "box"
	for k := 3; k < 6; k++ {
		for y := 10; y < 50; y++ {
			for x := 20; x < 90; x++ {
				d[(k*ny+y)*nx+x] = 1
			}
		}
		c := rtstruct.Contour{Type: rtstruct.ClosedPlanar}
		for _, p := range [][2]float64{{19.5, 9.5}, {89.5, 9.5}, {89.5, 49.5}, {19.5, 49.5}} {
			c.Points = append(c.Points, img.VoxelToWorld([3]float64{p[0], p[1], float64(k)}))
		}
		roi.Contours = append(roi.Contours, c)
	}
	out := t.TempDir()
	segPath, rtPath := filepath.Join(out, "seg.dcm"), filepath.Join(out, "rtss.dcm")
	if err := seg.Write(segPath, lab, src, []seg.Label{{Value: 1, Name: "box"}}, seg.Options{Created: time.Unix(1e9, 0)}); err != nil {
		t.Fatal(err)
	}
	if err := rtstruct.Write(rtPath, []rtstruct.ROI{roi}, src, rtstruct.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{segPath, rtPath} {
		v, err := ReadLabels(p, img)
		if err != nil {
			t.Fatal(err)
		}
		if !volume.SameGrid(v, img, 1e-6) || !bytes.Equal(v.Data.([]uint8), d) {
			t.Errorf("%s does not read back to the label map on the image's grid", filepath.Base(p))
		}
	}
	// The SEG alone: the grid of its 3 frames.
	alone, err := Read(segPath)
	if err != nil {
		t.Fatal(err)
	}
	if alone.Dims != [4]int{nx, ny, 3, 1} || alone.AtIndex(15*nx+30) != 1 {
		t.Errorf("the SEG alone reads as %v", alone.Dims)
	}
	// Other files read as Read does.
	if v, err := ReadLabels(dir, img); err != nil || v.Dims != img.Dims {
		t.Errorf("ReadLabels of the series folder: %v", err)
	}
}
