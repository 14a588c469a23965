package ui

import (
	"fmt"
	"strings"

	"amid/plugins/taskspec"
	vwidget "amid/viewer/widget"
)

// marksOf turns a detection annotation into the viewer's marks. A box's colour is the class
// of the spec's last box attribute (DENTEX: the diagnosis), a point's the index of its
// class in spec.Points; a box's text names its attribute classes and, for a prediction
// (truth false), its score. Truth scores 1, so no threshold hides it. 2D boxes and points
// lie on slice 0 of a 2D image; a Box3D spans its voxels. A nil annotation has no marks.
func marksOf(a *taskspec.Annotation, spec *taskspec.Spec, truth bool) []vwidget.Mark {
	if a == nil {
		return nil
	}
	var attrs []taskspec.Attribute
	var points []string
	if spec != nil {
		attrs, points = spec.Attributes, spec.Points
	}
	score := func(s float64) float64 {
		if truth {
			return 1
		}
		return s
	}
	boxes := make([]vwidget.Box, 0, len(a.Boxes)+1)
	for _, b := range a.Boxes {
		k := 0
		var words []string
		for i, at := range attrs {
			c, ok := b.Attrs[at.Name]
			if !ok {
				continue
			}
			if c >= 0 && c < len(at.Classes) {
				words = append(words, at.Classes[c])
			} else {
				words = append(words, fmt.Sprintf("%s %d", at.Name, c))
			}
			if i == len(attrs)-1 {
				k = c
			}
		}
		if !truth {
			words = append(words, fmt.Sprintf("%.2f", b.Score))
		}
		boxes = append(boxes, vwidget.Box{
			Min: [3]float64{b.X, b.Y, 0}, Max: [3]float64{b.X + b.W, b.Y + b.H, 1},
			Class: k, Score: score(b.Score), Text: strings.Join(words, " "),
		})
	}
	pts := make([]vwidget.Point, 0, len(a.Points))
	for _, p := range a.Points {
		k := 0
		for i, name := range points {
			if name == p.Class {
				k = i
			}
		}
		// A point's coordinates are a pixel's centre.
		pts = append(pts, vwidget.Point{At: [3]float64{p.X + 0.5, p.Y + 0.5, 0.5}, Class: k, Score: score(p.Score)})
	}
	if b := a.Box3D; b != nil {
		box := vwidget.Box{Score: 1, Text: "box"}
		if truth {
			box.Text = "truth"
		}
		for i := range 3 {
			box.Min[i] = float64(b.Min[i])
			box.Max[i] = float64(b.Min[i] + b.Size[i])
		}
		boxes = append(boxes, box)
	}
	return vwidget.Marks(boxes, pts, nil)
}
