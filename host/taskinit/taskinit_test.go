package taskinit

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"amid/host/ingest"
	"amid/host/synth"
	"amid/host/task"
	"amid/plugins/taskspec"
	"amid/viewer/nifti"
	"amid/viewer/volume"
)

// Fixture sizes: 16 × 16 pixels (8 × 8 × 4 voxels) are the smallest images that still
// hold a square label and a gradient of more than maxLabelValues grey levels; 3 training
// cases and 1 test case are the fewest a split of every layout has.
const (
	side     = 16
	nTrain   = 3
	nTest    = 1
	volSide  = 8
	volDepth = 4
)

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, text string) {
	t.Helper()
	mkdir(t, p)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writePNG writes a side × side grey PNG whose pixel (x, y) is f(x, y).
func writePNG(t *testing.T, p string, f func(x, y int) uint8) {
	t.Helper()
	mkdir(t, p)
	im := image.NewGray(image.Rect(0, 0, side, side))
	for y := range side {
		for x := range side {
			im.SetGray(x, y, color.Gray{Y: f(x, y)})
		}
	}
	fh, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(fh, im); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
}

// gradient is an image of side² distinct-enough grey levels (256 of them).
func gradient(k int) func(x, y int) uint8 {
	return func(x, y int) uint8 { return uint8(x*side + y + k) }
}

// mask is a label map of the values 0 and v: a square in the middle.
func mask(v uint8) func(x, y int) uint8 {
	return func(x, y int) uint8 {
		if x >= side/4 && x < 3*side/4 && y >= side/4 && y < 3*side/4 {
			return v
		}
		return 0
	}
}

// writeNIfTI writes a volSide² × volDepth volume of dtype whose voxel is f(x, y, z).
func writeNIfTI(t *testing.T, p string, dt volume.DType, f func(x, y, z int) float64) {
	t.Helper()
	mkdir(t, p)
	v, err := volume.New(dt, [4]int{volSide, volSide, volDepth, 1})
	if err != nil {
		t.Fatal(err)
	}
	for z := range volDepth {
		for y := range volSide {
			for x := range volSide {
				v.SetIndex(v.Index(x, y, z, 0), f(x, y, z))
			}
		}
	}
	if err := nifti.Write(p, v); err != nil {
		t.Fatal(err)
	}
}

func ctLike(x, y, z int) float64 { return float64(x*37+y*11+z*3) - 200 }

// labels3 is a label map of 0, 1 and 2: two halves of a box.
func labels3(x, y, z int) float64 {
	switch {
	case x >= 2 && x < 4 && y >= 2 && y < 6:
		return 1
	case x >= 4 && x < 6 && y >= 2 && y < 6:
		return 2
	}
	return 0
}

func ids(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s%02d", prefix, i+1))
	}
	return out
}

// want is what a guessed task must hold.
type want struct {
	layout   string
	kind     string
	dims     int
	train    []string
	test     []string
	label    string // the label path
	format   string // the label format
	channels []string
	labels   []string // label names, in value order
	classes  [][]string
	train0   int // training cases found
}

