package data

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"amid/assets/realdata"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// golden holds numpy/scipy reference values made by testdata/golden.py (the command is
// recorded in the file).
type golden struct {
	Image, Resampled, MRInput, MR []float64
	Dims, ResampledDims           [3]int
	Spacing, Target               [3]float64
	CT                            [4]float64
}

func readGolden(t *testing.T) golden {
	b, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Image         []float64  `json:"image"`
		Resampled     []float64  `json:"resampled"`
		MRInput       []float64  `json:"mr_input"`
		MR            []float64  `json:"mr"`
		Dims          [3]int     `json:"dims"`
		ResampledDims [3]int     `json:"resampled_dims"`
		Spacing       [3]float64 `json:"spacing"`
		Target        [3]float64 `json:"target"`
		CT            [4]float64 `json:"ct"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	return golden(raw)
}

func floatVol(t *testing.T, dims [3]int, vals []float64) *volume.Volume {
	v, err := volume.New(volume.Float32, [4]int{dims[0], dims[1], dims[2], 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range vals {
		v.SetIndex(i, x)
	}
	return v
}

// Resampling matches scipy.ndimage.map_coordinates (order 1, mode nearest) at the same
// sample points; MR and CT normalisation match numpy.
func TestGolden(t *testing.T) {
	g := readGolden(t)
	v := floatVol(t, g.Dims, g.Image)
	v.Spacing = g.Spacing
	out, err := Resample(v, g.Target, false)
	if err != nil {
		t.Fatal(err)
	}
	if [3]int(out.Dims[:3]) != g.ResampledDims {
		t.Fatalf("dims %v, want %v", out.Dims, g.ResampledDims)
	}
	for i, w := range g.Resampled {
		// float32 interpolation of values near 100: a few float32 ulps (1e-5 relative).
		if got := out.AtIndex(i); math.Abs(got-w) > 1e-5*math.Abs(w)+1e-5 {
			t.Fatalf("resampled voxel %d = %v, scipy %v", i, got, w)
		}
	}
	mr, err := Norm{Modality: MR}.Apply(floatVol(t, g.Dims, g.MRInput))
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range g.MR {
		if math.Abs(float64(mr[i])-w) > 1e-5 {
			t.Fatalf("MR voxel %d = %v, numpy %v", i, mr[i], w)
		}
	}
	lab, _ := volume.New(volume.Uint8, v.Dims)
	for i := range lab.Data.([]uint8) {
		lab.Data.([]uint8)[i] = 1
	}
	var fit CTFit
	if err := fit.Add("golden", v, lab); err != nil {
		t.Fatal(err)
	}
	s, err := fit.Stats()
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range [4]float64{s.Lo, s.Hi, s.Mean, s.Std} {
		if math.Abs(got-g.CT[i]) > 1e-9*math.Abs(g.CT[i]) {
			t.Fatalf("CT stats %+v, numpy %v", s, g.CT)
		}
	}
}

// A real MR volume with a thresholded label map goes through FileSource (resampled to
// 2 mm) and the loader.
func TestRealFileSource(t *testing.T) {
	path := realdata.Path(t, filepath.Join(realdata.Nibabel, "anatomical.nii"))
	img, err := imageio.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	lab, err := volume.New(volume.Uint8, [4]int{img.Dims[0], img.Dims[1], img.Dims[2], 1})
	if err != nil {
		t.Fatal(err)
	}
	lab.Spacing, lab.Origin, lab.Direction = img.Spacing, img.Origin, img.Direction
	st := img.Stats()
	thr := (st.Min + st.Max) / 2
	for i := range img.NumVoxels() {
		if img.AtIndex(i*img.Dims[3]) > thr {
			lab.Data.([]uint8)[i] = 3
		}
	}
	labPath := filepath.Join(t.TempDir(), "label.nii")
	if err := imageio.Write(labPath, lab); err != nil {
		t.Fatal(err)
	}
	src := &FileSource{Image: path, Label: labPath, Spacing: [3]float64{2, 2, 2}, Norm: Norm{Modality: MR}, Classes: []int{0, 3}}
	c, err := src.Load()
	if err != nil {
		t.Fatal(err)
	}
	for a := range 3 {
		if want := max(1, int(math.Round(float64(img.Dims[a])*img.Spacing[a]/2))); c.Dims[a] != want {
			t.Fatalf("axis %d: %d voxels, want %d", a, c.Dims[a], want)
		}
	}
	if len(c.FgClasses()) != 1 {
		t.Fatalf("classes %v", c.FgClasses())
	}
	l, err := NewLoader(Config{Sampler: Sampler{Patch: [3]int{16, 16, 16}, FgProb: 1}, Batch: 2, Channels: 1, Labels: true, Budget: 1 << 30}, []Source{src})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b, err := l.Next()
	if err != nil {
		t.Fatal(err)
	}
	if !b.Forced[0] || !b.Forced[1] {
		t.Fatal("FgProb 1 and foreground present: not forced")
	}
	l.Release(b)
}
