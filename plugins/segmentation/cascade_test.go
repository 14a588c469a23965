package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/engine/data"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// TestCascadeInput checks the cascade's input on a hand-made case: the low-resolution
// class map resampled to the lane's grid by the nearest voxel, its foreground classes as
// one-hot planes after the image's channel and before the position planes, with padding
// value 0.
func TestCascadeInput(t *testing.T) {
	dir := t.TempDir()
	// 8×4×2 voxels of 0.5×1×1 mm; class x mod 3 along x.
	img, _ := volume.New(volume.Float32, [4]int{8, 4, 2, 1})
	lab, _ := volume.New(volume.Uint8, [4]int{8, 4, 2, 1})
	img.Spacing, lab.Spacing = [3]float64{0.5, 1, 1}, [3]float64{0.5, 1, 1}
	cls := make([]int32, 8*4*2)
	for i := range cls {
		cls[i] = int32(i % 8 % 3)
		img.SetIndex(i, float64(1+i%5))
	}
	ip, lp := filepath.Join(dir, "img.nii.gz"), filepath.Join(dir, "lab.nii.gz")
	if err := imageio.Write(ip, img); err != nil {
		t.Fatal(err)
	}
	if err := imageio.Write(lp, lab); err != nil {
		t.Fatal(err)
	}
	prior, err := classVolume(img, cls, 3)
	if err != nil {
		t.Fatal(err)
	}
	// At 1 mm along x the grid is 4×4×2, output voxel x at input x' = 2x: classes 0, 2, 1, 0.
	want := [2][4]float32{{0, 0, 1, 0}, {0, 1, 0, 0}} // planes of classes 1 and 2 along x
	norm := data.Norm{Modality: data.MR, Coords: true}
	src := caseSource{images: []string{ip}, label: lp, spacing: [3]float64{1, 1, 1}, norm: norm, classes: []int{0, 1, 2}, channels: 1}
	plain, err := src.Load()
	if err != nil {
		t.Fatal(err)
	}
	src.prior = prior
	c, err := src.Load()
	if err != nil {
		t.Fatal(err)
	}
	n := 4 * 4 * 2
	if c.Dims != [3]int{4, 4, 2} || c.C != 1+2+data.CoordChannels || len(c.Image) != c.C*n {
		t.Fatalf("case %v with %d planes (%d values), want [4 4 2] with %d", c.Dims, c.C, len(c.Image), 1+2+data.CoordChannels)
	}
	if !slices.Equal(c.Image[:n], plain.Image[:n]) || !slices.Equal(c.Image[3*n:], plain.Image[n:]) {
		t.Error("the image or the position planes moved or changed")
	}
	for k := range 2 {
		for i := range n {
			if got := c.Image[(1+k)*n+i]; got != want[k][i%4] {
				t.Fatalf("one-hot plane of class %d at voxel %d (x %d): %v, want %v", k+1, i, i%4, got, want[k][i%4])
			}
		}
	}
	if !slices.Equal(c.Min[1:3], []float32{0, 0}) || c.Min[0] != plain.Min[0] || len(c.Min) != c.C {
		t.Errorf("padding values %v, want the image's, 0, 0, then the position planes'", c.Min)
	}
}

// cascadeConfig is a small 3D configuration of lane on slabCases (classes 1 and 2 look
// alike in a slice and differ in where along z they lie) at an isotropic spacing, with
// extra fields appended.
func cascadeConfig(lane, extra string, patch [3]int, spacing float64, steps int) []byte {
	return fmt.Appendf(nil, `{"lane":%q,"patch":[%d,%d,%d],"batch":2,"widths":[8,16],"modality":"mr","labels":[0,1,2],"spacing":[%g,%g,%g],`+
		`"steps":%d,"steps_per_epoch":%d,"report_every":%d,"learning_rate":0.01%s}`, lane, patch[0], patch[1], patch[2], spacing, spacing, spacing, steps, steps, steps, extra)
}

