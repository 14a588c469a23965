package ingest

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"amid/host/task"
	"amid/plugins/taskspec"
)

// boxTask is a 2D detection of three findings whose labels are YOLO or VOC files.
func boxTask(t *testing.T, label string) *task.Task {
	t.Helper()
	return parseTask(t, `
id: findings
kind: detection
dims: 2
attributes: [{name: finding, classes: [nodule, mass, cyst]}]
data:
  train: {images: ["images/{id}.png"], label: `+label+`}
  test: {images: ["test/{id}.png"]}
metric: {name: ap_mean}
submission: {columns: [case_id, prediction], id_column: case_id, file_column: prediction, path: "predictions/{id}.txt", format: yolo}
`)
}

// boxCase writes a 40 × 20 image and the label text; it returns the case.
func boxCase(t *testing.T, root, label, text string) task.Case {
	t.Helper()
	img := filepath.Join(root, "images", "a.png")
	writeVol(t, img, [4]int{40, 20, 1}, make([]uint8, 40*20))
	return task.Case{ID: "a", Images: []string{img}, Label: write(t, filepath.Join(root, label), text)}
}

func boxesOf(t *testing.T, tk *task.Task, c task.Case) ([]taskspec.Box, error) {
	t.Helper()
	got, err := Labels(context.Background(), tk, []task.Case{c}, t.TempDir())
	if err != nil {
		return nil, err
	}
	return readAnn(t, got[c.ID], tk).Boxes, nil
}

// TestYOLO: normalised centres and sizes become pixel boxes on the image; the class list
// maps YOLO's ids onto the attribute's classes; a line of 4 numbers, a class outside the
// list and a box outside the image are errors naming the file and line.
func TestYOLO(t *testing.T) {
	root := t.TempDir()
	tk := boxTask(t, `{path: "labels/{id}.txt", format: yolo, classes: [cyst, nodule]}`)
	// On 40 × 20: centre (0.25, 0.5), size 0.5 × 0.5 is x 0–20, y 5–15.
	c := boxCase(t, root, "labels/a.txt", "0 0.25 0.5 0.5 0.5\n\n1 0.875 0.25 0.25 0.5\n")
	got, err := boxesOf(t, tk, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []taskspec.Box{
		{X: 0, Y: 5, W: 20, H: 10, Score: 1, Attrs: map[string]int{"finding": 2}},
		{X: 30, Y: 0, W: 10, H: 10, Score: 1, Attrs: map[string]int{"finding": 0}},
	}
	if len(got) != 2 || got[0].X != want[0].X || got[0].Y != want[0].Y || got[0].W != want[0].W || got[0].H != want[0].H || got[0].Attrs["finding"] != 2 ||
		got[1].X != want[1].X || got[1].W != want[1].W || got[1].Attrs["finding"] != 0 {
		t.Errorf("boxes %+v, want %+v", got, want)
	}
	for text, msg := range map[string]string{
		"0 0.5 0.5 0.5 0.5\n0 0.5 0.5 0.5\n":      "line 2 has 4 fields; a YOLO box is class cx cy w h",
		"2 0.5 0.5 0.5 0.5\n":                     `line 1: class "2" is not an index of the 2 classes`,
		"0 0.9 0.5 0.5 0.5\n":                     "line 1: the box (centre 0.9, 0.5, size 0.5 × 0.5, normalised) reaches outside the image",
		"0 0.5 0.5 0 0.5\n":                       "line 1: the box's size 0 × 0.5 is not positive",
		"0 0.5 0.5 nan 0.5\n":                     `line 1: "nan" is not a number`,
		"0 0.5 0.5 0.5 0.5 0.9\n":                 "line 1 has 6 fields",
		"x 0.5 0.5 0.5 0.5\n":                     `line 1: class "x"`,
		"0 0.500000 0.500000 1.000001 0.500000\n": "", // YOLO's 6 decimals: within the slack
	} {
		c := boxCase(t, root, "labels/a.txt", text)
		_, err := boxesOf(t, tk, c)
		if msg == "" {
			if err != nil {
				t.Errorf("%q: %v", text, err)
			}
			continue
		}
		wantErr(t, err, c.Label, msg)
	}
	// Without a class list, YOLO's class k is the attribute's class k.
	plain := boxTask(t, `{path: "labels/{id}.txt", format: yolo}`)
	if got, err := boxesOf(t, plain, boxCase(t, root, "labels/a.txt", "2 0.5 0.5 0.5 0.5\n")); err != nil || got[0].Attrs["finding"] != 2 {
		t.Errorf("no class list: %+v %v", got, err)
	}
}

// TestVOC: objects by name (without regard to case) and bndbox in pixels; a file that
// does not parse, an unknown name, a size that is not the image's and a box outside the
// image are errors naming the file and the object.
func TestVOC(t *testing.T) {
	root := t.TempDir()
	tk := boxTask(t, `{path: "labels/{id}.xml", format: voc}`)
	doc := func(size, objects string) string {
		return "<annotation><folder>images</folder><filename>a.png</filename>" + size + objects + "</annotation>"
	}
	obj := func(name string, b [4]int) string {
		return "<object><name>" + name + "</name><difficult>0</difficult><bndbox><xmin>" + itoa(b[0]) + "</xmin><ymin>" + itoa(b[1]) +
			"</ymin><xmax>" + itoa(b[2]) + "</xmax><ymax>" + itoa(b[3]) + "</ymax></bndbox></object>"
	}
	size := "<size><width>40</width><height>20</height><depth>1</depth></size>"
	got, err := boxesOf(t, tk, boxCase(t, root, "labels/a.xml", doc(size, obj("Mass", [4]int{2, 3, 12, 18})+obj("cyst", [4]int{0, 0, 40, 20}))))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].X != 2 || got[0].Y != 3 || got[0].W != 10 || got[0].H != 15 || got[0].Attrs["finding"] != 1 || got[1].W != 40 || got[1].Attrs["finding"] != 2 {
		t.Errorf("boxes %+v", got)
	}
	for text, msg := range map[string]string{
		"<annotation><object>":                                                          "not a Pascal VOC annotation",
		doc(size, obj("tumour", [4]int{2, 3, 12, 18})):                                  `object 1: "tumour" is not one of finding's classes nodule, mass, cyst`,
		doc(size, obj("mass", [4]int{2, 3, 12, 18})+obj("mass", [4]int{30, 3, 41, 18})): "object 2 (mass): the box 30,3–41,18 reaches outside the 40×20 image",
		doc(size, obj("mass", [4]int{12, 3, 12, 18})):                                   "object 1 (mass): the box 12,3–12,18 is empty",
		doc("<size><width>500</width><height>375</height></size>", ""):                  "its size is 500×375, but the image is 40×20",
		doc(size, "<object><name>mass</name></object>"):                                 "object 1 (mass) has no bndbox",
	} {
		c := boxCase(t, root, "labels/a.xml", text)
		_, err := boxesOf(t, tk, c)
		wantErr(t, err, c.Label, msg)
	}
}