// check writes the guess to task.yaml outside the data folder, reads it back with
// task.Load, resolves it on the folder, reads its training labels as a run's prepare
// does (ingest.Labels), and compares it with w.
func check(t *testing.T, dir string, o Options, w want) *task.Task {
	t.Helper()
	r, err := Guess(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s\n%s", strings.Join(r.Notes, "\n"), r.YAML)
	path := filepath.Join(t.TempDir(), "task.yaml")
	if err := os.WriteFile(path, r.YAML, 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := tk.Resolve(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The labels read as a run's prepare reads them.
	if _, err := ingest.Labels(context.Background(), tk, ds.Train, t.TempDir()); err != nil {
		t.Errorf("the guessed task's labels do not read: %v", err)
	}
	if r.Layout != w.layout || tk.Kind != w.kind || tk.Dims != w.dims {
		t.Errorf("layout %s kind %s dims %d, want %s %s %d", r.Layout, tk.Kind, tk.Dims, w.layout, w.kind, w.dims)
	}
	if !slices.Equal(tk.Data.Train.Images, w.train) || !slices.Equal(tk.Data.Test.Images, w.test) {
		t.Errorf("images %v, test %v; want %v, %v", tk.Data.Train.Images, tk.Data.Test.Images, w.train, w.test)
	}
	if tk.Data.Train.Label.Path != w.label || tk.Data.Train.Label.Format != w.format {
		t.Errorf("label %s (%s), want %s (%s)", tk.Data.Train.Label.Path, tk.Data.Train.Label.Format, w.label, w.format)
	}
	if w.channels != nil && !slices.Equal(tk.Channels, w.channels) {
		t.Errorf("channels %v, want %v", tk.Channels, w.channels)
	}
	var names []string
	for _, l := range tk.Labels {
		names = append(names, l.Name)
	}
	if !slices.Equal(names, w.labels) {
		t.Errorf("labels %v, want %v", names, w.labels)
	}
	var classes [][]string
	for _, a := range tk.Attributes {
		classes = append(classes, a.Classes)
	}
	if fmt.Sprint(classes) != fmt.Sprint(w.classes) {
		t.Errorf("classes %v, want %v", classes, w.classes)
	}
	if w.train0 == 0 {
		w.train0 = nTrain
	}
	if len(ds.Train) != w.train0 || len(ds.Test) != nTest || r.Train != len(ds.Train) || r.Test != nTest {
		t.Errorf("%d training and %d test cases (result %d, %d); want %d and %d", len(ds.Train), len(ds.Test), r.Train, r.Test, w.train0, nTest)
	}
	return tk
}

// ambiguous checks that the guess on dir is refused with a sentence holding each of
// phrases, wrapping ErrAmbiguous.
func ambiguous(t *testing.T, dir string, o Options, phrases ...string) {
	t.Helper()
	r, err := Guess(dir, o)
	if err == nil {
		t.Fatalf("guessed %s:\n%s", r.Layout, r.YAML)
	}
	if !errors.Is(err, ErrAmbiguous) {
		t.Errorf("error %v does not say the folder is ambiguous", err)
	}
	for _, p := range phrases {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not say %q", err, p)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q is not one line", err)
	}
}

func TestNNUNet(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "dataset.json"), `{"channel_names": {"0": "T2", "1": "ADC"}, "labels": {"background": 0, "peripheral zone": 1, "transition zone": 2}, "file_ending": ".nii.gz"}`)
	for _, id := range ids("prostate_", nTrain+nTest) {
		split := "imagesTr"
		if id == fmt.Sprintf("prostate_%02d", nTrain+nTest) {
			split = "imagesTs"
		} else {
			writeNIfTI(t, filepath.Join(dir, "labelsTr", id+".nii.gz"), volume.Uint8, labels3)
		}
		for _, ch := range []string{"0000", "0001"} {
			writeNIfTI(t, filepath.Join(dir, split, id+"_"+ch+".nii.gz"), volume.Int16, ctLike)
		}
	}
	check(t, dir, Options{}, want{layout: layoutPairs, kind: taskspec.Segmentation, dims: 3,
		train: []string{"imagesTr/{id}_0000.nii.gz", "imagesTr/{id}_0001.nii.gz"}, test: []string{"imagesTs/{id}_0000.nii.gz", "imagesTs/{id}_0001.nii.gz"},
		label: "labelsTr/{id}.nii.gz", format: task.LabelImage, channels: []string{"t2", "adc"}, labels: []string{"background", "peripheral zone", "transition zone"}})
}

func TestSuffixPairs(t *testing.T) {
	dir := t.TempDir()
	for i, id := range ids("case", nTrain+nTest) {
		if i >= nTrain {
			writeNIfTI(t, filepath.Join(dir, "test", id+"_img.nii.gz"), volume.Int16, ctLike)
			continue
		}
		writeNIfTI(t, filepath.Join(dir, "train", id+"_img.nii.gz"), volume.Int16, ctLike)
		writeNIfTI(t, filepath.Join(dir, "train", id+"_seg.nii.gz"), volume.Uint8, labels3)
	}
	check(t, dir, Options{}, want{layout: layoutSuffix, kind: taskspec.Segmentation, dims: 3,
		train: []string{"train/{id}_img.nii.gz"}, test: []string{"test/{id}_img.nii.gz"},
		label: "train/{id}_seg.nii.gz", format: task.LabelImage, channels: []string{"img"}, labels: []string{"background", "label 1", "label 2"}})
}

