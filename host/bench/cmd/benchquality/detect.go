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

// The detection tasks: boxes of deep grey structures of a parcellation on coronal slices
// of a T1 brain, each structure's left and right twins two classes. Twins look alike;
// only the side of the midline tells them apart, so a model must use where a structure
// lies, not only how it looks. Two tasks of the same shape, written by one writer
// (writeBoxes): inia19-boxes, the reporting task, on the INIA19 macaque T1 with its
// NeuroMaps parcellation; and ch2-boxes, the tuning task a detection learner's constants
// are fitted on, on the human ch2 T1 with AAL.

// boxTask is one detection task: the scan and its label map in the real-image cache, the
// classes (label values) to box, the slicing axis and the smallest cross-section boxed.
type boxTask struct {
	ID, Title string
	Set       string // tuning or reporting
	// Image is the scan and Maps its label map on the same grid (paths in the cache).
	Image, Maps string
	// Source says where the label map comes from, for the family's Labels sentence.
	Source string
	// Axis is the slicing axis. The slices must be coronal, in the neurological
	// convention: their columns (the lower of the other two axes) must run from the
	// patient's left to right and their rows (the higher one, flipped) from the top of
	// the head down (sliceAxes; checkCoronal checks the scan's direction cosines).
	Axis int
	// MinArea is the smallest cross-section in mm² (its largest connected piece) a
	// structure must show on a slice to get a box there; its pixel count comes from the
	// scan's spacing (minPixels).
	MinArea float64
	// classes reads the task's classes from the cache, in attribute order: each
	// structure's left twin, then its right one.
	classes func(realdata string) ([]boxClass, error)
}

// boxClass is one class: its name, its value in the label map, and its side.
type boxClass struct {
	Name  string
	Value int
	Left  bool
}

const (
	// boxAttr is the tasks' one attribute: which structure a box holds.
	boxAttr = "structure"
	// minBoxArea is both tasks' MinArea: 7.5 mm², 30 pixels of 0.5 × 0.5 mm on INIA19
	// (about 5 × 6 pixels), 8 of 1 × 1 mm on ch2. Smaller pieces are a structure's
	// tapering end, where its box changes by half its size from one slice to the next
	// and the partial-volume rim decides where it stops; COCO AP's IoU thresholds up to
	// 0.95 would make such boxes a toss of a coin for any predictor.
	minBoxArea = 7.5
	// iniaRightOffset is the NeuroMaps convention for the right hemisphere: a right
	// region's value is its left twin's plus 1000.
	iniaRightOffset = 1000
)

// iniaBoxes is the reporting task, on INIA19. Its grid's direction cosines are −1, −1, 1
// (LPS; origin 42, 57.5, −30 mm): axis 0 runs from the left to the right, axis 1 from
// the back to the front, axis 2 from the feet to the head, so axis 1 gives coronal
// slices with the left on the low columns.
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
var iniaBoxes = boxTask{
	ID:      "inia19-boxes",
	Title:   "macaque T1 MR at 0.5 mm, boxes of four deep grey NeuroMaps structures, left and right apart (coronal slices)",
	Set:     reporting,
	Image:   iniaImage,
	Maps:    iniaMaps,
	Source:  "the INIA19 NeuroMaps parcellation drawn on the template",
	Axis:    1,
	MinArea: minBoxArea,
	classes: func(string) ([]boxClass, error) {
		var out []boxClass
		for _, v := range []int{82, 98, 162, 497} {
			out = append(out,
				boxClass{Name: fmt.Sprintf("left %d", v), Value: v, Left: true},
				boxClass{Name: fmt.Sprintf("right %d", v), Value: v + iniaRightOffset})
		}
		return out, nil
	},
}

