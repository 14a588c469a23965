package widget

import (
	"fmt"
	"image/color"
	"strings"

	"amid/plugins/taskspec"
)

// MarksOf turns a detection annotation (amid/plugins/taskspec) into marks. Box colours come
// from cols by the class of the spec's last box attribute (DENTEX: the diagnosis), point
// colours by the point's class in spec.Points, each class k taking colour k+1; a box's text
// names its attribute classes and, for a prediction (truth false), its score. 2D boxes and
// points lie on slice 0 of a 2D image; a Box3D spans its voxels. A nil annotation has no
// marks.
func MarksOf(a *taskspec.Annotation, spec *taskspec.Spec, cols []color.RGBA, truth bool) []Mark {
	if a == nil {
		return nil
	}
	if len(cols) < 2 {
		cols = DefaultColors()
	}
	var attrs []taskspec.Attribute
	var points []string
	if spec != nil {
		attrs, points = spec.Attributes, spec.Points
	}
	out := make([]Mark, 0, len(a.Boxes)+len(a.Points)+1)
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
		score := b.Score
		if truth {
			score = 1
		}
		out = append(out, Mark{
			Min: [3]float64{b.X, b.Y, 0}, Max: [3]float64{b.X + b.W, b.Y + b.H, 1},
			Color: colorOf(cols, int32(k+1)), Score: score, Text: strings.Join(words, " "),
		})
	}
	for _, p := range a.Points {
		k := 0
		for i, name := range points {
			if name == p.Class {
				k = i
			}
		}
		score := p.Score
		if truth {
			score = 1
		}
		// A point's coordinates are a pixel's centre.
		c := [3]float64{p.X + 0.5, p.Y + 0.5, 0.5}
		out = append(out, Mark{Min: c, Max: c, Point: true, Color: colorOf(cols, int32(k+1)), Score: score})
	}
	if b := a.Box3D; b != nil {
		var m Mark
		for i := 0; i < 3; i++ {
			m.Min[i] = float64(b.Min[i])
			m.Max[i] = float64(b.Min[i] + b.Size[i])
		}
		m.Color, m.Score, m.Text = colorOf(cols, 1), 1, "box"
		if truth {
			m.Text = "truth"
		}
		out = append(out, m)
	}
	return out
}

// Recolor returns a copy of ms drawn in c.
func Recolor(ms []Mark, c color.RGBA) []Mark {
	out := make([]Mark, len(ms))
	for i, m := range ms {
		m.Color = c
		out[i] = m
	}
	return out
}
