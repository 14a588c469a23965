package cli

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"amid/assets/realdata"
	"amid/viewer/imageio"
)

// skullStrip is the brain mask ITK's examples made from the T1 scan t1 (same 128×128×62
// grid; assets/realdata/SOURCES.md).
const skullStrip = realdata.ITK + "/KmeansTest_T1RawSkullStrip.nii.gz"

// hemisphereBox is one box of a slice in pixels: x0, y0 inclusive, x1, y1 exclusive.
type hemisphereBox struct {
	class          int // 0 left of the brain's middle column, 1 right of it
	x0, y0, x1, y1 int
}

// hemisphereBoxes are, per slice z of the brain mask, two boxes: the mask's bounding box
// cut at its middle column into a left and a right part.
func hemisphereBoxes(t *testing.T, z int) []hemisphereBox {
	t.Helper()
	m, err := imageio.Read(realdata.Path(t, skullStrip))
	if err != nil {
		t.Fatal(err)
	}
	x0, y0, x1, y1 := m.Dims[0], m.Dims[1], -1, -1
	for y := range m.Dims[1] {
		for x := range m.Dims[0] {
			if m.At(x, y, z, 0) != 0 {
				x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
			}
		}
	}
	if x1 < x0+2 || y1 < y0 {
		t.Fatalf("slice %d of the brain mask holds no brain", z)
	}
	mid := (x0 + x1 + 1) / 2
	return []hemisphereBox{{0, x0, y0, mid, y1 + 1}, {1, mid, y0, x1 + 1, y1 + 1}}
}

// brainSlices are the T1 slices of the box tasks: 8 training and 2 test slices, every
// fourth from 14 to 50 of its 62, each holding brain (hemisphereBoxes fails on one that
// does not).
var brainSlices = []struct {
	id   string
	z    int
	test bool
}{
	{"b14", 14, false}, {"b18", 18, false}, {"b22", 22, false}, {"b26", 26, false}, {"b30", 30, true},
	{"b34", 34, false}, {"b38", 38, false}, {"b42", 42, false}, {"b46", 46, true}, {"b50", 50, false},
}

// boxLayout is one way datasets ship boxes: the label format and the writer of a slice's
// label file.
type boxLayout struct {
	name, format, ext string
	folder, label     string // the label files' folder, and data.train.label
	write             func(boxes []hemisphereBox, w, h int) string
	refuse            func(dir string) // spoils one label file
	want              string           // the run's one line then
}

func boxLayouts() []boxLayout {
	return []boxLayout{
		{
			// YOLO's class list is written in another order than the task's classes. The
			// spoiled file is b22's, the third training slice.
			name: "yolo", format: "yolo", ext: "txt", folder: "labels", label: `{path: "labels/{id}.txt", format: yolo, classes: [right, left]}`,
			write: func(boxes []hemisphereBox, w, h int) string {
				var b strings.Builder
				for _, x := range boxes {
					fmt.Fprintf(&b, "%d %.6f %.6f %.6f %.6f\n", 1-x.class, float64(x.x0+x.x1)/2/float64(w), float64(x.y0+x.y1)/2/float64(h),
						float64(x.x1-x.x0)/float64(w), float64(x.y1-x.y0)/float64(h))
				}
				return b.String()
			},
			refuse: func(dir string) {
				_ = os.WriteFile(filepath.Join(dir, "labels", "b22.txt"), []byte("0 0.5 0.5 0.25\n"), 0o644)
			},
			want: "b22.txt: unusable label: line 1 has 4 fields; a YOLO box is class cx cy w h",
		},
		{
			name: "voc", format: "voc", ext: "xml", folder: "annotations", label: `{path: "annotations/{id}.xml", format: voc}`,
			write: func(boxes []hemisphereBox, w, h int) string {
				var b strings.Builder
				fmt.Fprintf(&b, "<annotation><size><width>%d</width><height>%d</height><depth>1</depth></size>", w, h)
				for _, x := range boxes {
					fmt.Fprintf(&b, "<object><name>%s</name><difficult>0</difficult><bndbox><xmin>%d</xmin><ymin>%d</ymin><xmax>%d</xmax><ymax>%d</ymax></bndbox></object>",
						[]string{"Left", "Right"}[x.class], x.x0, x.y0, x.x1, x.y1)
				}
				return b.String() + "</annotation>\n"
			},
			refuse: func(dir string) {
				_ = os.WriteFile(filepath.Join(dir, "annotations", "b22.xml"), []byte("<annotation><object><name>left"), 0o644)
			},
			want: "b22.xml: unusable label: not a Pascal VOC annotation",
		},
	}
}

