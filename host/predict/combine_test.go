package predict

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

func TestCombine(t *testing.T) {
	dir := t.TempDir()
	bin := &taskspec.Spec{Kind: taskspec.Segmentation, Dims: 3, Labels: []taskspec.Label{{Value: 0}, {Value: 1}}}
	if !Unionable(bin) || Unionable(&taskspec.Spec{Kind: taskspec.Segmentation, Labels: make([]taskspec.Label, 3)}) || Unionable(&taskspec.Spec{Kind: taskspec.Detection}) {
		t.Fatal("unionable kinds")
	}
	write := func(name string, vals ...float64) string {
		v, _ := volume.New(volume.Uint8, [4]int{len(vals), 1, 1, 1})
		for i, x := range vals {
			v.SetIndex(i, x)
		}
		p := filepath.Join(dir, name, "case.nii.gz")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := imageio.Write(p, v); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := write("a", 1, 0, 0), write("b", 0, 1, 0)
	out, err := combine(bin, []string{a, b}, filepath.Join(dir, "u"), false)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := imageio.Read(out)
	// The union of {1,0,0} and {0,1,0}.
	if u.AtIndex(0) != 1 || u.AtIndex(1) != 1 || u.AtIndex(2) != 0 || filepath.Base(out) != "case.nii.gz" {
		t.Errorf("union %v in %s", []float64{u.AtIndex(0), u.AtIndex(1), u.AtIndex(2)}, out)
	}
	// Enhancement: the mean, rounded to the images' type: (10 + 21) / 2 = 15.5 → 16.
	enh := &taskspec.Spec{Kind: taskspec.Enhancement, Dims: 2}
	out, err = combine(enh, []string{write("c", 10), write("d", 21)}, filepath.Join(dir, "m"), false)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := imageio.Read(out); m.AtIndex(0) != 16 {
		t.Errorf("mean image %v, want 16", m.AtIndex(0))
	}
	// IQA: the mean score.
	iqa := &taskspec.Spec{Kind: taskspec.IQA, Dims: 2, Score: &taskspec.ScoreRange{Min: 0, Max: 4}}
	var files []string
	for i, s := range []float64{1, 2.5} {
		p := filepath.Join(dir, "s", string(rune('a'+i)), "x.json")
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		v := s
		body, _ := (&taskspec.Annotation{Score: &v}).Marshal()
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	out, err = combine(iqa, files, filepath.Join(dir, "q"), false)
	if err != nil {
		t.Fatal(err)
	}
	ann, err := taskspec.ReadAnnotation(out, iqa)
	if err != nil || *ann.Score != 1.75 {
		t.Errorf("mean score %v (%v), want 1.75", ann, err)
	}
}

// TestMeanProbabilities checks the mean of two members' probability maps (what Union
// writes for a fold ensemble): voxelwise and channelwise, float32, on the first's grid.
func TestMeanProbabilities(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, vals ...float32) string {
		v, _ := volume.New(volume.Float32, [4]int{len(vals) / 2, 1, 1, 2})
		v.Spacing = [3]float64{0.5, 0.5, 2}
		copy(v.Data.([]float32), vals)
		p := filepath.Join(dir, name)
		if err := imageio.Write(p, v); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Two voxels of two classes each (channels interleaved per voxel).
	a := write("a.nii.gz", 0.9, 0.1, 0.25, 0.75)
	b := write("b.nii.gz", 0.3, 0.7, 0.75, 0.25)
	out := filepath.Join(dir, "mean.nii.gz")
	if err := reduce([]string{a, b}, out, false); err != nil {
		t.Fatal(err)
	}
	m, err := imageio.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := m.Data.([]float32)
	want := []float32{0.6, 0.4, 0.5, 0.5} // (0.9+0.3)/2, (0.1+0.7)/2, …, rounded to float32
	if !ok || m.Dims != [4]int{2, 1, 1, 2} || m.Spacing != [3]float64{0.5, 0.5, 2} || !slices.Equal(got, want) {
		t.Errorf("mean map %v %v %T %v, want [2 1 1 2] float32 %v", m.Dims, m.Spacing, m.Data, got, want)
	}
	if err := reduce([]string{a, write("c.nii.gz", 1, 0)}, filepath.Join(dir, "bad.nii.gz"), false); err == nil {
		t.Error("maps of different grids were averaged")
	}
}
