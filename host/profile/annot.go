package profile

import (
	"fmt"
	"math"
	"strings"

	"amid/plugins/taskspec"
	"amid/viewer/volume"
)

// annAcc gathers the statistics of annotation labels.
type annAcc struct {
	spec    *taskspec.Spec
	images  int
	widths  []float64
	heights []float64
	points  int
	pclass  map[string]int
	sizes   [3][]float64
	centres [3][]float64
	attrs   map[string][]int
	groups  map[string]map[string]int
	scores  []float64
}

func newAnnAcc(s *taskspec.Spec) *annAcc {
	return &annAcc{spec: s, pclass: map[string]int{}, attrs: map[string][]int{}, groups: map[string]map[string]int{}}
}

// add takes one case's annotation; img is the case's image, for bounds.
func (a *annAcc) add(ann *taskspec.Annotation, img *volume.Volume) error {
	a.images++
	w, h := float64(img.Dims[0]), float64(img.Dims[1])
	for i, b := range ann.Boxes {
		if b.X < -1 || b.Y < -1 || b.X+b.W > w+1 || b.Y+b.H > h+1 {
			return fmt.Errorf("box %d (%g, %g, %g×%g) lies outside the %g×%g image", i, b.X, b.Y, b.W, b.H, w, h)
		}
		a.widths = append(a.widths, b.W)
		a.heights = append(a.heights, b.H)
		for name, c := range b.Attrs {
			a.count(name, c)
		}
	}
	for _, p := range ann.Points {
		a.points++
		a.pclass[p.Class]++
	}
	if b := ann.Box3D; b != nil {
		for k := range 3 {
			n := float64(img.Dims[k])
			if float64(b.Min[k]+b.Size[k]) > n {
				return fmt.Errorf("3D box min %v size %v reaches past the volume's %v voxels", b.Min, b.Size, img.Dims[:3])
			}
			a.sizes[k] = append(a.sizes[k], float64(b.Size[k])/n)
			a.centres[k] = append(a.centres[k], (float64(b.Min[k])+float64(b.Size[k])/2)/n)
		}
	}
	if len(ann.Classes) > 0 {
		joint := map[string][]string{}
		for _, at := range a.spec.Attributes {
			c, ok := ann.Classes[at.Name]
			if !ok {
				return fmt.Errorf("attribute %s is missing", at.Name)
			}
			a.count(at.Name, c)
			joint[at.Group] = append(joint[at.Group], at.Classes[c])
		}
		for g, vals := range joint {
			if a.groups[g] == nil {
				a.groups[g] = map[string]int{}
			}
			a.groups[g][strings.Join(vals, "")]++
		}
	}
	if ann.Score != nil {
		a.scores = append(a.scores, *ann.Score)
	}
	return nil
}

func (a *annAcc) count(name string, c int) {
	at, _ := a.spec.Attribute(name)
	if a.attrs[name] == nil {
		a.attrs[name] = make([]int, len(at.Classes))
	}
	if c >= 0 && c < len(a.attrs[name]) {
		a.attrs[name][c]++
	}
}

func (a *annAcc) finish(f *Fingerprint) {
	if a.images == 0 {
		return
	}
	n := float64(a.images)
	if len(a.widths) > 0 {
		sides := append(append([]float64{}, a.widths...), a.heights...)
		f.Boxes = &BoxStats{
			PerImage: float64(len(a.widths)) / n, MedianWidth: percentile(a.widths, 50),
			MedianHeight: percentile(a.heights, 50), MinSide: percentile(sides, 0), MaxSide: percentile(sides, 100),
		}
	}
	if a.points > 0 {
		f.Points = &PointStats{PerImage: float64(a.points) / n, Classes: a.pclass}
	}
	if len(a.sizes[0]) > 0 {
		b := &Box3DStats{}
		for k := range 3 {
			b.MedianSize[k] = percentile(a.sizes[k], 50)
			b.MedianCentre[k] = percentile(a.centres[k], 50)
		}
		f.Box3D = b
	}
	if len(a.attrs) > 0 {
		f.Attributes = a.attrs
	}
	if len(a.groups) > 0 {
		f.Variants = a.groups
	}
	if len(a.scores) > 0 {
		s := &ScoreStats{Min: math.Inf(1), Max: math.Inf(-1)}
		for _, v := range a.scores {
			s.Min, s.Max = math.Min(s.Min, v), math.Max(s.Max, v)
		}
		s.Mean, s.Std = meanStd(a.scores)
		s.Step = grid(a.scores)
		s.Histogram = make([]int, 10)
		for _, v := range a.scores {
			k := 0
			if s.Max > s.Min {
				k = min(int((v-s.Min)/(s.Max-s.Min)*10), 9)
			}
			s.Histogram[k]++
		}
		f.Scores = s
	}
}

// grid returns the step of the grid the values lie on (the largest of 1, 0.5, 0.25, 0.2,
// 0.1, 0.05, 0.01 that every value is a multiple of, within 1e-6), or 0.
func grid(v []float64) float64 {
	for _, step := range []float64{1, 0.5, 0.25, 0.2, 0.1, 0.05, 0.01} {
		ok := true
		for _, x := range v {
			r := x / step
			if math.Abs(r-math.Round(r)) > 1e-6 {
				ok = false
				break
			}
		}
		if ok {
			return step
		}
	}
	return 0
}
