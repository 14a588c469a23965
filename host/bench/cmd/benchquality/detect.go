package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// The detection task: boxes of deep grey structures of the NeuroMaps parcellation on
// coronal slices of the INIA19 macaque T1, each structure's left and right twins two
// classes. Twins look alike; only the side of the midline tells them apart, so a model
// must use where a structure lies, not only how it looks.
//
// mricron-data ships the NeuroMaps map without its table of names (no
// inia19-NeuroMaps.txt beside it), so the classes are named by their NeuroMaps values.
// The four structures were chosen from the map alone, among the twin pairs whose coronal
// cross-sections are compact (one connected piece on nearly every slice) and whose runs
// of coronal slices overlap, so that most slices show several: on the slices where each
// shows 30 pixels or more, 82 (beside the lateral ventricle, above the others) on 44
// slices filling 0.42 of its box on average, 98 (lateral to the internal capsule) on 37
// filling 0.59, 162 (medial to 98, inside its box) on 19 filling 0.54, and 497 (beside
// the third ventricle) on 19 filling 0.53; their right twins alike.
var boxStructures = []int{82, 98, 162, 497}

const (
	// boxAxis is the slicing axis: 1, the INIA19 grid's front-to-back axis (coronal
	// slices; its direction cosines are −1, −1, 1 in the patient frame, so axis 0 runs
	// from left to right and left regions lie on its low half).
	boxAxis = 1
	// boxAttr is the task's one attribute: which structure a box holds.
	boxAttr = "structure"
	// minBoxPixels is the smallest cross-section (its largest connected piece, in
	// pixels of 0.5 × 0.5 mm) a structure must show on a slice to get a box there: 30
	// pixels is 7.5 mm², about 5 × 6 pixels. Smaller pieces are a structure's tapering
	// end, where its box changes by half its size from one slice to the next and the
	// partial-volume rim decides where it stops; COCO AP's IoU thresholds up to 0.95
	// would make such boxes a toss of a coin for any predictor.
	minBoxPixels = 30
	// iniaRightOffset is the NeuroMaps convention for the right hemisphere: a right
	// region's value is its left twin's plus 1000.
	iniaRightOffset = 1000
)

// The detection task's id and title.
const (
	boxesID    = "inia19-boxes"
	boxesTitle = "macaque T1 MR at 0.5 mm, boxes of four deep grey NeuroMaps structures, left and right apart (coronal slices)"
)

// detectionTask is the real-image detection task (families.go).
var detectionTask = family{
	ID:     boxesID,
	Title:  boxesTitle,
	Kind:   taskspec.Detection,
	Labels: "the bounding box of each structure's largest connected piece on the slice in the INIA19 NeuroMaps parcellation drawn on the template, wherever it is at least 30 pixels (7.5 mm²)",
	write:  writeBoxes,
}

func init() { families = append(families, detectionTask) }

// boxClasses are the task's classes in attribute order: each structure's left twin, then
// its right one. value maps a NeuroMaps value to its class index.
func boxClasses() (names []string, value map[int]int) {
	value = map[int]int{}
	for _, v := range boxStructures {
		value[v] = len(names)
		names = append(names, fmt.Sprintf("left %d", v))
		value[v+iniaRightOffset] = len(names)
		names = append(names, fmt.Sprintf("right %d", v))
	}
	return names, value
}

// boxSlice is one case: a coronal slice, its place along boxAxis, and its boxes.
type boxSlice struct {
	ID    string
	At    int // the slice's index along boxAxis
	Boxes []taskspec.Box
}

// sliceSize is a coronal slice's width and height in pixels: its columns run along the
// scan's axis 0 (left to right), its rows along axis 2 flipped, so that the top of the
// image is the top of the head.
func sliceSize(dims [4]int) (w, h int) { return dims[0], dims[2] }

// sliceIndex is the scan's voxel index of pixel (col, row) of the slice at along boxAxis.
func sliceIndex(dims [4]int, at, col, row int) int {
	z := dims[2] - 1 - row
	return col + dims[0]*(at+dims[1]*z)
}