func TestPNGPairs(t *testing.T) {
	t.Run("enhancement", func(t *testing.T) {
		dir := t.TempDir()
		for i, id := range ids("breast_", nTrain+nTest) {
			if i >= nTrain {
				writePNG(t, filepath.Join(dir, "test", "low_quality", id+".png"), gradient(i))
				continue
			}
			writePNG(t, filepath.Join(dir, "train", "low_quality", id+".png"), gradient(i))
			writePNG(t, filepath.Join(dir, "train", "high_quality", id+".png"), gradient(i+1))
		}
		check(t, dir, Options{}, want{layout: layoutPairs, kind: taskspec.Enhancement, dims: 2,
			train: []string{"train/low_quality/{id}.png"}, test: []string{"test/low_quality/{id}.png"},
			label: "train/high_quality/{id}.png", format: task.LabelImage})
	})
	t.Run("masks", func(t *testing.T) {
		dir := t.TempDir()
		for i, id := range ids("img", nTrain+nTest) {
			if i >= nTrain {
				writePNG(t, filepath.Join(dir, "test", "images", id+".png"), gradient(i))
				continue
			}
			writePNG(t, filepath.Join(dir, "train", "images", id+".png"), gradient(i))
			writePNG(t, filepath.Join(dir, "train", "masks", id+".png"), mask(255))
		}
		check(t, dir, Options{}, want{layout: layoutPairs, kind: taskspec.Segmentation, dims: 2,
			train: []string{"train/images/{id}.png"}, test: []string{"test/images/{id}.png"},
			label: "train/masks/{id}.png", format: task.LabelImage, labels: []string{"background", "label 255"}})
	})
}

