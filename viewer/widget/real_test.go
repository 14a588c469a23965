package widget

import (
	"bytes"
	"path/filepath"
	"testing"

	"amid/assets"
	"amid/assets/realdata"
	"amid/viewer/nifti"
	"amid/viewer/volume"
)

// checkScreenDirections asserts the screen conventions on v for every plane: one pixel right
// moves towards patient left (sagittal: posterior), one pixel down towards posterior (axial)
// or inferior (coronal, sagittal), in world coordinates computed by VoxelToWorld.
func checkScreenDirections(t *testing.T, name string, v *volume.Volume) {
	t.Helper()
	world := func(i [3]int) [3]float64 {
		return v.VoxelToWorld([3]float64{float64(i[0]), float64(i[1]), float64(i[2])})
	}
	// LPS component and sign expected for screen right and screen down, per plane.
	want := map[Plane][2][2]float64{
		Axial:    {{0, 1}, {1, 1}},
		Coronal:  {{0, 1}, {2, -1}},
		Sagittal: {{1, 1}, {2, -1}},
	}
	for p, w := range want {
		l := NewLayout(v, p)
		if l.W < 2 || l.H < 2 {
			continue
		}
		o, r, d := world(l.Voxel(0, 0, 0)), world(l.Voxel(1, 0, 0)), world(l.Voxel(0, 1, 0))
		if got := (r[int(w[0][0])] - o[int(w[0][0])]) * w[0][1]; got <= 0 {
			t.Errorf("%s %v: screen right moves %v along LPS axis %v (direction %v)", name, p, got, w[0][0], v.Direction)
		}
		if got := (d[int(w[1][0])] - o[int(w[1][0])]) * w[1][1]; got <= 0 {
			t.Errorf("%s %v: screen down moves %v along LPS axis %v (direction %v)", name, p, got, w[1][0], v.Direction)
		}
		var rd Renderer
		if _, err := rd.Render(v, &Params{Plane: p, Slice: l.N / 2, Window: PercentileWindow(v)}); err != nil {
			t.Errorf("%s %v: %v", name, p, err)
		}
	}
}

func TestRealOrientations(t *testing.T) {
	for _, f := range []string{
		filepath.Join(realdata.Nibabel, "anatomical.nii"),
		filepath.Join(realdata.Nibabel, "standard.nii.gz"),
		filepath.Join(realdata.Nibabel, "reoriented_anat_moved.nii"),
		filepath.Join(realdata.ITK, "KmeansTest_T1UCharRaw.nii.gz"),
	} {
		v, err := nifti.Read(realdata.Path(t, f))
		if err != nil {
			t.Fatal(err)
		}
		checkScreenDirections(t, filepath.Base(f), v)
	}
}

// The bundled sample CT renders in all planes with its labels, and its letters follow the
// screen conventions.
func TestSampleCT(t *testing.T) {
	ct, err := nifti.Decode(bytes.NewReader(assets.SampleCT), assets.SampleCTPath)
	if err != nil {
		t.Fatal(err)
	}
	lab, err := nifti.Decode(bytes.NewReader(assets.SampleLabels), assets.SampleLabelsPath)
	if err != nil {
		t.Fatal(err)
	}
	checkScreenDirections(t, "sample CT", ct)
	if p := DefaultPresets(ct); len(p) != len(CTPresets) {
		t.Errorf("sample CT not recognised as CT: presets %v", p)
	}
	l := NewLayout(ct, Axial)
	if l.Left != "R" || l.Right != "L" || l.Top != "A" || l.Bottom != "P" {
		t.Errorf("sample CT axial letters %q %q %q %q", l.Left, l.Right, l.Top, l.Bottom)
	}
	var r Renderer
	for _, p := range []Plane{Axial, Coronal, Sagittal} {
		n := NewLayout(ct, p).N
		if _, err := r.Render(ct, &Params{Plane: p, Slice: n / 2, Window: CTPresets[0].Window, Overlay: Overlay{Labels: lab, Colors: DefaultColors(), Opacity: 0.5}}); err != nil {
			t.Errorf("%v: %v", p, err)
		}
	}
}