// cutBoxes reads the template and its parcellation and returns the template and, for
// every coronal slice between the first and the last showing a box, the slice and its
// boxes (one per class at most, the bounding box of the class's largest 8-connected
// piece when it holds minBoxPixels or more). Slices without any box are left out: a
// detection case must hold an object.
func cutBoxes(realdata string) (*volume.Volume, []boxSlice, error) {
	img, err := imageio.Read(filepath.Join(realdata, iniaImage))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", iniaImage, err)
	}
	src, err := imageio.Read(filepath.Join(realdata, iniaMaps))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", iniaMaps, err)
	}
	if src.Dims != img.Dims {
		return nil, nil, fmt.Errorf("%s is %v, its label map %v", iniaImage, img.Dims, src.Dims)
	}
	_, value := boxClasses()
	w, h := sliceSize(img.Dims)
	var out []boxSlice
	class := make([]int, w*h)
	for at := range img.Dims[boxAxis] {
		for row := range h {
			for col := range w {
				c, ok := value[int(src.AtIndex(sliceIndex(img.Dims, at, col, row)))]
				if !ok {
					c = -1
				}
				class[col+w*row] = c
			}
		}
		s := boxSlice{ID: fmt.Sprintf("coronal%03d", at), At: at}
		for c := range len(value) {
			b, n := largestPiece(class, w, h, c)
			if n >= minBoxPixels {
				b.Attrs, b.Score = map[string]int{boxAttr: c}, 1
				s.Boxes = append(s.Boxes, b)
			}
		}
		if len(s.Boxes) > 0 {
			out = append(out, s)
		}
	}
	if len(out) < nSlabs {
		return nil, nil, fmt.Errorf("%d slices show a box, fewer than the %d blocks", len(out), nSlabs)
	}
	return img, out, nil
}

// largestPiece is the bounding box of the largest 8-connected piece of the pixels of
// class c in a w × h slice, and its size in pixels (0 when there is none).
func largestPiece(class []int, w, h, c int) (taskspec.Box, int) {
	seen := make([]bool, len(class))
	var best taskspec.Box
	most := 0
	var stack []int
	for start, v := range class {
		if v != c || seen[start] {
			continue
		}
		seen[start] = true
		stack = append(stack[:0], start)
		n, x0, y0, x1, y1 := 0, w, h, -1, -1
		for len(stack) > 0 {
			p := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			n++
			x, y := p%w, p/w
			x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					nx, ny := x+dx, y+dy
					if nx < 0 || ny < 0 || nx >= w || ny >= h {
						continue
					}
					if q := nx + w*ny; class[q] == c && !seen[q] {
						seen[q] = true
						stack = append(stack, q)
					}
				}
			}
		}
		if n > most {
			most = n
			best = taskspec.Box{X: float64(x0), Y: float64(y0), W: float64(x1 - x0 + 1), H: float64(y1 - y0 + 1)}
		}
	}
	return best, most
}

// boxBlock is the block (0 … nSlabs−1) of the slice at along boxAxis when the slices
// lo … hi are cut into nSlabs blocks of near-equal thickness, as the segmentation
// tasks' slabs are.
func boxBlock(at, lo, hi int) int {
	return min((at-lo)*nSlabs/(hi-lo+1), nSlabs-1)
}

// splitBoxes splits the slices into training and test cases: the slices from the first
// to the last showing a box in nSlabs blocks, blocks 1, 4 and 7 (testSlabs) the test.
func splitBoxes(all []boxSlice) (train, test []boxSlice) {
	lo, hi := all[0].At, all[len(all)-1].At
	for _, s := range all {
		if testSlabs[boxBlock(s.At, lo, hi)] {
			test = append(test, s)
		} else {
			train = append(train, s)
		}
	}
	return train, test
}