func TestDICOM(t *testing.T) {
	// 4 cases of the DICOM demo: SEG labels for the even ones (head001, head003),
	// RTSTRUCT for the odd ones, and 4/4 = 1 test case.
	const n = 4
	dir := t.TempDir()
	if err := synth.DemoDICOM(dir, n, 1, synth.DICOMOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"task.yaml", "answers"} {
		if err := os.RemoveAll(filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	// SEG and RTSTRUCT name the structures differently (Skull bone, SKULL): not told.
	ambiguous(t, dir, Options{}, "RTSTRUCT ROIs", "Scalp", "data.train.label.names")
	for _, id := range []string{"head002", "head004"} {
		_ = os.RemoveAll(filepath.Join(dir, "train", "images", id))
		_ = os.Remove(filepath.Join(dir, "train", "labels", id+".dcm"))
	}
	tk := check(t, dir, Options{}, want{layout: layoutDICOM, kind: taskspec.Segmentation, dims: 3,
		train: []string{"train/images/{id}"}, test: []string{"test/images/{id}"}, label: "train/labels/{id}.dcm", format: task.LabelDICOM,
		labels: []string{"background", "Soft Tissue", "Skull bone", "Brain", "Lateral ventricles", "Haemorrhage"}, train0: 2})
	if c := tk.Labels[2].Code; c.Scheme != "SCT" || c.Value != "272673000" {
		t.Errorf("bone's code %+v, want the SEG's SCT 272673000", c)
	}
}

// boxImages writes the images of a 2D detection: train in trainDir, test in testDir.
func boxImages(t *testing.T, dir, trainDir, testDir string) []string {
	t.Helper()
	all := ids("b", nTrain+nTest)
	for i, id := range all {
		d := trainDir
		if i >= nTrain {
			d = testDir
		}
		writePNG(t, filepath.Join(dir, d, id+".png"), gradient(i))
	}
	return all[:nTrain]
}

func TestYOLO(t *testing.T) {
	dir := t.TempDir()
	for _, id := range boxImages(t, dir, "images/train", "images/test") {
		write(t, filepath.Join(dir, "labels", "train", id+".txt"), "1 0.5 0.5 0.25 0.25\n0 0.25 0.25 0.1 0.1\n")
	}
	write(t, filepath.Join(dir, "data.yaml"), "path: .\ntrain: images/train\ntest: images/test\nnames: [left, right]\n")
	check(t, dir, Options{}, want{layout: layoutYOLO, kind: taskspec.Detection, dims: 2,
		train: []string{"images/train/{id}.png"}, test: []string{"images/test/{id}.png"},
		label: "labels/train/{id}.txt", format: task.LabelYOLO, classes: [][]string{{"left", "right"}}})

	// VOC files beside the YOLO ones: two layouts fit.
	for _, id := range ids("b", nTrain) {
		write(t, filepath.Join(dir, "annotations", "train", id+".xml"), vocXML("right"))
	}
	ambiguous(t, dir, Options{}, "fits 2 layouts", "--layout voc or --layout yolo")
	check(t, dir, Options{Layout: layoutYOLO}, want{layout: layoutYOLO, kind: taskspec.Detection, dims: 2,
		train: []string{"images/train/{id}.png"}, test: []string{"images/test/{id}.png"},
		label: "labels/train/{id}.txt", format: task.LabelYOLO, classes: [][]string{{"left", "right"}}})
}

// vocXML is a VOC annotation of side × side pixels with a box from (2, 2) to (8, 8), inside
// it, for each object name.
func vocXML(names ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<annotation><filename>x.png</filename><size><width>%d</width><height>%d</height><depth>1</depth></size>", side, side)
	for _, n := range names {
		b.WriteString("<object><name>" + n + "</name><bndbox><xmin>2</xmin><ymin>2</ymin><xmax>8</xmax><ymax>8</ymax></bndbox></object>")
	}
	b.WriteString("</annotation>")
	return b.String()
}

func TestVOC(t *testing.T) {
	dir := t.TempDir()
	for i, id := range boxImages(t, dir, "train/JPEGImages", "test/JPEGImages") {
		write(t, filepath.Join(dir, "train", "Annotations", id+".xml"), vocXML([]string{"nodule", "Mass"}[i%2], "cyst"))
	}
	check(t, dir, Options{}, want{layout: layoutVOC, kind: taskspec.Detection, dims: 2,
		train: []string{"train/JPEGImages/{id}.png"}, test: []string{"test/JPEGImages/{id}.png"},
		label: "train/Annotations/{id}.xml", format: task.LabelVOC, classes: [][]string{{"Mass", "cyst", "nodule"}}})
}

func TestCOCO(t *testing.T) {
	dir := t.TempDir()
	train := boxImages(t, dir, "train/images", "test/images")
	var ims, anns []string
	for i, id := range train {
		ims = append(ims, fmt.Sprintf(`{"id": %d, "file_name": "%s.png", "width": %d, "height": %d}`, i, id, side, side))
		anns = append(anns, fmt.Sprintf(`{"image_id": %d, "bbox": [2, 2, 5, 5], "category_id_1": %d}`, i, i%2))
	}
	write(t, filepath.Join(dir, "train", "boxes.json"), `{"images": [`+strings.Join(ims, ",")+`], "annotations": [`+strings.Join(anns, ",")+`],
		"categories_1": [{"id": 1, "name": "upper"}, {"id": 0, "name": "lower"}]}`)
	check(t, dir, Options{}, want{layout: layoutCOCO, kind: taskspec.Detection, dims: 2,
		train: []string{"train/images/{id}.png"}, test: []string{"test/images/{id}.png"},
		label: "train/boxes.json", format: task.LabelDENTEX, classes: [][]string{{"lower", "upper"}}})
}

func TestAnnotationJSON(t *testing.T) {
	dir := t.TempDir()
	for i, id := range boxImages(t, dir, "train/images", "test/images") {
		write(t, filepath.Join(dir, "train", "labels", id+".json"), fmt.Sprintf(`{"boxes": [{"x": 2, "y": 2, "w": 5, "h": 5, "attrs": {"finding": %d}, "score": 1}]}`, i))
	}
	check(t, dir, Options{}, want{layout: layoutAnnotation, kind: taskspec.Detection, dims: 2,
		train: []string{"train/images/{id}.png"}, test: []string{"test/images/{id}.png"},
		label: "train/labels/{id}.json", format: task.LabelAnnotation, classes: [][]string{{"finding0", "finding1", "finding2"}}})
}

// classImages writes the images of a classification: images/ and test/, as README's
// class-table example keeps them.
func classImages(t *testing.T, dir string) []string {
	t.Helper()
	return boxImages(t, dir, "images", "test")
}

func TestClassTables(t *testing.T) {
	base := want{kind: taskspec.Classification, dims: 2, layout: layoutCSV, train: []string{"images/{id}.png"}, test: []string{"test/{id}.png"}, format: task.LabelCSV}
	t.Run("class names", func(t *testing.T) {
		dir := t.TempDir()
		train := classImages(t, dir)
		write(t, filepath.Join(dir, "train.csv"), "image_id,Modality,Body part\n"+train[0]+",CT,head\n"+train[1]+",mr,heart\n"+train[2]+",MR,head\n")
		w := base
		w.label, w.classes = "train.csv", [][]string{{"CT", "mr"}, {"head", "heart"}}
		tk := check(t, dir, Options{}, w)
		if vc := tk.ValueColumns(); vc["modality"] != "Modality" || vc["body_part"] != "Body part" {
			t.Errorf("value columns %v", vc)
		}
	})
	t.Run("class indices", func(t *testing.T) {
		dir := t.TempDir()
		train := classImages(t, dir)
		write(t, filepath.Join(dir, "labels.csv"), "id,label\n"+train[0]+",0\n"+train[1]+",2\n"+train[2]+",1\n")
		ambiguous(t, dir, Options{}, "column label of labels.csv holds integers, 0, 1, 2", "--kind classification or --kind iqa")
		w := base
		w.label, w.classes = "labels.csv", [][]string{{"0", "1", "2"}}
		check(t, dir, Options{Kind: taskspec.Classification}, w)
		w.kind, w.classes = taskspec.IQA, nil
		tk := check(t, dir, Options{Kind: taskspec.IQA}, w)
		if s := tk.Score; s == nil || s.Min != 0 || s.Max != 2 || s.Step != 1 {
			t.Errorf("score %+v, want 0 to 2 in steps of 1", s)
		}
	})
	t.Run("one-hot", func(t *testing.T) {
		dir := t.TempDir()
		train := classImages(t, dir)
		write(t, filepath.Join(dir, "GroundTruth.csv"), "image,CT,MR,US\n"+train[0]+",1.0,0.0,0.0\n"+train[1]+",0.0,1.0,0.0\n"+train[2]+",0.0,0.0,1.0\n")
		w := base
		w.label, w.classes = "GroundTruth.csv", [][]string{{"CT", "MR", "US"}}
		tk := check(t, dir, Options{}, w)
		if !slices.Equal(tk.Data.Train.Label.Columns, []string{"CT", "MR", "US"}) {
			t.Errorf("one-hot columns %v", tk.Data.Train.Label.Columns)
		}
	})
	t.Run("findings columns", func(t *testing.T) {
		dir := t.TempDir()
		train := classImages(t, dir)
		write(t, filepath.Join(dir, "train.csv"), "Path,Sex,Effusion,Edema\n"+train[0]+",F,1,1\n"+train[1]+",M,0,-1\n"+train[2]+",F,,0\n")
		ambiguous(t, dir, Options{LabelColumns: []string{"Effusion", "Edema"}}, "−1 (uncertain) cells", "--uncertain ignore, positive or negative")
		w := base
		w.label, w.classes = "train.csv", [][]string{{"Effusion", "Edema"}}
		tk := check(t, dir, Options{LabelColumns: []string{"Effusion", "Edema"}, Uncertain: task.UncertainIgnore}, w)
		if a, ok := tk.MultiLabel(); !ok || a.Name != "findings" || tk.Data.Train.Label.Uncertain != task.UncertainIgnore || tk.Metric.Name != "auroc" {
			t.Errorf("multi-label %v %+v, uncertain %q, metric %s", ok, a, tk.Data.Train.Label.Uncertain, tk.Metric.Name)
		}
		// Without naming them: the columns of 1, 0, −1 or blank (here with a −1) are the
		// findings, and Sex is left out, as CheXpert's particulars are.
		if err := os.Remove(filepath.Join(dir, "task.yaml")); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		tk = check(t, dir, Options{Uncertain: task.UncertainIgnore}, w)
		if !slices.Equal(tk.Data.Train.Label.Columns, []string{"Effusion", "Edema"}) {
			t.Errorf("finding columns guessed among others: %v, want Effusion, Edema", tk.Data.Train.Label.Columns)
		}
	})
	t.Run("finding names", func(t *testing.T) {
		dir := t.TempDir()
		train := classImages(t, dir)
		// NIH's ids are file names: 00000001_000.png.
		write(t, filepath.Join(dir, "Data_Entry.csv"), "Image Index,Finding Labels\n"+train[0]+".png,Effusion|Infiltration\n"+train[1]+".png,No Finding\n"+train[2]+".png,Atelectasis\n")
		w := base
		w.label, w.classes = "Data_Entry.csv", [][]string{{"Atelectasis", "Effusion", "Infiltration"}}
		if tk := check(t, dir, Options{}, w); tk.Data.Train.Label.ValueColumn != "Finding Labels" {
			t.Errorf("value column %q", tk.Data.Train.Label.ValueColumn)
		}
	})
	t.Run("scores", func(t *testing.T) {
		dir := t.TempDir()
		train := classImages(t, dir)
		write(t, filepath.Join(dir, "quality.csv"), "case,patient,mos\n"+train[0]+",p1,3.5\n"+train[1]+",p2,1.25\n"+train[2]+",p3,4\n")
		w := base
		w.kind, w.label = taskspec.IQA, "quality.csv"
		tk := check(t, dir, Options{}, w)
		if s := tk.Score; s == nil || s.Min != 1.25 || s.Max != 4 {
			t.Errorf("score %+v, want 1.25 to 4", s)
		}
	})
	t.Run("several label columns", func(t *testing.T) {
		dir := t.TempDir()
		train := classImages(t, dir)
		write(t, filepath.Join(dir, "train.csv"), "image_id,label,age\n"+train[0]+",CT,54\n"+train[1]+",MR,61.5\n"+train[2]+",CT,70\n")
		ambiguous(t, dir, Options{}, "several columns that could be the label (label, age)", "--label-column")
		w := base
		w.label, w.classes = "train.csv", [][]string{{"CT", "MR"}}
		check(t, dir, Options{LabelColumns: []string{"label"}}, w)
	})
	t.Run("test images among the training ones", func(t *testing.T) {
		dir := t.TempDir()
		train := classImages(t, dir)
		writePNG(t, filepath.Join(dir, "images", "extra.png"), gradient(9))
		write(t, filepath.Join(dir, "train.csv"), "image_id,label\n"+train[0]+",CT\n"+train[1]+",MR\n"+train[2]+",CT\n")
		ambiguous(t, dir, Options{}, "1 images of images/ have no row in train.csv (e.g. extra)")
	})
}

func TestImageFolders(t *testing.T) {
	dir := t.TempDir()
	for i, id := range ids("s", nTrain+nTest) {
		p := filepath.Join(dir, "train", []string{"ct", "MR", "Us"}[i%3], id+".png")
		if i >= nTrain {
			p = filepath.Join(dir, "test", id+".png")
		}
		writePNG(t, p, gradient(i))
	}
	check(t, dir, Options{}, want{layout: layoutFolders, kind: taskspec.Classification, dims: 2,
		train: []string{"train/{class}/{id}.png"}, test: []string{"test/{id}.png"}, format: task.LabelFolder, classes: [][]string{{"MR", "Us", "ct"}}})
}

func TestNoTestSplit(t *testing.T) {
	dir := t.TempDir()
	for _, id := range ids("img", nTrain) {
		writePNG(t, filepath.Join(dir, "images", id+".png"), gradient(1))
		writePNG(t, filepath.Join(dir, "masks", id+".png"), mask(1))
	}
	ambiguous(t, dir, Options{}, "no test split beside images/", "--test")
	writePNG(t, filepath.Join(dir, "holdout", "img99.png"), gradient(2))
	check(t, dir, Options{Test: "holdout"}, want{layout: layoutPairs, kind: taskspec.Segmentation, dims: 2,
		train: []string{"images/{id}.png"}, test: []string{"holdout/{id}.png"}, label: "masks/{id}.png", format: task.LabelImage, labels: []string{"background", "label 1"}})
}

func TestNothingToRead(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "notes.txt"), "nothing here\n")
	write(t, filepath.Join(dir, "images", "a.jpg"), "not read")
	write(t, filepath.Join(dir, "images", "b.jpg"), "not read")
	_, err := Guess(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "no layout AMID reads") || !strings.Contains(err.Error(), "JPG") {
		t.Errorf("error %v, want no layout, naming the JPEG images", err)
	}
}