// TestBoxLabelsTask: YOLO and VOC labels belong to a 2D detection of one attribute, and
// the class list names its classes.
func TestBoxLabelsTask(t *testing.T) {
	base := `
id: findings
kind: detection
dims: 2
attributes: ATTRS
data:
  train: {images: ["images/{id}.png"], label: LABEL}
  test: {images: ["test/{id}.png"]}
metric: {name: ap_mean}
submission: {columns: [case_id, prediction], id_column: case_id, file_column: prediction, path: "predictions/{id}.txt"}
`
	for _, c := range []struct{ attrs, label, msg string }{
		{"[{name: finding, classes: [a, b]}, {name: side, classes: [l, r]}]", `{path: "l/{id}.txt", format: yolo}`, "the task has 2 attributes"},
		{"[{name: finding, classes: [a, b]}]", `{path: "l/{id}.txt", format: yolo, classes: [a, c]}`, `class 1, "c", is not one of finding's classes a, b`},
		{"[{name: finding, classes: [a, b]}]", `{path: "l/{id}.xml", format: voc, classes: [a]}`, "a class list belongs to a yolo label"},
		{"[{name: finding, classes: [a, b]}]", `{path: "l/{id}.json", format: annotation, classes: [a]}`, "a class list belongs to a yolo label"},
	} {
		src := replaceAll(base, "ATTRS", c.attrs, "LABEL", c.label)
		if _, err := task.Parse([]byte(src)); err == nil || !containsAll(err.Error(), c.msg) {
			t.Errorf("%s %s: %v, want %q", c.attrs, c.label, err, c.msg)
		}
	}
}

// FuzzYOLO: any bytes give boxes inside the image with a class of the attribute, or an
// error naming a line; never a panic.
func FuzzYOLO(f *testing.F) {
	f.Add([]byte("0 0.25 0.5 0.5 0.5\n1 0.875 0.25 0.25 0.5\n"))
	f.Add([]byte("0 0.5 0.5 0.5\n"))
	f.Add([]byte("1 1e308 -1e308 0.5 0.5\r\n\n"))
	attr := taskspec.Attribute{Name: "finding", Classes: []string{"nodule", "mass", "cyst"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		boxes, err := parseYOLO(b, 40, 20, attr, []int{2, 0})
		if err != nil {
			return
		}
		for _, x := range boxes {
			if !(x.W > 0 && x.H > 0) || x.X < 0 || x.Y < 0 || x.X+x.W > 40+1e-9 || x.Y+x.H > 20+1e-9 || (x.Attrs["finding"] != 2 && x.Attrs["finding"] != 0) {
				t.Fatalf("box %+v from %q", x, b)
			}
		}
	})
}

// FuzzVOC: any bytes give boxes inside the image with a class of the attribute, or an
// error; never a panic.
func FuzzVOC(f *testing.F) {
	f.Add([]byte("<annotation><size><width>40</width><height>20</height></size><object><name>mass</name><bndbox><xmin>2</xmin><ymin>3</ymin><xmax>12</xmax><ymax>18</ymax></bndbox></object></annotation>"))
	f.Add([]byte("<annotation><object><name>x</name></object>"))
	attr := taskspec.Attribute{Name: "finding", Classes: []string{"nodule", "mass", "cyst"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		boxes, err := parseVOC(b, 40, 20, attr)
		if err != nil {
			return
		}
		for _, x := range boxes {
			if !(x.W > 0 && x.H > 0) || x.X < 0 || x.Y < 0 || x.X+x.W > 40 || x.Y+x.H > 20 || x.Attrs["finding"] < 0 || x.Attrs["finding"] > 2 {
				t.Fatalf("box %+v from %q", x, b)
			}
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

func replaceAll(s string, kv ...string) string { return strings.NewReplacer(kv...).Replace(s) }

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