// writeBoxes writes the detection task into dir (family.write).
func writeBoxes(ctx context.Context, realdata, dir string) ([]shortcut, error) {
	img, all, err := cutBoxes(realdata)
	if err != nil {
		return nil, err
	}
	train, test := splitBoxes(all)
	if err := freshTask(dir, "train/images", "train/labels", "test/images", "answers"); err != nil {
		return nil, err
	}
	// One grey scale for every slice (the template's maximum to 255), so a tissue keeps
	// its grey level from slice to slice.
	top := 0.0
	for i := range img.Len() {
		top = max(top, img.AtIndex(i))
	}
	if !(top > 0) || math.IsInf(top, 0) {
		return nil, fmt.Errorf("%s: maximum intensity %v", iniaImage, top)
	}
	for _, c := range []struct {
		cases        []boxSlice
		images, labs string
	}{{train, "train/images", "train/labels"}, {test, "test/images", "answers"}} {
		for _, s := range c.cases {
			if err := writeSlicePNG(filepath.Join(dir, c.images, s.ID+".png"), img, s.At, top); err != nil {
				return nil, err
			}
			if err := writeBoxesJSON(filepath.Join(dir, c.labs, s.ID+".json"), s.Boxes); err != nil {
				return nil, err
			}
		}
	}
	names, _ := boxClasses()
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	yaml := fmt.Sprintf(`# make bench-quality: %s; %d coronal slices with boxes, in %d blocks (blocks 1, 4 and 7 the test).
id: %s
title: %q
kind: detection
dims: 2
modality: MR
channels: [t1]
attributes:
  - name: %s
    classes: [%s]
data:
  train:
    images: ["train/images/{id}.png"]
    label: {format: annotation, path: "train/labels/{id}.json"}
  test:
    images: ["test/images/{id}.png"]
metric: {name: ap_mean}
submission:
  id_column: case_id
  columns: [case_id, prediction]
  file_column: prediction
  path: "predictions/{id}.json"
`, boxesTitle, len(all), nSlabs, boxesID, boxesTitle, boxAttr, strings.Join(quoted, ", "))
	if err := os.WriteFile(filepath.Join(dir, "task.yaml"), []byte(yaml), 0o644); err != nil {
		return nil, err
	}
	return boxShortcuts(ctx, dir, len(names), train, test)
}

// writeSlicePNG writes the coronal slice at of img as an 8-bit grey PNG (the plain
// detection task's format), intensity v to v/top·255.
func writeSlicePNG(path string, img *volume.Volume, at int, top float64) error {
	w, h := sliceSize(img.Dims)
	v, err := volume.New(volume.Uint8, [4]int{w, h, 1, 1})
	if err != nil {
		return err
	}
	v.Spacing = [3]float64{img.Spacing[0], img.Spacing[2], 1}
	for row := range h {
		for col := range w {
			g := img.AtIndex(sliceIndex(img.Dims, at, col, row))
			v.SetIndex(col+w*row, math.Round(min(max(g/top, 0), 1)*255))
		}
	}
	return imageio.Write(path, v)
}