// TestDecathlon guesses a Medical Segmentation Decathlon folder: 4D images (the channels
// in the fourth dimension, named by dataset.json's modality) and labels named by value.
func TestDecathlon(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "dataset.json"), `{"name": "BrainTumour", "modality": {"0": "FLAIR", "1": "T1w"}, "labels": {"0": "background", "1": "edema", "2": "tumour"}}`)
	for i, id := range ids("BRATS_", nTrain+nTest) {
		v, err := volume.New(volume.Float32, [4]int{volSide, volSide, volDepth, 2})
		if err != nil {
			t.Fatal(err)
		}
		for k := range v.Len() {
			v.SetIndex(k, float64(k%97)) // any image: a ramp that repeats every 97 voxels (a prime, so no row repeats)
		}
		split := "imagesTr"
		if i >= nTrain {
			split = "imagesTs"
		} else {
			writeNIfTI(t, filepath.Join(dir, "labelsTr", id+".nii.gz"), volume.Uint8, labels3)
		}
		p := filepath.Join(dir, split, id+".nii.gz")
		mkdir(t, p)
		if err := nifti.Write(p, v); err != nil {
			t.Fatal(err)
		}
	}
	check(t, dir, Options{}, want{layout: layoutPairs, kind: taskspec.Segmentation, dims: 3,
		train: []string{"imagesTr/{id}.nii.gz"}, test: []string{"imagesTs/{id}.nii.gz"},
		label: "labelsTr/{id}.nii.gz", format: task.LabelImage, channels: []string{"flair", "t1w"}, labels: []string{"background", "edema", "tumour"}})
}

