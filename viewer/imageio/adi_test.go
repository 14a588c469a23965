package imageio

import (
	"math"
	"path/filepath"
	"testing"

	"amid/assets/realdata"
	"amid/viewer/volume"
)

// ami.js ships the same slice as DICOM and NIfTI (SOURCES.md): read through our two readers,
// every voxel must hold the same value at the same world position, which checks both
// readers' orientation (LPS from DICOM's IOP/IPP, RAS→LPS from NIfTI's affine).
func TestADISliceSameInWorld(t *testing.T) {
	dcm, err := Read(realdata.Path(t, filepath.Join(realdata.AMI, "dicom/adi_slice.dcm")))
	if err != nil {
		t.Fatal(err)
	}
	nii, err := Read(realdata.Path(t, filepath.Join(realdata.AMI, "nifti/adi_slice.nii")))
	if err != nil {
		t.Fatal(err)
	}
	// The NIfTI stores its affine in float32; DICOM keeps decimal strings: equal within 1e-5.
	if !volume.SameGrid(dcm, nii, 1e-5) {
		t.Fatalf("grids differ: DICOM %v %v %v, NIfTI %v %v %v", dcm.Spacing, dcm.Origin, dcm.Direction, nii.Spacing, nii.Origin, nii.Direction)
	}
	bad := 0
	for y := 0; y < dcm.Dims[1]; y++ {
		for x := 0; x < dcm.Dims[0]; x++ {
			w := dcm.VoxelToWorld([3]float64{float64(x), float64(y), 0})
			i := nii.WorldToVoxel(w)
			xi, yi, zi := int(math.Round(i[0])), int(math.Round(i[1])), int(math.Round(i[2]))
			if xi < 0 || yi < 0 || zi < 0 || xi >= nii.Dims[0] || yi >= nii.Dims[1] || zi >= nii.Dims[2] {
				bad++
				continue
			}
			if nii.At(xi, yi, zi, 0) != dcm.At(x, y, 0, 0) {
				bad++
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d voxels differ at the same world position", bad, dcm.Dims[0]*dcm.Dims[1])
	}
}
