package taskspec

import (
	"errors"
	"testing"

	"amid/viewer/edit/marks"
)

// TestAnnotationRoundTrip reads a DENTEX-like annotation into a set and writes it back:
// the boxes' other attributes, the points' classes and the annotation's own classes come
// back as they were; a drawn box takes its class in the last attribute.
func TestAnnotationRoundTrip(t *testing.T) {
	spec := &Spec{Kind: Detection, Dims: 2,
		Attributes: []Attribute{
			{Name: "quadrant", Classes: []string{"1", "2", "3", "4"}},
			{Name: "diagnosis", Classes: []string{"Impacted", "Caries", "Periapical Lesion"}},
		},
		Points: []string{"tumour", "lymphocyte"},
	}
	a := &Annotation{
		Boxes: []Box{
			{X: 1, Y: 2, W: 3, H: 4, Attrs: map[string]int{"quadrant": 3, "diagnosis": 2}, Score: 0.7},
		},
		Points:  []Point{{X: 7, Y: 8, Class: "lymphocyte", Score: 0.6}},
		Classes: map[string]int{"quadrant": 1},
	}
	s, err := MarksOf(a, spec)
	if err != nil {
		t.Fatal(err)
	}
	if b := s.Boxes[0]; b.Class != 2 || b.Min != [3]float64{1, 2, 0} || b.Max != [3]float64{4, 6, 1} {
		t.Errorf("box %+v: want class 2 (Periapical Lesion) from (1, 2, 0) to (4, 6, 1)", b)
	}
	if p := s.Points[0]; p.Class != 1 || p.At != [3]float64{7.5, 8.5, 0.5} {
		t.Errorf("point %+v: want class 1 at its pixel's centre (7.5, 8.5, 0.5)", p)
	}
	back, err := AnnotationOf(s, a, spec)
	if err != nil {
		t.Fatal(err)
	}
	ab, _ := a.Marshal()
	bb, _ := back.Marshal()
	if string(ab) != string(bb) {
		t.Errorf("round trip:\n%s\nwant\n%s", bb, ab)
	}
	s.Boxes = append(s.Boxes, marks.Box{Min: [3]float64{10, 10, 0}, Max: [3]float64{20, 20, 1}, Class: 1, Score: 0.9})
	back, err = AnnotationOf(s, a, spec)
	if err != nil || back.Boxes[1].Attrs["diagnosis"] != 1 || len(back.Boxes[1].Attrs) != 1 {
		t.Errorf("a drawn box of class 1 written as %+v, %v", back.Boxes, err)
	}
	if err := back.Check(spec); err != nil {
		t.Error(err)
	}
	s.Boxes[1].Class = 3 // diagnosis has 3 classes
	if _, err := AnnotationOf(s, a, spec); !errors.Is(err, marks.ErrMarks) {
		t.Errorf("a class outside the attribute's: %v", err)
	}
	if _, err := MarksOf(&Annotation{Points: []Point{{Class: "mitosis"}}}, spec); !errors.Is(err, marks.ErrMarks) {
		t.Errorf("a point class the task does not name: %v", err)
	}
}

// TestBox3D reads a 3D box as one box on whole voxels and writes it back; two boxes do
// not fit a task of one 3D box.
func TestBox3D(t *testing.T) {
	spec := &Spec{Kind: Detection, Dims: 3, Box3D: true}
	a := &Annotation{Box3D: &Box3D{Min: [3]int{2, 3, 1}, Size: [3]int{4, 3, 2}}}
	s, err := MarksOf(a, spec)
	if err != nil || len(s.Boxes) != 1 || s.Boxes[0].Max != [3]float64{6, 6, 3} {
		t.Fatalf("3D box read as %+v, %v; want one box to (6, 6, 3)", s.Boxes, err)
	}
	back, err := AnnotationOf(s, nil, spec)
	if err != nil || *back.Box3D != *a.Box3D {
		t.Errorf("3D box written as %+v, %v", back.Box3D, err)
	}
	s.Boxes = append(s.Boxes, s.Boxes[0])
	if _, err := AnnotationOf(s, nil, spec); !errors.Is(err, marks.ErrMarks) {
		t.Errorf("two 3D boxes: %v", err)
	}
}

// FuzzMarksOf reads any annotation the decoder accepts into a set without
// panicking, and a set read back differs in nothing from the one written.
func FuzzMarksOf(f *testing.F) {
	f.Add([]byte(`{"boxes":[{"x":1,"y":2,"w":3,"h":4,"attrs":{"diagnosis":1},"score":0.5}],"points":[{"x":1,"y":1,"class":"a","score":1}]}`))
	f.Add([]byte(`{"box3d":{"min":[0,0,0],"size":[1,2,3]}}`))
	spec := &Spec{Kind: Detection, Dims: 2,
		Attributes: []Attribute{{Name: "diagnosis", Classes: []string{"x", "y"}}}, Points: []string{"a", "b"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAnnotation(b, spec)
		if err != nil {
			return
		}
		s, err := MarksOf(a, spec)
		if err != nil {
			return
		}
		back, err := AnnotationOf(s, a, spec)
		if err != nil {
			return
		}
		s2, err := MarksOf(back, spec)
		if err != nil {
			t.Fatalf("a written set does not read back: %v", err)
		}
		if d := marks.Diff(s, s2, 0); len(d) != 0 && a.Box3D == nil {
			t.Fatalf("read back differs: %+v", d)
		}
	})
}