// TestCascade trains a 3d_lowres lane at 2 mm and the 3d_cascade_fullres lane on it (in
// process, through the protocol's Train and Predict), and checks that the cascade's
// checkpoint carries the low-resolution network (record and weights, equal to the
// 3d_lowres checkpoint's), that its low-resolution model segments a case as the 3d_lowres
// checkpoint does, that it predicts alone once the 3d_lowres file is gone, and that a bad
// cascade reference is refused.
func TestCascade(t *testing.T) {
	cases := slabCases(t, 4, 7)
	task := protocol.Task{Kind: "segmentation", Dims: 3}
	train := func(cfg []byte) *protocol.TrainResult {
		t.Helper()
		res, err := seg{}.Train(context.Background(), &protocol.TrainRequest{Task: task, Config: cfg, Train: cases[:3], Validation: cases[3:], WorkDir: t.TempDir(), Seed: 4},
			func(*protocol.Progress) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	low := train(cascadeConfig("3d_lowres", "", [3]int{4, 12, 12}, 2, 8))
	ref := fmt.Sprintf(`,"cascade":{"checkpoint":%q,"sha256":%q}`, low.Checkpoint, low.SHA256)
	casc := train(cascadeConfig("3d_cascade_fullres", ref, [3]int{8, 16, 16}, 1, 8))
	t.Logf("validation: 3d_lowres %v, cascade %v", low.Validation, casc.Validation)
	if _, ok := casc.Validation["dice"]; !ok {
		t.Errorf("the cascade's validation lacks dice: %v", casc.Validation)
	}

	// The cascade's checkpoint: the record and the weights of the 3d_lowres network.
	man, stored, err := ckpt.Read(casc.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	var rec saved
	if err := json.Unmarshal(man.Train, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Lowres == nil || rec.Lowres.Config.Lane != "3d_lowres" || man.Arch.In != 1+2 {
		t.Fatalf("cascade record %+v, network input %d; want the 3d_lowres record and 3 channels", rec.Lowres, man.Arch.In)
	}
	_, lw, err := ckpt.Read(low.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	inside := map[string][]float32{}
	for _, b := range stored.Buffers() {
		if name, ok := strings.CutPrefix(b.Name, lowresPrefix); ok {
			inside[name] = b.Data
		}
	}
	if len(inside) != len(lw.Params())+len(lw.Buffers()) {
		t.Fatalf("the cascade carries %d low-resolution tensors, the 3d_lowres checkpoint has %d", len(inside), len(lw.Params())+len(lw.Buffers()))
	}
	for _, p := range lw.Params() {
		if !slices.Equal(inside[p.Name], p.Data) {
			t.Fatalf("low-resolution tensor %s differs inside the cascade", p.Name)
		}
	}

	// Its low-resolution model segments a case as the 3d_lowres checkpoint does.
	be := engine.NewCPU(1)
	m, err := load(be, casc.Checkpoint, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	lm, err := load(be, low.Checkpoint, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	if m.low == nil {
		t.Fatal("the cascade loaded without its low-resolution model")
	}
	_, a, _, err := m.low.classes(cases[3].Images, false)
	if err != nil {
		t.Fatal(err)
	}
	_, b, _, err := lm.classes(cases[3].Images, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Error("the cascade's low-resolution network segments differently from the 3d_lowres checkpoint")
	}
	// The loaded networks save back to the same weights (a round trip of the one file).
	again := filepath.Join(t.TempDir(), "again.ckpt")
	if err := ckpt.Save(again, ckpt.Checkpoint{Arch: man.Arch, Train: rec, Model: withLowres{full: m.u, low: m.low.u}}); err != nil {
		t.Fatal(err)
	}
	_, back, err := ckpt.Read(again)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Buffers()) != len(stored.Buffers()) || len(back.Params()) != len(stored.Params()) {
		t.Fatalf("round trip: %d params and %d buffers, want %d and %d", len(back.Params()), len(back.Buffers()), len(stored.Params()), len(stored.Buffers()))
	}
	for i, x := range back.Buffers() {
		if y := stored.Buffers()[i]; x.Name != y.Name || !slices.Equal(x.Data, y.Data) {
			t.Fatalf("round trip: buffer %s differs", y.Name)
		}
	}
	for i, x := range back.Params() {
		if !slices.Equal(x.Data, stored.Params()[i].Data) {
			t.Fatalf("round trip: parameter %s differs", x.Name)
		}
	}

	// The cascade predicts alone: the 3d_lowres checkpoint is gone.
	alone := filepath.Join(t.TempDir(), "cascade.ckpt")
	raw, err := os.ReadFile(casc.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(low.Checkpoint); err != nil {
		t.Fatal(err)
	}
	pr, err := seg{}.Predict(context.Background(), &protocol.PredictRequest{Task: task, Checkpoint: alone, Cases: cases[3:], OutputDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	got, err := imageio.Read(pr.Predictions[0].Files[0])
	if err != nil {
		t.Fatal(err)
	}
	if got.Dims != [4]int{24, 24, 8, 1} {
		t.Errorf("prediction dims %v, want the input's [24 24 8 1]", got.Dims)
	}

	// Bad references: none, another lane's, a wrong sha256, a checkpoint not of 3d_lowres.
	sum, err := sdk.FileSHA256(casc.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		cfg  []byte
		want string
	}{
		{cascadeConfig("3d_cascade_fullres", "", [3]int{8, 16, 16}, 1, 2), "cascade"},
		{cascadeConfig("3d_fullres", ref, [3]int{8, 16, 16}, 1, 2), "only there"},
		{cascadeConfig("3d_cascade_fullres", fmt.Sprintf(`,"cascade":{"checkpoint":%q,"sha256":%q}`, casc.Checkpoint, strings.Repeat("0", 64)), [3]int{8, 16, 16}, 1, 2), "sha256"},
		{cascadeConfig("3d_cascade_fullres", fmt.Sprintf(`,"cascade":{"checkpoint":%q,"sha256":%q}`, casc.Checkpoint, sum), [3]int{8, 16, 16}, 1, 2), "not 3d_lowres"},
	} {
		_, err := seg{}.Train(context.Background(), &protocol.TrainRequest{Task: task, Config: bad.cfg, Train: cases[:3], WorkDir: t.TempDir(), Seed: 4},
			func(*protocol.Progress) error { return nil })
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want an error saying %q", bad.cfg, err, bad.want)
		}
	}
}

// TestDegrade: on a 10×10×10 grid with a 4³ cube (6.4 %, class 1) and a 10×10×4 slab
// (40 %, class 1) apart, removal always takes the cube and never the slab; dilation of
// the cube alone adds its 6·16 face neighbours, erosion leaves its 2³ core.
func TestDegrade(t *testing.T) {
	dims := [3]int{10, 10, 10}
	at := func(x, y, z int) int { return (z*10+y)*10 + x }
	grid := func(slab bool) []int32 {
		cls := make([]int32, 1000)
		for z := range 10 {
			for y := range 10 {
				for x := range 10 {
					if x >= 1 && x < 5 && y >= 1 && y < 5 && z >= 1 && z < 5 || slab && z >= 6 {
						cls[at(x, y, z)] = 1
					}
				}
			}
		}
		return cls
	}
	count := func(cls []int32) (n int) {
		for _, c := range cls {
			n += int(c)
		}
		return n
	}
	for seed := range uint64(5) {
		cls := grid(true)
		degrade(cls, dims, 2, rand.New(rand.NewPCG(seed, 1)), 0, 1)
		if n := count(cls); n != 400 || cls[at(2, 2, 2)] != 0 {
			t.Fatalf("seed %d: %d voxels of class 1 left, cube centre %d; want the slab's 400 and the cube gone", seed, n, cls[at(2, 2, 2)])
		}
	}
	cube := grid(false)
	morph(cube, dims, 1, true)
	if n := count(cube); n != 64+6*16 {
		t.Errorf("dilated cube: %d voxels, want %d", n, 64+6*16)
	}
	cube = grid(false)
	morph(cube, dims, 1, false)
	if n := count(cube); n != 8 || cube[at(2, 2, 2)] != 1 {
		t.Errorf("eroded cube: %d voxels, want its 8 core voxels", n)
	}
}
