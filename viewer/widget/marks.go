package widget

import "image/color"

// Box is a box to draw over an image, in continuous voxel coordinates (voxel i covers
// [i, i+1) along each axis): Min and Max are its corners, so a 2D box on a 2D image spans
// z 0..1. Class picks its colour, Score hides it below the view's threshold, and Text is
// drawn beside it.
type Box struct {
	Min, Max [3]float64
	Class    int
	Score    float64
	Text     string
}

// Point is a point object (a nucleus, a landmark) at At, in continuous voxel coordinates
// (a pixel's centre is at i+0.5), drawn as a dot in its class's colour.
type Point struct {
	At    [3]float64
	Class int
	Score float64
}

// Marks turns boxes and points into the marks a view draws (SetMarks), boxes first. Class
// k takes colour k+1 of cols (colour 0 is the background's), as label k+1 of an overlay
// would; cols shorter than two colours stands for DefaultColors().
func Marks(boxes []Box, points []Point, cols []color.RGBA) []Mark {
	if len(boxes)+len(points) == 0 {
		return nil
	}
	if len(cols) < 2 {
		cols = DefaultColors()
	}
	out := make([]Mark, 0, len(boxes)+len(points))
	for _, b := range boxes {
		out = append(out, Mark{Min: b.Min, Max: b.Max, Color: colorOf(cols, int32(b.Class+1)), Score: b.Score, Text: b.Text})
	}
	for _, p := range points {
		out = append(out, Mark{Min: p.At, Max: p.At, Point: true, Color: colorOf(cols, int32(p.Class+1)), Score: p.Score})
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
