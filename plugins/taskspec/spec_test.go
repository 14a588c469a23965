package taskspec

import (
	"errors"
	"testing"
)

var dentex = &Spec{Kind: Detection, Dims: 2, Attributes: []Attribute{
	{Name: "quadrant", Classes: []string{"1", "2", "3", "4"}},
	{Name: "diagnosis", Classes: []string{"caries", "deep caries"}},
}, Points: nil}

func TestSpecCheck(t *testing.T) {
	if err := dentex.Check(); err != nil {
		t.Fatal(err)
	}
	bad := []Spec{
		{Kind: "counting", Dims: 2},
		{Kind: IQA, Dims: 4},
		{Kind: Segmentation, Dims: 3, Labels: []Label{{Value: 1}, {Value: 1}}},
		{Kind: Classification, Dims: 3, Attributes: []Attribute{{Name: "a", Classes: []string{"only"}}}},
		{Kind: IQA, Dims: 2, Score: &ScoreRange{Min: 4, Max: 0}},
		{Kind: Classification, Dims: 2, Metric: "specificity_at_sensitivity_high", Attributes: []Attribute{{Name: "a", Classes: []string{"no", "yes"}}}},
		{Kind: Classification, Dims: 2, Metric: "sensitivity_at_youden", Attributes: []Attribute{{Name: "a", Classes: []string{"0", "1", "2"}}}},
	}
	for _, m := range []string{"auroc", "kappa_quadratic", "ECE", "balanced_accuracy", "anterior_acc"} {
		s := Spec{Kind: Classification, Dims: 2, Metric: m, Attributes: []Attribute{{Name: "a", Classes: []string{"0", "1", "2"}}}}
		if err := s.Check(); err != nil {
			t.Errorf("metric %s: %v", m, err)
		}
	}
	for _, s := range bad {
		if err := s.Check(); !errors.Is(err, ErrSpec) {
			t.Errorf("%+v: %v, want ErrSpec", s, err)
		}
	}
}

func TestAnnotationCheck(t *testing.T) {
	good := `{"boxes":[{"x":1,"y":2,"w":3,"h":4,"attrs":{"quadrant":3,"diagnosis":1},"score":0.9}]}`
	if _, err := DecodeAnnotation([]byte(good), dentex); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeAnnotation([]byte(`{"classes":{"diagnosis":1},"probs":{"diagnosis":[0.25,0.75]}}`), dentex); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{
		`{"boxes":[{"x":1,"y":2,"w":0,"h":4}]}`,                        // empty box
		`{"boxes":[{"x":1,"y":2,"w":3,"h":4,"attrs":{"quadrant":4}}]}`, // class 4 of 4
		`{"boxes":[{"x":1,"y":2,"w":3,"h":4,"attrs":{"tooth":0}}]}`,    // unknown attribute
		`{"box3d":{"min":[-1,0,0],"size":[1,1,1]}}`,                    // negative corner
		`{"score":1,"extra":true}`,                                     // unknown field
		`{"probs":{"diagnosis":[0.5]}}`,                                // one probability for 2 classes
		`{"probs":{"diagnosis":[1.5,-0.5]}}`,                           // outside [0, 1]
		`{"probs":{"tooth":[0.5,0.5]}}`,                                // unknown attribute
		`not json`,
	} {
		if _, err := DecodeAnnotation([]byte(b), dentex); err == nil {
			t.Errorf("%s was accepted", b)
		}
	}
}

func TestSnap(t *testing.T) {
	r := ScoreRange{Min: 0, Max: 4, Step: 0.5}
	for in, want := range map[float64]float64{1.26: 1.5, 1.24: 1, -3: 0, 9: 4} {
		if got := r.Snap(in); got != want {
			t.Errorf("Snap(%v) = %v, want %v", in, got, want)
		}
	}
}

func FuzzDecodeAnnotation(f *testing.F) {
	f.Add([]byte(`{"boxes":[{"x":1,"y":2,"w":3,"h":4,"attrs":{"quadrant":3},"score":0.9}]}`))
	f.Add([]byte(`{"points":[{"x":1,"y":2,"class":"tumor","score":1}],"score":2.5}`))
	f.Add([]byte(`{"classes":{"diagnosis":1},"probs":{"diagnosis":[0.25,0.75]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAnnotation(b, dentex)
		if err != nil {
			return
		}
		out, err := a.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeAnnotation(out, dentex); err != nil {
			t.Errorf("a valid annotation does not read back: %v", err)
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"kind":"iqa","dims":2,"score":{"min":0,"max":4,"step":0.2}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b)
		if err == nil && s.Check() != nil {
			t.Error("a parsed spec fails its check")
		}
	})
}