// ch2Boxes is the tuning task, on ch2 with AAL: the four deep grey nuclei AAL names,
// the human counterparts of inia19-boxes' four (caudate, putamen, pallidum, thalamus),
// read from aal.nii.txt by name (Caudate_L 71, Caudate_R 72, Putamen_L 73, Putamen_R 74,
// Pallidum_L 75, Pallidum_R 76, Thalamus_L 77, Thalamus_R 78 in the cache's copy). ch2's
// grid and AAL's are INIA19's orientation: direction cosines −1, −1, 1 (LPS; origin 90,
// 125, −71 mm, so column 90 is the midline x = 0), 181 × 217 × 181 at 1 mm; axis 1
// gives coronal slices of 181 × 181 with the left on the low columns. The boxes lie on
// 62 slices (coronal092 … coronal153); AAL's two thalami both reach the midline column
// on a dozen of them, so their boxes share that column there.
var ch2Boxes = boxTask{
	ID:      "ch2-boxes",
	Title:   "human T1 MR at 1 mm, boxes of four deep grey AAL nuclei, left and right apart (coronal slices)",
	Set:     tuning,
	Image:   ch2Image,
	Maps:    aalLabels,
	Source:  "the AAL parcellation drawn on ch2",
	Axis:    1,
	MinArea: minBoxArea,
	classes: func(realdata string) ([]boxClass, error) {
		regions, err := readAAL(realdata)
		if err != nil {
			return nil, err
		}
		value := map[string]int{}
		for _, r := range regions {
			value[r.Name] = r.Value
		}
		var out []boxClass
		for _, n := range []string{"Caudate", "Putamen", "Pallidum", "Thalamus"} {
			for _, side := range []struct {
				suffix, name string
			}{{"_L", "left"}, {"_R", "right"}} {
				v, ok := value[n+side.suffix]
				if !ok {
					return nil, fmt.Errorf("%s names no %s", aalNames, n+side.suffix)
				}
				out = append(out, boxClass{Name: n + " " + side.name, Value: v, Left: side.name == "left"})
			}
		}
		return out, nil
	},
}

// The detection tasks (families.go): the tuning one first.
var (
	ch2DetectionTask = ch2Boxes.family()
	detectionTask    = iniaBoxes.family()
)

func init() { families = append(families, ch2DetectionTask, detectionTask) }

// family is the family task that writes bt.
func (bt boxTask) family() family {
	return family{
		ID:     bt.ID,
		Title:  bt.Title,
		Kind:   taskspec.Detection,
		Set:    bt.Set,
		Labels: fmt.Sprintf("the bounding box of each structure's largest connected piece on the slice in %s, wherever it is at least %g mm²", bt.Source, bt.MinArea),
		write: func(ctx context.Context, realdata, dir string) ([]shortcut, error) {
			return writeBoxes(ctx, realdata, dir, bt)
		},
	}
}

// boxSlice is one case: a coronal slice, its place along the task's axis, and its boxes.
type boxSlice struct {
	ID    string
	At    int // the slice's index along the axis
	Boxes []taskspec.Box
}

// sliceAxes are the scan's axes along a slice across axis (volume.InPlane): its columns
// run along col, the lower of the other two, and its rows along row, the higher, flipped,
// so that for a coronal slice the top of the image is the top of the head.
func sliceAxes(axis int) (col, row int) { return volume.InPlane(axis) }

// sliceSize is a slice's width and height in pixels across axis.
func sliceSize(dims [4]int, axis int) (w, h int) {
	c, r := sliceAxes(axis)
	return dims[c], dims[r]
}

// sliceIndex is the scan's voxel index of pixel (col, row) of the slice at along axis.
func sliceIndex(dims [4]int, axis, at, col, row int) int {
	c, r := sliceAxes(axis)
	var i [3]int
	i[axis], i[c], i[r] = at, col, dims[r]-1-row
	return i[0] + dims[0]*(i[1]+dims[1]*i[2])
}

// checkCoronal returns an error unless img's slices across axis are coronal and shown
// as the tasks show them: the column axis's direction cosine mostly along LPS x and
// negative (left on the low columns), the row axis's mostly along LPS z and positive
// (flipped, the head on top).
func checkCoronal(img *volume.Volume, axis int) error {
	c, r := sliceAxes(axis)
	// d is row-major: column j is axis j's unit vector; along(j) is the LPS axis that
	// axis j runs mostly along.
	d := img.Direction
	along := func(j int) int {
		best := 0
		for k := 1; k < 3; k++ {
			if math.Abs(d[3*k+j]) > math.Abs(d[3*best+j]) {
				best = k
			}
		}
		return best
	}
	if along(c) != 0 || d[c] >= 0 || along(r) != 2 || d[6+r] <= 0 {
		return fmt.Errorf("direction cosines %v: axis %d's slices are not coronal with axis %d from left to right and axis %d from the feet up", d, axis, c, r)
	}
	return nil
}

// minPixels is the fewest pixels of a slice across axis of img that cover area mm².
func minPixels(img *volume.Volume, axis int, area float64) int {
	c, r := sliceAxes(axis)
	return int(math.Ceil(area/(img.Spacing[c]*img.Spacing[r]) - 1e-9))
}

// boxCut is a detection task's scan, classes and cases.
type boxCut struct {
	Img     *volume.Volume
	Classes []boxClass
	// MinPixels is the task's MinArea in pixels of its slices.
	MinPixels int
	// Slices are the slices showing a box, in order along the axis.
	Slices []boxSlice
}

