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
	Score float64 `json:"score"` // the task's metric: for segmentation the mean Dice
	About string  `json:"about"`
}

// greyLevels is how many grey levels the intensity rule tells apart: the training slabs'
// range in equal bins (every level of an 8-bit scan).
const greyLevels = 256

// shortcuts scores, on task t's test slabs with the host's metric:
//
//   - the best intensity rule learnt from the training slabs (for two classes the single
//     threshold with the best Dice, for more each grey level's most frequent class, which
//     any set of intensity thresholds is a case of);
//   - the nearest slice: each test slice takes the labels of the nearest training slice
//     of the same scan;
//   - position alone: each voxel takes the label most frequent at its normalised position
//     in the training slabs (an atlas, the classic baseline for anatomy).
//
// The last entry is the best of them.
func shortcuts(ctx context.Context, dir string, t taskDef, train, test []slab) ([]shortcut, error) {
	read := func(sub, id, kind string) (*volume.Volume, error) {
		return imageio.Read(filepath.Join(dir, sub, id+"_"+kind+".nii.gz"))
	}
	type pair struct{ img, lab *volume.Volume }
	var tr []pair
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range train {
		img, err := read("train", s.ID, t.Channel)
		if err != nil {
			return nil, err
		}
		lab, err := read("train", s.ID, "seg")
		if err != nil {
			return nil, err
		}
		tr = append(tr, pair{img, lab})
		for i := range img.Len() {
			lo, hi = min(lo, img.AtIndex(i)), max(hi, img.AtIndex(i))
		}
	}
	level := func(v float64) int {
		if hi <= lo {
			return 0
		}
		return min(max(int((v-lo)/(hi-lo)*greyLevels), 0), greyLevels-1)
	}
	value := func(g int) float64 { return lo + float64(g)*(hi-lo)/greyLevels }
	k := len(t.Labels)
	// counts[g][c]: voxels of grey level g in class c.
	counts := make([][]int, greyLevels)
	for g := range counts {
		counts[g] = make([]int, k)
	}
	for _, p := range tr {
		for i := range p.img.Len() {
			counts[level(p.img.AtIndex(i))][int(p.lab.AtIndex(i))]++
		}
	}
	var rule func(g int) uint8
	var about string
	if k == 2 {
		best, bt, above := -1.0, 0, true
		for th := range greyLevels + 1 {
			for _, up := range []bool{true, false} {
				tp, fp, fn := 0, 0, 0
				for g := range greyLevels {
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
		about = fmt.Sprintf("%s where the intensity is %s %.4g (the training slabs' best Dice, %.3f)", t.Labels[1], dir, value(bt), best)
	} else {
		lut := make([]uint8, greyLevels)
		for g := range counts {
			for c := range k {
				if counts[g][c] > counts[g][lut[g]] {
					lut[g] = uint8(c)
				}
			}
		}
		rule = func(g int) uint8 { return lut[g] }
		about = fmt.Sprintf("each of %d grey levels to its most frequent class in the training slabs (every set of intensity thresholds is a case of it)", greyLevels)
	}
	// The nearest training slice of each test slice, along the task's axis.
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
	// The atlas: label counts on the first training slab's grid, each training voxel at
	// its normalised position.
	ref := tr[0].lab.Dims
	atlas := make([]int32, ref[0]*ref[1]*ref[2]*k)
	bin := func(dims [4]int, x, y, z int) int {
		b := [3]int{}
		for a, c := range [3]int{x, y, z} {
			b[a] = min(c*ref[a]/dims[a], ref[a]-1)
		}
		return b[0] + ref[0]*(b[1]+ref[1]*b[2])
	}
	for _, p := range tr {
		each(p.lab.Dims, func(i, x, y, z int) {
			atlas[bin(p.lab.Dims, x, y, z)*k+int(p.lab.AtIndex(i))]++
		})
	}
	out := []shortcut{}
	for _, sc := range []struct {
		name, about string
		predict     func(s slab, img *volume.Volume, v *volume.Volume)
	}{
		{"intensity", about, func(_ slab, img, v *volume.Volume) {
			for i := range img.Len() {
				v.SetIndex(i, float64(rule(level(img.AtIndex(i)))))
			}
		}},
		{"nearest-slice", "each test slice takes the labels of the nearest training slice of the same scan", func(s slab, img, v *volume.Volume) {
			each(img.Dims, func(i, x, y, z int) {
				c := [3]int{x, y, z}
				best := planes[0]
				for _, p := range planes {
					if math.Abs(float64(p.z-s.Z0-c[t.Axis])) < math.Abs(float64(best.z-s.Z0-c[t.Axis])) {
						best = p
					}
				}
				c[t.Axis] = best.k
				d := best.lab.Dims
				v.SetIndex(i, best.lab.AtIndex(c[0]+d[0]*(c[1]+d[1]*c[2])))
			})
		}},
		{"position", "each voxel takes the label most frequent at its normalised position in the training slabs (an atlas)", func(_ slab, img, v *volume.Volume) {
			each(img.Dims, func(i, x, y, z int) {
				b := atlas[bin(img.Dims, x, y, z)*k:][:k]
				c := 0
				for j := range b {
					if b[j] > b[c] {
						c = j
					}
				}
				v.SetIndex(i, float64(c))
			})
		}},
	} {
		pdir := filepath.Join(dir, "shortcuts", sc.name)
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return nil, err
		}
		var pairs []evaluate.Pair
		for _, s := range test {
			img, err := read("test", s.ID, t.Channel)
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
		out = append(out, shortcut{Name: sc.name, Score: score.Value, About: sc.about})
	}
	return best(out), nil
}

// each calls f with every voxel's index and coordinates in a volume of dims.
func each(dims [4]int, f func(i, x, y, z int)) {
	i := 0
	for z := range dims[2] {
		for y := range dims[1] {
			for x := range dims[0] {
				f(i, x, y, z)
				i++
			}
		}
	}
}
