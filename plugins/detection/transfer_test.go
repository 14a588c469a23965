package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/plugins/engine/ckpt"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// sideSpec is a spec of one attribute whose two classes look alike: a structure on the
// image's left or right.
func sideSpec() *taskspec.Spec {
	return &taskspec.Spec{ID: "sides", Kind: taskspec.Detection, Dims: 2, Modality: "MR", Output: ".json",
		Attributes: []taskspec.Attribute{{Name: "side", Classes: []string{"left", "right"}}}}
}

// sliceW and sliceH are the generated slices' size.
const sliceW, sliceH = 96, 64

// sliceAt writes a generated slice at place u in [0, 1] through a volume, as slices of one
// anatomy are: a head-like ellipse (grey 80, noise σ 6) holding two identical bright discs
// (grey 160), mirror images of each other, whose radius grows from 5 to 13 pixels and
// whose centres move from 20 to 14 pixels off the midline and down by 10 pixels as u goes
// from 0 to 1. The boxes are the discs' pixel extents, left and right as classes.
func sliceAt(t testing.TB, dir, id string, u float64, r *rand.Rand) protocol.Case {
	t.Helper()
	v, err := volume.New(volume.Uint8, [4]int{sliceW, sliceH, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	rad := 5 + 8*u
	off, cy := 20-6*u, 24+10*u
	px := v.Data.([]uint8)
	ann := &taskspec.Annotation{}
	ext := [2][4]int{{sliceW, sliceH, -1, -1}, {sliceW, sliceH, -1, -1}}
	for y := range sliceH {
		for x := range sliceW {
			g := 10.0
			if math.Hypot((float64(x)-sliceW/2)/44, (float64(y)-sliceH/2)/30) < 1 {
				g = 80
			}
			for side, cx := range []float64{sliceW/2 - off, sliceW/2 + off} {
				if math.Hypot(float64(x)+0.5-cx, float64(y)+0.5-cy) <= rad {
					g = 160
					e := &ext[side]
					e[0], e[1], e[2], e[3] = min(e[0], x), min(e[1], y), max(e[2], x), max(e[3], y)
				}
			}
			px[x+sliceW*y] = uint8(min(max(math.Round(g+6*r.NormFloat64()), 0), 255))
		}
	}
	for side, e := range ext {
		ann.Boxes = append(ann.Boxes, taskspec.Box{X: float64(e[0]), Y: float64(e[1]), W: float64(e[2] - e[0] + 1), H: float64(e[3] - e[1] + 1),
			Score: 1, Attrs: map[string]int{"side": side}})
	}
	c := protocol.Case{ID: id, Images: []string{filepath.Join(dir, id+".png")}, Label: filepath.Join(dir, id+".json")}
	if err := imageio.Write(c.Images[0], v); err != nil {
		t.Fatal(err)
	}
	writeAnn(t, c.Label, ann)
	return c
}

// slicesAt writes n slices at u = (i + shift)/(n − 1), i = 0 … n−1 (clipped to 1).
func slicesAt(t testing.TB, dir, prefix string, n int, shift float64, seed uint64) []protocol.Case {
	r := rand.New(rand.NewPCG(seed, 1))
	var out []protocol.Case
	for i := range n {
		out = append(out, sliceAt(t, dir, fmt.Sprintf("%s%02d", prefix, i), min(1, (float64(i)+shift)/float64(n-1)), r))
	}
	return out
}

// TestTransferInterpolates trains the box_transfer lane on 9 generated slices and
// predicts the 8 slices halfway between them: with its locally linear weights a slice's
// boxes fall between its neighbours', so it scores above the nearest training slice's
// boxes (neighbours 1), and the classes, which differ only by side, are not confused.
func TestTransferInterpolates(t *testing.T) {
	dir := t.TempDir()
	s := sideSpec()
	train := slicesAt(t, dir, "train", 9, 0, 1)
	test := slicesAt(t, dir, "test", 9, 0.5, 2)[:8]
	ap := map[int]float64{}
	for _, k := range []int{1, defaultNeighbours} {
		cfg := fmt.Sprintf(`{"lane":"box_transfer","size":[1,%d,%d],"neighbours":%d}`, sliceH, sliceW, k)
		preds, refs, val, _ := trainPredict(t, s, cfg, train, test)
		ap[k], _ = dentexAP(s, preds, refs)
		t.Logf("neighbours %d: test AP %.4f, validation %v", k, ap[k], val)
		for i, p := range preds {
			for _, b := range p.Boxes {
				left := b.X+b.W/2 < sliceW/2
				if (b.Attrs["side"] == 0) != left {
					t.Errorf("neighbours %d, case %s: a %s box on the %s", k, test[i].ID, s.Attributes[0].Classes[b.Attrs["side"]], map[bool]string{true: "left", false: "right"}[left])
				}
			}
		}
	}
	// A slice halfway between two training slices holds discs of the mean radius: the
	// nearest slice's boxes miss by half a step (1 pixel of radius, 0.6 of offset), which
	// costs them the strict IoU thresholds of COCO's AP; the fused boxes keep them.
	if !(ap[defaultNeighbours] > ap[1]+0.05) {
		t.Errorf("test AP %.4f with %d neighbours, %.4f with the nearest slice: the fusion gains less than 0.05", ap[defaultNeighbours], defaultNeighbours, ap[1])
	}
}

// TestTransferAtlas checks that the checkpoint's atlas round-trips and that a damaged one
// is refused with what is wrong.
func TestTransferAtlas(t *testing.T) {
	dir := t.TempDir()
	s := sideSpec()
	train := slicesAt(t, dir, "train", 4, 0, 1)
	c, err := transferConfig(config{Lane: laneTransfer, Size: [3]int{1, sliceH / 2, sliceW / 2}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := fitTransfer(context.Background(), train, s, c)
	if err != nil {
		t.Fatal(err)
	}
	b := a.encode()
	if len(b) != 4*4*(sliceW/2)*(sliceH/2) {
		t.Fatalf("%d bytes for 4 images of %d × %d", len(b), sliceW/2, sliceH/2)
	}
	back := &atlas{Dims: a.Dims, Cases: a.Cases}
	if err := back.decode(b, 1); err != nil {
		t.Fatal(err)
	}
	for i := range a.imgs {
		for j := range a.imgs[i] {
			if a.imgs[i][j] != back.imgs[i][j] {
				t.Fatalf("image %d pixel %d: %v, decoded %v", i, j, a.imgs[i][j], back.imgs[i][j])
			}
		}
	}
	nan := append([]byte(nil), b...)
	copy(nan[8:], []byte{0, 0, 0xc0, 0x7f}) // a NaN as pixel 2 of case 0
	for _, tc := range []struct {
		name  string
		a     atlas
		b     []byte
		attrs int
		want  string
	}{
		{"short", atlas{Dims: a.Dims, Cases: a.Cases}, b[:len(b)-4], 1, "bytes"},
		{"nan", atlas{Dims: a.Dims, Cases: a.Cases}, nan, 1, "pixel 2"},
		{"attributes", atlas{Dims: a.Dims, Cases: a.Cases}, b, 3, "box"},
		{"grid", atlas{Dims: [2]int{0, 4}, Cases: a.Cases}, b, 1, "grid"},
		{"empty", atlas{Dims: a.Dims}, nil, 1, "without cases"},
	} {
		if err := tc.a.decode(tc.b, tc.attrs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	// A checkpoint whose extra bytes were cut is refused at load.
	p := filepath.Join(dir, "cut.ckpt")
	rec := saved{Config: c, Mode: modeBoxes, Channels: 1, Spec: s, Atlas: a}
	if err := ckpt.Save(p, ckpt.Checkpoint{Train: rec, Epoch: 1, Step: 1, Model: emptyModel{}, Extra: b[:len(b)/2]}); err != nil {
		t.Fatal(err)
	}
	if _, err := load(nil, p); err == nil || !strings.Contains(err.Error(), "atlas") {
		t.Errorf("a cut atlas loaded: %v", err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
}

// TestLLEWeights checks the locally linear weights on images built from two others: a
// mix of them gets the mix's weights back, a copy of one all the weight, a third image
// none; and the image equal to all of them gets uniform weights.
func TestLLEWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 1))
	const n = 64
	img := func() []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	a, b, c := img(), img(), img()
	mix := make([]float32, n)
	for i := range mix {
		mix[i] = 0.3*a[i] + 0.7*b[i]
	}
	ims := [][]float32{a, b, c}
	get := func(k int) []float32 { return ims[k] }
	w := lleWeights(mix, n, 0, 0, n, 1, get, 3)
	// The ridge (transferRidge of the mean diagonal) pulls the weights a little toward
	// uniform: within 0.05 of the mix here.
	if math.Abs(w[0]-0.3) > 0.05 || math.Abs(w[1]-0.7) > 0.05 || w[2] > 0.05 {
		t.Errorf("weights of 0.3 a + 0.7 b: %v", w)
	}
	same := lleWeights(a, n, 0, 0, n, 1, func(int) []float32 { return a }, 3)
	for _, v := range same {
		if math.Abs(v-1.0/3) > 1e-12 {
			t.Errorf("weights of identical images: %v", same)
		}
	}
}