// cutBoxes reads the scan and its label map and returns the scan and, for every slice
// between the first and the last showing a box, the slice and its boxes (one per class
// at most, the bounding box of the class's largest 8-connected piece when it holds
// MinArea or more). Slices without any box are left out: a detection case must hold an
// object.
func cutBoxes(realdata string, bt boxTask) (*boxCut, error) {
	img, err := imageio.Read(filepath.Join(realdata, bt.Image))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", bt.Image, err)
	}
	src, err := imageio.Read(filepath.Join(realdata, bt.Maps))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", bt.Maps, err)
	}
	if src.Dims != img.Dims {
		return nil, fmt.Errorf("%s is %v, its label map %v", bt.Image, img.Dims, src.Dims)
	}
	if err := checkCoronal(img, bt.Axis); err != nil {
		return nil, fmt.Errorf("%s: %w", bt.Image, err)
	}
	classes, err := bt.classes(realdata)
	if err != nil {
		return nil, err
	}
	value := map[int]int{}
	for i, c := range classes {
		value[c.Value] = i
	}
	out := &boxCut{Img: img, Classes: classes, MinPixels: minPixels(img, bt.Axis, bt.MinArea)}
	w, h := sliceSize(img.Dims, bt.Axis)
	class := make([]int, w*h)
	for at := range img.Dims[bt.Axis] {
		for row := range h {
			for col := range w {
				c, ok := value[int(src.AtIndex(sliceIndex(img.Dims, bt.Axis, at, col, row)))]
				if !ok {
					c = -1
				}
				class[col+w*row] = c
			}
		}
		s := boxSlice{ID: fmt.Sprintf("coronal%03d", at), At: at}
		for c := range classes {
			b, n := largestPiece(class, w, h, c)
			if n >= out.MinPixels {
				b.Attrs, b.Score = map[string]int{boxAttr: c}, 1
				s.Boxes = append(s.Boxes, b)
			}
		}
		if len(s.Boxes) > 0 {
			out.Slices = append(out.Slices, s)
		}
	}
	if len(out.Slices) < nSlabs {
		return nil, fmt.Errorf("%d slices show a box, fewer than the %d blocks", len(out.Slices), nSlabs)
	}
	return out, nil
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

// boxBlock is the block (0 … nSlabs−1) of the slice at along the axis when the slices
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

// writeBoxes writes the detection task bt into dir (family.write).
func writeBoxes(ctx context.Context, realdata, dir string, bt boxTask) ([]shortcut, error) {
	cb, err := cutBoxes(realdata, bt)
	if err != nil {
		return nil, err
	}
	img, all := cb.Img, cb.Slices
	train, test := splitBoxes(all)
	if err := freshTask(dir, "train/images", "train/labels", "test/images", "answers"); err != nil {
		return nil, err
	}
	// One grey scale for every slice (the scan's maximum to 255), so a tissue keeps its
	// grey level from slice to slice.
	top := 0.0
	for i := range img.Len() {
		top = max(top, img.AtIndex(i))
	}
	if !(top > 0) || math.IsInf(top, 0) {
		return nil, fmt.Errorf("%s: maximum intensity %v", bt.Image, top)
	}
	for _, c := range []struct {
		cases        []boxSlice
		images, labs string
	}{{train, "train/images", "train/labels"}, {test, "test/images", "answers"}} {
		for _, s := range c.cases {
			if err := writeSlicePNG(filepath.Join(dir, c.images, s.ID+".png"), img, bt.Axis, s.At, top); err != nil {
				return nil, err
			}
			if err := writeBoxesJSON(filepath.Join(dir, c.labs, s.ID+".json"), s.Boxes); err != nil {
				return nil, err
			}
		}
	}
	quoted := make([]string, len(cb.Classes))
	for i, c := range cb.Classes {
		quoted[i] = fmt.Sprintf("%q", c.Name)
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
`, bt.Title, len(all), nSlabs, bt.ID, bt.Title, boxAttr, strings.Join(quoted, ", "))
	if err := os.WriteFile(filepath.Join(dir, "task.yaml"), []byte(yaml), 0o644); err != nil {
		return nil, err
	}
	return boxShortcuts(ctx, dir, len(cb.Classes), train, test)
}

// writeSlicePNG writes the slice at along axis of img as an 8-bit grey PNG (the plain
// detection task's format), intensity v to v/top·255.
func writeSlicePNG(path string, img *volume.Volume, axis, at int, top float64) error {
	w, h := sliceSize(img.Dims, axis)
	v, err := volume.New(volume.Uint8, [4]int{w, h, 1, 1})
	if err != nil {
		return err
	}
	c, r := sliceAxes(axis)
	v.Spacing = [3]float64{img.Spacing[c], img.Spacing[r], 1}
	for row := range h {
		for col := range w {
			g := img.AtIndex(sliceIndex(img.Dims, axis, at, col, row))
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
