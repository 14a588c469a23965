package ingest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/dicomtest"
	"amid/viewer/dicom/rtstruct"
	"amid/viewer/dicom/seg"
	"amid/viewer/imageio"
	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

const dicomTask = `id: dicomlabels
kind: segmentation
dims: 3
labels:
  - {value: 0, name: background}
  - {value: 1, name: brain, code: {scheme: SCT, value: "12738006", meaning: Brain}}
  - {value: 2, name: lesion}
data:
  train:
    images: ["train/images/{id}"]
    label: {path: "train/labels/{id}.dcm", format: dicom, names: {"GTV-1": lesion, "Couch": background}}
  test:
    images: ["test/images/{id}"]
metric: {name: dice}
submission: {columns: [id, f], id_column: id, file_column: f, path: "p/{id}.nii.gz"}
`

// TestDICOMLabels: on a real MR series, one case labelled by a segmentation and one by a
// structure set become the label maps they describe. The segmentation's segments match
// by code (SCT 12738006, named "Whole brain") and by name ("Lesion"); the structure
// set's ROIs by name ("BRAIN", spelled otherwise), through the names mapping ("GTV-1")
// and out of it ("Couch", mapped to the background).
func TestDICOMLabels(t *testing.T) {
	grid, src, series := dicomtest.Volume(t)
	root := t.TempDir()
	// Case a: a segmentation with brain (bright voxels) and a lesion box.
	want := dicomtest.LabelMap(t, grid)
	d := want.Data.([]uint8)
	nx, ny := grid.Dims[0], grid.Dims[1]
	for i := range d {
		x, y, z := i%nx, (i/nx)%ny, i/(nx*ny)
		switch {
		case x >= 100 && x < 140 && y >= 100 && y < 130 && z >= 8 && z < 12:
			d[i] = 2
		case grid.AtIndex(i) > 500:
			d[i] = 1
		}
	}
	for _, c := range []string{"a", "b"} {
		dicomtest.Copy(t, series, filepath.Join(root, "train/images", c), func(*dataset.DataSet) {})
	}
	if err := seg.Write(filepath.Join(root, "train/labels/a.dcm"), want, src, []seg.Label{
		{Value: 1, Name: "Whole brain", Type: seg.Code{Value: "12738006", Scheme: "SCT", Meaning: "Brain"}},
		{Value: 2, Name: "Lesion"},
	}, seg.Options{}); err != nil {
		t.Fatal(err)
	}
	// Case b: a structure set with the same lesion box (a contour through voxel corners
	// 99.5…139.5 × 99.5…129.5 covers voxels 100…139 × 100…129), a brain square and a
	// couch outline that the mapping drops.
	box := func(k int, x0, y0, x1, y1 float64) rtstruct.Contour {
		c := rtstruct.Contour{Type: rtstruct.ClosedPlanar}
		for _, p := range [][2]float64{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}} {
			c.Points = append(c.Points, grid.VoxelToWorld([3]float64{p[0], p[1], float64(k)}))
		}
		return c
	}
	rois := []rtstruct.ROI{{Number: 7, Name: "BRAIN"}, {Number: 8, Name: "GTV-1"}, {Number: 9, Name: "Couch"}}
	wantB := want.Clone()
	db := wantB.Data.([]uint8)
	clear(db)
	for k := 8; k < 12; k++ {
		rois[1].Contours = append(rois[1].Contours, box(k, 99.5, 99.5, 139.5, 129.5))
		rois[0].Contours = append(rois[0].Contours, box(k, 49.5, 49.5, 199.5, 199.5))
		rois[2].Contours = append(rois[2].Contours, box(k, -0.5, 240.5, 255.5, 255.5))
		for y := 50; y < 200; y++ {
			for x := 50; x < 200; x++ {
				v := uint8(1)
				if x >= 100 && x < 140 && y >= 100 && y < 130 {
					v = 2
				}
				db[(k*ny+y)*nx+x] = v
			}
		}
	}
	if err := rtstruct.Write(filepath.Join(root, "train/labels/b.dcm"), rois, src, rtstruct.Options{}); err != nil {
		t.Fatal(err)
	}
	tk := parseTask(t, dicomTask)
	ds, err := tk.Resolve(root)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	got, err := Labels(context.Background(), tk, ds.Train, out)
	if err != nil {
		t.Fatal(err)
	}
	for id, w := range map[string]*volume.Volume{"a": want, "b": wantB} {
		v, err := imageio.Read(got[id])
		if err != nil {
			t.Fatal(err)
		}
		if !volume.SameGrid(v, grid, 1e-4) || !bytes.Equal(v.Data.([]uint8), w.Data.([]uint8)) {
			t.Errorf("case %s: the label map differs from the one the %s describes", id, map[string]string{"a": "segmentation", "b": "structure set"}[id])
		}
	}
	// A second call keeps the converted files.
	before := modTime(t, got["a"])
	time.Sleep(10 * time.Millisecond)
	if _, err := Labels(context.Background(), tk, ds.Train, out); err != nil || modTime(t, got["a"]) != before {
		t.Errorf("the converted label was made again (%v)", err)
	}
	// Without the mapping, GTV-1 matches no label, and the error says what to do.
	tk2 := parseTask(t, strings.Replace(dicomTask, `, names: {"GTV-1": lesion, "Couch": background}`, "", 1))
	_, err = Labels(context.Background(), tk2, ds.Train, t.TempDir())
	if !errors.Is(err, ErrLabel) || !strings.Contains(err.Error(), `ROI 8 "GTV-1" matches none of the task's labels (background, brain, lesion)`) || !strings.Contains(err.Error(), "data.train.label.names") {
		t.Errorf("unmapped ROI: %v", err)
	}
	// A segmentation drawn on another series is refused, naming both.
	dicomtest.Copy(t, series, filepath.Join(root, "train/images/c"), func(d *dataset.DataSet) {
		d.Put(dataset.Text(tag.SeriesInstanceUID, "UI", "2.25.42"))
	})
	b, err := os.ReadFile(filepath.Join(root, "train/labels/a.dcm"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "train/labels/c.dcm"), string(b))
	ds, err = tk.Resolve(root)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Labels(context.Background(), tk, ds.Train[2:], t.TempDir())
	if !errors.Is(err, ErrLabel) || !strings.Contains(err.Error(), "drawn on series "+src.SeriesInstanceUID) || !strings.Contains(err.Error(), "2.25.42") {
		t.Errorf("a segmentation of another series: %v", err)
	}
}

func modTime(t *testing.T, p string) time.Time {
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.ModTime()
}
