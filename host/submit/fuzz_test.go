package submit

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"amid/host/task"
	"amid/plugins/taskspec"
)

// FuzzDENTEXBox checks the DENTEX box writing against the grader's reading for any box
// in pixel range (|coordinates| ≤ 10⁵): the grader's [x1, y1, x2, y2] heuristic applied to
// what is written gives back the box clipped to x, y ≥ 0, or the box is left out when it
// lies wholly at negative coordinates.
func FuzzDENTEXBox(f *testing.F) {
	f.Add(5.0, 8.0, 120.0, 60.0)
	f.Add(300.0, 200.0, 40.0, 90.0)
	f.Add(-10.0, 3.0, 70.0, 20.0)
	f.Add(0.0, 0.0, 50.0, 50.0)
	w := &writer{t: &task.Task{Attributes: []taskspec.Attribute{{Name: "q"}, {Name: "e"}, {Name: "d"}}}}
	f.Fuzz(func(t *testing.T, x, y, bw, bh float64) {
		for _, v := range []float64{x, y, bw, bh} {
			if math.IsNaN(v) || math.Abs(v) > 1e5 {
				return
			}
		}
		if bw <= 0 || bh <= 0 {
			return
		}
		a := &taskspec.Annotation{Boxes: []taskspec.Box{{X: x, Y: y, W: bw, H: bh, Score: 1, Attrs: map[string]int{"q": 1, "e": 2, "d": 3}}}}
		dets, err := w.dentex("img", a)
		if err != nil {
			t.Fatal(err)
		}
		cx, cy := math.Max(x, 0), math.Max(y, 0)
		cw, ch := x+bw-cx, y+bh-cy
		if cw <= 0 || ch <= 0 {
			if len(dets) != 0 {
				t.Fatalf("a box outside the image was written: %v", dets)
			}
			return
		}
		if len(dets) != 1 {
			t.Fatalf("%d detections", len(dets))
		}
		b := dets[0].BBox
		// the grader's reading (dentexReadPreds)
		if b[2] > b[0] && b[3] > b[1] && (b[2] > b[0]+50 || b[3] > b[1]+50) {
			b = [4]float64{b[0], b[1], b[2] - b[0], b[3] - b[1]}
		}
		want := [4]float64{cx, cy, cw, ch}
		for i := range b {
			if math.Abs(b[i]-want[i]) > 1e-6 {
				t.Fatalf("box %v read back as %v, want %v", a.Boxes[0], b, want)
			}
		}
		if d := dets[0]; d.Cat1 != 1 || d.Cat2 != 2 || d.Cat3 != 3 || d.ImageID != "img" {
			t.Fatalf("detection %+v", d)
		}
	})
}

// FuzzAnnotationForms feeds arbitrary annotation files to every annotation format: an
// error or a JSON file, never a panic.
func FuzzAnnotationForms(f *testing.F) {
	f.Add([]byte(`{"boxes": [{"x": 1, "y": 2, "w": 3, "h": 4, "attrs": {"q": 1}, "score": 0.5}]}`))
	f.Add([]byte(`{"points": [{"x": 1, "y": 2, "class": "tumor", "score": 1}]}`))
	f.Add([]byte(`{"box3d": {"min": [0, 1, 2], "size": [3, 4, 5]}}`))
	f.Add([]byte(`{"classes": {"a": 1, "b": 0}}`))
	dir := f.TempDir()
	tk := &task.Task{Kind: taskspec.Detection, Dims: 2, Points: []string{"tumor"}, Attributes: []taskspec.Attribute{
		{Name: "q", Classes: []string{"0", "1"}, Group: "anterior"},
		{Name: "a", Classes: []string{"0", "1"}, Group: "anterior"},
		{Name: "b", Classes: []string{"no", "yes"}, Group: "posterior"},
	}}
	f.Fuzz(func(t *testing.T, b []byte) {
		src := filepath.Join(dir, "in.json")
		if err := os.WriteFile(src, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, format := range jsonFormats {
			w := &writer{t: tk, spec: tk.Spec(), format: format, dir: dir}
			dst := filepath.Join(dir, "out.json")
			_ = os.Remove(dst)
			if err := w.annotation(Prediction{CaseID: "c", File: src}, dst); err != nil {
				continue
			}
			out, err := os.ReadFile(dst)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(out) {
				t.Fatalf("%s wrote invalid JSON: %s", format, out)
			}
		}
	})
}
