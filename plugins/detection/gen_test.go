package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"amid/plugins/protocol"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// Generated data shaped like the three detection tasks.

// Panoramic-like images: panW×panH pixels, two rows of tooth slots (upper and lower jaw),
// panSlots per row, so each quadrant (half a row) holds panSlots/2 = 8 tooth positions,
// DENTEX's enumeration 1–8.
const (
	panW, panH = 256, 128
	panSlots   = 16
)

// boxSpec is a DENTEX-like spec: quadrant (4), enumeration (8), diagnosis (4).
func boxSpec() *taskspec.Spec {
	return &taskspec.Spec{ID: "dentex-like", Kind: taskspec.Detection, Dims: 2, Modality: "XR", Output: ".json",
		Attributes: []taskspec.Attribute{
			{Name: "quadrant", Classes: []string{"1", "2", "3", "4"}},
			{Name: "enumeration", Classes: []string{"1", "2", "3", "4", "5", "6", "7", "8"}},
			{Name: "diagnosis", Classes: []string{"caries", "deep caries", "periapical lesion", "impacted"}},
		}}
}

// pointSpec is a PUMA-like spec of 3 nuclei classes.
func pointSpec() *taskspec.Spec {
	return &taskspec.Spec{ID: "puma-like", Kind: taskspec.Detection, Dims: 2, Modality: "RGB", Output: ".json",
		Points: []string{"tumor", "TILs", "other"}, PointRadius: 15}
}

// box3DSpec is a TopCoW-detection-like spec.
func box3DSpec() *taskspec.Spec {
	return &taskspec.Spec{ID: "topcow-det-like", Kind: taskspec.Detection, Dims: 3, Modality: "CT", Box3D: true, Output: ".json"}
}