// writeBoxLayout writes the brain slices and their boxes in layout l, with the task.
func writeBoxLayout(t *testing.T, l boxLayout, dir string) string {
	t.Helper()
	for _, s := range brainSlices {
		if s.test {
			writeSlice(t, t1, s.z, filepath.Join(dir, "test", s.id+".png"))
			continue
		}
		writeSlice(t, t1, s.z, filepath.Join(dir, "images", s.id+".png"))
		// The slices are 128 × 128 (the T1's grid).
		label := filepath.Join(dir, l.folder, s.id+"."+l.ext)
		if err := os.MkdirAll(filepath.Dir(label), 0o755); err != nil {
			t.Fatal(err)
		}
		writeLines(t, label, strings.TrimSuffix(l.write(hemisphereBoxes(t, s.z), 128, 128), "\n"))
	}
	path := filepath.Join(dir, "task.yaml")
	writeLines(t, path,
		"id: hemispheres",
		"kind: detection",
		"dims: 2",
		"modality: MR",
		"channels: [t1]",
		"attributes: [{name: side, classes: [left, right]}]",
		"data:",
		`  train: {images: ["images/{id}.png"], label: `+l.label+`}`,
		`  test: {images: ["test/{id}.png"]}`,
		"metric: {name: ap_mean}",
		fmt.Sprintf("submission: {columns: [case_id, prediction], id_column: case_id, file_column: prediction, path: \"predictions/{id}.%s\", format: %s}", l.ext, l.format),
	)
	return path
}

// TestBoxLayouts runs `amid run` on a detection of real images (issue 31: the T1 brain
// MR's slices, a box for each half of the brain from ITK's brain mask) with its boxes as
// YOLO .txt files (with a class list) and as Pascal VOC XML; each ends in a package that
// `amid verify` accepts, whose submission holds a file a test case in the dataset's own
// format. A YOLO line of 4 numbers, or a VOC file that does not parse, stops the run at
// prepare with one line naming the file.
func TestBoxLayouts(t *testing.T) {
	endToEnd(t, "trains a detection in two layouts", t1)
	installPlugin(t, "detection")
	for _, l := range boxLayouts() {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			run, _ := ownHome(t, "detection")
			dir := t.TempDir()
			path := writeBoxLayout(t, l, dir)
			out := runToPackage(t, run, path)
			for _, s := range brainSlices {
				if !s.test {
					continue
				}
				f := filepath.Join(out, "submission", "predictions", s.id+"."+l.ext)
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: %d bytes, %d lines", filepath.Base(f), len(b), strings.Count(string(b), "\n"))
				checkBoxFile(t, l.format, f, b)
			}
			bad := t.TempDir()
			writeBoxLayout(t, l, bad)
			l.refuse(bad)
			refusedAtPrepare(t, run, bad, l.want)
		})
	}
}

// checkBoxFile checks a predicted YOLO or VOC file: YOLO lines of a class id of the list
// (0 or 1), a centre and size inside the image and a score in [0, 1]; a VOC annotation of
// the 128 × 128 image whose objects are left or right boxes inside it.
func checkBoxFile(t *testing.T, format, path string, b []byte) {
	t.Helper()
	if format == "yolo" {
		for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if line == "" {
				continue
			}
			f := strings.Fields(line)
			if len(f) != 6 || (f[0] != "0" && f[0] != "1") {
				t.Errorf("%s line %d: %q", path, i+1, line)
				continue
			}
			for _, s := range f[1:] {
				if v, err := strconv.ParseFloat(s, 64); err != nil || v < 0 || v > 1 {
					t.Errorf("%s line %d: %q is not in [0, 1]", path, i+1, s)
				}
			}
		}
		return
	}
	var doc struct {
		Objects []struct {
			Name string `xml:"name"`
			Box  struct {
				XMin int `xml:"xmin"`
				YMin int `xml:"ymin"`
				XMax int `xml:"xmax"`
				YMax int `xml:"ymax"`
			} `xml:"bndbox"`
		} `xml:"object"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for i, o := range doc.Objects {
		if (o.Name != "left" && o.Name != "right") || o.Box.XMin < 0 || o.Box.YMin < 0 || o.Box.XMax > 128 || o.Box.YMax > 128 || o.Box.XMax <= o.Box.XMin || o.Box.YMax <= o.Box.YMin {
			t.Errorf("%s object %d: %+v", path, i+1, o)
		}
	}
}