// writeBoxesJSON writes boxes as an annotation JSON file.
func writeBoxesJSON(path string, boxes []taskspec.Box) error {
	b, err := json.MarshalIndent(taskspec.Annotation{Boxes: boxes}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// boxShortcuts scores, on the test slices with the task's metric (ap_mean):
//
//   - the nearest slice: each test slice takes the boxes of the nearest training slice,
//     scored 1/(1+d) for a training slice d slices away (a box copied from farther is
//     less likely to fit, and AP rewards ranking it lower);
//   - interpolation: each class's box interpolated linearly between the nearest
//     training slices on either side, scored 1/(1+d) for the nearer of them d slices
//     away when both show the class, the one box at half that when one does;
//   - position alone: each class's median box over the training slices within one
//     block's thickness of the test slice, scored with the share of them that show it.
//
// COCO AP ranks tied scores in the order the cases come, which scoreShortcut leaves to
// a map's order: untie makes every box's score distinct, in test-slice and class order,
// so a shortcut's score does not change from one run to the next. The last entry is the
// best of them.
func boxShortcuts(ctx context.Context, dir string, classes int, train, test []boxSlice) ([]shortcut, error) {
	lo, hi := min(train[0].At, test[0].At), max(train[len(train)-1].At, test[len(test)-1].At)
	// window is one block's thickness: a test block's slices reach into the training
	// blocks on either side.
	window := max(1, (hi-lo+1)/nSlabs)
	byClass := func(s boxSlice, c int) (taskspec.Box, bool) {
		for _, b := range s.Boxes {
			if b.Attrs[boxAttr] == c {
				return b, true
			}
		}
		return taskspec.Box{}, false
	}
	nearest := func(at int) boxSlice {
		best := train[0]
		for _, s := range train[1:] {
			if intAbs(s.At-at) < intAbs(best.At-at) {
				best = s
			}
		}
		return best
	}
	predictors := []struct {
		name, about string
		predict     func(at int) []taskspec.Box
	}{
		{"nearest-slice", "each test slice takes the boxes of the nearest training slice, scored 1/(1+d) for one d slices away", func(at int) []taskspec.Box {
			s := nearest(at)
			out := slices.Clone(s.Boxes)
			for i := range out {
				out[i].Score = 1 / float64(1+intAbs(s.At-at))
			}
			return out
		}},
		{"interpolate", "each structure's box interpolated between the nearest training slices on either side, scored 1/(1+d) for the nearer d slices away when both show it, half that when one does", func(at int) []taskspec.Box {
			below, above := -1, -1
			for i, s := range train {
				if s.At <= at {
					below = i
				}
				if s.At >= at && above < 0 {
					above = i
				}
			}
			var out []taskspec.Box
			for c := range classes {
				var bb, ba taskspec.Box
				okb, oka := false, false
				if below >= 0 {
					bb, okb = byClass(train[below], c)
				}
				if above >= 0 {
					ba, oka = byClass(train[above], c)
				}
				d := len(train) // the nearer side's distance in slices
				if below >= 0 {
					d = at - train[below].At
				}
				if above >= 0 {
					d = min(d, train[above].At-at)
				}
				score := 1 / float64(1+d)
				switch {
				case okb && oka:
					t := 0.0
					if gap := train[above].At - train[below].At; gap > 0 {
						t = float64(at-train[below].At) / float64(gap)
					}
					out = append(out, taskspec.Box{X: boxLerp(bb.X, ba.X, t), Y: boxLerp(bb.Y, ba.Y, t), W: boxLerp(bb.W, ba.W, t), H: boxLerp(bb.H, ba.H, t), Attrs: bb.Attrs, Score: score})
				case okb || oka:
					b := bb
					if oka {
						b = ba
					}
					b.Score = score / 2
					out = append(out, b)
				}
			}
			return out
		}},
		{"position", fmt.Sprintf("each structure's median box over the training slices within %d slices (a block), scored with the share of them that show it", window), func(at int) []taskspec.Box {
			var out []taskspec.Box
			for c := range classes {
				var xs, ys, ws, hs []float64
				n := 0
				for _, s := range train {
					if intAbs(s.At-at) > window {
						continue
					}
					n++
					if b, ok := byClass(s, c); ok {
						xs, ys, ws, hs = append(xs, b.X), append(ys, b.Y), append(ws, b.W), append(hs, b.H)
					}
				}
				if len(xs) == 0 {
					continue
				}
				out = append(out, taskspec.Box{X: boxMedian(xs), Y: boxMedian(ys), W: boxMedian(ws), H: boxMedian(hs), Attrs: map[string]int{boxAttr: c}, Score: float64(len(xs)) / float64(n)})
			}
			return out
		}},
	}
	answers := map[string]string{}
	for _, s := range test {
		answers[s.ID] = filepath.Join(dir, "answers", s.ID+".json")
	}
	var out []shortcut
	for _, p := range predictors {
		pdir := filepath.Join(dir, "shortcuts", p.name)
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return nil, err
		}
		var boxes [][]taskspec.Box
		for _, s := range test {
			boxes = append(boxes, p.predict(s.At))
		}
		untie(boxes)
		preds := map[string]string{}
		for i, s := range test {
			path := filepath.Join(pdir, s.ID+".json")
			if err := writeBoxesJSON(path, boxes[i]); err != nil {
				return nil, err
			}
			preds[s.ID] = path
		}
		score, err := scoreShortcut(ctx, filepath.Join(dir, "task.yaml"), preds, answers)
		if err != nil {
			return nil, fmt.Errorf("shortcut %s: %w", p.name, err)
		}
		out = append(out, shortcut{Name: p.name, Score: score.Value, About: p.about})
	}
	return best(out), nil
}

// untieStep is the amount untie lowers each next box's score by: 10⁻⁹, so that a
// thousand boxes move the scores by 10⁻⁶, far below the gaps between the shortcuts' own
// scores (1/(1+d) and shares of a dozen slices differ by 0.005 at least).
const untieStep = 1e-9

// untie lowers the k-th box's score (counting over the cases in order, then their boxes)
// by k·untieStep, keeping it above 0: no two boxes tie and the order of distinct scores
// stays.
func untie(cases [][]taskspec.Box) {
	k := 0
	for _, bs := range cases {
		for i := range bs {
			bs[i].Score = max(bs[i].Score-float64(k)*untieStep, untieStep)
			k++
		}
	}
}

// intAbs is the absolute value of v.
func intAbs(v int) int { return max(v, -v) }

// boxLerp is the point a fraction t of the way from a to b.
func boxLerp(a, b, t float64) float64 { return a + (b-a)*t }

// boxMedian is the median of vs (the mean of the middle two for an even count).
func boxMedian(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