func specJSON(t testing.TB, s *taskspec.Spec) []byte {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func task(t testing.TB, s *taskspec.Spec) protocol.Task {
	return protocol.Task{Kind: taskspec.Detection, Dims: s.Dims, Spec: specJSON(t, s)}
}

func writeAnn(t testing.TB, path string, a *taskspec.Annotation) {
	t.Helper()
	if err := a.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

// panCase writes a panoramic-like grey PNG: a noisy background (σ 12 grey levels) with a
// brighter jaw band, and 3–6 toothlike rectangles (9–12 × 20–28 pixels) in random slots.
// The quadrant and enumeration follow from the slot (upper row right of the image
// centre … as DENTEX numbers them, the patient's right on the image's left), the
// diagnosis from the tooth's brightness (4 levels, 25 grey levels apart).
func panCase(t testing.TB, dir, id string, r *rand.Rand) protocol.Case {
	t.Helper()
	v, err := volume.New(volume.Uint8, [4]int{panW, panH, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	f := make([]float64, panW*panH)
	for y := range panH {
		for x := range panW {
			// A jaw band: brighter around the two tooth rows.
			band := 20 * math.Exp(-math.Pow(float64(y-panH/2)/30, 2))
			f[y*panW+x] = 60 + band + 12*r.NormFloat64()
		}
	}
	ann := &taskspec.Annotation{}
	slot := panW / panSlots
	used := map[int]bool{}
	n := 3 + r.IntN(4)
	for len(ann.Boxes) < n {
		s := r.IntN(2 * panSlots)
		if used[s] {
			continue
		}
		used[s] = true
		row, col := s/panSlots, s%panSlots
		w, h := 9+r.IntN(4), 20+r.IntN(9)
		x := col*slot + (slot-w)/2 + r.IntN(3) - 1
		y := panH/2 - 6 - h + r.IntN(3) // upper row ends above the centre line
		if row == 1 {
			y = panH/2 + 6 + r.IntN(3)
		}
		// DENTEX quadrants: 1 upper right (image left), 2 upper left, 3 lower left, 4 lower
		// right; teeth are numbered 1–8 from the midline outwards.
		left := col < panSlots/2
		q := map[[2]bool]int{{false, true}: 0, {false, false}: 1, {true, false}: 2, {true, true}: 3}[[2]bool{row == 1, left}]
		e := col - panSlots/2
		if left {
			e = panSlots/2 - 1 - col
		}
		d := r.IntN(4)
		for yy := y; yy < y+h; yy++ {
			for xx := x; xx < x+w; xx++ {
				f[yy*panW+xx] += 70 + 25*float64(d)
			}
		}
		ann.Boxes = append(ann.Boxes, taskspec.Box{X: float64(x), Y: float64(y), W: float64(w), H: float64(h), Score: 1,
			Attrs: map[string]int{"quadrant": q, "enumeration": e, "diagnosis": d}})
	}
	px := v.Data.([]uint8)
	for i, x := range f {
		px[i] = uint8(min(max(math.Round(x), 0), 255))
	}
	c := protocol.Case{ID: id, Images: []string{filepath.Join(dir, id+".png")}, Label: filepath.Join(dir, id+".json")}
	if err := imageio.Write(c.Images[0], v); err != nil {
		t.Fatal(err)
	}
	writeAnn(t, c.Label, ann)
	return c
}

// Nuclei: class, radius (pixels) and RGB of the three PUMA-like classes: tumour nuclei
// large and dark purple, lymphocytes (TILs) small and nearly black-blue, others medium and
// light purple; the background is H&E pink.
var nuclei = []struct {
	class  string
	radius float64
	rgb    [3]float64
}{
	{"tumor", 6, [3]float64{110, 40, 140}},
	{"TILs", 3, [3]float64{40, 20, 80}},
	{"other", 4.5, [3]float64{170, 110, 190}},
}

// tileSide is the side of the generated H&E-like tiles.
const tileSide = 96

// tileCase writes a tileSide² RGB PNG of pink tissue (noise σ 10) with 6–10 nuclei at
// least 14 pixels apart, and their centroids.
func tileCase(t testing.TB, dir, id string, r *rand.Rand) protocol.Case {
	t.Helper()
	v, err := volume.New(volume.Uint8, [4]int{tileSide, tileSide, 1, 3})
	if err != nil {
		t.Fatal(err)
	}
	f := make([]float64, 3*tileSide*tileSide)
	pink := [3]float64{230, 170, 200}
	for i := range tileSide * tileSide {
		for c := range 3 {
			f[i*3+c] = pink[c] + 10*r.NormFloat64()
		}
	}
	ann := &taskspec.Annotation{}
	n := 6 + r.IntN(5)
	for tries := 0; len(ann.Points) < n && tries < 1000; tries++ {
		x, y := 6+r.Float64()*(tileSide-12), 6+r.Float64()*(tileSide-12)
		ok := true
		for _, p := range ann.Points {
			if math.Hypot(p.X-x, p.Y-y) < 14 {
				ok = false
			}
		}
		if !ok {
			continue
		}
		k := nuclei[r.IntN(len(nuclei))]
		for yy := int(y - k.radius - 1); yy <= int(y+k.radius+1); yy++ {
			for xx := int(x - k.radius - 1); xx <= int(x+k.radius+1); xx++ {
				if xx < 0 || yy < 0 || xx >= tileSide || yy >= tileSide {
					continue
				}
				if math.Hypot(float64(xx)+0.5-x, float64(yy)+0.5-y) <= k.radius {
					for c := range 3 {
						f[(yy*tileSide+xx)*3+c] = k.rgb[c] + 10*r.NormFloat64()
					}
				}
			}
		}
		ann.Points = append(ann.Points, taskspec.Point{X: x, Y: y, Class: k.class, Score: 1})
	}
	px := v.Data.([]uint8)
	for i, x := range f {
		px[i] = uint8(min(max(math.Round(x), 0), 255))
	}
	c := protocol.Case{ID: id, Images: []string{filepath.Join(dir, id+".png")}, Label: filepath.Join(dir, id+".json")}
	if err := imageio.Write(c.Images[0], v); err != nil {
		t.Fatal(err)
	}
	writeAnn(t, c.Label, ann)
	return c
}

// Volumes: volX×volY×volZ voxels of spacing 0.5×0.5×0.8 mm.
const volX, volY, volZ = 40, 40, 24

// volCase writes a NIfTI CT-like volume (noise σ 20 HU around 40 HU) with two bright
// vessels (300 HU, radius 1.5 voxels) along x and y that cross at a random junction
// marked by a bright blob (radius 3), and the junction's box: 12–16 × 12–16 × 7–9
// voxels around it.
func volCase(t testing.TB, dir, id string, r *rand.Rand) protocol.Case {
	t.Helper()
	v, err := volume.New(volume.Int16, [4]int{volX, volY, volZ, 1})
	if err != nil {
		t.Fatal(err)
	}
	v.Spacing = [3]float64{0.5, 0.5, 0.8}
	jx, jy, jz := 12+r.Float64()*16, 12+r.Float64()*16, 8+r.Float64()*8
	px := v.Data.([]int16)
	for z := range volZ {
		for y := range volY {
			for x := range volX {
				fx, fy, fz := float64(x), float64(y), float64(z)
				val := 40 + 20*r.NormFloat64()
				if math.Hypot(fy-jy, fz-jz) < 1.5 || math.Hypot(fx-jx, fz-jz) < 1.5 {
					val += 260
				}
				if math.Sqrt((fx-jx)*(fx-jx)+(fy-jy)*(fy-jy)+(fz-jz)*(fz-jz)) < 3 {
					val += 200
				}
				px[(z*volY+y)*volX+x] = int16(val)
			}
		}
	}
	size := [3]int{12 + r.IntN(5), 12 + r.IntN(5), 7 + r.IntN(3)}
	b := &taskspec.Box3D{Size: size}
	for a, c := range [3]float64{jx, jy, jz} {
		b.Min[a] = min(max(int(math.Round(c-float64(size[a]-1)/2)), 0), [3]int{volX, volY, volZ}[a]-size[a])
	}
	c := protocol.Case{ID: id, Images: []string{filepath.Join(dir, id+"_0000.nii.gz")}, Label: filepath.Join(dir, id+".json")}
	if err := imageio.Write(c.Images[0], v); err != nil {
		t.Fatal(err)
	}
	writeAnn(t, c.Label, &taskspec.Annotation{Box3D: b})
	return c
}

// gen writes n cases of a generator in a new folder, seeded by seed.
func gen(t testing.TB, n int, seed uint64, f func(testing.TB, string, string, *rand.Rand) protocol.Case) []protocol.Case {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(seed, 11))
	var cs []protocol.Case
	for i := range n {
		cs = append(cs, f(t, dir, fmt.Sprintf("case%03d", i), r))
	}
	return cs
}
