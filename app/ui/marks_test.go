package ui

import (
	"testing"

	"amid/plugins/taskspec"
	vwidget "amid/viewer/widget"
)

// dentex is a task spec with DENTEX's three box attributes and two point classes.
var dentex = &taskspec.Spec{Kind: taskspec.Detection, Dims: 2,
	Attributes: []taskspec.Attribute{
		{Name: "quadrant", Classes: []string{"1", "2", "3", "4"}},
		{Name: "enumeration", Classes: []string{"1", "2", "3", "4", "5", "6", "7", "8"}},
		{Name: "diagnosis", Classes: []string{"Impacted", "Caries", "Periapical Lesion", "Deep Caries"}},
	},
	Points: []string{"tumour", "lymphocyte"},
}

func TestMarksOf(t *testing.T) {
	a := &taskspec.Annotation{
		Boxes: []taskspec.Box{
			{X: 1, Y: 2, W: 3, H: 4, Attrs: map[string]int{"quadrant": 0, "enumeration": 7, "diagnosis": 1}, Score: 0.87},
			{X: 5, Y: 5, W: 2, H: 2, Attrs: map[string]int{"diagnosis": 9}, Score: 0.2},
		},
		Points: []taskspec.Point{{X: 3, Y: 4, Class: "lymphocyte", Score: 0.6}},
	}
	cols := vwidget.DefaultColors()
	ms := marksOf(a, dentex, false)
	if len(ms) != 3 {
		t.Fatalf("%d marks, want 2 boxes and a point", len(ms))
	}
	// Box 0: diagnosis class 1 (Caries) takes colour 2; its text names the classes and score.
	if ms[0].Text != "1 8 Caries 0.87" || ms[0].Color != cols[2] || ms[0].Min != [3]float64{1, 2, 0} || ms[0].Max != [3]float64{4, 6, 1} || ms[0].Score != 0.87 {
		t.Errorf("box 0 = %+v", ms[0])
	}
	// An out-of-range class is named by attribute and index rather than dropped.
	if ms[1].Text != "diagnosis 9 0.20" {
		t.Errorf("box 1 text %q", ms[1].Text)
	}
	// The point is lymphocyte (class 1, colour 2), at its pixel's centre.
	if !ms[2].Point || ms[2].Color != cols[2] || ms[2].Min != [3]float64{3.5, 4.5, 0.5} {
		t.Errorf("point = %+v", ms[2])
	}
	tr := marksOf(a, dentex, true)
	if tr[0].Text != "1 8 Caries" || tr[1].Score != 1 || tr[2].Score != 1 {
		t.Errorf("truth marks carry scores: %q, %v, %v", tr[0].Text, tr[1].Score, tr[2].Score)
	}
	if marksOf(nil, dentex, false) != nil {
		t.Error("marks from no annotation")
	}
	// A 3D box spans its voxels: min 2,3,1 and size 4,3,2 cover x 2..5, y 3..5, z 1..2.
	b3 := marksOf(&taskspec.Annotation{Box3D: &taskspec.Box3D{Min: [3]int{2, 3, 1}, Size: [3]int{4, 3, 2}}}, nil, true)
	if len(b3) != 1 || b3[0].Min != [3]float64{2, 3, 1} || b3[0].Max != [3]float64{6, 6, 3} || b3[0].Text != "truth" || b3[0].Color != cols[1] {
		t.Errorf("3D box = %+v", b3)
	}
}