// TestUnnamedClasses guesses YOLO files without a class list: the classes are named by
// index, and the notes say to rename them.
func TestUnnamedClasses(t *testing.T) {
	dir := t.TempDir()
	for i, id := range boxImages(t, dir, "train/images", "test/images") {
		write(t, filepath.Join(dir, "train", "labels", id+".txt"), fmt.Sprintf("%d 0.5 0.5 0.25 0.25\n", i))
	}
	check(t, dir, Options{}, want{layout: layoutYOLO, kind: taskspec.Detection, dims: 2,
		train: []string{"train/images/{id}.png"}, test: []string{"test/images/{id}.png"},
		label: "train/labels/{id}.txt", format: task.LabelYOLO, classes: [][]string{{"class0", "class1", "class2"}}})
	r, err := Guess(dir, Options{})
	if err != nil || !strings.Contains(strings.Join(r.Notes, "\n"), "rename them in the task") {
		t.Errorf("notes %v (%v) do not say to rename the classes", r, err)
	}
}

// TestPlainCOCO names a COCO file with category_id as one AMID does not read.
func TestPlainCOCO(t *testing.T) {
	dir := t.TempDir()
	boxImages(t, dir, "train", "test")
	write(t, filepath.Join(dir, "instances.json"), `{"images": [{"id": 1, "file_name": "b01.png"}], "annotations": [{"image_id": 1, "bbox": [1, 1, 2, 2], "category_id": 3}], "categories": [{"id": 3, "name": "nodule"}]}`)
	_, err := Guess(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "instances.json is a COCO JSON with category_id, which AMID does not read") {
		t.Errorf("error %v, want the COCO file named as not read", err)
	}
}
