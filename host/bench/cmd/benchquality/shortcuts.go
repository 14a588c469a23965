package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"amid/host/evaluate"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// shortcut is a trivial predictor a careless model could hide behind, and its test score.
type shortcut struct {
	Name  string  `json:"name"`
	Dice  float64 `json:"dice"`
	About string  `json:"about"`
}

// shortcuts scores, on task t's test slabs with the host's metric: the best intensity
// rule learnt from the training slabs (for two classes the single threshold with the best
// Dice, for more each grey level's most frequent class, which any set of thresholds is a
// case of), and copying the labels of the nearest training slice of the same scan.
func shortcuts(ctx context.Context, dir string, t taskDef, train, test []slab) ([]shortcut, error) {
	read := func(sub, id, kind string) (*volume.Volume, error) {
		return imageio.Read(filepath.Join(dir, sub, id+"_"+kind+".nii.gz"))
	}
	type pair struct{ img, lab *volume.Volume }
	var tr []pair
	for _, s := range train {
		img, err := read("train", s.ID, "t1")
		if err != nil {
			return nil, err
		}
		lab, err := read("train", s.ID, "seg")
		if err != nil {
			return nil, err
		}
		tr = append(tr, pair{img, lab})
	}
	k := len(t.Labels)
	// counts[g][c]: voxels of grey level g (0–255, the scan is 8-bit) in class c.
	counts := make([][]int, 256)
	for g := range counts {
		counts[g] = make([]int, k)
	}
	for _, p := range tr {
		for i := range p.img.Len() {
			g := min(max(int(p.img.AtIndex(i)), 0), 255)
			counts[g][int(p.lab.AtIndex(i))]++
		}
	}
	var rule func(g int) uint8
	var about string
	if k == 2 {
		best, bt, above := -1.0, 0, true
		for th := range 257 {
			for _, up := range []bool{true, false} {
				tp, fp, fn := 0, 0, 0
				for g := range 256 {
					on := (g >= th) == up
					if on {
						tp += counts[g][1]
						fp += counts[g][0]
					} else {
						fn += counts[g][1]
					}
				}
				if d := 2 * float64(tp) / float64(max(2*tp+fp+fn, 1)); d > best {
					best, bt, above = d, th, up
				}
			}
		}
		rule = func(g int) uint8 {
			if (g >= bt) == above {
				return 1
			}
			return 0
		}
		dir := "≥"
		if !above {
			dir = "<"
		}
		about = fmt.Sprintf("brain where the grey level is %s %d (the training slabs' best Dice, %.3f)", dir, bt, best)
	} else {
		lut := make([]uint8, 256)
		for g := range counts {
			for c := range k {
				if counts[g][c] > counts[g][lut[g]] {
					lut[g] = uint8(c)
				}
			}
		}
		rule = func(g int) uint8 { return lut[g] }
		about = "each grey level to its most frequent class in the training slabs (every set of intensity thresholds is a case of it)"
	}
	// The nearest training slice of each test slice, in the scan's slice order.
	type plane struct {
		z   int
		lab *volume.Volume
		k   int
	}
	var planes []plane
	for i, s := range train {
		for z := range s.N {
			planes = append(planes, plane{s.Z0 + z, tr[i].lab, z})
		}
	}
	out := []shortcut{}
	for _, sc := range []struct {
		name, about string
		predict     func(s slab, img *volume.Volume, v *volume.Volume)
	}{
		{"intensity", about, func(_ slab, img, v *volume.Volume) {
			for i := range img.Len() {
				v.SetIndex(i, float64(rule(min(max(int(img.AtIndex(i)), 0), 255))))
			}
		}},
		{"nearest-slice", "each test slice takes the labels of the nearest training slice of the same scan", func(s slab, img, v *volume.Volume) {
			n := img.Dims[0] * img.Dims[1]
			for z := range s.N {
				best := planes[0]
				for _, p := range planes {
					if math.Abs(float64(p.z-s.Z0-z)) < math.Abs(float64(best.z-s.Z0-z)) {
						best = p
					}
				}
				for i := range n {
					v.SetIndex(z*n+i, best.lab.AtIndex(best.k*n+i))
				}
			}
		}},
	} {
		pdir := filepath.Join(dir, "shortcuts", sc.name)
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return nil, err
		}
		var pairs []evaluate.Pair
		for _, s := range test {
			img, err := read("test", s.ID, "t1")
			if err != nil {
				return nil, err
			}
			v, err := volume.New(volume.Uint8, img.Dims)
			if err != nil {
				return nil, err
			}
			v.Spacing, v.Origin, v.Direction = img.Spacing, img.Origin, img.Direction
			sc.predict(s, img, v)
			p := filepath.Join(pdir, s.ID+"_seg.nii.gz")
			if err := imageio.Write(p, v); err != nil {
				return nil, err
			}
			pairs = append(pairs, evaluate.Pair{ID: s.ID, Pred: p, Label: filepath.Join(dir, "answers", s.ID+"_seg.nii.gz")})
		}
		score, err := evaluate.Evaluate(ctx, &taskspec.Spec{Kind: taskspec.Segmentation, Dims: 3}, pairs)
		if err != nil {
			return nil, err
		}
		out = append(out, shortcut{Name: sc.name, Dice: score.Value, About: sc.about})
	}
	return out, nil
}
