package cnn

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// TestResize checks area averaging and linear growth by hand: a row of 1, 2, 3, 4 halves to
// 1.5, 3.5; three to four voxels shares each input over 4/3 outputs; two voxels grow to
// four at centres 0.25, 0.75, 1.25, 1.75 of the input's spacing (clamped at the edges).
func TestResize(t *testing.T) {
	for _, tc := range []struct {
		in         []float32
		size, grid [3]int
		want       []float32
	}{
		{[]float32{1, 2, 3, 4}, [3]int{4, 1, 1}, [3]int{2, 1, 1}, []float32{1.5, 3.5}},
		{[]float32{0, 3, 6}, [3]int{3, 1, 1}, [3]int{2, 1, 1}, []float32{1, 5}},
		{[]float32{0, 4}, [3]int{2, 1, 1}, [3]int{4, 1, 1}, []float32{0, 1, 3, 4}},
		{[]float32{1, 2, 3, 4}, [3]int{1, 2, 2}, [3]int{1, 1, 1}, []float32{2.5}},
		{[]float32{1, 2, 3, 4, 5, 6, 7, 8}, [3]int{2, 2, 2}, [3]int{1, 2, 1}, []float32{3.5, 5.5}},
	} {
		got := Resize(slices.Clone(tc.in), tc.size, tc.grid)
		if len(got) != len(tc.want) {
			t.Fatalf("%v %v→%v: %v", tc.in, tc.size, tc.grid, got)
		}
		for i := range got {
			if math.Abs(float64(got[i]-tc.want[i])) > 1e-6 {
				t.Errorf("%v %v→%v: %v, want %v", tc.in, tc.size, tc.grid, got, tc.want)
				break
			}
		}
	}
}

// TestLoadROI writes a 2-channel volume whose values are x + 10y + 100z + 1000c and loads
// the region x ∈ [2,4), y ∈ [0,2), z ∈ [3,4) of a 4×4×4 grid onto 1×1×1: the mean of the
// region per channel.
func TestLoadROI(t *testing.T) {
	v, err := volume.New(volume.Float32, [4]int{4, 4, 4, 2})
	if err != nil {
		t.Fatal(err)
	}
	for z := range 4 {
		for y := range 4 {
			for x := range 4 {
				for c := range 2 {
					v.SetIndex(v.Index(x, y, z, c), float64(x+10*y+100*z+1000*c))
				}
			}
		}
	}
	p := filepath.Join(t.TempDir(), "v.nii.gz")
	if err := imageio.Write(p, v); err != nil {
		t.Fatal(err)
	}
	im, err := Load([]string{p}, 3, ROI{{0.5, 1}, {0, 0.5}, {0.75, 1}}, [3]int{1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	// Mean x 2.5, y 0.5, z 3: 2.5 + 5 + 300 (+ 1000 for channel 1).
	if im.C != 2 || im.Data[0] != 307.5 || im.Data[1] != 1307.5 {
		t.Errorf("channels %d, values %v, want 2 and [307.5 1307.5]", im.C, im.Data)
	}
	if _, err := Load([]string{p}, 2, ROI{}, [3]int{2, 2, 1}); err == nil {
		t.Error("a volume loaded for a 2D task")
	}
	if _, err := Load([]string{p}, 3, ROI{{0.5, 0.5}, {0, 1}, {0, 1}}, [3]int{2, 2, 2}); err == nil {
		t.Error("an empty region was accepted")
	}
}

// TestIntensity: a dataset fit clips to the 0.5–99.5 percentiles of 0..999 (4.995 and
// 994.005, numpy's linear interpolation) and z-scores to mean 0, deviation 1.
func TestIntensity(t *testing.T) {
	im := &Image{Grid: [3]int{1000, 1, 1}, C: 1, Data: make([]float32, 1000)}
	for i := range im.Data {
		im.Data[i] = float32(i)
	}
	n, err := FitIntensity("dataset", []*Image{im})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(n.Lo[0]-4.995) > 1e-9 || math.Abs(n.Hi[0]-994.005) > 1e-9 {
		t.Errorf("percentiles %v %v, want 4.995 and 994.005", n.Lo, n.Hi)
	}
	if err := n.Apply(im); err != nil {
		t.Fatal(err)
	}
	var s, q float64
	for _, v := range im.Data {
		s += float64(v)
		q += float64(v) * float64(v)
	}
	// 1e-4: float32 rounding of 1000 values near 1.
	if m, sd := s/1000, math.Sqrt(q/1000-(s/1000)*(s/1000)); math.Abs(m) > 1e-4 || math.Abs(sd-1) > 1e-4 {
		t.Errorf("mean %v deviation %v after normalising, want 0 and 1", m, sd)
	}
	if _, err := FitIntensity("minmax", nil); err == nil {
		t.Error("an unknown intensity kind was accepted")
	}
}

// TestEnsembleCheckpoint saves three members (one live with its optimizer) and loads them
// into zeros: every value comes back, and the live member's optimizer state too.
func TestEnsembleCheckpoint(t *testing.T) {
	be := engine.NewCPU(1)
	a := Arch{In: 1, Outputs: 2, Widths: []int{2, 4}, Convs: 1, Norm: "batch", Pool: "avg", Slope: 0.01}
	var nets []*Model
	for s := range 3 {
		m, err := Build(be, a, 2, [3]int{1, 6, 6}, uint64(s+1), nil)
		if err != nil {
			t.Fatal(err)
		}
		nets = append(nets, m)
	}
	opt := engine.NewAdamW(be, nets[1].Params(), 1e-3, 0)
	r := rand.New(rand.NewPCG(1, 2))
	for _, p := range nets[1].Params() {
		for i := range p.Grad {
			p.Grad[i] = float32(r.NormFloat64())
		}
	}
	opt.Step()
	ens := &Ensemble{Members: []Member{Snapshot(nets[0].Net), Live(nets[1].Net), Snapshot(nets[2].Net)}, Current: 1, Opt: opt}
	path := filepath.Join(t.TempDir(), "e.ckpt")
	if err := ckpt.Save(path, ckpt.Checkpoint{Arch: a.UNet(), Model: ens, Opt: ens}); err != nil {
		t.Fatal(err)
	}
	fresh, err := Build(be, a, 1, [3]int{1, 6, 6}, 9, nil)
	if err != nil {
		t.Fatal(err)
	}
	opt2 := engine.NewAdamW(be, fresh.Params(), 1e-3, 0)
	back := &Ensemble{Members: []Member{Zero(fresh.Net), Live(fresh.Net), Zero(fresh.Net)}, Current: 1, Opt: opt2}
	if _, err := ckpt.Load(path, a.UNet(), back, back); err != nil {
		t.Fatal(err)
	}
	for i, m := range nets {
		for j, p := range m.Params() {
			if !slices.Equal(p.Data, back.Members[i].Params[j].Data) {
				t.Fatalf("member %d parameter %s differs after loading", i, p.Name)
			}
		}
	}
	s1, s2 := opt.State(), opt2.State()
	if s1.Step != s2.Step || !slices.Equal(s1.Slots["m"][0], s2.Slots["m"][0]) {
		t.Error("the live member's optimizer state did not come back")
	}
	if err := back.Members[0].CopyInto(fresh.Net); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fresh.Params()[0].Data, nets[0].Params()[0].Data) {
		t.Error("CopyInto did not copy member 0")
	}
}
