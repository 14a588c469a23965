package taskspec

import (
	"fmt"
	"maps"
	"math"

	"amid/viewer/edit/marks"
)

// BoxClasses are the classes a box of the task takes: those of its last box attribute
// (DENTEX: the diagnosis), as the viewer colours them; nil when boxes have no attribute.
func BoxClasses(spec *Spec) []string {
	if spec == nil || len(spec.Attributes) == 0 {
		return nil
	}
	return spec.Attributes[len(spec.Attributes)-1].Classes
}

// classAttr is the attribute that holds a box's class ("" none).
func classAttr(spec *Spec) string {
	if spec == nil || len(spec.Attributes) == 0 {
		return ""
	}
	return spec.Attributes[len(spec.Attributes)-1].Name
}

// MarksOf is the set of a detection annotation (amid/viewer/edit/marks, which corrects it): its 2D boxes on slice 0 (z 0..1),
// its 3D box, its points at their pixels' centres. A box's class is its class of the
// task's last attribute (0 without one), a point's the index of its class among the task's
// point classes; a point class the task does not name is refused, as are boxes that are
// empty or not finite.
func MarksOf(a *Annotation, spec *Spec) (marks.Set, error) {
	var s marks.Set
	if a == nil {
		return s, nil
	}
	attr := classAttr(spec)
	for i, b := range a.Boxes {
		x := marks.Box{Min: [3]float64{b.X, b.Y, 0}, Max: [3]float64{b.X + b.W, b.Y + b.H, 1}, Score: b.Score, Attrs: maps.Clone(b.Attrs)}
		x.Class = b.Attrs[attr]
		if err := x.Check(); err != nil {
			return marks.Set{}, fmt.Errorf("box %d of the annotation: %w", i, err)
		}
		s.Boxes = append(s.Boxes, x)
	}
	if b := a.Box3D; b != nil {
		x := marks.Box{Score: 1}
		for k := range 3 {
			x.Min[k], x.Max[k] = float64(b.Min[k]), float64(b.Min[k]+b.Size[k])
		}
		if err := x.Check(); err != nil {
			return marks.Set{}, fmt.Errorf("the annotation's 3D box: %w", err)
		}
		s.Boxes = append(s.Boxes, x)
	}
	for i, p := range a.Points {
		k := pointClass(spec, p.Class)
		if k < 0 {
			return marks.Set{}, fmt.Errorf("%w: point %d of the annotation has class %q, which the task does not name", marks.ErrMarks, i, p.Class)
		}
		if !finite(p.X, p.Y) {
			return marks.Set{}, fmt.Errorf("%w: point %d of the annotation is not finite", marks.ErrMarks, i)
		}
		s.Points = append(s.Points, marks.Point{At: [3]float64{p.X + 0.5, p.Y + 0.5, 0.5}, Class: k, Score: p.Score})
	}
	return s, nil
}

// pointClass is the index of class name among the task's point classes; a task that names
// none has the one class, whatever its name (-1: not one of them).
func pointClass(spec *Spec, name string) int {
	if spec == nil || len(spec.Points) == 0 {
		return 0
	}
	for i, n := range spec.Points {
		if n == name {
			return i
		}
	}
	return -1
}

// AnnotationOf is the set s written over base (the prediction it corrects: its classes and
// score are kept), in the task's annotation format: as MarksOf reads it. A task of one
// 3D box (spec.Box3D) takes one box at most, on whole voxels; a point of a class the task
// does not name, or a box's class outside its attribute's classes, is refused. Points of a
// task that names no point classes are written without a class.
func AnnotationOf(s marks.Set, base *Annotation, spec *Spec) (*Annotation, error) {
	out := &Annotation{}
	if base != nil {
		out.Classes, out.Score = maps.Clone(base.Classes), base.Score
	}
	if spec != nil && spec.Box3D {
		if len(s.Boxes) > 1 {
			return nil, fmt.Errorf("%w: the task takes one 3D box, and the correction has %d", marks.ErrMarks, len(s.Boxes))
		}
		for _, b := range s.Boxes {
			x := &Box3D{}
			for k := range 3 {
				lo, hi := int(math.Round(b.Min[k])), int(math.Round(b.Max[k]))
				x.Min[k], x.Size[k] = lo, max(1, hi-lo)
			}
			out.Box3D = x
		}
	} else {
		attr, classes := classAttr(spec), BoxClasses(spec)
		for i, b := range s.Boxes {
			x := Box{X: b.Min[0], Y: b.Min[1], W: b.Max[0] - b.Min[0], H: b.Max[1] - b.Min[1], Score: b.Score, Attrs: maps.Clone(b.Attrs)}
			if attr != "" {
				if b.Class >= len(classes) {
					return nil, fmt.Errorf("%w: box %d has class %d, and %s has %d classes", marks.ErrMarks, i, b.Class, attr, len(classes))
				}
				if x.Attrs == nil {
					x.Attrs = map[string]int{}
				}
				x.Attrs[attr] = b.Class
			}
			out.Boxes = append(out.Boxes, x)
		}
	}
	for i, p := range s.Points {
		name := ""
		if spec != nil && len(spec.Points) > 0 {
			if p.Class >= len(spec.Points) {
				return nil, fmt.Errorf("%w: point %d has class %d, and the task has %d point classes", marks.ErrMarks, i, p.Class, len(spec.Points))
			}
			name = spec.Points[p.Class]
		}
		out.Points = append(out.Points, Point{X: p.At[0] - 0.5, Y: p.At[1] - 0.5, Class: name, Score: p.Score})
	}
	return out, nil
}
